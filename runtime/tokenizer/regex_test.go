package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func splitWith(t *testing.T, pat string, useEngine bool, text string) []string {
	t.Helper()
	var st splitText
	st.cps, text = runes(nil, text)
	for i, r := range st.cps {
		st.fl = append(st.fl, flagsOf(r))
		if r >= 0x80 && st.fl[i]&cWhitespace != 0 {
			r = '\v'
		}
		st.syms = append(st.syms, r)
	}
	var rule splitRule
	if useEngine {
		re, err := compileRegex(pat)
		if err != nil {
			t.Fatal(err)
		}
		rule.re = re
	} else {
		rule.custom = customSplitters[pat]
	}
	var out []string
	start := 0
	for _, n := range preSplit(&st, []splitRule{rule}, nil) {
		out = append(out, string(st.cps[start:start+int(n)]))
		start += int(n)
	}
	return out
}

// TestRegexEngineFollowsECMAScript checks the matching rules the patterns
// depend on.
func TestRegexEngineFollowsECMAScript(t *testing.T) {
	for _, c := range []struct {
		pat, text string
		want      []string
	}{
		{"a|ab", "ab", []string{"a", "b"}},                           // first alternative, not longest
		{"ab|a", "ab", []string{"ab"}},                               //
		{"\\s+(?!\\S)|\\s+", "a   b", []string{"a", "  ", " ", "b"}}, // greedy gives back one
		{"\\s+(?!\\S)", "x  ", []string{"x", "  "}},                  // at the end nothing follows
		{"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", " ab1", []string{" ab", "1"}},
		{"\\p{N}{1,3}", "12345", []string{"123", "45"}},
		{"((?=[\\p{L}])([^a-z]))+", "ABcD", []string{"AB", "c", "D"}},
		{"(?=(\\d{3})+(?!\\d))", "1234567", []string{"1", "234", "567"}},
		{"\\s+$", "a  b  ", []string{"a  b", "  "}},
		{"(IMGIMG)((A|B|C){1,4})Z", "xIMGIMGABZy", []string{"x", "IMGIMGABZ", "y"}},
		{"([\\t\\n]|    |  )", "a     b", []string{"a", "    ", " b"}},
		{" ?[^(\\s|.,!?…。，、।۔،)]+", "hi there, (x)", []string{"hi", " there", ", (", "x", ")"}},
		{"\\p{Lu}+", "abc", []string{"abc"}}, // the letter subcategories are \p{L}, as in llama.cpp
		{"[\\p{P}!-/:-@\\[-`{-~]", "a-b", []string{"a", "-", "b"}},
		{"\\s?\\p{L}+", "a\u3000b", []string{"a", "\u3000b"}},    // non-ASCII space is \s
		{"[　-。]+", "\u3000\u3001", []string{"\u3000", "\u3001"}}, // but no longer itself
	} {
		if got := splitWith(t, c.pat, true, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s on %q: %q, want %q", c.pat, c.text, got, c.want)
		}
	}
}

func TestRegexCompileErrors(t *testing.T) {
	for _, pat := range []string{"(a", "[a", "a{2", "a*?", "(?<=a)b", "\\p{Xx}", "[b-a]", "(a*)*", "\\q"} {
		if _, err := compileRegex(pat); err == nil {
			t.Errorf("%q compiled", pat)
		}
	}
}

// TestEveryPatternCompiles: every rule of the table is a custom splitter or
// a pattern the engine accepts.
func TestEveryPatternCompiles(t *testing.T) {
	for _, p := range preTokenizers {
		for _, pat := range p.rules {
			if _, err := compileRule(pat); err != nil {
				t.Errorf("%s: %v", p.names[0], err)
			}
		}
	}
}

// TestCustomSplittersAgreeWithTheEngine runs the hand-written splitters
// whose behaviour is what their pattern says against the engine on the
// same pattern: two independent readings of one regex.
func TestCustomSplittersAgreeWithTheEngine(t *testing.T) {
	alphabet := []string{"a", "B", "z", "é", "Ж", "ǅ", "中", "\u0301", "1", "٣", "½", " ", " ", "  ", "\n", "\r", "\t", "\u00a0", "\u3000",
		"'", "s", "S", "re", "VE", "ll", "d", "M", ".", ",", "!", "-", "/", "$", "€", "😀", "\x00", "\x7f"}
	r := rand.New(rand.NewPCG(11, 12))
	for _, pat := range []string{patGPT2, patLlama3, patQwen2, patQwen35, patThousands, patNewlines} {
		for range 2000 {
			var b strings.Builder
			for range r.IntN(20) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			text := b.String()
			if pat == patThousands {
				text = strings.Map(func(c rune) rune {
					if c < '0' || c > '9' {
						if r.IntN(3) > 0 {
							return '0' + rune(r.IntN(10))
						}
					}
					return c
				}, text)
			}
			custom, engine := splitWith(t, pat, false, text), splitWith(t, pat, true, text)
			if !slices.Equal(custom, engine) {
				t.Fatalf("%.40s on %q:\ncustom %q\nengine %q", pat, text, custom, engine)
			}
		}
	}
}
