package runtime

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// A draft model's shortlist (ModelDrafter.SetShortlist) has its LM heads
// compute the listed ids' logits, bit for bit those of the whole head, and
// -inf for ids outside their x16 groups; Close gives the heads every row
// again.
func TestDraftShortlistRestrictsTheLMHead(t *testing.T) {
	target := synthLoad(t, "qwen3", dtype.Q8_0)
	draft := loadOn(t, synthModel(t, "qwen3", dtype.Q4_0), target)
	p := target.Tokenizer.Tokenize(randomPrompt, true, false)
	o := GenerateOptions{MaxTokens: 6, IgnoreEOS: true}
	var whole [][]float32
	genNew(t, draft, p, GenerateOptions{MaxTokens: 1, IgnoreEOS: true, Logits: stepLogits(&whole)})

	d, err := NewModelDrafter(target, draft, 4)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	d.SetShortlist(n)
	hist := append(slices.Clone(p), 300) // 300: a token of the conversation past the list's ids
	if _, err := d.Draft(context.Background(), hist, 4, sampling.Params{}, nil); err != nil {
		t.Fatal(err)
	}
	if !d.Shortlisted() {
		t.Fatal("the CPU backend did not take the shortlist")
	}
	listed := func(id int) bool {
		return id < n || slices.Contains(hist, int32(id)) || id == int(draft.Tokenizer.Vocab().EOS)
	}
	var got [][]float32
	r := genNew(t, draft, p, GenerateOptions{MaxTokens: o.MaxTokens, IgnoreEOS: true, Logits: stepLogits(&got)})
	for i, l := range got {
		inf := 0
		for id, v := range l {
			switch {
			case math.IsInf(float64(v), -1):
				inf++
				if listed(id) {
					t.Fatalf("step %d: listed id %d has logit -inf", i, id)
				}
			case i == 0 && v != whole[0][id]:
				t.Fatalf("step 0: id %d: %g, the whole head's %g", id, v, whole[0][id])
			}
		}
		if inf == 0 || inf > draft.vocab-n {
			t.Fatalf("step %d: %d of %d logits -inf with %d ids listed", i, inf, draft.vocab, n)
		}
		if tok := int(r.Tokens[i]); !listed(tok) && !slices.ContainsFunc(l[tok/16*16:tok/16*16+16], func(v float32) bool { return !math.IsInf(float64(v), -1) }) {
			t.Fatalf("step %d: token %d from outside the list", i, tok)
		}
	}
	d.Close()
	var again [][]float32
	genNew(t, draft, p, GenerateOptions{MaxTokens: 1, IgnoreEOS: true, Logits: stepLogits(&again)})
	if !slices.Equal(again[0], whole[0]) {
		t.Fatal("after Close the draft's logits are not the whole head's")
	}
}

// Greedy speculation with a shortlisted draft gives plain greedy's tokens:
// the target's token outside the list is a rejected draft, nothing more.
func TestDraftShortlistEqualsPlain(t *testing.T) {
	target := synthLoad(t, "qwen3", dtype.Q8_0)
	draft := loadOn(t, synthModel(t, "qwen3", dtype.Q4_0), target)
	p := target.Tokenizer.Tokenize(randomPrompt, true, false)
	o := GenerateOptions{MaxTokens: 40, IgnoreEOS: true}
	want := genNew(t, target, p, o)
	for _, n := range []int{8, 64, 0} {
		d, err := NewModelDrafter(target, draft, 6)
		if err != nil {
			t.Fatal(err)
		}
		d.SetShortlist(n)
		got := genNew(t, target, p, specOpts(o, d, true))
		on := d.Shortlisted()
		d.Close()
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("shortlist %d: with the draft model %v\nalone %v", n, got.Tokens, want.Tokens)
		}
		if on != (n > 0) {
			t.Fatalf("shortlist %d: restricted %v", n, on)
		}
		t.Logf("shortlist %d: %+v, acceptance %.2f", n, got.Spec, got.Spec.AcceptRate())
	}
}

// Sampled speculation with a shortlisted draft (its drafts drawn from q
// over the list) is reproducible from its seed; a draft model that is the
// target itself keeps every logit, so that its verify passes see them.
func TestDraftShortlistSampledAndSelf(t *testing.T) {
	target := synthLoad(t, "qwen3", dtype.Q8_0)
	draft := loadOn(t, synthModel(t, "qwen3", dtype.Q4_0), target)
	p := target.Tokenizer.Tokenize(randomPrompt, true, false)
	o := GenerateOptions{MaxTokens: 30, IgnoreEOS: true, Sampling: Sampling{Temperature: 0.8, TopK: 40, Seed: 3}}
	var runs [2][]int32
	for i := range runs {
		d, err := NewModelDrafter(target, draft, 4)
		if err != nil {
			t.Fatal(err)
		}
		d.SetShortlist(64)
		r := genNew(t, target, p, specOpts(o, d, true))
		if !d.Shortlisted() || r.Spec.Passes == 0 {
			t.Fatalf("run %d: shortlisted %v, %+v", i, d.Shortlisted(), r.Spec)
		}
		d.Close()
		runs[i] = r.Tokens
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Fatalf("seed 3 twice: %v\n%v", runs[0], runs[1])
	}
	want := genNew(t, target, p, GenerateOptions{MaxTokens: 20, IgnoreEOS: true})
	d, err := NewModelDrafter(target, target, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetShortlist(64)
	got := genNew(t, target, p, specOpts(GenerateOptions{MaxTokens: 20, IgnoreEOS: true}, d, true))
	if d.Shortlisted() || !slices.Equal(got.Tokens, want.Tokens) {
		t.Fatalf("the target drafting for itself: shortlisted %v, %v against plain %v", d.Shortlisted(), got.Tokens, want.Tokens)
	}
}
