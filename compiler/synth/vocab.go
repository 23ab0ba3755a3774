package synth

import (
	"sort"
	"strings"

	"github.com/akunu-dev/akunu/compiler/gguf"
)

// Vocab is a tokenizer as GGUF stores it under tokenizer.ggml.*.
type Vocab struct {
	Model     string   // tokenizer.ggml.model
	Pre       string   // tokenizer.ggml.pre
	Tokens    []string // tokenizer.ggml.tokens
	Types     []int32  // tokenizer.ggml.token_type
	Merges    []string // tokenizer.ggml.merges
	BOS, EOS  int      // special ids
	AddBOS    bool
	ChatTempl string // tokenizer.chat_template, "" for none

	// copied holds a tokenizer taken verbatim from another file; the
	// fields above are then unused but for Tokens.
	copied map[string]gguf.Value
}

// Token types as llama.cpp numbers them.
const (
	tokNormal  = 1
	tokControl = 3
)

// byteLevelVocab builds a small byte-level BPE vocabulary (the GPT-2 scheme:
// every byte is a token, spelled through GPT-2's byte-to-rune table, plus
// merges learned from a fixed text). It makes `akunuc synth` self-contained:
// a demo model needs no tokenizer file from outside the repository.
//
// The merges are learned by the textbook BPE loop on corpus: count adjacent
// pairs inside words, merge the most frequent (ties broken by the pair's
// spelling, so the result is deterministic), repeat nMerges times.
func byteLevelVocab(nMerges int) *Vocab {
	enc := gpt2ByteRunes()
	v := &Vocab{Model: "gpt2", Pre: "gpt-2"}
	v.Tokens = append(v.Tokens, "<|endoftext|>")
	v.Types = append(v.Types, tokControl)
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(enc[b]))
		v.Types = append(v.Types, tokNormal)
	}

	// Words as GPT-2's pre-tokenizer would roughly cut them: a leading space
	// belongs to the word that follows it.
	var words [][]string
	counts := map[string]int{}
	for _, w := range strings.Fields(corpus) {
		counts[" "+w]++
	}
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	freq := make([]int, len(keys))
	for i, w := range keys {
		var syms []string
		for _, b := range []byte(w) {
			syms = append(syms, string(enc[b]))
		}
		words = append(words, syms)
		freq[i] = counts[w]
	}

	seen := map[string]bool{}
	for _, t := range v.Tokens {
		seen[t] = true
	}
	for len(v.Merges) < nMerges {
		pairs := map[[2]string]int{}
		for i, w := range words {
			for j := 0; j+1 < len(w); j++ {
				pairs[[2]string{w[j], w[j+1]}] += freq[i]
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && p[0]+" "+p[1] < best[0]+" "+best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merged := best[0] + best[1]
		v.Merges = append(v.Merges, best[0]+" "+best[1])
		if !seen[merged] {
			seen[merged] = true
			v.Tokens = append(v.Tokens, merged)
			v.Types = append(v.Types, tokNormal)
		}
		for i, w := range words {
			out := w[:0:0]
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == best[0] && w[j+1] == best[1] {
					out = append(out, merged)
					j++
					continue
				}
				out = append(out, w[j])
			}
			words[i] = out
		}
	}
	v.BOS, v.EOS = 0, 0
	return v
}

// gpt2ByteRunes is GPT-2's reversible byte-to-rune table: printable Latin-1
// bytes stand for themselves, the others are moved to U+0100 and up, so that
// every token is a printable string (a space becomes 'Ġ', U+0120).
func gpt2ByteRunes() [256]rune {
	var t [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}

// corpus is the text the demo tokenizer's merges are learned from.
const corpus = `Once upon a time there was a little girl named Lily. She liked to play
outside in the park with her friends. One day she saw a big red ball under a
tree. She wanted to play with the ball, but it was too high. Her mother said
that they could ask the man in the house for help. The man was kind and gave
the ball to Lily. She was very happy and said thank you. Then they played
together in the sun until it was time to go home and have dinner. The end.
The quick brown fox jumps over the lazy dog. A model is a list of layers, and
each layer reads the weights of its attention and its feed forward network.`
