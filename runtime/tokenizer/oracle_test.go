package tokenizer_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDetokenizeMatchesLlamaCpp: for every test vector, our detokenization
// of the expected ids equals llama.cpp's, with and without special tokens,
// and gives the input back wherever llama.cpp's does.
func TestDetokenizeMatchesLlamaCpp(t *testing.T) {
	for _, path := range vocabFiles(t) {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			m := oracle(t, path)
			inputs, _ := vectors(t, path)
			roundTrips := 0
			for _, in := range inputs {
				for _, addSpecial := range []bool{false, true} {
					ids := tk.Tokenize(in, addSpecial, false)
					for _, special := range []bool{false, true} {
						want, err := m.Detokenize(ids, false, special)
						if err != nil {
							t.Fatal(err)
						}
						got := tk.Detokenize(ids, special)
						if got != want {
							t.Errorf("Detokenize(%v, special=%v) of %q:\n got %q\nwant %q", ids, special, in, got, want)
						}
						if !addSpecial && !special && want == in {
							roundTrips++
						}
					}
				}
			}
			t.Logf("%d of %d inputs round-trip", roundTrips, len(inputs))
		})
	}
}

// TestTokenizeMatchesLlamaCpp compares with llama_tokenize on the vectors
// with every combination of the special flags.
func TestTokenizeMatchesLlamaCpp(t *testing.T) {
	for _, path := range vocabFiles(t) {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			m := oracle(t, path)
			inputs, _ := vectors(t, path)
			extra := []string{"", " ", "<s>", " <s> hi</s>", "<|endoftext|>x", "<|im_start|>user\nhi<|im_end|>\n",
				"[CLS] a [SEP]", "<|begin_of_text|>hello", "a <|end|> b", "<unk>"}
			for _, in := range append(inputs, extra...) {
				for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					want, err := m.Tokenize(in, flags[0], flags[1])
					if err != nil {
						t.Fatal(err)
					}
					got := tk.Tokenize(in, flags[0], flags[1])
					if !slices.Equal(got, want) {
						t.Errorf("Tokenize(%q, addSpecial=%v, parseSpecial=%v):\n got %v\nwant %v", in, flags[0], flags[1], got, want)
					}
				}
			}
		})
	}
}

// alphabet is what random strings are made of: the characters on which
// pre-tokenizers disagree (letters of several scripts and cases, digits,
// marks, punctuation, symbols, every kind of whitespace, contractions,
// CJK, emoji), weighted toward ASCII.
var alphabet = []string{
	"a", "b", "e", "l", "m", "r", "s", "t", "v", "d", "x", "A", "B", "S", "T", "L", "Z",
	"0", "1", "2", "3", "7", "9", " ", " ", " ", " ", "  ", "\n", "\n\n", "\r", "\t", "\v", "\f",
	"'", "'s", "'S", "'ll", "'Re", "'ve", "'d", "'m", "'t",
	".", ",", "!", "?", "-", "_", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "|", "$", "+", "=", "^", "`", "~", "@", "#", "%", "&", "*", ":", ";", "\"",
	"é", "É", "ü", "ß", "ñ", "ø", "Ж", "ж", "Ω", "λ", "ǅ", "ʰ", "ا", "ب", "ह", "ि", "\u0301", "\u0308", "\u093f",
	"中", "文", "日", "本", "語", "한", "국", "ㄱ", "あ", "ア", "ｱ", "。", "，", "、", "！", "：", "…", "“", "”", "‘", "’", "—",
	"١", "٣", "½", "²", "Ⅻ", "€", "£", "©", "±", "→", "∑", "🦙", "😀", "🚀", "👍🏽", "\u200d", "\u00a0", "\u2009", "\u3000", "\u2028", "\u0085",
	"ﬁ", "Å", "ǈ", "ᾈ", "ſ", "K", "İ", "\u00ad", "\ufeff", "\x7f", "\x01", "\x00",
	"\u0378", "\u05fc", "\U000e0001", "\ue000", // unassigned, a tag, private use
	"<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "[CLS]", "[SEP]", "[MASK]", "<|end|>",
}

func randomText(r *rand.Rand, maxLen int) string {
	var b strings.Builder
	n := r.IntN(maxLen + 1)
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// TestRandomStringsMatchLlamaCpp tokenizes seeded random strings with our
// tokenizer and llama.cpp's and demands the same ids.
func TestRandomStringsMatchLlamaCpp(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	for _, path := range vocabFiles(t) {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			m := oracle(t, path)
			r := rand.New(rand.NewPCG(1, uint64(len(path))))
			fails := 0
			for i := range n {
				in := randomText(r, 40)
				if i%3 == 2 {
					in = randomBytes(r, 40)
				}
				add, parse := i%2 == 0, i%5 < 2
				want, err := m.Tokenize(in, add, parse)
				if err != nil {
					t.Fatal(err)
				}
				got := tk.Tokenize(in, add, parse)
				if !slices.Equal(got, want) {
					if fails++; fails <= 5 {
						t.Errorf("Tokenize(%q, %v, %v):\n got %v\nwant %v", in, add, parse, got, want)
					}
				}
				dw, _ := m.Detokenize(want, false, parse)
				if dg := tk.Detokenize(want, parse); dg != dw {
					if fails++; fails <= 5 {
						t.Errorf("Detokenize(%v):\n got %q\nwant %q", want, dg, dw)
					}
				}
			}
			if fails > 0 {
				t.Errorf("%d of %d random strings differ", fails, n)
			}
		})
	}
}

var _ = fmt.Sprint
var _ = utf8.ValidString

// TestVocabMatchesLlamaCpp: token texts, scores and attributes after
// llama.cpp's fix-ups, the special ids and the end-of-generation set.
func TestVocabMatchesLlamaCpp(t *testing.T) {
	for _, path := range vocabFiles(t) {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			m := oracle(t, path)
			v := tk.Vocab()
			if m.NVocab() != len(v.Tokens) {
				t.Fatalf("%d tokens, llama.cpp %d", len(v.Tokens), m.NVocab())
			}
			bad := 0
			for id := int32(0); id < int32(len(v.Tokens)); id++ {
				if got, want := uint32(v.Attrs[id]), uint32(m.TokenAttr(id)); got != want {
					if bad++; bad <= 5 {
						t.Errorf("token %d %q: attr %#x, llama.cpp %#x", id, v.Tokens[id], got, want)
					}
				}
				if v.Tokens[id] != m.TokenText(id) {
					t.Errorf("token %d: %q, llama.cpp %q", id, v.Tokens[id], m.TokenText(id))
				}
				if v.Scores != nil && v.Scores[id] != m.TokenScore(id) {
					t.Errorf("token %d: score %v, llama.cpp %v", id, v.Scores[id], m.TokenScore(id))
				}
				if tk.IsEOG(id) != m.IsEOG(id) {
					t.Errorf("token %d %q: EOG %v, llama.cpp %v", id, v.Tokens[id], tk.IsEOG(id), m.IsEOG(id))
				}
			}
			for _, c := range []struct {
				name      string
				got, want int32
			}{{"BOS", v.BOS, m.BOS()}, {"EOS", v.EOS, m.EOS()}} {
				if c.got != c.want {
					t.Errorf("%s %d, llama.cpp %d", c.name, c.got, c.want)
				}
			}
			if v.EOT != m.EOT() {
				// Where several tokens could be EOT, llama.cpp's pick
				// depends on its hash map's order.
				t.Logf("EOT %d %q, llama.cpp %d", v.EOT, text(v.Tokens, v.EOT), m.EOT())
			}
			if v.AddBOS != m.AddBOS() || v.AddEOS != m.AddEOS() {
				t.Errorf("add BOS/EOS %v/%v, llama.cpp %v/%v", v.AddBOS, v.AddEOS, m.AddBOS(), m.AddEOS())
			}
		})
	}
}

func text(toks []string, id int32) string {
	if id < 0 {
		return ""
	}
	return toks[id]
}
