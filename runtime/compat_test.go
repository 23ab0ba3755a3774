package runtime

import (
	"errors"
	"slices"
	"testing"
)

// testdata/stories260K.format1.plan.bin is stories260K compiled for
// cpu-avx2:2 by the format-1 compiler (commit bce6ee2): prefill programs,
// one-slot KV caches, no batch programs. A format-2 runtime replays it
// (FORMAT.md's policy): its prompts through the prefill programs, its
// chains as before, giving the tokens a format-2 plan gives; what only
// batch programs can do is refused with a line that says to recompile.
func TestAFormat1PlanStillRuns(t *testing.T) {
	model := stories(t)
	old, err := Load("testdata/stories260K.format1.plan.bin", Options{Model: model, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if old.Plan.Header.Format != 1 || len(old.batch) != 0 || len(old.prefill) == 0 {
		t.Fatalf("format %d, %d batch and %d prefill programs", old.Plan.Header.Format, len(old.batch), len(old.prefill))
	}
	cur := storiesModel(t)
	p := cur.Tokenizer.Tokenize("Once upon a time", true, false)
	long := longPrompt(cur, 300) // past the largest prefill bucket of 128: chunks
	for _, tc := range []struct {
		prompt []int32
		o      GenerateOptions
	}{
		{p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true}},
		{long, GenerateOptions{MaxTokens: 20, IgnoreEOS: true}},
		{p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: Sampling{Temperature: 0.8, TopK: 40, Seed: 9}}},
		{p, GenerateOptions{MaxTokens: 10, IgnoreEOS: true, TopLogits: 2}},
	} {
		got := genNew(t, old, tc.prompt, tc.o)
		want := genNew(t, cur, tc.prompt, tc.o)
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("format 1 %v\nformat 2 %v", got.Tokens, want.Tokens)
		}
	}
	if _, err := Load("testdata/stories260K.format1.plan.bin", Options{Model: model, Seqs: 2}); !errors.Is(err, ErrUnsupportedPlan) {
		t.Fatalf("two sequence slots of a format-1 plan: %v", err)
	}
	var b Batch
	b.Add(1, 0, 0, true)
	b.Add(2, 1, 0, true)
	if err := old.Forward(bg, &b); !errors.Is(err, ErrUnsupportedPlan) {
		t.Fatalf("logits of every row from a format-1 plan: %v", err)
	}
}
