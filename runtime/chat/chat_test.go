package chat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, src string, ctx Context) (string, error) {
	t.Helper()
	tmpl, err := ParseNamed("t", src)
	if err != nil {
		return "", err
	}
	if ctx.Now.IsZero() {
		ctx.Now = testNow
	}
	return tmpl.Render(ctx)
}

func TestErrorsSayWhere(t *testing.T) {
	cases := []struct {
		name string
		src  string
		ctx  Context
		pos  Pos
		kind error
		msg  string
	}{
		{"an unknown tag is reported at its name", "a\n  {% frob %}", Context{}, Pos{2, 6}, ErrSyntax, "unknown tag 'frob'"},
		{"an unclosed block is reported at its opening tag", "x\n{% for m in messages %}\nbody", Context{}, Pos{2, 4}, ErrSyntax, "unclosed {% for %}: expected {% endfor %} or {% else %}"},
		{"a stray end tag is reported at its name", "{% if true %}{% endif %}{% endif %}", Context{}, Pos{1, 28}, ErrSyntax, "unexpected {% endif %}"},
		{"an undefined attribute of an undefined is reported at the dot", "\n\n{{ nothing.x }}", Context{}, Pos{3, 11}, ErrRender, "'nothing' is undefined"},
		{"columns count characters, not bytes", "héé {{ 1 // 0 }}", Context{}, Pos{1, 10}, ErrRender, "integer division or modulo by zero"},
		{"raise_exception carries the template's message verbatim", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}",
			Context{Messages: []Message{{Role: "system"}}}, Pos{1, 41}, ErrRaised, "System role not supported"},
		{"an error inside a macro points into its body", "{% macro f(x) %}\n  {{ x + 1 }}\n{% endmacro %}{{ f('a') }}", Context{}, Pos{2, 8}, ErrRender, `can only concatenate str (not "int") to str`},
		{"changing a list is refused as unsupported", "{% set xs = [] %}{% set _ = xs.append(1) %}", Context{}, Pos{1, 38}, ErrUnsupported, "access to attribute 'append' of 'list' object is unsafe"},
		{"include is refused as unsupported", "{% include 'other.jinja' %}", Context{}, Pos{1, 4}, ErrUnsupported, "{% include %}: includes are not supported"},
		{"an unknown filter is reported at its name", "{{ 'x' | frobnicate }}", Context{}, Pos{1, 10}, ErrUnsupported, "unknown filter 'frobnicate'"},
		{"an unterminated string is reported at its quote", "{{ 'abc }}", Context{}, Pos{1, 4}, ErrSyntax, "unterminated string literal"},
		{"a comment that never ends is reported at its start", "ok {# never", Context{}, Pos{1, 4}, ErrSyntax, "missing end of comment tag"},
		{"break outside a loop is a syntax error", "{% break %}", Context{}, Pos{1, 4}, ErrSyntax, "'break' outside of a loop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := render(t, c.src, c.ctx)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %q, %v; want an *Error", out, err)
			}
			if e.Pos != c.pos || !errors.Is(err, c.kind) || !strings.HasPrefix(e.Msg, c.msg) {
				t.Fatalf("got %v (kind %v)\nwant t:%d:%d: %s (kind %v)", err, e.Kind, c.pos.Line, c.pos.Col, c.msg, c.kind)
			}
			if !strings.HasPrefix(err.Error(), "t:") {
				t.Fatalf("%q does not start with the template's name", err.Error())
			}
		})
	}
}

func TestRaisedMessageIsOnlyForRefusals(t *testing.T) {
	_, err := render(t, "{{ 1 // 0 }}", Context{})
	if _, ok := RaisedMessage(err); ok {
		t.Fatal("a division by zero is not a refusal")
	}
	if _, ok := RaisedMessage(nil); ok {
		t.Fatal("nil is not a refusal")
	}
}

func TestContextReachesTheTemplate(t *testing.T) {
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": [true, null, 2.5]}}}]`)
	cases := []struct {
		name string
		src  string
		ctx  Context
		want string
	}{
		{"messages are dicts of role and content", "{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}",
			Context{Messages: []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}}}, "user:hi;assistant:yo;"},
		{"message fields become keys, sorted", "{{ messages[0] | tojson }}",
			Context{Messages: []Message{{Role: "tool", Content: "22C", Fields: map[string]any{"tool_call_id": "abc", "name": "w"}}}},
			`{"role": "tool", "content": "22C", "name": "w", "tool_call_id": "abc"}`},
		{"a content field replaces the text content", "{{ messages[0].content[0].text }}",
			Context{Messages: []Message{{Role: "user", Fields: map[string]any{"content": []any{map[string]any{"type": "text", "text": "part"}}}}}}, "part"},
		{"json.RawMessage keeps its key order for tojson", "{{ tools | tojson }}",
			Context{Extra: map[string]any{"tools": tools}},
			`[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": [true, null, 2.5]}}}]`},
		{"Go maps arrive with sorted keys", "{{ extra | tojson }}",
			Context{Extra: map[string]any{"extra": map[string]int{"b": 2, "a": 1}}}, `{"a": 1, "b": 2}`},
		{"Go numbers keep their kind", "{{ [i, u, f] }}",
			Context{Extra: map[string]any{"i": int32(-3), "u": uint8(7), "f": float32(0.5)}}, "[-3, 7, 0.5]"},
		{"tools and documents are None unless given", "{{ tools is none }} {{ documents is none }} {{ custom is defined }}",
			Context{}, "True True False"},
		{"bos, eos and add_generation_prompt are set", "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}",
			Context{BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true}, "<s>|</s>|True"},
		{"strftime_now reads the injected clock", "{{ strftime_now('%d %b %Y') }}",
			Context{Now: time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)}, "21 Nov 2026"},
		{"strftime_now honors glibc's no-padding flag", "{{ strftime_now('%-d/%-m %H:%M') }}",
			Context{Now: time.Date(2026, 3, 5, 7, 4, 0, 0, time.UTC)}, "5/3 07:04"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.src, c.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestContextThatCannotBePassedIsRefused(t *testing.T) {
	cases := []struct {
		name string
		ctx  Context
	}{
		{"a Go struct", Context{Extra: map[string]any{"x": struct{ A int }{1}}}},
		{"a Go function", Context{Extra: map[string]any{"x": func() {}}}},
		{"a map with non-string keys", Context{Extra: map[string]any{"x": map[int]string{1: "a"}}}},
		{"a reserved name in Extra", Context{Extra: map[string]any{"messages": []any{}}}},
		{"a role among a message's fields", Context{Messages: []Message{{Role: "user", Fields: map[string]any{"role": "x"}}}}},
		{"malformed JSON", Context{Extra: map[string]any{"x": json.RawMessage(`{"a": `)}}},
		{"an integer beyond 64 bits", Context{Extra: map[string]any{"x": uint64(1 << 63)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, "x", c.ctx)
			if !errors.Is(err, ErrContext) {
				t.Fatalf("got %v, want ErrContext", err)
			}
		})
	}
}

func TestTemplatesAreSafeToShare(t *testing.T) {
	tmpl, err := Parse("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() {
			out, err := tmpl.Render(Context{Messages: make([]Message, 3)})
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; got != "3" {
			t.Fatalf("a concurrent render gave %q, want 3", got)
		}
	}
}

func TestGenerationBlocksRenderTheirBody(t *testing.T) {
	// Hugging Face's AssistantTracker extension marks assistant text for
	// training masks with {% generation %}; for a prompt it is plain text.
	got, err := render(t, "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}|{% endfor %}",
		Context{Messages: []Message{{Role: "assistant", Content: "a"}, {Role: "assistant", Content: "b"}}})
	if err != nil || got != "a|b|" {
		t.Fatalf("got %q, %v", got, err)
	}
}
