package tokenizer_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
)

// randomBytes is up to n bytes, half printable ASCII, half anything but
// the lead bytes of sequences above U+10FFFF (on which llama.cpp throws).
func randomBytes(r *rand.Rand, n int) string {
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		for {
			c := byte(r.IntN(256))
			if c >= 0xF4 && c <= 0xF7 {
				continue
			}
			if r.IntN(2) == 0 {
				c = byte(0x20 + r.IntN(0x60))
			}
			b[i] = c
			break
		}
	}
	return string(b)
}

// TestLongRandomMatchesLlamaCpp is the random comparison at length: 1500
// strings (a third of them raw bytes) per vocabulary and for twenty
// pre-tokenizers. It takes a minute, so it runs only with
// AKUNU_LONG_TESTS=1.
func TestLongRandomMatchesLlamaCpp(t *testing.T) {
	if os.Getenv("AKUNU_LONG_TESTS") == "" {
		t.Skip("AKUNU_LONG_TESTS=1 runs it")
	}
	paths := append(vocabFiles(t), storiesPath(t))
	small := smallGPT2(t, 5000)
	for _, pre := range []string{"gpt-4o", "deepseek-llm", "chameleon", "tekken", "youtu", "exaone-moe", "default", "falcon", "tiny_aya", "afmoe", "kimi-k2", "jais-2", "bailingmoe", "deepseek-v3", "poro-chat", "spark2_5", "minicpm5", "superbpe", "seed-coder", "deepseek-coder", "granite-embed-multi-97m"} {
		paths = append(paths, withTokenizer(t, small, map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String(pre)}))
	}
	for _, path := range paths {
		tk := load(t, path)
		m := oracle(t, path)
		r := rand.New(rand.NewPCG(99, uint64(len(path))))
		fails := 0
		for i := range 1500 {
			var in string
			switch i % 3 {
			case 0:
				in = randomBytes(r, 50)
			case 1:
				in = randomText(r, 80)
			default:
				in = randomText(r, 8) + randomDigitsText(r) + randomText(r, 8)
			}
			add, parse := r.IntN(2) == 0, r.IntN(2) == 0
			want, _ := m.Tokenize(in, add, parse)
			got := tk.Tokenize(in, add, parse)
			if !slices.Equal(got, want) {
				if fails++; fails <= 3 {
					t.Errorf("%s: Tokenize(%q, %v, %v):\n got %v\nwant %v", tk.Vocab().Pre, in, add, parse, got, want)
				}
			}
			for _, special := range []bool{false, true} {
				dw, _ := m.Detokenize(want, false, special)
				if dg := tk.Detokenize(want, special); dg != dw {
					if fails++; fails <= 3 {
						t.Errorf("%s: Detokenize(%v):\n got %q\nwant %q", path, want, dg, dw)
					}
				}
			}
		}
	}
}
