package grammar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// FuzzParse: Parse never panics or hangs on any text, its errors are
// *Error, and a grammar it returns renders (String) to text that parses
// back to a grammar rendering the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`root ::= "a" | "b" [c-e]* ("x" | "y"){2,3} .`,
		"root ::= obj\nobj ::= \"{\" ( ws kv ( \",\" ws kv )* )? \"}\"\nkv ::= [a-z]+ \":\" [0-9]{1,3}\nws ::= [ \\t\\n]*",
		`root ::= [^"\\] "\x41\u00e9\U0001F600" <[12]> !<[3]> <think> "\""`,
		"root ::= ( [x]* )*",
		"root ::= a? root \"x\"\na ::= \"y\"",
		"root ::= (\n  \"a\" # comment\n  | \"b\"\n)+ \r\n",
		`root ::= "a"{0,5000}`,
	} {
		f.Add(s)
	}
	// llama.cpp's grammars, when its source is here (the fuzz target
	// runs without them too: they only seed the corpus).
	if dir, err := llamacpp.SourceDir(); err == nil {
		paths, _ := filepath.Glob(filepath.Join(dir, "grammars", "*.gbnf"))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if strings.ContainsAny(err.Error(), "\n") && !strings.Contains(src, "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		s := g.String()
		g2, err := Parse(s)
		if err != nil {
			t.Fatalf("String() of %q does not parse back: %v\n%s", src, err, s)
		}
		if s2 := g2.String(); s2 != s {
			t.Fatalf("String() of %q differs after a round trip:\n%s\n---\n%s", src, s, s2)
		}
		if err := sameGrammar(g, g2); err != nil {
			t.Fatalf("String() of %q parses to another grammar: %v\n%s", src, err, s)
		}
	})
}

// TestParseHostile: text built to exhaust the stack, memory or time ends
// in an error, quickly.
func TestParseHostile(t *testing.T) {
	for name, src := range map[string]string{
		"a million open parentheses":       "root ::= " + strings.Repeat("(", 1_000_000),
		"nested repetitions":               `root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}`,
		"a long literal repeated":          `root ::= "` + strings.Repeat("a", 100_000) + `"{1000}`,
		"repeated repetitions of groups":   `root ::= (("a"{1,40}){1,40}){1,40}`,
		"a huge count":                     `root ::= "a"{99999999999999999999}`,
		"more than 4 MiB":                  "root ::= \"" + strings.Repeat("a", 5<<20) + "\"",
		"two million characters":           "root ::= \"" + strings.Repeat("a", 2<<20) + "\"",
		"a rule of half a million options": "root ::= " + strings.Repeat(`"a"? `, 500_000),
		"a short literal repeated":         `root ::= "` + strings.Repeat("a", 1000) + `"{2000}`,
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse(src)
			if err == nil {
				t.Fatal("parsed")
			}
			if d := time.Since(start); d > 10*time.Second { // a hang, not a slow machine
				t.Errorf("took %v", d)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error of %d bytes: %.200s", len(err.Error()), err)
			}
		})
	}
}

// TestParseHostileSuggestion: the did-you-mean search does not compare
// long names (edit distance is quadratic in their lengths).
func TestParseHostileSuggestion(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	src := long + "b ::= \"x\"\nroot ::= " + long + "c " + long + "b"
	start := time.Now()
	_, err := Parse(src)
	if err == nil || !strings.Contains(err.Error(), "undefined rule") {
		t.Fatalf("got %.100v, want an undefined rule", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	if len(err.Error()) > 200 {
		t.Errorf("error of %d bytes: %.200s", len(err.Error()), err)
	}
}

// TestParseManyRules: a grammar of many rules parses in time linear in
// its size (placing each rule once cost a scan from the start).
func TestParseManyRules(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	const n = 30000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d \"%s\" | \"x\"\n", i, i+1, strings.Repeat("y", 10))
	}
	fmt.Fprintf(&b, "r%d ::= \"z\"\n", n)
	start := time.Now()
	g, err := Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Rules[len(g.Rules)-1]; r.Line != n+2 || r.Col != 1 {
		t.Errorf("last rule at %d:%d, want %d:1", r.Line, r.Col, n+2)
	}
	if d := time.Since(start); d > 8*time.Second { // quadratic: ~25 s; linear: ~0.1 s
		t.Errorf("%d rules took %v", n, d)
	}
}
