package toolcall

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// recorded is a model output written the way models of the format write
// them, and what parsing it must give.
type recorded struct {
	name    string
	f       Format
	text    string
	content string
	calls   []Call // ID left out: checked by shape
	broken  bool   // a started call breaks: an *Error is expected
}

var recordings = []recorded{
	// Hermes / Qwen.
	{name: "hermes one call", f: Hermes,
		text:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
		calls: []Call{{Name: "get_weather", Arguments: `{"city": "Paris", "unit": "celsius"}`}}},
	{name: "hermes several calls in a row", f: Hermes,
		text:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}\n</tool_call>",
		calls: []Call{{Name: "get_weather", Arguments: `{"city": "Paris"}`}, {Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`}}},
	{name: "hermes content before a call", f: Hermes,
		text:    "Let me look that up for you.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"akunu\"}}\n</tool_call>",
		content: "Let me look that up for you.",
		calls:   []Call{{Name: "search", Arguments: `{"query": "akunu"}`}}},
	{name: "hermes nested arguments with braces and tags in strings", f: Hermes,
		text:  "<tool_call>\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"if (x) { return \\\"}\\\"; } // <tool_call> </tool_call>\", \"opts\": {\"a\": [1, 2, {\"b\": null}], \"c\": true, \"d\": -1.5e3, \"e\": 0}}}\n</tool_call>",
		calls: []Call{{Name: "run_code", Arguments: `{"code": "if (x) { return \"}\"; } // <tool_call> </tool_call>", "opts": {"a": [1, 2, {"b": null}], "c": true, "d": -1.5e3, "e": 0}}`}}},
	{name: "hermes unicode in content and arguments", f: Hermes,
		text:    "Voilà 🙂 — je traduis.\n<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": \"日本語のテキスト ✓\", \"to\": \"fr\", \"esc\": \"\\u00e9\\ud83d\\ude42\"}}\n</tool_call>",
		content: "Voilà 🙂 — je traduis.",
		calls:   []Call{{Name: "translate", Arguments: `{"text": "日本語のテキスト ✓", "to": "fr", "esc": "\u00e9\ud83d\ude42"}`}}},
	{name: "hermes content after the calls", f: Hermes,
		text:    "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\nI called a.",
		content: "I called a.",
		calls:   []Call{{Name: "a", Arguments: `{}`}}},
	{name: "hermes arguments before the name", f: Hermes,
		text:  "<tool_call>{\"arguments\": {\"q\": \"x\"}, \"name\": \"search\"}</tool_call>",
		calls: []Call{{Name: "search", Arguments: `{"q": "x"}`}}},
	{name: "hermes no arguments key", f: Hermes,
		text:  "<tool_call>{\"name\": \"now\"}</tool_call>",
		calls: []Call{{Name: "now", Arguments: `{}`}}},
	{name: "hermes escaped name", f: Hermes,
		text:  "<tool_call>{\"name\": \"we\\u0069rd\", \"arguments\": {\"k\": 1}}</tool_call>",
		calls: []Call{{Name: "weird", Arguments: `{"k": 1}`}}},
	{name: "hermes missing close tag before the next call", f: Hermes,
		text:  "<tool_call>{\"name\":\"a\",\"arguments\":{}}\n<tool_call>{\"name\":\"b\",\"arguments\":{\"n\":[]}}</tool_call>",
		calls: []Call{{Name: "a", Arguments: `{}`}, {Name: "b", Arguments: `{"n":[]}`}}},
	{name: "hermes plain content with tag-like text", f: Hermes,
		text:    "Use a < b, <tool>x</tool>, <tool_cal and <<tool_ca to compare.",
		content: "Use a < b, <tool>x</tool>, <tool_cal and <<tool_ca to compare."},
	{name: "hermes stuttered tag", f: Hermes,
		text:    "<tool_call>\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": \"y\"}}\n</tool_call>",
		content: "<tool_call>",
		calls:   []Call{{Name: "a", Arguments: `{"x": "y"}`}}},
	{name: "hermes tag without a call is content", f: Hermes,
		text:    "<tool_call>\nnot json at all\n</tool_call>",
		content: "<tool_call>\nnot json at all\n</tool_call>"},
	{name: "hermes object that is no call is content", f: Hermes,
		text:    "<tool_call>{\"function\": \"a\"}</tool_call>",
		content: "<tool_call>{\"function\": \"a\"}</tool_call>"},
	{name: "hermes truncated call", f: Hermes, broken: true,
		text:  "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"once upon a ti",
		calls: []Call{{Name: "write", Arguments: `{"text": "once upon a ti`}}},
	{name: "hermes invalid JSON after the call started", f: Hermes, broken: true,
		text:    "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}]}</tool_call> rest",
		content: "]}</tool_call> rest",
		calls:   []Call{{Name: "f", Arguments: `{"a": 1}`}}},
	{name: "hermes truncated before the name is known", f: Hermes,
		text:    "Hmm <tool_call>\n{\"name\": \"wri",
		content: "Hmm <tool_call>\n{\"name\": \"wri"},

	// Llama 3.1.
	{name: "llama3 bare call", f: Llama3,
		text:  "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco, CA\"}}",
		calls: []Call{{Name: "get_weather", Arguments: `{"city": "San Francisco, CA"}`}}},
	{name: "llama3 call after python_tag", f: Llama3,
		text:  "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
		calls: []Call{{Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
	{name: "llama3 leading whitespace", f: Llama3,
		text:  "\n\n  {\"name\": \"f\", \"parameters\": {\"x\": [1, {\"y\": \"}\"}]}}",
		calls: []Call{{Name: "f", Arguments: `{"x": [1, {"y": "}"}]}`}}},
	{name: "llama3 two calls", f: Llama3,
		text:  "{\"name\": \"a\", \"parameters\": {\"n\": 1}}; {\"name\": \"b\", \"parameters\": {\"n\": 2}}",
		calls: []Call{{Name: "a", Arguments: `{"n": 1}`}, {Name: "b", Arguments: `{"n": 2}`}}},
	{name: "llama3 type function key", f: Llama3,
		text:  "{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}",
		calls: []Call{{Name: "f", Arguments: `{}`}}},
	{name: "llama3 JSON answer is content", f: Llama3,
		text:    "{\"answer\": 42, \"unit\": \"m\"}",
		content: "{\"answer\": 42, \"unit\": \"m\"}"},
	{name: "llama3 object with a name but no parameters is content", f: Llama3,
		text:    "{\"name\": \"Bob\", \"age\": 3}",
		content: "{\"name\": \"Bob\", \"age\": 3}"},
	{name: "llama3 name only is content", f: Llama3,
		text:    "{\"name\": \"Bob\"}",
		content: "{\"name\": \"Bob\"}"},
	{name: "llama3 text with braces", f: Llama3,
		text:    "Sure! Here is {\"name\": \"x\", \"parameters\": {}} as text.",
		content: "Sure! Here is {\"name\": \"x\", \"parameters\": {}} as text."},
	{name: "llama3 content then python_tag call", f: Llama3,
		text:    "Checking the weather. <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\"}}",
		content: "Checking the weather.",
		calls:   []Call{{Name: "get_weather", Arguments: `{"city": "Zürich"}`}}},
	{name: "llama3 builtin tool call is content", f: Llama3,
		text:    "<|python_tag|>brave_search.call(query=\"akunu\")",
		content: "<|python_tag|>brave_search.call(query=\"akunu\")"},
	{name: "llama3 truncated call", f: Llama3, broken: true,
		text:  "{\"name\": \"f\", \"parameters\": {\"x\": \"abc",
		calls: []Call{{Name: "f", Arguments: `{"x": "abc`}}},

	// Mistral.
	{name: "mistral one call", f: Mistral,
		text:  "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
		calls: []Call{{Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
	{name: "mistral two calls with model ids", f: Mistral,
		text:  "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, \"id\": \"abc123XYZ\"}, {\"name\": \"b\", \"arguments\": {\"y\": [true, false]}}]",
		calls: []Call{{Name: "a", Arguments: `{"x": 1}`}, {Name: "b", Arguments: `{"y": [true, false]}`}}},
	{name: "mistral content before", f: Mistral,
		text:    "Sure.\n[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]",
		content: "Sure.",
		calls:   []Call{{Name: "f", Arguments: `{}`}}},
	{name: "mistral tricky strings", f: Mistral,
		text:  "[TOOL_CALLS][{\"name\": \"echo\", \"arguments\": {\"s\": \"]}, [TOOL_CALLS][{\\\"name\\\"\", \"t\": \"ünï ☃\"}}]",
		calls: []Call{{Name: "echo", Arguments: `{"s": "]}, [TOOL_CALLS][{\"name\"", "t": "ünï ☃"}`}}},
	{name: "mistral single object without array", f: Mistral,
		text:  "[TOOL_CALLS]{\"name\": \"f\", \"arguments\": {\"a\": 1.0}}",
		calls: []Call{{Name: "f", Arguments: `{"a": 1.0}`}}},
	{name: "mistral tag without calls is content", f: Mistral,
		text:    "[TOOL_CALLS]oops",
		content: "[TOOL_CALLS]oops"},
	{name: "mistral empty array is content", f: Mistral,
		text:    "[TOOL_CALLS][]",
		content: "[TOOL_CALLS][]"},
	{name: "mistral partial tag at the end is content", f: Mistral,
		text:    "See [TOOL",
		content: "See [TOOL"},
	{name: "mistral garbage after a call", f: Mistral, broken: true,
		text:    "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}, oops]",
		content: "oops]",
		calls:   []Call{{Name: "a", Arguments: `{"x": 1}`}}},

	// None.
	{name: "none is all content", f: None,
		text:    "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> ",
		content: "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> "},
}

func TestParseRecordedOutputs(t *testing.T) {
	for _, r := range recordings {
		t.Run(r.name, func(t *testing.T) {
			content, calls, err := ParseWith(r.f, r.text, Options{Rand: rand.New(rand.NewPCG(1, 2))})
			if content != r.content {
				t.Errorf("content %q, want %q", content, r.content)
			}
			if (err != nil) != r.broken {
				t.Errorf("err %v, want an error: %v", err, r.broken)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) || e.Offset <= 0 || e.Offset > len(r.text) {
					t.Errorf("err %#v: want an *Error wrapping ErrMalformed with an offset in the text", err)
				}
			}
			if len(calls) != len(r.calls) {
				t.Fatalf("%d calls %+v, want %d", len(calls), calls, len(r.calls))
			}
			ids := map[string]bool{}
			for i, c := range calls {
				if c.Name != r.calls[i].Name || c.Arguments != r.calls[i].Arguments {
					t.Errorf("call %d: %q(%s), want %q(%s)", i, c.Name, c.Arguments, r.calls[i].Name, r.calls[i].Arguments)
				}
				checkID(t, r.f, c.ID)
				if ids[c.ID] {
					t.Errorf("call %d: id %q repeats", i, c.ID)
				}
				ids[c.ID] = true
			}
		})
	}
}

func checkID(t *testing.T, f Format, id string) {
	t.Helper()
	n := 24
	if f == Mistral {
		n = 9
	} else if !strings.HasPrefix(id, "call_") {
		t.Errorf("id %q: want call_ and 24 alphanumerics", id)
		return
	} else {
		id = id[len("call_"):]
	}
	if len(id) != n || strings.Trim(id, idChars) != "" {
		t.Errorf("id %q: want %d alphanumerics", id, n)
	}
}

func TestStreamRecordedOutputsInEverySplit(t *testing.T) {
	for _, r := range recordings {
		t.Run(r.name, func(t *testing.T) {
			whole := parseSeeded(r.f, []string{r.text})
			n := len(r.text)
			for i := 0; i <= n; i++ {
				checkSplit(t, r, whole, []string{r.text[:i], r.text[i:]}, true)
			}
			if n <= 120 {
				for i := 0; i <= n; i++ {
					for j := i; j <= n; j++ {
						checkSplit(t, r, whole, []string{r.text[:i], r.text[i:j], r.text[j:]}, false)
					}
				}
			}
			bytes := make([]string, n)
			for i := range n {
				bytes[i] = r.text[i : i+1]
			}
			checkSplit(t, r, whole, bytes, true)
		})
	}
}

type parsed struct {
	content string
	calls   []Call
	err     string
	events  [][]Event // per Feed, then Finish's
}

func parseSeeded(f Format, parts []string) parsed {
	s := NewStreamWith(f, Options{Rand: rand.New(rand.NewPCG(7, 7))})
	var all []Event
	var per [][]Event
	for _, p := range parts {
		ev := s.Feed(p)
		per = append(per, ev)
		all = append(all, ev...)
	}
	ev := s.Finish()
	per = append(per, ev)
	all = append(all, ev...)
	content, calls, err := Collect(all)
	p := parsed{content: content, calls: calls, events: per}
	if err != nil {
		p.err = err.Error()
	}
	return p
}

func checkSplit(t *testing.T, r recorded, whole parsed, parts []string, checkHeld bool) {
	t.Helper()
	got := parseSeeded(r.f, parts)
	if got.content != whole.content || got.err != whole.err || !sameCalls(got.calls, whole.calls) {
		t.Fatalf("split %q: content %q calls %+v err %q; whole: %q %+v %q", parts, got.content, got.calls, got.err, whole.content, whole.calls, whole.err)
	}
	tag := r.f.openTag()
	fed, soFar := "", ""
	for k, evs := range got.events {
		if k < len(parts) {
			fed += parts[k]
		}
		final := k == len(got.events)-1
		for _, e := range evs {
			if e.Kind != EventContent && e.Kind != EventArgs {
				continue
			}
			if e.Text == "" {
				t.Fatalf("split %q: empty delta", parts)
			}
			if final {
				continue
			}
			if !utf8.ValidString(e.Text) {
				t.Fatalf("split %q: delta %q splits a UTF-8 sequence", parts, e.Text)
			}
			if e.Kind == EventContent {
				soFar += e.Text
			}
		}
		// What the input so far ends with and may still become a tag is
		// held back: however the tag would be completed into a call, the
		// content already given stays a prefix of the content then.
		if tag == "" || final || !checkHeld {
			continue
		}
		for l := 1; l < len(tag); l++ {
			if !strings.HasSuffix(fed, tag[:l]) {
				continue
			}
			then, _, _ := Parse(r.f, fed+tag[l:]+`{"name": "z", "arguments": {}}`)
			if !strings.HasPrefix(then, soFar) {
				t.Fatalf("split %q: content %q given, but completing the tag makes the content %q", parts, soFar, then)
			}
		}
	}
}

func sameCalls(a, b []Call) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestIDsAreSeededAndShaped(t *testing.T) {
	text := "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]"
	_, a, _ := ParseWith(Mistral, text, Options{Rand: rand.New(rand.NewPCG(3, 4))})
	_, b, _ := ParseWith(Mistral, text, Options{Rand: rand.New(rand.NewPCG(3, 4))})
	_, c, _ := ParseWith(Mistral, text, Options{Rand: rand.New(rand.NewPCG(5, 6))})
	_, d, _ := Parse(Mistral, text)
	if len(a) != 2 || !sameCalls(a, b) {
		t.Fatalf("same seed, different calls: %+v %+v", a, b)
	}
	if a[0].ID == c[0].ID || a[0].ID == a[1].ID || len(d) != 2 {
		t.Fatalf("ids do not vary: %+v %+v %+v", a, c, d)
	}
	for _, x := range append(a, d...) {
		checkID(t, Mistral, x.ID)
	}
	checkID(t, Hermes, newID(Hermes, nil))
}
