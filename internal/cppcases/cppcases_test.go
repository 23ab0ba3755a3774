package cppcases

import "testing"

// TestCppExtractor: the C++ case reader decodes raw strings, escapes,
// adjacent literals, + chains, token(N), variables and brace lists, and
// skips comments, preprocessor lines and declarations.
func TestCppExtractor(t *testing.T) {
	src := `#include <x.h>
#define F(a) \
    f(a)
static void f(const std::string & s, int n); // f("not a call")
/* f("nor this") */
static void g() {
    const std::string v = R"""(root ::= "a"
)""" "b\x41\101\u00e9\n\"" ;
    f("a" "b" + std::string("c"), {1, 'x', '\n'});
    f(v + token(258), {{"k", 3}, {LLAMA_X, /* c */ 'q'},});
    f(R"delim(a)"b)delim", {});
    f(other + "x", {});
}`
	toks, err := Tokenize(src)
	if err != nil {
		t.Fatal(err)
	}
	fns := Funcs(toks)
	if len(fns) != 1 || fns[0].Name != "g" {
		t.Fatalf("functions %+v, want g", fns)
	}
	calls := Calls(fns[0].Body, "f", Vars(fns[0].Body))
	if len(calls) != 4 {
		t.Fatalf("%d calls, want 4", len(calls))
	}
	want := []struct {
		str   string
		isStr bool
		list  int
		line  int
	}{
		{"abc", true, 3, 9},
		{"root ::= \"a\"\nbA" + "Aé\n\"" + "\xff\x00\x00\x01\x02", true, 2, 10},
		{`a)"b`, true, 0, 11},
		{"", false, 0, 12},
	}
	for i, w := range want {
		c := calls[i]
		if c.Line != w.line || len(c.Args) != 2 || c.Args[0].IsStr != w.isStr || c.Args[0].Str != w.str || !c.Args[1].IsList || len(c.Args[1].List) != w.list {
			t.Errorf("call %d: line %d, %d args, %+v", i, c.Line, len(c.Args), c.Args)
		}
	}
	if !calls[1].Args[0].HasToken || calls[0].Args[0].HasToken {
		t.Error("HasToken wrong")
	}
	l := calls[0].Args[1].List
	if l[1].Toks[0].Kind != Char || l[1].Toks[0].Text != "x" || l[2].Toks[0].Text != "\n" {
		t.Errorf("char literals %+v", l)
	}
	kv := calls[1].Args[1].List
	if !kv[0].IsList || kv[0].List[0].Str != "k" || kv[1].List[1].Toks[0].Text != "q" {
		t.Errorf("nested lists %+v", kv)
	}
}
