package tokenizer_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/akunu-dev/akunu/compiler/gguf"
	"github.com/akunu-dev/akunu/runtime/tokenizer"
)

var (
	corpusOnce sync.Once
	corpus     string
)

// megabyte is 1 MiB of mixed text: English prose, code, numbers, and some
// Cyrillic, CJK and emoji, in seeded random order.
func megabyte() string {
	corpusOnce.Do(func() {
		parts := []string{
			"Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. ",
			"The quick brown fox jumps over the lazy dog; it's what we'd've expected, isn't it? ",
			"In 2024 the company reported revenue of $1,234,567.89, up 12.5% from 1,097,432 the year before.\n",
			"func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(\"hello\", i)\n\t}\n}\n",
			"    if (x != nullptr && x->size() > 0) { return x->at(0); }\n",
			"Привет, как дела? Всё хорошо, спасибо. ",
			"我想在苹果公司工作，因为那里的工程师很优秀。",
			"Emoji: 🦙🚀😀 and accents: café, naïve, Ångström. ",
			"\n\n## Heading\n\n- item one\n- item two\n\n",
		}
		r := rand.New(rand.NewPCG(1, 2))
		var b strings.Builder
		for b.Len() < 1<<20 {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		corpus = b.String()[:1<<20]
	})
	return corpus
}

func benchVocabs(b *testing.B) map[string]*tokenizer.Tokenizer {
	byName := map[string]string{}
	for _, p := range vocabFiles(b) {
		byName[vocabName(p)] = p
	}
	gpt4o := withTokenizer(b, byName["gpt-2"], map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("gpt-4o")})
	return map[string]*tokenizer.Tokenizer{
		"spm-llama":    load(b, byName["llama-spm"]),
		"bpe-llama3":   load(b, byName["llama-bpe"]),
		"bpe-qwen2":    load(b, byName["qwen2"]),
		"bpe-gpt2":     load(b, byName["gpt-2"]),
		"bpe-gpt4o-re": load(b, gpt4o),
		"wpm-bert":     load(b, byName["bert-bge"]),
		"spm-stories":  load(b, storiesPath(b)),
	}
}

// BenchmarkTokenize1MB tokenizes 1 MiB of text with each kind of
// tokenizer (bpe-gpt4o-re: the GPT-2 vocabulary with gpt-4o's lookahead
// pattern, which runs on the regex engine).
func BenchmarkTokenize1MB(b *testing.B) {
	text := megabyte()
	vocabs := benchVocabs(b)
	for _, name := range []string{"spm-llama", "spm-stories", "bpe-llama3", "bpe-qwen2", "bpe-gpt2", "bpe-gpt4o-re", "wpm-bert"} {
		tk := vocabs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				n = len(tk.Tokenize(text, true, false))
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkLlamaCppTokenize1MB is the reference: llama_tokenize on the same
// text and vocabularies.
func BenchmarkLlamaCppTokenize1MB(b *testing.B) {
	text := megabyte()
	byName := map[string]string{}
	for _, p := range vocabFiles(b) {
		byName[vocabName(p)] = p
	}
	gpt4o := withTokenizer(b, byName["gpt-2"], map[string]gguf.Value{"tokenizer.ggml.pre": gguf.String("gpt-4o")})
	for _, c := range []struct{ name, path string }{
		{"spm-llama", byName["llama-spm"]}, {"spm-stories", storiesPath(b)}, {"bpe-llama3", byName["llama-bpe"]},
		{"bpe-qwen2", byName["qwen2"]}, {"bpe-gpt2", byName["gpt-2"]}, {"bpe-gpt4o-re", gpt4o}, {"wpm-bert", byName["bert-bge"]},
	} {
		m := oracle(b, c.path)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := m.Tokenize(text, true, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecoder streams the tokens of 1 MiB back into text.
func BenchmarkDecoder(b *testing.B) {
	text := megabyte()
	vocabs := benchVocabs(b)
	for _, name := range []string{"spm-llama", "bpe-llama3"} {
		tk := vocabs[name]
		ids := tk.Tokenize(text, false, false)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				d := tk.NewDecoder(false)
				for _, id := range ids {
					d.Add(id)
				}
				d.Flush()
			}
		})
	}
}
