package toolcall

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/runtime/chat"
	"github.com/akunu-dev/akunu/runtime/grammar"
	"github.com/akunu-dev/akunu/runtime/grammar/jsonschema"
)

const testTools = `[
 {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
   "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
   "required": ["city"], "additionalProperties": false}}},
 {"type": "function", "function": {"name": "now"}},
 {"type": "function", "function": {"name": "set_mode", "strict": true, "parameters": {"type": "object",
   "properties": {"mode": {"enum": ["fast", "slow"]}, "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
   "required": ["mode", "tags"], "additionalProperties": false}}}
]`

// validArgs checks arguments against testTools' schemas by hand (a
// validator of its own, so that the grammar is not checked by itself).
func validArgs(name, args string) bool {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return false
	}
	switch name {
	case "get_weather":
		city, ok := m["city"].(string)
		if !ok || len([]rune(city)) > 12 {
			return false
		}
		if d, ok := m["days"]; ok {
			f, ok := d.(float64)
			if !ok || f != float64(int(f)) || f < 1 || f > 7 {
				return false
			}
		}
		return len(m) <= 2 && (len(m) == 1 || m["days"] != nil)
	case "now":
		return true
	case "set_mode":
		mode, _ := m["mode"].(string)
		tags, ok := m["tags"].([]any)
		if mode != "fast" && mode != "slow" || !ok || len(tags) > 3 || len(m) != 2 {
			return false
		}
		for _, t := range tags {
			if _, ok := t.(bool); !ok {
				return false
			}
		}
		return true
	}
	return false
}

func compileCalls(t *testing.T, f Format, name string) *grammar.Machine {
	t.Helper()
	tools, err := Tools([]byte(testTools))
	if err != nil {
		t.Fatal(err)
	}
	src, err := Grammar(f, tools, name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := grammar.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// walk draws a random string of m's language over a small alphabet (so
// that strings end and numbers stay short), or fails.
func walk(m *grammar.Machine, rng *rand.Rand, maxLen int) (string, bool) {
	const alphabet = "{}[]\",:. -0123456789abcdefghijklmnopqrstuvwxyzACLOST_<>/|\n"
	var b []byte
	s := m.Start()
	next := make([]int32, 0, len(alphabet))
	bytes := make([]byte, 0, len(alphabet))
	for len(b) < maxLen {
		if m.Accepting(s) && rng.IntN(4) == 0 {
			return string(b), true
		}
		next, bytes = next[:0], bytes[:0]
		for i := 0; i < len(alphabet); i++ {
			if n := m.Step(s, alphabet[i]); n >= 0 {
				next, bytes = append(next, n), append(bytes, alphabet[i])
			}
		}
		if len(next) == 0 {
			return string(b), m.Accepting(s)
		}
		k := rng.IntN(len(next))
		// Favour structure over more string characters, so strings end.
		for i, c := range bytes {
			if strings.IndexByte("\"}]", c) >= 0 && rng.IntN(3) == 0 {
				k = i
			}
		}
		b = append(b, bytes[k])
		s = next[k]
	}
	return "", false
}

func TestGrammarSamplesParseAsValidCalls(t *testing.T) {
	for _, f := range Formats {
		for _, name := range []string{"", "set_mode"} {
			t.Run(f.String()+" "+name, func(t *testing.T) {
				m := compileCalls(t, f, name)
				rng := rand.New(rand.NewPCG(uint64(f), 11))
				got := 0
				for try := 0; try < 400 && got < 40; try++ {
					text, ok := walk(m, rng, 400)
					if !ok {
						continue
					}
					got++
					content, calls, err := Parse(f, text)
					if err != nil || strings.TrimSpace(content) != "" || len(calls) == 0 {
						t.Fatalf("sample %q parses to content %q, calls %+v, err %v", text, content, calls, err)
					}
					if f == Llama3 && len(calls) != 1 {
						t.Fatalf("sample %q: %d calls, Llama3 makes one", text, len(calls))
					}
					for _, c := range calls {
						if name != "" && c.Name != name || !validArgs(c.Name, c.Arguments) {
							t.Fatalf("sample %q: call %s(%s) breaks the tools' schemas", text, c.Name, c.Arguments)
						}
					}
				}
				if got < 20 {
					t.Fatalf("only %d of the walks ended in the language", got)
				}
			})
		}
	}
}

// The grammar accepts what each template writes for calls (the form its
// model was trained on) and refuses what breaks a schema.
func TestGrammarAcceptsTemplateRenderings(t *testing.T) {
	dir := sharedTemplates(t)
	cases := []struct {
		file  string
		f     Format
		calls string
		cut   string // the rendering ends after the last of these
	}{
		{"Qwen-Qwen2.5-7B-Instruct", Hermes, `[{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}},
			{"id": "b", "type": "function", "function": {"name": "set_mode", "arguments": {"mode": "fast", "tags": [true, false]}}}]`, "</tool_call>"},
		{"meta-llama-Llama-3.1-8B-Instruct", Llama3, `[{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]`, "}"},
		{"mistralai-Mistral-Nemo-Instruct-2407", Mistral, `[{"id": "abcDEF123", "type": "function", "function": {"name": "now", "arguments": {}}},
			{"id": "Zz9Yy8Xx7", "type": "function", "function": {"name": "set_mode", "arguments": {"mode": "slow", "tags": []}}}]`, "]"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, c.file+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := chat.Parse(string(src))
			if err != nil {
				t.Fatal(err)
			}
			turn, err := renderTurn(tmpl, testTools, c.calls)
			if err != nil {
				t.Fatal(err)
			}
			turn = turn[:strings.LastIndex(turn, c.cut)+len(c.cut)]
			m := compileCalls(t, c.f, "")
			if !m.Accepts(turn) {
				t.Fatalf("the grammar refuses the template's rendering %q", turn)
			}
			for _, bad := range [][2]string{
				{`"Paris"`, `"Paris, France!"`},     // maxLength 12
				{`"days": 3`, `"days": 8`},          // maximum 7
				{`"fast"`, `"medium"`},              // enum
				{`[true, false]`, `[true, 1]`},      // items
				{`"get_weather"`, `"get_weathers"`}, // no such tool
				{`"now"`, `"later"`},
				{`"Zürich"`, `"Zürich", "x": 1`}, // additionalProperties false
			} {
				if !strings.Contains(turn, bad[0]) {
					continue
				}
				b := strings.Replace(turn, bad[0], bad[1], 1)
				if m.Accepts(b) {
					t.Errorf("the grammar accepts %q", b)
				}
			}
			// More calls: Hermes writes them on after a newline; the others
			// hold theirs in one rendering.
			if got := m.Accepts(turn + "\n" + turn); got != (c.f == Hermes) {
				t.Errorf("two renderings in a row: accepted %v", got)
			}
			if m.Accepts("Sure! " + turn) {
				t.Errorf("the grammar accepts content before the calls")
			}
		})
	}
}

func TestGrammarErrors(t *testing.T) {
	tools, err := Tools([]byte(testTools))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		f     Format
		tools []Tool
		fn    string
		want  string
	}{
		{"no format", None, tools, "", "declares no tool-call format"},
		{"no tools", Hermes, nil, "", "no tools"},
		{"an unknown function", Hermes, tools, "fly", `function "fly" is not among`},
		{"arguments that are no object", Mistral, []Tool{{Name: "f", Parameters: json.RawMessage(`{"type": "string"}`)}}, "", `tools[0].function.parameters: type must be "object"`},
		{"a keyword the converter cannot honor", Hermes, []Tool{{Name: "f"}, {Name: "g", Parameters: json.RawMessage(`{"type": "object", "not": {}}`)}}, "", "tools[1].function.parameters: "},
		{"a schema that is no JSON", Hermes, []Tool{{Name: "f", Parameters: json.RawMessage(`{"type": `)}}, "", "tools[0].function.parameters: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Grammar(c.f, c.tools, c.fn)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line with %q", err, c.want)
			}
		})
	}
	_, err = Grammar(Hermes, []Tool{{Name: "g", Parameters: json.RawMessage(`{"type": "object", "not": {}}`)}}, "")
	if !errors.Is(err, jsonschema.ErrUnsupported) {
		t.Errorf("an unsupported keyword: %v does not wrap jsonschema.ErrUnsupported", err)
	}
	for _, bad := range []string{`{}`, `[{"type": "function"}]`, `[{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]`} {
		if _, err := Tools([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "tools") {
			t.Errorf("Tools(%s): %v", bad, err)
		}
	}
}

func TestGrammarTagTokens(t *testing.T) {
	tools := []Tool{{Name: "f"}}
	ids := map[string]int32{"<tool_call>": 151657, "</tool_call>": 151658, "[TOOL_CALLS]": 5}
	o := GrammarOptions{TagToken: func(s string) (int32, bool) { id, ok := ids[s]; return id, ok }}
	for f, want := range map[Format][]string{Hermes: {"<[151657]>", "<[151658]>"}, Mistral: {"<[5]>"}} {
		src, err := GrammarWith(f, tools, "", o)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(src, w) {
				t.Errorf("%v: no %s in\n%s", f, w, src)
			}
		}
		if strings.Contains(src, "TOOL_CALLS") || strings.Contains(src, "tool_call>") {
			t.Errorf("%v: a tag is spelled out although it has a token:\n%s", f, src)
		}
		plain, err := Grammar(f, tools, "")
		if err != nil || strings.Contains(plain, "<[") {
			t.Errorf("%v without tokens: %v\n%s", f, err, plain)
		}
	}
}

// TestGrammarOne: GrammarOptions.One allows exactly one call
// (parallel_tool_calls: false); without it several follow as the format
// separates them.
func TestGrammarOne(t *testing.T) {
	tools := []Tool{{Name: "get"}, {Name: "put"}}
	one := `<tool_call>` + "\n" + `{"name": "get", "arguments": {}}` + "\n" + `</tool_call>`
	two := one + "\n" + strings.Replace(one, "get", "put", 1)
	mistral1 := `[TOOL_CALLS][{"name": "get", "arguments": {}, "id": "abcdefghi"}]`
	mistral2 := strings.Replace(mistral1, `}]`, `}, {"name": "put", "arguments": {}, "id": "abcdefgh1"}]`, 1)
	for _, tc := range []struct {
		f        Format
		one, two string
	}{{Hermes, one, two}, {Mistral, mistral1, mistral2}} {
		for _, single := range []bool{false, true} {
			src, err := GrammarWith(tc.f, tools, "", GrammarOptions{One: single})
			if err != nil {
				t.Fatal(err)
			}
			g, err := grammar.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			m, err := grammar.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Accepts(tc.one) {
				t.Errorf("%v One=%v: refuses one call %q\n%s", tc.f, single, tc.one, src)
			}
			if got := m.Accepts(tc.two); got == single {
				t.Errorf("%v One=%v: two calls accepted %v", tc.f, single, got)
			}
		}
	}
}
