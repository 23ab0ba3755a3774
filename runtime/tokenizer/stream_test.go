package tokenizer_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

func storiesPath(t testing.TB) string {
	t.Helper()
	p, err := llamacpp.SharedPath("models", "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStories260KPromptsMatchLlamaCpp: prompts tokenize for the real
// stories260K model exactly as llama_tokenize does with special tokens added
// (and parsed, for the rows that spell them).
func TestStories260KPromptsMatchLlamaCpp(t *testing.T) {
	path := storiesPath(t)
	tk := load(t, path)
	m := oracle(t, path)
	for _, c := range []struct {
		name, text string
		parse      bool
	}{
		{"empty", "", false},
		{"one space", " ", false},
		{"spaces", "   ", false},
		{"a word", "Once", false},
		{"a sentence", "Once upon a time, there was a little girl named Lily.", false},
		{"leading and trailing spaces", "  Once upon a time  ", false},
		{"newlines", "Once upon a time\n\nThe end.\n", false},
		{"tabs and carriage returns", "a\tb\r\nc", false},
		{"accents", "Café naïve façade Ångström", false},
		{"cyrillic and greek", "Привет мир, γειά σου κόσμε", false},
		{"cjk", "我想在apple工作", false},
		{"emoji", "🦙 llamas 😀👍🏽", false},
		{"zero width joiner", "😶‍🌫️", false},
		{"digits", "3 33 333 3333 1234567890", false},
		{"punctuation", "Hello, world! How are you? (fine) [ok] {x}", false},
		{"contractions", "I'm sure it's what we'd've done, y'all", false},
		{"control characters", "a\x00b\x01c\x7f", false},
		{"invalid utf-8", "a\xffb\xc3(\xe2\x82", false},
		{"bos text unparsed", "<s>Once</s>", false},
		{"bos text parsed", "<s>Once</s>", true},
		{"special tokens mid-text parsed", "Once <s> upon</s> a <unk> time", true},
		{"only special tokens parsed", "<s></s>", true},
		{"special token then spaces parsed", "</s>   x", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := m.Tokenize(c.text, true, c.parse)
			if err != nil {
				t.Fatal(err)
			}
			got := tk.Tokenize(c.text, true, c.parse)
			if !slices.Equal(got, want) {
				t.Errorf("Tokenize(%q):\n got %v\nwant %v", c.text, got, want)
			}
			dw, _ := m.Detokenize(want, false, false)
			if dg := tk.Detokenize(want, false); dg != dw {
				t.Errorf("Detokenize(%v):\n got %q\nwant %q", want, dg, dw)
			}
		})
	}
}

// stream feeds ids one at a time and checks each piece.
func stream(t *testing.T, tk *tokenizer.Tokenizer, ids []int32, special bool) string {
	t.Helper()
	d := tk.NewDecoder(special)
	var b strings.Builder
	for _, id := range ids {
		s := d.Add(id)
		if !utf8.ValidString(s) {
			t.Fatalf("Add(%d) emitted invalid UTF-8 %q (ids %v)", id, s, ids)
		}
		b.WriteString(s)
	}
	s := d.Flush()
	if !utf8.ValidString(s) {
		t.Fatalf("Flush emitted invalid UTF-8 %q", s)
	}
	b.WriteString(s)
	return b.String()
}

// TestDecoderStreamsWhatDetokenizeReturns: feeding ids one by one gives the
// text of whole detokenization (invalid bytes replaced) and never emits
// invalid UTF-8; for tokenized text and for random id sequences, which
// split characters and spaces across tokens in every way.
func TestDecoderStreamsWhatDetokenizeReturns(t *testing.T) {
	paths := append(vocabFiles(t), storiesPath(t))
	for _, path := range paths {
		t.Run(vocabName(path), func(t *testing.T) {
			tk := load(t, path)
			r := rand.New(rand.NewPCG(3, uint64(len(path))))
			check := func(ids []int32, special bool) {
				whole := tk.Detokenize(ids, special)
				got := stream(t, tk, ids, special)
				if want := tokenizer.ValidUTF8(whole); got != want {
					t.Fatalf("streamed %v (special %v):\n got %q\nwant %q", ids, special, got, want)
				}
				if utf8.ValidString(whole) && got != whole {
					t.Fatalf("streamed %q, Detokenize %q", got, whole)
				}
			}
			var texts []string
			if _, err := readInputs(path); err == nil {
				texts, _ = readInputs(path)
			}
			for range 100 {
				texts = append(texts, randomText(r, 40))
			}
			for i, text := range texts {
				check(tk.Tokenize(text, i%2 == 0, i%3 == 0), i%2 == 1)
			}
			// Random ids, weighted toward the awkward ones: bytes, spaces,
			// apostrophes, punctuation, control tokens.
			var awkward []int32
			for id := int32(0); id < int32(tk.NumTokens()); id++ {
				p := tk.TokenToPiece(id, true)
				if len(p) <= 2 || strings.ContainsAny(p, " '?!.,") || !utf8.ValidString(p) {
					awkward = append(awkward, id)
				}
			}
			for range 300 {
				ids := make([]int32, r.IntN(12))
				for i := range ids {
					if r.IntN(3) > 0 && len(awkward) > 0 {
						ids[i] = awkward[r.IntN(len(awkward))]
					} else {
						ids[i] = int32(r.IntN(tk.NumTokens()))
					}
				}
				check(ids, r.IntN(2) == 0)
			}
		})
	}
}

func readInputs(path string) ([]string, error) {
	b, err := osReadFile(path + ".inp")
	if err != nil {
		return nil, err
	}
	return tokenizer.SplitVectorInputs(string(b)), nil
}

// TestDecoderHoldsBackSplitCharacters: a character spelled by byte tokens
// appears only once its last byte has come.
func TestDecoderHoldsBackSplitCharacters(t *testing.T) {
	tk := load(t, storiesPath(t))
	ids := tk.Tokenize("🦙", false, false) // no emoji token: ▁ and four bytes
	d := tk.NewDecoder(false)
	var out []string
	for _, id := range ids {
		out = append(out, d.Add(id))
	}
	out = append(out, d.Flush())
	if strings.Join(out, "") != "🦙" {
		t.Fatalf("pieces %q of %v", out, ids)
	}
	for i, s := range out[:len(out)-2] {
		if strings.Contains(s, "🦙") {
			t.Errorf("piece %d %q: the llama came before its last byte", i, s)
		}
	}
	// An unfinished character at the end comes out as U+FFFD per byte.
	d = tk.NewDecoder(false)
	d.Add(ids[0])
	d.Add(ids[1])
	d.Add(ids[2])
	if s := d.Flush(); s != "\uFFFD\uFFFD" {
		t.Errorf("Flush of two bytes of four: %q", s)
	}
}

// TestDecoderCleansSpacesLikeDetokenize: with CleanSpaces (BPE) the space
// before punctuation is held until the next token decides.
func TestDecoderCleansSpacesLikeDetokenize(t *testing.T) {
	for _, name := range []string{"gpt-2", "bert-bge"} {
		t.Run(name, func(t *testing.T) {
			var path string
			for _, p := range vocabFiles(t) {
				if vocabName(p) == name {
					path = p
				}
			}
			tk := load(t, path)
			if !tk.Vocab().CleanSpaces {
				t.Fatal("expected CleanSpaces")
			}
			for _, text := range []string{"Hello , world !", "it ' s", "we 're here ' ok ' ", "a ' b", "x 'll y 'm z 've", "end ."} {
				ids := tk.Tokenize(text, false, false)
				if got, want := stream(t, tk, ids, false), tk.Detokenize(ids, false); got != want {
					t.Errorf("%q: streamed %q, whole %q", text, got, want)
				}
			}
		})
	}
}
