package jsonschema

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/internal/cppcases"
	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
	"github.com/akunu-dev/akunu/runtime/grammar"
)

// The counts found when these tests were written: fewer means the
// extractor or the file broke, and the test fails rather than pass on less.
const (
	wantConverterCases   = 81
	wantIntegrationCases = 32
)

// Cases of test-json-schema-to-grammar.cpp whose outcome differs from
// llama.cpp's on purpose, by name, with the reason. Each is still run: it
// must fail here (a listed case that starts converting is reported).
var refusedConverterCases = map[string]string{
	"unanchored regexp":                      "llama.cpp degrades a pattern without ^...$ to any string; dropping a keyword silently is against our rules, so it is an error",
	"array with empty items and prefixItems": "prefixItems as one schema beside items: llama.cpp keeps items and drops prefixItems; we refuse the ambiguity rather than drop a keyword",
	"unsupported regexp in a property":       "llama.cpp degrades a lookahead to any string; an unsupported regex feature is an error here",
}

// Cases where llama.cpp's grammar admits more than the schema allows, so
// only ours ⊆ llama.cpp's is checked (our samples must be accepted by its
// grammar), with the reason.
var llamaLooser = map[string]string{
	"max -5":                            "llama.cpp admits leading zeros after the sign (-064), not JSON",
	"regexp with unsupported shorthand": `llama.cpp degrades \w to any string; we honor \w`,
}

// Cases whose additional keys llama.cpp spells loosely both ways: its
// class [^"a] admits raw control characters and a lone backslash (not
// JSON), a backslash there is taken as a character, not an escape (it
// refuses the key "\\", admits "\"), and it refuses a key that is a
// proper prefix of a declared one ("an" beside "and"). Its samples that
// are JSON without a backslash must be ours; ours are not checked.
var llamaKeyQuirk = map[string]bool{
	"required + additional props":            true,
	"optional + additional props":            true,
	"required + optional + additional props": true,
	"optional props with common prefix":      true,
	"optional props with empty name":         true,
}

// Cases where llama.cpp's grammar admits less than the schema allows, so
// only llama.cpp's ⊆ ours is checked, with the reason.
var llamaStricter = map[string]string{
	"mix of allOf, anyOf and $ref (similar to https://json.schemastore.org/tsconfig.json)": "llama.cpp makes the properties of allOf's members required; the schema requires none",
}

// llamaRoots names the start rule of llama.cpp's expected grammar where it
// is not root: a property named "" made llama.cpp name its object root0
// and give root to the property's value.
var llamaRoots = map[string]string{
	"optional props with empty name": "root0",
}

// Cases of test-grammar-integration.cpp's test_schema we refuse, by name.
var refusedIntegrationCases = map[string]string{
	"required props": `uses "uniqueItems" and "exclusiveMinimum" on a number, which llama.cpp ignores; we refuse keywords we cannot honor`,
}

type converterCase struct {
	name, schema, grammar string
	fail                  bool
	line                  int
}

func converterCases(t *testing.T) []converterCase {
	src := llamaSource(t, "tests/test-json-schema-to-grammar.cpp")
	if src == "" {
		return nil
	}
	calls, err := cppcases.FileCalls(src, "test")
	if err != nil {
		t.Fatalf("test-json-schema-to-grammar.cpp: %v", err)
	}
	var out []converterCase
	for _, c := range calls {
		if len(c.Args) != 1 || !c.Args[0].IsList || len(c.Args[0].List) != 4 {
			t.Fatalf("line %d: test(...) is not {status, name, schema, grammar}", c.Line)
		}
		l := c.Args[0].List
		st := ""
		if len(l[0].Toks) == 1 && l[0].Toks[0].Kind == cppcases.Ident {
			st = l[0].Toks[0].Text
		}
		if (st != "SUCCESS" && st != "FAILURE") || !l[1].IsStr || !l[2].IsStr || !l[3].IsStr {
			t.Fatalf("line %d: test(...) is not {status, name, schema, grammar}", c.Line)
		}
		out = append(out, converterCase{l[1].Str, l[2].Str, l[3].Str, st == "FAILURE", l[0].Line})
	}
	if len(out) < wantConverterCases {
		t.Fatalf("test-json-schema-to-grammar.cpp: extracted %d cases, fewer than the %d found when this test was written", len(out), wantConverterCases)
	}
	return out
}

// sameLanguage samples strings of each grammar and requires the other to
// accept them; it returns a description of the first difference, or "".
func sameLanguage(t *testing.T, want, got *grammar.Machine, seed uint64, name string) string {
	t.Helper()
	for _, p := range []struct {
		from, to *grammar.Machine
		dir      string
		skip     bool
	}{
		{want, got, "llama.cpp's grammar makes %q, ours refuses it", llamaLooser[name] != ""},
		{got, want, "our grammar makes %q, llama.cpp's refuses it", llamaStricter[name] != ""},
	} {
		if p.skip {
			continue
		}
		quirk := llamaKeyQuirk[name]
		if quirk && p.from == got {
			continue
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		made := 0
		for i := 0; i < 40; i++ {
			s, ok := p.from.Sample(rng, 300)
			if !ok {
				continue
			}
			if quirk && (!json.Valid([]byte(s)) || strings.Contains(s, `\`)) {
				continue
			}
			made++
			if !p.to.Accepts(s) {
				return strings.ReplaceAll(p.dir, "%q", quote(s))
			}
		}
		if made == 0 {
			return "no sample within 300 bytes from " + strings.Fields(p.dir)[0] + " grammar"
		}
	}
	return ""
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return "`" + s + "`"
}

func compile(t *testing.T, what, src, root string) *grammar.Machine {
	t.Helper()
	g, err := grammar.ParseRoot(src, root)
	if err != nil {
		t.Errorf("%s: does not parse: %v\n%s", what, err, src)
		return nil
	}
	m, err := grammar.Compile(g)
	if err != nil {
		t.Errorf("%s: does not compile: %v", what, err)
		return nil
	}
	return m
}

// TestLlamaConverterCases runs the cases of llama.cpp's converter test as
// data, judged by language: each grammar's samples must be accepted by the
// other's, and a schema llama.cpp refuses is refused here.
func TestLlamaConverterCases(t *testing.T) {
	cases := converterCases(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ours, err := ToGBNF([]byte(tc.schema), Options{})
			if why, ok := refusedConverterCases[tc.name]; ok {
				if err == nil {
					t.Errorf("line %d: listed as refused (%s) but converts now: take it off the list", tc.line, why)
				}
				return
			}
			if tc.fail {
				if err == nil {
					t.Errorf("line %d: llama.cpp refuses this schema, we convert it:\n%s", tc.line, ours)
				}
				return
			}
			if err != nil {
				t.Fatalf("line %d: %v", tc.line, err)
			}
			if g, err := grammar.Parse(ours); err != nil || len(g.Warnings) > 0 {
				t.Errorf("line %d: our grammar: %v %v (the converter writes only rules it uses)", tc.line, err, g.Warnings)
			}
			root := "root"
			if r := llamaRoots[tc.name]; r != "" {
				root = r
			}
			want := compile(t, "llama.cpp's expected grammar", tc.grammar, root)
			got := compile(t, "our grammar", ours, "root")
			if want == nil || got == nil {
				return
			}
			if d := sameLanguage(t, want, got, uint64(i), tc.name); d != "" {
				t.Errorf("line %d: %s\nours:\n%s\nllama.cpp's:\n%s", tc.line, d, ours, tc.grammar)
			}
		})
	}
	listed := []string{}
	for _, list := range []map[string]string{refusedConverterCases, llamaLooser, llamaStricter, llamaRoots} {
		for name := range list {
			listed = append(listed, name)
		}
	}
	for name := range llamaKeyQuirk {
		listed = append(listed, name)
	}
	for _, name := range listed {
		if !hasCase(cases, name) && len(cases) > 0 {
			t.Errorf("listed case %q is not in the file any more", name)
		}
	}
}

func hasCase(cases []converterCase, name string) bool {
	for _, c := range cases {
		if c.name == name {
			return true
		}
	}
	return false
}

// TestLlamaIntegrationSchemas runs test_schema of llama.cpp's grammar
// integration test: each passing string must be accepted by our grammar,
// each failing string refused.
func TestLlamaIntegrationSchemas(t *testing.T) {
	src := llamaSource(t, "tests/test-grammar-integration.cpp")
	if src == "" {
		return
	}
	calls, err := cppcases.FileCalls(src, "test_schema")
	if err != nil {
		t.Fatalf("test-grammar-integration.cpp: %v", err)
	}
	if len(calls) < wantIntegrationCases {
		t.Fatalf("test-grammar-integration.cpp: extracted %d test_schema cases, fewer than the %d found when this test was written", len(calls), wantIntegrationCases)
	}
	strs := func(v cppcases.Val) ([]string, bool) {
		var out []string
		for _, e := range v.List {
			if !e.IsStr {
				return nil, false
			}
			out = append(out, e.Str)
		}
		return out, v.IsList
	}
	seen := map[string]bool{}
	for _, c := range calls {
		args := c.Args
		if len(args) != 4 || !args[0].IsStr || !args[1].IsStr {
			t.Fatalf("line %d: test_schema(...) is not (name, schema, passing, failing)", c.Line)
		}
		name, schema := args[0].Str, args[1].Str
		pass, ok1 := strs(args[2])
		fail, ok2 := strs(args[3])
		if !ok1 || !ok2 {
			t.Fatalf("line %d: test_schema(...)'s strings are not lists of literals", c.Line)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			g, err := Grammar([]byte(schema), Options{})
			if why, ok := refusedIntegrationCases[name]; ok {
				if err == nil {
					t.Errorf("line %d: listed as refused (%s) but converts now", c.Line, why)
				}
				return
			}
			if err != nil {
				t.Fatalf("line %d: %v", c.Line, err)
			}
			m, err := grammar.Compile(g)
			if err != nil {
				t.Fatalf("line %d: compile: %v", c.Line, err)
			}
			for _, s := range pass {
				if !m.Accepts(s) {
					t.Errorf("line %d: refuses %s", c.Line, quote(s))
				}
			}
			for _, s := range fail {
				if m.Accepts(s) {
					t.Errorf("line %d: accepts %s", c.Line, quote(s))
				}
			}
		})
	}
	for name := range refusedIntegrationCases {
		if !seen[name] {
			t.Errorf("refused case %q is not in the file any more", name)
		}
	}
}

// llamaSource reads a file of llama.cpp's pinned source, or reports the
// missing source through proof.Missing.
func llamaSource(t *testing.T, rel string) string {
	t.Helper()
	src, err := llamacpp.SourceFile(rel)
	if errors.Is(err, llamacpp.ErrNotInstalled) {
		proof.Missing(t, "llama.cpp source "+rel, err.Error())
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}
