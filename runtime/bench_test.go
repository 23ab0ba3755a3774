package runtime

import "testing"

// BenchmarkDecodeStories260K is chain decode of stories260K on the CPU
// backend: ns/op is per token, and allocs/op must be 0 (nothing allocates
// on the per-token path). Timings are reported, never asserted; make bench
// puts them side by side with llama.cpp's.
func BenchmarkDecodeStories260K(b *testing.B) {
	m := storiesModel(b)
	s := sess(b, m)
	if _, err := s.Generate(bg, m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 1}); err != nil {
		b.Fatal(err)
	}
	n := len(s.steps)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		s.chain(m.decode, min(n, b.N-done))
	}
}
