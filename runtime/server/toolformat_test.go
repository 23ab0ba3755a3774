package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/runtime/toolcall"
)

// Each model's tool-call format comes from the template it is served
// with (ADR 0016), or from --tool-format.
func TestToolFormatOfEachModel(t *testing.T) {
	plan, gguf := storiesPlan(t)
	qwen, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		proof.Missing(t, "a served template's tool-call format is not checked", "../shared/templates: "+err.Error())
	}
	cases := []struct {
		name string
		cfg  Config
		want toolcall.Format
		err  string
	}{
		{"the plan's template, or the chatml built-in", Config{Template: "chatml"}, toolcall.None, ""},
		{"a --chat-template-file that writes <tool_call>", Config{TemplateSource: string(qwen)}, toolcall.Hermes, ""},
		{"--tool-format over the template", Config{TemplateSource: string(qwen), ToolFormat: "mistral"}, toolcall.Mistral, ""},
		{"an unknown --tool-format", Config{ToolFormat: "qwen"}, toolcall.None, `server: --tool-format: tool format "qwen": expected one of`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Plans, c.cfg.Models = []string{plan}, map[string]string{plan: gguf}
			r, err := newRegistry(c.cfg, newMetrics(), t.Logf)
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.entries[0].tools; got != c.want {
				t.Fatalf("format %v, want %v", got, c.want)
			}
		})
	}
}
