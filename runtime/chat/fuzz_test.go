package chat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Both fuzz targets start from every real template and reference case we
// have, so the mutations stay close to the Jinja that chat templates use.
func addSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(sharedTemplates(f), "*.jinja"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "reference.txtar"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range parseTxtar(string(raw)) {
		if strings.HasSuffix(file.name, ".jinja") {
			f.Add(file.data)
		}
	}
	for _, name := range BuiltinNames() {
		f.Add(builtins[name])
	}
	for _, s := range []string{"{{", "{%", "{#", "{{ 'a' ~ }}", "{% for %}", "{% raw %}", "{%- if -%}", "{{ x[::0] }}", "\r\n{% if a %}\r{% endif %}"} {
		f.Add(s)
	}
}

// checkErr holds every error to the contract: an *Error with a known kind
// and a position inside the template.
func checkErr(t *testing.T, src string, err error) {
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	known := false
	for _, k := range []error{ErrSyntax, ErrRender, ErrRaised, ErrLimit, ErrUnsupported} {
		known = known || errors.Is(err, k)
	}
	if !known {
		t.Fatalf("error %v wraps no sentinel", err)
	}
	lines := strings.Count(newSource(src).text, "\n") + 1
	if e.Pos.Line < 1 || e.Pos.Line > lines || e.Pos.Col < 1 {
		t.Fatalf("error %v: position outside the template's %d lines", err, lines)
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		_, err := Parse(src)
		checkErr(t, src, err)
	})
}

// fuzzContext exercises the paths chat templates take: system, user,
// assistant with reasoning and tool calls, tool results, tools.
var fuzzContext = Context{
	Messages: []Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "hi é"},
		{Role: "assistant", Content: "<think>\nr\n</think>\n\nok", Fields: map[string]any{
			"tool_calls": []any{map[string]any{"id": "abc123def", "type": "function",
				"function": map[string]any{"name": "f", "arguments": map[string]any{"x": 1}}}},
		}},
		{Role: "tool", Content: "42", Fields: map[string]any{"tool_call_id": "abc123def"}},
		{Role: "user", Content: "more"},
	},
	AddGenerationPrompt: true,
	BOS:                 "<s>",
	EOS:                 "</s>",
	Now:                 testNow,
	Extra: map[string]any{"tools": []any{map[string]any{"type": "function",
		"function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}},
	Limits: Limits{MaxSteps: 100_000, MaxOutput: 1 << 16, MaxAlloc: 1 << 22, MaxDepth: 20},
}

func FuzzRender(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			checkErr(t, src, err)
			return
		}
		out, err := tmpl.Render(fuzzContext)
		checkErr(t, src, err)
		if len(out) > fuzzContext.Limits.MaxOutput {
			t.Fatalf("output of %d bytes passed MaxOutput", len(out))
		}
	})
}
