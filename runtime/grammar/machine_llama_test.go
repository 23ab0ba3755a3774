package grammar

import (
	"fmt"
	"testing"
	"unicode/utf8"
)

// llamaPiece is one input unit of an integration test string, as
// llama.cpp's test reads it: a token written as token(N), or one UTF-8
// code point of text.
type llamaPiece struct {
	tok  int32 // ≥ 0: the token N
	text string
}

// llamaPieces splits s as llama.cpp's test does: 0xFF then a big-endian
// 32-bit id is a token, anything else one code point (invalid UTF-8 is
// read as U+FFFD, as its parse_tokens does).
func llamaPieces(s string) ([]llamaPiece, error) {
	var out []llamaPiece
	for i := 0; i < len(s); {
		if s[i] == 0xFF {
			if i+5 > len(s) {
				return nil, fmt.Errorf("a token encoding cut short at byte %d", i)
			}
			id := int32(uint32(s[i+1])<<24 | uint32(s[i+2])<<16 | uint32(s[i+3])<<8 | uint32(s[i+4]))
			out = append(out, llamaPiece{tok: id})
			i += 5
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, llamaPiece{tok: -1, text: string(r)})
		i += n
	}
	return out, nil
}

// caseVocab is a vocabulary for one integration case: the ids its
// token(N) parts name are tokens with no bytes (only a token element
// matches them), and each code point of its text is a token of its own
// above them, as llama.cpp's test feeds text a code point at a time.
type caseVocab struct {
	v    *Vocab
	text map[string]int32
}

func newCaseVocab(strs []string) (*caseVocab, error) {
	cv := &caseVocab{text: map[string]int32{}}
	var pieces [][]byte
	var all [][]llamaPiece
	maxTok := int32(-1)
	for _, s := range strs {
		ps, err := llamaPieces(s)
		if err != nil {
			return nil, err
		}
		all = append(all, ps)
		for _, p := range ps {
			maxTok = max(maxTok, p.tok)
		}
	}
	if maxTok > 1<<16 {
		return nil, fmt.Errorf("token %d too large for a test vocabulary", maxTok)
	}
	pieces = make([][]byte, maxTok+1)
	for _, ps := range all {
		for _, p := range ps {
			if p.tok < 0 {
				if _, ok := cv.text[p.text]; !ok {
					cv.text[p.text] = int32(len(pieces))
					pieces = append(pieces, []byte(p.text))
				}
			}
		}
	}
	cv.v = NewVocab(pieces, nil)
	return cv, nil
}

// matchLlama feeds s to a fresh matcher piece by piece, checking that
// each piece's token is set in the mask before it is accepted (so the
// masks are held to llama.cpp's cases too), and reports whether the whole
// string is a sentence.
func matchLlama(m *Machine, cv *caseVocab, s string) (bool, error) {
	ps, err := llamaPieces(s)
	if err != nil {
		return false, err
	}
	c := NewMatcher(m, cv.v)
	mask := make([]uint32, cv.v.Words())
	for _, p := range ps {
		tok := p.tok
		if tok < 0 {
			tok = cv.text[p.text]
		}
		merr := c.Mask(mask)
		allowed := merr == nil && mask[tok>>5]&(1<<(tok&31)) != 0
		aerr := c.Accept(tok)
		if allowed != (aerr == nil) {
			return false, fmt.Errorf("token %d (%q): mask says %v (%v), Accept says %v", tok, p.text, allowed, merr, aerr)
		}
		if aerr != nil {
			return false, nil
		}
	}
	return c.Accepting(), nil
}

// TestMachineLlamaIntegration runs the accept/reject strings of
// tests/test-grammar-integration.cpp's test_grammar cases as data: through
// Machine.Accepts (cases without tokens) and, for every case, through a
// Matcher over a vocabulary made from the case's strings, whose masks must
// agree with what Accept takes. No case is left out.
func TestMachineLlamaIntegration(t *testing.T) {
	cases := llamaIntegrationGrammars(t)
	atLeast(t, "test-grammar-integration.cpp test_grammar", len(cases), llamaIntegrationGrams)
	strs := 0
	for _, tc := range cases {
		name := fmt.Sprintf("%s:%d", tc.Name, tc.Line)
		g, err := Parse(tc.Grammar)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		m, err := Compile(g)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cv, err := newCaseVocab(append(append([]string(nil), tc.Pass...), tc.Fail...))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for k, list := range [][]string{tc.Pass, tc.Fail} {
			want := k == 0
			for _, s := range list {
				strs++
				if !tc.Tokens && utf8.ValidString(s) {
					if got := m.Accepts(s); got != want {
						t.Errorf("%s: Accepts(%q) = %v, llama.cpp: %v", name, s, got, want)
					}
				}
				got, err := matchLlama(m, cv, s)
				if err != nil {
					t.Errorf("%s: %q: %v", name, s, err)
				} else if got != want {
					t.Errorf("%s: the matcher takes %q: %v, llama.cpp: %v", name, s, got, want)
				}
			}
		}
	}
	t.Logf("%d strings", strs)
	atLeast(t, "test-grammar-integration.cpp test strings", strs, llamaIntegrationStrings)
}

// llamaIntegrationStrings is how many pass and fail strings the
// test_grammar cases held when this test was written.
const llamaIntegrationStrings = 139
