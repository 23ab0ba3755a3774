package tokenizer_test

import (
	"testing"
	"unicode/utf8"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

// FuzzTokenize: no input makes any kind of tokenizer panic or produce ids
// outside its vocabulary, and the decoder's output is always valid UTF-8.
// The kinds: SentencePiece, WordPiece, byte-level BPE with a hand-written
// splitter (llama3) and with regex splitters (gpt-4o, deepseek-llm,
// chameleon, superbpe), and raw UTF-8 BPE (gemma4).
func FuzzTokenize(f *testing.F) {
	byName := map[string]string{}
	for _, p := range vocabFiles(f) {
		byName[vocabName(p)] = p
	}
	toks := []*tokenizer.Tokenizer{
		load(f, byName["llama-spm"]), load(f, byName["phi-3"]), load(f, byName["bert-bge"]),
		load(f, byName["llama-bpe"]), load(f, byName["qwen2"]),
	}
	small := smallGPT2(f, 2000)
	for _, pre := range []string{"gpt-4o", "deepseek-llm", "chameleon", "superbpe", "exaone-moe", "jais-2"} {
		toks = append(toks, load(f, withTokenizer(f, small, map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String(pre)})))
	}
	toks = append(toks, load(f, withTokenizer(f, small, map[string]gguf.Value{"tokenizer.ggml.model": gguf.String("gemma4")})))

	for _, s := range []string{"", " ", "Hello world", "  a\n\n b\t", "<s>x</s>", "<|endoftext|>", "IMGIMGABZ <sentinel:12>",
		"1234567 89", "it's 'RE", "\xff\xfe\xc3", "🦙😀", "中文 한국어", "ﬁ Å\u0301", "[CLS] [MASK]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range toks {
			for _, flags := range [][2]bool{{false, false}, {true, true}} {
				ids := tk.Tokenize(s, flags[0], flags[1])
				for _, id := range ids {
					if id < 0 || int(id) >= tk.NumTokens() {
						t.Fatalf("Tokenize(%q): id %d outside the vocabulary", s, id)
					}
				}
				_ = tk.Detokenize(ids, flags[1])
				d := tk.NewDecoder(flags[1])
				for _, id := range ids {
					if out := d.Add(id); !utf8.ValidString(out) {
						t.Fatalf("decoder emitted %q", out)
					}
				}
				if out := d.Flush(); !utf8.ValidString(out) {
					t.Fatalf("decoder emitted %q", out)
				}
			}
		}
	})
}
