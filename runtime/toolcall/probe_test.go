package toolcall

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/runtime/chat"
)

func sharedTemplates(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "templates")
	if _, err := os.Stat(filepath.Join(dir, "conversations.json")); err != nil {
		proof.Missing(t, "the tool-call formats of real chat templates are not checked", "../shared/templates is missing: "+err.Error())
	}
	return dir
}

func TestFormatOfSharedTemplates(t *testing.T) {
	dir := sharedTemplates(t)
	want := map[string]Format{
		"Qwen-Qwen2.5-7B-Instruct":             Hermes,
		"Qwen-Qwen3-0.6B":                      Hermes,
		"meta-llama-Llama-3.1-8B-Instruct":     Llama3,
		"mistralai-Mistral-Nemo-Instruct-2407": Mistral,
		"google-gemma-2-2b-it":                 None,
		"microsoft-Phi-3.5-mini-instruct":      None,
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("%d templates in %s (%v), want the %d this test knows: a new one needs its format here", len(files), dir, err, len(want))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jinja")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := chat.ParseNamed(name, string(src))
			if err != nil {
				t.Fatal(err)
			}
			f, err := FormatOf(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("template %s: no expected format", name)
			}
			if f != w {
				t.Fatalf("format %v, want %v", f, w)
			}
			// What the template writes for a call is what its model was
			// trained to write: it streams in every split as it parses whole.
			turn, err := renderTurn(tmpl, probeTools, probeCalls)
			if err != nil {
				t.Fatal(err)
			}
			r := recorded{name: name, f: f, text: turn}
			whole := parseSeeded(f, []string{turn})
			for i := 0; i <= len(turn); i++ {
				checkSplit(t, r, whole, []string{turn[:i], turn[i:]}, true)
			}
		})
	}
}

func TestFormatOfWrittenTemplates(t *testing.T) {
	cases := []struct {
		name, src string
		want      Format
		err       bool
	}{
		{"a Hermes template with other whitespace", `{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}{% endfor %}`, Hermes, false},
		{"a template that writes the call as prose", `{% for m in messages %}{% if m.tool_calls %}call {{ m.tool_calls[0].function.name }}{% else %}{{ m.content }}{% endif %}{% endfor %}`, None, false},
		{"a template that drops tool calls", `{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}`, None, false},
		{"a Hermes template with the wrong arguments", `{% for m in messages %}{% if m.tool_calls %}<tool_call>{"name": "{{ m.tool_calls[0].function.name }}", "arguments": {}}</tool_call>{% endif %}{% endfor %}`, None, false},
		{"a template that refuses assistants", `{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('no') }}{% endif %}{{ m.content }}{% endfor %}`, None, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := chat.Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			f, err := FormatOf(tmpl)
			if (err != nil) != c.err || f != c.want {
				t.Fatalf("FormatOf: %v, %v; want %v (an error: %v)", f, err, c.want, c.err)
			}
		})
	}
	for _, name := range chat.BuiltinNames() {
		tmpl, _ := chat.Builtin(name)
		// The built-ins render no tool calls (they are for models that
		// ship no template, which had no tools to learn).
		if f, err := FormatOf(tmpl); err != nil || f != None {
			t.Errorf("builtin %s: %v, %v; want none", name, f, err)
		}
	}
}

func TestFormatFor(t *testing.T) {
	for _, name := range []string{"hermes", "llama3", "mistral", "none"} {
		f, err := FormatFor(nil, name)
		if err != nil || f.String() != name {
			t.Errorf("FormatFor(%q) = %v, %v", name, f, err)
		}
	}
	if _, err := FormatFor(nil, "qwen"); err == nil || !strings.Contains(err.Error(), `tool format "qwen": expected one of none, hermes, llama3, mistral`) {
		t.Errorf("FormatFor(qwen): %v", err)
	}
}
