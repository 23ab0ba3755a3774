package grammar

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	for _, src := range []string{
		`root ::= "a" | "b" [c-e]* ("x" | "y"){2,3} .`,
		"root ::= obj\nobj ::= \"{\" ( ws kv ( \",\" ws kv )* )? \"}\"\nkv ::= [a-z]+ \":\" [0-9]{1,3}\nws ::= [ \\t\\n]*",
		`root ::= [^"\\] "\x41\u00e9\U0001F600" <[12]> !<[3]> "\""`,
	} {
		g, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		s := g.String()
		g2, err := Parse(s)
		if err != nil {
			t.Fatalf("reparse of\n%s: %v", s, err)
		}
		if s2 := g2.String(); s2 != s {
			t.Errorf("round trip differs:\n%s\n---\n%s", s, s2)
		}
		if err := sameGrammar(g, g2); err != nil {
			t.Errorf("round trip of %q: %v", src, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"root ::= valeu\nvalue ::= \"x\"", `1:10: undefined rule "valeu" (did you mean value?)`},
		{`root ::= "abc`, `1:10: unterminated literal: no closing "`},
		{`root ::= [abc`, `1:10: unterminated character class: no closing ]`},
		{`root ::= "a"{3,2}`, `1:13: repetition {3,2}: the maximum is below the minimum`},
		{`foo ::= "a"`, `1:1: no rule "root": the grammar starts there (did you mean foo?)`},
		{`root ::= "\q"`, `1:11: unknown escape \q`},
		{"root ::= expr\nexpr ::= term \"+\" | \"x\"\nterm ::= expr", `2:1: left recursion: expr -> term -> expr`},
		{"root ::= a? root \"x\"\na ::= \"y\"", `1:1: left recursion: root -> root`},
		{"root ::= n root \"x\" | \"y\"\nn ::= e\ne ::= \"\" | \"z\"", `1:1: left recursion: root -> root`},
		{"root ::= x? root\nx ::= \"x\"", `1:1: left recursion: root -> root`},
		{`root ::= ("a"`, `1:14: expected ')' to close the group at 1:10, found the end of the grammar`},
		{`root ::= * "a"`, `1:10: a repetition needs an item before it`},
		{"root ::= \"a\"\nroot ::= \"b\"", `2:1: rule "root" is defined twice (first at 1:1)`},
		{`root := "a"`, `1:6: expected ::= after rule name "root", found ':'`},
		{`root ::= [z-a]`, `1:13: range 'z'-'a' runs backwards`},
		{`root ::= <[12]x>`, `1:10: token <[12]x>: expected a token id in <[...]>`},
		{`root ::= !"a"`, `1:11: expected '<' of a token after '!', found '"'`},
		{`root ::= "a" @`, `1:14: expected the end of the line after rule "root", found '@'`},
		{`root ::= "\x4"`, `1:11: \x needs 2 hex digits, found "4\""`},
		{`root ::= "a"{,3}`, `1:14: expected a number, found ','`},
		{"root ::= \"a\"\n  | \"b\"", `2:3: expected a rule name, found '|'`},
		{`root ::= "a"{3000}`, `1:13: repetition {3000}: more than 2000 repetitions`},
		{`root ::= "a"{ 3000 , }`, `1:13: repetition {3000,}: more than 2000 repetitions`},
		{`root ::= ` + strings.Repeat("(", 300) + `"a"` + strings.Repeat(")", 300), `1:266: groups nested more than 256 deep`},
	} {
		_, err := Parse(tc.src)
		if err == nil {
			t.Errorf("%q parsed", tc.src)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, err, tc.want)
		}
	}
}

// TestParseLeftRecursionThatReturns: a cycle of tail references through
// nullable rules returns to the same stack and is accepted, as llama.cpp
// accepts it; the same cycle with something after the recursion is not.
func TestParseLeftRecursionThatReturns(t *testing.T) {
	for _, src := range []string{
		`root ::= ( [x]* )*`,
		"root ::= ( a )*\na ::= b\nb ::= [y]*",
	} {
		if _, err := Parse(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	_, err := Parse("root ::= ( a \"!\" )*\na ::= b root\nb ::= [y]*")
	if !errors.Is(err, ErrLeftRecursion) {
		t.Errorf("a growing cycle through nullable rules: %v, want left recursion", err)
	}
}

// TestParseLargeMaximum: a maximum above 2000 means none, as in
// llama.cpp, however large; a minimum above 2000 is an error.
func TestParseLargeMaximum(t *testing.T) {
	for _, src := range []string{`root ::= "a"{1,2001}`, `root ::= "a"{1,18446744073709551615}`} {
		g, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		// root ::= "a" root_1; root_1 ::= "a" root_1 |
		if len(g.Rules) != 2 || len(g.Rules[1].Alts) != 2 || len(g.Rules[1].Alts[0]) != 2 || g.Rules[1].Alts[0][1].Rule != 1 {
			t.Errorf("%q:\n%s", src, g)
		}
	}
	for _, src := range []string{`root ::= "a"{2001,}`, `root ::= "a"{18446744073709551616,}`} {
		if _, err := Parse(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestUnreachableWarns(t *testing.T) {
	g, err := Parse("root ::= \"a\"\nextra ::= \"b\"")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Warnings) != 1 || g.Warnings[0].Error() != `2:1: rule "extra" is never used (the start rule "root" does not reach it)` {
		t.Fatalf("warnings: %v", g.Warnings)
	}
}

// TestSameGrammar: the round trip's equality tells grammars apart and
// ignores only names and numbering.
func TestSameGrammar(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"root ::= x y\nx ::= \"a\"\ny ::= [b-c]", "root ::= p q\nq ::= [b-c]\np ::= \"a\"", true},
		{"root ::= x y\nx ::= \"a\"\ny ::= [b-c]", "root ::= p q\nq ::= [b-d]\np ::= \"a\"", false},
		{"root ::= x x\nx ::= \"a\"", "root ::= x y\nx ::= \"a\"\ny ::= \"a\"", false},
		{`root ::= "a" | "b"`, `root ::= "b" | "a"`, false},
		{`root ::= "a"*`, `root ::= "a"+`, false},
		{`root ::= <[1]>`, `root ::= !<[1]>`, false},
	} {
		a, err := Parse(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameGrammar(a, b); (err == nil) != tc.same {
			t.Errorf("%q vs %q: same=%v, got %v", tc.a, tc.b, tc.same, err)
		}
	}
}

// TestParseGeneratedRulesOf: every generated rule, however deeply nested,
// names the written rule it came from; written rules name themselves.
func TestParseGeneratedRulesOf(t *testing.T) {
	g, err := Parse("root ::= x ((\"a\" | [b-c]+)* \"d\"{2,4})?\nx ::= (\"y\")+")
	if err != nil {
		t.Fatal(err)
	}
	for id, r := range g.Rules {
		of := g.Rules[r.Of].Name
		if r.Name == "root" || r.Name == "x" {
			if r.Of != id {
				t.Errorf("written rule %s: Of = %s", r.Name, of)
			}
			continue
		}
		base := r.Name[:strings.IndexByte(r.Name, '_')]
		if of != base || g.Rules[r.Of].Line == 0 {
			t.Errorf("generated rule %s: Of = %s, want %s", r.Name, of, base)
		}
	}
}
