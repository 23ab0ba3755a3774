package plans

import (
	"fmt"
	"testing"
)

// bigPlan is Example with a vocabulary and merges the size of a modern
// BPE tokenizer's (150k tokens, 150k merges), where decode time goes.
func bigPlan() *Plan {
	p := Example()
	t := &p.Model.Tokenizer
	t.Tokens, t.Scores, t.Types = nil, nil, nil
	for i := range 150000 {
		t.Tokens = append(t.Tokens, fmt.Sprintf("tok%d", i))
		t.Scores = append(t.Scores, float32(i))
		t.Types = append(t.Types, 1)
		t.Merges = append(t.Merges, fmt.Sprintf("a%d b%d", i, i))
	}
	p.Model.HParams.Vocab = 150000
	return p
}

func BenchmarkEncode(b *testing.B) {
	p := bigPlan()
	b.SetBytes(int64(len(Encode(p))))
	for b.Loop() {
		Encode(p)
	}
}

func BenchmarkDecode(b *testing.B) {
	data := Encode(bigPlan())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode("", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeExample(b *testing.B) {
	data := Encode(Example())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode("", data); err != nil {
			b.Fatal(err)
		}
	}
}
