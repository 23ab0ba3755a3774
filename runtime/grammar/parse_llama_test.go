package grammar

import (
	"github.com/akunu-dev/akunu/internal/cppcases"

	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"unicode/utf8"
)

// Counts of cases the extractor found in the pinned llama.cpp source when
// these tests were written; fewer means the extractor or the file broke.
const (
	llamaParserFailures    = 6
	llamaParserParsings    = 17
	llamaIntegrationGrams  = 14
	llamaGrammarFilesCount = 8
)

// TestParseLlamaParserCases runs tests/test-grammar-parser.cpp as data:
// every verify_failure grammar fails, every verify_parsing grammar parses
// to the same symbol table and, rule by rule, the same elements (llama.cpp's
// flat element encoding decoded into alternatives of code-point ranges).
func TestParseLlamaParserCases(t *testing.T) {
	const file = "tests/test-grammar-parser.cpp"
	fails := llamaFileCalls(t, file, "verify_failure")
	parses := llamaFileCalls(t, file, "verify_parsing")
	atLeast(t, file+" verify_failure", len(fails), llamaParserFailures)
	atLeast(t, file+" verify_parsing", len(parses), llamaParserParsings)
	for _, c := range fails {
		t.Run(fmt.Sprintf("line %d fails", c.Line), func(t *testing.T) {
			if len(c.Args) != 1 || !c.Args[0].IsStr {
				t.Fatalf("%s:%d: verify_failure's argument is not a string", file, c.Line)
			}
			if g, err := Parse(c.Args[0].Str); err == nil {
				t.Errorf("%q parsed, llama.cpp refuses it:\n%s", c.Args[0].Str, g)
			}
		})
	}
	for _, c := range parses {
		t.Run(fmt.Sprintf("line %d parses as llama.cpp", c.Line), func(t *testing.T) {
			if len(c.Args) != 3 || !c.Args[0].IsStr || !c.Args[1].IsList || !c.Args[2].IsList {
				t.Fatalf("%s:%d: verify_parsing not of the shape (grammar, {symbols}, {elements})", file, c.Line)
			}
			src := c.Args[0].Str
			wantSyms, err := llamaSymbols(c.Args[1].List)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, c.Line, err)
			}
			wantRules, err := llamaRules(c.Args[2].List)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, c.Line, err)
			}
			g, err := Parse(src)
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			gotSyms := map[string]int{}
			for id, r := range g.Rules {
				gotSyms[r.Name] = id
			}
			if !reflect.DeepEqual(gotSyms, wantSyms) {
				t.Fatalf("%q: symbols\n got %v\nwant %v", src, sortedSyms(gotSyms), sortedSyms(wantSyms))
			}
			if len(g.Rules) != len(wantRules) {
				t.Fatalf("%q: %d rules, llama.cpp has %d", src, len(g.Rules), len(wantRules))
			}
			for id, want := range wantRules {
				got := g.Rules[id].Alts
				if !equalAlts(got, want) {
					t.Errorf("%q: rule %s (%d)\n got %v\nwant %v", src, g.Rules[id].Name, id, got, want)
				}
			}
		})
	}
}

func sortedSyms(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+strconv.Itoa(v))
	}
	sort.Strings(out)
	return out
}

func equalAlts(a, b [][]Elem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			x, y := a[i][j], b[i][j]
			if x.Kind != y.Kind || x.Rule != y.Rule || x.Token != y.Token || x.Not != y.Not || x.Text != y.Text ||
				len(x.Ranges) != len(y.Ranges) || len(x.Ranges) > 0 && !reflect.DeepEqual(x.Ranges, y.Ranges) {
				return false
			}
		}
	}
	return true
}

// llamaSymbols reads {{"name", id}, ...}.
func llamaSymbols(list []cppcases.Val) (map[string]int, error) {
	out := map[string]int{}
	for _, it := range list {
		if !it.IsList || len(it.List) != 2 || !it.List[0].IsStr || len(it.List[1].Toks) != 1 {
			return nil, fmt.Errorf("line %d: a symbol not of the shape {\"name\", id}", it.Line)
		}
		id, err := strconv.Atoi(it.List[1].Toks[0].Text)
		if err != nil {
			return nil, fmt.Errorf("line %d: symbol id: %v", it.Line, err)
		}
		out[it.List[0].Str] = id
	}
	return out, nil
}

// llamaRules decodes llama.cpp's flat {{TYPE, value}, ...} encoding: rules
// end with END, alternatives are split by ALT, a CHAR or CHAR_NOT starts a
// class that CHAR_RNG_UPPER and CHAR_ALT extend.
func llamaRules(list []cppcases.Val) ([][][]Elem, error) {
	var rules [][][]Elem
	var alts [][]Elem
	var alt []Elem
	neg := false // the last Chars element of alt is negated, not yet resolved
	flush := func() {
		if n := len(alt); n > 0 && alt[n-1].Kind == Chars {
			alt[n-1].Ranges = normalize(alt[n-1].Ranges)
			if neg {
				alt[n-1].Ranges = complement(alt[n-1].Ranges)
			}
		}
		neg = false
	}
	for _, it := range list {
		if !it.IsList || len(it.List) != 2 || len(it.List[0].Toks) != 1 || len(it.List[1].Toks) != 1 {
			return nil, fmt.Errorf("line %d: an element not of the shape {TYPE, value}", it.Line)
		}
		typ := it.List[0].Toks[0].Text
		vt := it.List[1].Toks[0]
		var v int64
		switch vt.Kind {
		case cppcases.Char:
			r, n := utf8.DecodeRuneInString(vt.Text)
			if n == 0 || n != len(vt.Text) {
				return nil, fmt.Errorf("line %d: character literal %q is not one character", it.Line, vt.Text)
			}
			v = int64(r)
		case cppcases.Number:
			n, err := strconv.ParseInt(vt.Text, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: element value: %v", it.Line, err)
			}
			v = n
		default:
			return nil, fmt.Errorf("line %d: element value %q", it.Line, vt.Text)
		}
		last := func() (*Elem, error) {
			if n := len(alt); n > 0 && alt[n-1].Kind == Chars && len(alt[n-1].Ranges) > 0 {
				return &alt[n-1], nil
			}
			return nil, fmt.Errorf("line %d: %s without a character before it", it.Line, typ)
		}
		switch typ {
		case "LLAMA_GRETYPE_END":
			flush()
			rules = append(rules, append(alts, alt))
			alts, alt = nil, nil
		case "LLAMA_GRETYPE_ALT":
			flush()
			alts = append(alts, alt)
			alt = nil
		case "LLAMA_GRETYPE_CHAR", "LLAMA_GRETYPE_CHAR_NOT":
			flush()
			alt = append(alt, Elem{Kind: Chars, Ranges: []Range{{rune(v), rune(v)}}})
			neg = typ == "LLAMA_GRETYPE_CHAR_NOT"
		case "LLAMA_GRETYPE_CHAR_ANY":
			flush()
			alt = append(alt, Elem{Kind: Chars, Ranges: anyChar()})
		case "LLAMA_GRETYPE_CHAR_RNG_UPPER":
			e, err := last()
			if err != nil {
				return nil, err
			}
			e.Ranges[len(e.Ranges)-1].Hi = rune(v)
		case "LLAMA_GRETYPE_CHAR_ALT":
			e, err := last()
			if err != nil {
				return nil, err
			}
			e.Ranges = append(e.Ranges, Range{rune(v), rune(v)})
		case "LLAMA_GRETYPE_RULE_REF":
			flush()
			alt = append(alt, Elem{Kind: Ref, Rule: int(v)})
		case "LLAMA_GRETYPE_TOKEN", "LLAMA_GRETYPE_TOKEN_NOT":
			flush()
			alt = append(alt, Elem{Kind: Token, Token: int32(v), Not: typ == "LLAMA_GRETYPE_TOKEN_NOT"})
		default:
			return nil, fmt.Errorf("line %d: unknown element type %s", it.Line, typ)
		}
	}
	if len(alts) > 0 || len(alt) > 0 {
		return nil, errors.New("elements after the last END")
	}
	return rules, nil
}

// TestParseLlamaIntegrationGrammars: the grammars of
// tests/test-grammar-integration.cpp parse, and those of its
// test_failure_* functions fail as llama.cpp's tests expect.
func TestParseLlamaIntegrationGrammars(t *testing.T) {
	const file = "tests/test-grammar-integration.cpp"
	cases := llamaIntegrationGrammars(t)
	atLeast(t, file+" test_grammar", len(cases), llamaIntegrationGrams)
	for _, c := range cases {
		if _, err := Parse(c.Grammar); err != nil {
			t.Errorf("%s:%d %q: %v", file, c.Line, c.Name, err)
		}
	}
	vars := llamaFuncVars(t, file)
	get := func(fn, name string) string {
		t.Helper()
		v, ok := vars[fn][name]
		if !ok {
			t.Fatalf("%s: no string %s in %s (the extractor or the file changed)", file, name, fn)
		}
		return v.Str
	}
	for _, tc := range []struct {
		fn, v, root string
		ok          bool
		is          error
	}{
		{"test_failure_missing_root", "grammar_str", "root", false, nil},
		{"test_failure_missing_reference", "grammar_str", "root", false, nil},
		{"test_failure_left_recursion", "simple_str", "root", false, ErrLeftRecursion},
		{"test_failure_left_recursion", "medium_str", "root", false, ErrLeftRecursion},
		{"test_failure_left_recursion", "hard_str", "root", false, ErrLeftRecursion},
		{"test_failure_left_recursion", "hardest_str", "root", false, ErrLeftRecursion},
		{"test_failure_missing_root_symbol", "grammar_str", "nonexistent", false, nil},
		{"test_custom_root_symbol_check", "custom_root_grammar_str", "root", false, nil},
		{"test_custom_root_symbol_check", "custom_root_grammar_str", "foobar", true, nil},
	} {
		src := get(tc.fn, tc.v)
		_, err := ParseRoot(src, tc.root)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s %s (root %s): %v", tc.fn, tc.v, tc.root, err)
		case !tc.ok && err == nil:
			t.Errorf("%s %s (root %s) parsed; llama.cpp refuses it", tc.fn, tc.v, tc.root)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s %s: %v, want %v", tc.fn, tc.v, err, tc.is)
		}
	}
}

// TestParseLlamaGrammarFiles: llama.cpp's grammars/*.gbnf parse, and
// their String() parses back to the same text.
func TestParseLlamaGrammarFiles(t *testing.T) {
	files := llamaGrammarFiles(t)
	atLeast(t, "grammars/*.gbnf", len(files), llamaGrammarFilesCount)
	for name, src := range files {
		g, err := Parse(src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, w := range g.Warnings {
			t.Logf("%s: %v", name, w)
		}
		roundTrip(t, name, g)
	}
}

// roundTrip checks that g.String() parses back to a grammar that renders
// the same and has the same rules.
func roundTrip(t *testing.T, what string, g *Grammar) {
	t.Helper()
	s := g.String()
	g2, err := Parse(s)
	if err != nil {
		t.Errorf("%s: String() does not parse back: %v\n%s", what, err, s)
		return
	}
	if s2 := g2.String(); s2 != s {
		t.Errorf("%s: String() of the reparse differs:\n%s\n---\n%s", what, s, s2)
	}
	if err := sameGrammar(g, g2); err != nil {
		t.Errorf("%s: the round trip changed the grammar: %v\n%s", what, err, s)
	}
}

// sameGrammar reports how a and b differ as grammars, up to the names and
// numbering of rules: walking both from their roots, each rule of a maps
// to one of b with the same alternatives of the same elements. Rules the
// root does not reach are paired by the names String gives them.
func sameGrammar(a, b *Grammar) error {
	if len(a.Rules) != len(b.Rules) {
		return fmt.Errorf("%d rules, then %d", len(a.Rules), len(b.Rules))
	}
	to := map[int]int{}
	from := map[int]int{}
	var queue []int
	pair := func(x, y int) error {
		if y2, ok := to[x]; ok {
			if y2 != y {
				return fmt.Errorf("rule %s maps to both %s and %s", a.Rules[x].Name, b.Rules[y2].Name, b.Rules[y].Name)
			}
			return nil
		}
		if x2, ok := from[y]; ok {
			return fmt.Errorf("rules %s and %s both map to %s", a.Rules[x2].Name, a.Rules[x].Name, b.Rules[y].Name)
		}
		to[x], from[y] = y, x
		queue = append(queue, x)
		return nil
	}
	if err := pair(a.Root, b.Root); err != nil {
		return err
	}
	// Unreached rules pair by the names String gives them.
	byName := map[string]int{}
	for id, n := range b.printNames() {
		byName[n] = id
	}
	aNames := a.printNames()
	for next := 0; ; next++ {
		for ; len(queue) > 0; queue = queue[1:] {
			x := queue[0]
			y := to[x]
			ra, rb := a.Rules[x], b.Rules[y]
			if len(ra.Alts) != len(rb.Alts) {
				return fmt.Errorf("rule %s: %d alternatives, then %d", ra.Name, len(ra.Alts), len(rb.Alts))
			}
			for i := range ra.Alts {
				if len(ra.Alts[i]) != len(rb.Alts[i]) {
					return fmt.Errorf("rule %s alternative %d: %d elements, then %d", ra.Name, i, len(ra.Alts[i]), len(rb.Alts[i]))
				}
				for j, ea := range ra.Alts[i] {
					eb := rb.Alts[i][j]
					if ea.Kind == Ref && eb.Kind == Ref {
						if err := pair(ea.Rule, eb.Rule); err != nil {
							return err
						}
						continue
					}
					if ea.Kind != eb.Kind || ea.Token != eb.Token || ea.Not != eb.Not || ea.Text != eb.Text || !reflect.DeepEqual(ea.Ranges, eb.Ranges) {
						return fmt.Errorf("rule %s alternative %d element %d: %+v, then %+v", ra.Name, i, j, ea, eb)
					}
				}
			}
		}
		for ; next < len(a.Rules); next++ {
			if _, done := to[next]; !done {
				break
			}
		}
		if next == len(a.Rules) {
			return nil
		}
		y, ok := byName[aNames[next]]
		if !ok {
			return fmt.Errorf("unreached rule %s is gone", aNames[next])
		}
		if err := pair(next, y); err != nil {
			return err
		}
		next--
	}
}
