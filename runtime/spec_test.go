package runtime

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// copyPrompt is a prompt whose continuation repeats it (stories260K goes
// on retelling it), so that n-gram lookup drafts well; randomPrompt is one
// it drafts badly.
const (
	copyPrompt   = "Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom went to the"
	randomPrompt = "Zebra quietly seven umbrella"
	// passage is a text and then its first sentences again: a copier
	// (synth.Options.Copier) goes on retelling it.
	passage = "The harbour master kept a ledger of every boat that came in after dark. On Tuesday a green trawler named " +
		"Marigold arrived with a broken mast, and its captain asked for rope, two lanterns and a bag of oranges. The " +
		"master wrote the order in blue ink, sent a boy to the chandler, and sat by the stove until the rain stopped.\n\n" +
		"The harbour master kept a ledger of every boat that came in after dark. On Tuesday a green trawler"
)

// copierLoad loads a small copier compiled for the test CPU target.
func copierLoad(t *testing.T, dt dtype.Type) *Model {
	model := synthCopier(t, dt)
	return load(t, compile(t, model, "cpu-avx2:2"), model, 2)
}

// A copier's greedy text goes on with the passage its prompt repeats:
// each token is one that followed an earlier occurrence of the last two
// (where those came more than once, any of their continuations), and
// n-gram drafting, which predicts such text, has most of its drafts
// accepted: a copy task, where random weights repeat one token.
func TestACopierCopiesItsContext(t *testing.T) {
	m := copierLoad(t, dtype.Q8_0)
	p := m.Tokenizer.Tokenize(passage, true, false)
	o := GenerateOptions{MaxTokens: 48, IgnoreEOS: true}
	plain := genNew(t, m, p, o)
	// Up to ", and", which the passage has twice, the copy is the passage.
	if want := " named Marigold arrived with a broken mast, and"; !strings.HasPrefix(plain.Text, want) {
		t.Fatalf("the copier wrote %q, want it to begin %q", plain.Text, want)
	}
	ctx := slices.Clone(p)
	copied := 0
	for _, tok := range plain.Tokens {
		n := len(ctx)
		for j := 0; j+2 < n; j++ {
			if ctx[j] == ctx[n-2] && ctx[j+1] == ctx[n-1] && ctx[j+2] == tok {
				copied++
				break
			}
		}
		ctx = append(ctx, tok)
	}
	if copied < len(plain.Tokens)*9/10 {
		t.Fatalf("%d of %d tokens continue an earlier occurrence of the two before them: %q", copied, len(plain.Tokens), plain.Text)
	}
	got := genNew(t, m, p, specOpts(o, &NGram{}, false))
	if !slices.Equal(got.Tokens, plain.Tokens) {
		t.Fatalf("speculative %v\nplain %v", got.Tokens, plain.Tokens)
	}
	if got.Spec.AcceptRate() < 0.8 || got.Spec.TokensPerPass() < 3 {
		t.Fatalf("n-gram drafts on a copy task: acceptance %.2f, %.2f tokens a pass (%+v)", got.Spec.AcceptRate(), got.Spec.TokensPerPass(), got.Spec)
	}
	t.Logf("%q; %d of %d copied; %+v: acceptance %.2f, %.2f tokens a pass", plain.Text, copied, len(plain.Tokens), got.Spec, got.Spec.AcceptRate(), got.Spec.TokensPerPass())
}

func TestDraftLenFollowsTheRate(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		lo, hi  int
		cost    float64
		want    func(k int) bool
		meaning string
	}{
		{0, 1, 8, 0.15, func(k int) bool { return k == 0 }, "no draft when none is accepted"},
		{0.1, 1, 8, 0.15, func(k int) bool { return k == 0 }, "no draft when a draft rarely pays its row"},
		{0.95, 1, 8, 0.15, func(k int) bool { return k >= 5 }, "long drafts when nearly all are accepted"},
		{0.5, 1, 8, 0.15, func(k int) bool { return k >= 1 && k <= 4 }, "short drafts at an even rate"},
		{0.95, 3, 3, 0.15, func(k int) bool { return k == 3 }, "within [min, max]"},
		{0.2, 3, 8, 0.15, func(k int) bool { return k == 0 }, "none rather than fewer than min"},
	} {
		t.Run(tc.meaning, func(t *testing.T) {
			if k := draftLen(tc.rate, tc.lo, tc.hi, tc.cost, 0); !tc.want(k) {
				t.Fatalf("draftLen(%g, %d, %d, %g) = %d", tc.rate, tc.lo, tc.hi, tc.cost, k)
			}
		})
	}
	prev := 0
	for r := 0.0; r <= 1; r += 0.05 {
		k := draftLen(r, 1, 16, 0.15, 0)
		if k < prev {
			t.Fatalf("the length falls from %d to %d as the rate rises to %.2f", prev, k, r)
		}
		prev = k
	}
}

func TestAdaptiveLengthStopsAndProbes(t *testing.T) {
	a := adapt{lo: 1, hi: 8, rowCost: 0.15, rate: 0.6, timed: true}
	// step is one decoding step: a pass of k drafts (accepted of them
	// kept), or plain tokens up to the next probe; it returns the
	// tokens it made and whether it was a pass.
	step := func(accept func(k int) int) (int, bool) {
		if k := a.next(); k > 0 {
			a.update(k, accept(k))
			return 1, true
		}
		n := a.plainRun()
		a.idle += n
		a.timePlain(time.Duration(n)*time.Millisecond, n)
		return n, false
	}
	for range 40 { // every draft rejected
		step(func(int) int { return 0 })
	}
	plain, probes := 0, 0
	for plain < 1024 {
		n, pass := step(func(int) int { return 0 })
		if pass {
			probes++
		} else {
			plain += n
		}
	}
	// The gap doubled from probeEvery to maxProbeGap during the
	// rejections above: a probe every maxProbeGap tokens now.
	if probes < 1024/maxProbeGap-1 || probes > 1024/maxProbeGap+1 {
		t.Fatalf("after rejections: %d probes in %d plain tokens, want one every %d", probes, plain, maxProbeGap)
	}
	for range 40 { // every draft accepted
		step(func(k int) int { return k })
	}
	if k := a.next(); k < 4 {
		t.Fatalf("after acceptances the length is %d", k)
	}
	// A pass that costs as much as 4 plain tokens a draft is not worth
	// drafting even at a fair rate.
	a.rate = 0.6
	for range 40 {
		a.timePass(time.Duration(1+4*2)*time.Millisecond, 2)
	}
	if k := a.next(); k != 0 {
		t.Fatalf("with rows costing %.2f plain tokens, the length is %d", a.rowCost, k)
	}
}

// The first timed pass replaces the prior row cost: a model whose rows
// cost more than a plain token stops drafting at a middling rate after
// one pass, not a dozen; a second pass that costs less is averaged in.
func TestAdaptiveLengthLearnsThePassCostAtOnce(t *testing.T) {
	a := adapt{lo: 1, hi: 8, rowCost: DefaultRowCost, rate: 0.5, timed: true}
	a.timePlain(100*time.Microsecond, 1)
	if k := a.next(); k == 0 {
		t.Fatal("no draft before any pass was timed")
	}
	a.timePass(220*time.Microsecond, 1) // a row 1.2 plain tokens
	if k := a.next(); k != 0 {
		t.Fatalf("after a pass at 1.2 plain tokens a row (estimate %.2f), rate %.2f: length %d, want 0", a.rowCost, a.rate, k)
	}
	a.timePass(120*time.Microsecond, 1) // 0.2
	if d := a.rowCost - 0.7; d < -1e-9 || d > 1e-9 {
		t.Fatalf("after rows of 1.2 and 0.2 plain tokens: estimate %.3f, want their mean 0.7", a.rowCost)
	}
}

// A pass whose cost is mostly its own (a GPU's batch program and round
// trip: 2.3 plain tokens for 2 rows, 5 for 8 on an H100) is fitted as a
// fixed cost and a row cost once the passes' lengths have varied, and the
// length grows to the most drafts where every draft is accepted; read as
// rows alone it kept the drafts at one or two. A cost that is all rows
// (the CPU's) fits no fixed cost.
func TestAdaptiveLengthFitsAPassCost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fixed, row    float64 // a pass costs 1 + fixed + row·k plain tokens
		lo, hi        float64 // passCost's bounds after the run
		minK          int
		rateOfAccepts float64
	}{
		{"GPU", 1.3, 0.45, 0.8, 1.8, 7, 1},
		{"CPU", 0, 0.15, 0, 0.1, 7, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := adapt{lo: 1, hi: 8, rowCost: DefaultRowCost, rate: 0.6, timed: true}
			a.timePlain(time.Millisecond, 1)
			// A rejection at the third pass, as the copy task's first
			// edit: the length moves, and the fit has two lengths.
			for i := range 60 {
				k := a.next()
				if k == 0 { // plain tokens up to the next probe
					n := a.plainRun()
					a.idle += n
					a.timePlain(time.Duration(n)*time.Millisecond, n)
					continue
				}
				acc := k
				if i == 2 {
					acc = 0
				}
				a.update(k, acc)
				a.timePass(time.Duration((1+tc.fixed+tc.row*float64(k))*float64(time.Millisecond)), k)
			}
			if k := a.next(); k < tc.minK || a.passCost < tc.lo || a.passCost > tc.hi {
				t.Fatalf("length %d (want ≥ %d), pass cost %.2f (want %.1f–%.1f), row cost %.2f", k, tc.minK, a.passCost, tc.lo, tc.hi, a.rowCost)
			}
			t.Logf("length %d, pass cost %.2f, row cost %.2f", a.next(), a.passCost, a.rowCost)
		})
	}
}

// Where a row costs more than a plain token, no acceptance rate makes a
// pass pay: probes that keep their drafts still space out to maxProbeGap.
func TestProbesSpaceOutWhereNoRatePays(t *testing.T) {
	a := adapt{lo: 1, hi: 8, rowCost: 1.9, rate: 0.1, timed: true}
	plain, probes := 0, 0
	for plain < 2048 {
		if k := a.next(); k > 0 {
			a.update(k, k) // every probe keeps its drafts
			probes++
			continue
		}
		n := a.plainRun()
		a.idle += n
		plain += n
	}
	if want := 2048/maxProbeGap + 5; probes > want {
		t.Fatalf("%d probes in %d plain tokens, want at most %d", probes, plain, want)
	}
}

func TestNGramDraftsTheLongestMostRecentMatch(t *testing.T) {
	n := &NGram{MinMatch: 1, MaxMatch: 3}
	for _, tc := range []struct {
		hist []int32
		max  int
		want []int32
	}{
		{[]int32{1, 2, 3, 9, 9, 1, 2, 3, 4, 5, 1, 2, 3}, 4, []int32{4, 5, 1, 2}}, // the most recent "1 2 3"
		{[]int32{7, 2, 3, 8, 5, 2, 3}, 3, []int32{8, 5, 2}},                      // "2 3"
		{[]int32{4, 3, 9, 9, 9, 7, 3}, 2, []int32{9, 9}},                         // "3", the only match
		{[]int32{5, 6, 7, 8, 8, 8, 8, 8}, 5, []int32{8, 8, 8, 8, 8}},             // a loop drafts whole periods
		{[]int32{5, 1, 2, 1, 2, 1, 2}, 5, []int32{1, 2, 1, 2, 1}},                // of any length
		{[]int32{1, 2, 3, 4}, 4, nil},                                            // no match
		{[]int32{5}, 4, nil},
		{nil, 4, nil},
	} {
		got, err := n.Draft(bg, tc.hist, tc.max, sampling.Params{}, nil)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Draft(%v, %d) = %v, %v; want %v", tc.hist, tc.max, got, err, tc.want)
		}
	}
}

// specGreedy generates greedily with n-gram speculation, drafting max
// every step (fixed) or adaptively.
func specOpts(o GenerateOptions, d Drafter, fixed bool) GenerateOptions {
	o.Spec = &Speculation{Drafter: d, Max: 6, Fixed: fixed}
	return o
}

// Greedy speculation gives plain greedy decoding's tokens, token for
// token: on text that drafts well and badly, with drafts always or
// adaptively, around the token limit and stop strings, and with a
// processor (whose logits the verify pass sees row by row).
func TestSpeculativeGreedyEqualsPlain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(t *testing.T) *Model
	}{
		{"stories260K", func(t *testing.T) *Model { return storiesModel(t) }},
		{"llama f32", func(t *testing.T) *Model { return synthLoad(t, "llama", dtype.F32) }},
		{"qwen3 q8_0", func(t *testing.T) *Model { return synthLoad(t, "qwen3", dtype.Q8_0) }},
		{"copier q8_0", func(t *testing.T) *Model { return copierLoad(t, dtype.Q8_0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model(t)
			accepted := 0
			for _, prompt := range []string{copyPrompt, randomPrompt} {
				p := m.Tokenizer.Tokenize(prompt, true, false)
				base := GenerateOptions{MaxTokens: 48, IgnoreEOS: true}
				want := genNew(t, m, p, base)
				stopAt := want.Text[len(want.Text)/2:][:3]
				for _, v := range []struct {
					name string
					o    GenerateOptions
				}{
					{"plain", base},
					{"limit 7", GenerateOptions{MaxTokens: 7, IgnoreEOS: true}},
					{"limit 1", GenerateOptions{MaxTokens: 1, IgnoreEOS: true}},
					{"stop string", GenerateOptions{MaxTokens: 48, IgnoreEOS: true, Stop: []string{stopAt}}},
					{"penalties", GenerateOptions{MaxTokens: 48, IgnoreEOS: true, Processors: []Processor{&Penalties{Repeat: 1.3}}}},
					{"eos", GenerateOptions{MaxTokens: 48}},
				} {
					ref := genNew(t, m, p, v.o)
					for _, fixed := range []bool{true, false} {
						got := genNew(t, m, p, specOpts(v.o, &NGram{}, fixed))
						if !slices.Equal(got.Tokens, ref.Tokens) || got.Text != ref.Text || got.Stop != ref.Stop {
							t.Fatalf("%.12q %s fixed=%v: speculative %v (%s %q)\nplain %v (%s %q)", prompt, v.name, fixed,
								got.Tokens, got.Stop, got.Text, ref.Tokens, ref.Stop, ref.Text)
						}
						accepted += got.Spec.Accepted
					}
				}
			}
			if accepted == 0 {
				t.Fatal("no draft was ever accepted: the test did not exercise verification")
			}
		})
	}
}

// A Q4_0 draft of the Q8_0 target's weights (one seed) drafts for it:
// greedy output is the target's alone, most drafts are accepted (the
// weights agree, not the text), and a model of another vocabulary is
// refused as a draft.
func TestDraftModelEqualsPlain(t *testing.T) {
	target := synthLoad(t, "qwen3", dtype.Q8_0)
	draft := loadOn(t, synthModel(t, "qwen3", dtype.Q4_0), target)
	p := target.Tokenizer.Tokenize(randomPrompt, true, false)
	for _, n := range []int{40, 5} {
		o := GenerateOptions{MaxTokens: n, IgnoreEOS: true}
		want := genNew(t, target, p, o)
		d, err := NewModelDrafter(target, draft, 6)
		if err != nil {
			t.Fatal(err)
		}
		got := genNew(t, target, p, specOpts(o, d, true))
		d.Close()
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("with the draft model %v\nalone %v", got.Tokens, want.Tokens)
		}
		if n == 40 && got.Spec.AcceptRate() < 0.2 { // random weights: near ties, which Q4_0 flips
			t.Fatalf("a draft of the same weights: acceptance %.2f (%+v)", got.Spec.AcceptRate(), got.Spec)
		}
		t.Logf("%d tokens: %+v, acceptance %.2f, %.2f tokens a pass", n, got.Spec, got.Spec.AcceptRate(), got.Spec.TokensPerPass())
	}
	other := storiesModel(t)
	if _, err := NewModelDrafter(target, other, 4); !errors.Is(err, ErrDraftVocab) {
		t.Fatalf("a draft of another vocabulary: %v, want ErrDraftVocab", err)
	}
}

// A draft model that is the target itself proposes the target's own
// greedy tokens, so every draft is accepted: a drafter that fed the rows
// it missed wrongly, or took its first draft from the wrong row, would be
// rejected at once. After a pass that accepts everything the drafter
// catches up two rows (the last draft and the target's token) and takes
// its first draft from that pass (ModelDrafter.Draft), so this runs that
// path on every pass but the first.
func TestADraftOfTheTargetItselfIsAlwaysAccepted(t *testing.T) {
	target := storiesModel(t)
	draft := loadOn(t, stories(t), target)
	p := target.Tokenizer.Tokenize(copyPrompt, true, false)
	o := GenerateOptions{MaxTokens: 60, IgnoreEOS: true}
	want := genNew(t, target, p, o)
	d, err := NewModelDrafter(target, draft, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := genNew(t, target, p, specOpts(o, d, true))
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Fatalf("with itself as the draft %v\nalone %v", got.Tokens, want.Tokens)
	}
	if got.Spec.Passes < 5 || got.Spec.Accepted != got.Spec.Drafted {
		t.Fatalf("the target as its own draft: %d of %d drafts accepted in %d passes, want all", got.Spec.Accepted, got.Spec.Drafted, got.Spec.Passes)
	}
}

// loadOn loads model (compiled here) on the backend of m.
func loadOn(t *testing.T, model string, m *Model) *Model {
	t.Helper()
	d, err := Load(compile(t, model, "cpu-avx2:2"), Options{Model: model, Backend: m.Backend(), Seqs: testSeqs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Rejected drafts leave no trace in the KV cache: a turn after a
// speculative one gives the logits a fresh run of the whole conversation
// gives.
func TestRejectedDraftsLeaveNoTrace(t *testing.T) {
	m := storiesModel(t)
	a := m.Tokenizer.Tokenize(copyPrompt, true, false)
	b := m.Tokenizer.Tokenize(" One day, Lily", false, false)
	s := sess(t, m)
	r1 := gen(t, s, a, specOpts(GenerateOptions{MaxTokens: 40, IgnoreEOS: true}, &NGram{MinMatch: 1}, true))
	if r1.Spec.Drafted == r1.Spec.Accepted {
		t.Fatalf("no draft was rejected (%+v): nothing to leave a trace", r1.Spec)
	}
	if s.Pos() != len(s.History())-1 {
		t.Fatalf("after the turn the slot holds %d positions of %d tokens", s.Pos(), len(s.History()))
	}
	var got, want [][]float32
	r2 := gen(t, s, b, GenerateOptions{MaxTokens: 12, IgnoreEOS: true, Logits: stepLogits(&got)})
	r := genNew(t, m, slices.Concat(a, r1.Tokens, b), GenerateOptions{MaxTokens: 12, IgnoreEOS: true, Logits: stepLogits(&want)})
	if !slices.Equal(r2.Tokens, r.Tokens) {
		t.Fatalf("second turn %v\nfresh run %v", r2.Tokens, r.Tokens)
	}
	for i := range got {
		for j := range got[i] {
			if d := math.Abs(float64(got[i][j] - want[i][j])); d > 1e-4*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("step %d logit %d: %g after the speculative turn, %g fresh", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// Sampled speculation is reproducible from its seed, with either drafter.
func TestSpeculativeSamplingIsReproducible(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize(copyPrompt, true, false)
	o := GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 5}}
	a := genNew(t, m, p, specOpts(o, &NGram{}, false))
	b := genNew(t, m, p, specOpts(o, &NGram{}, false))
	if !slices.Equal(a.Tokens, b.Tokens) || a.Spec.Passes == 0 {
		t.Fatalf("seed 5 twice: %v\n%v (%+v)", a.Tokens, b.Tokens, a.Spec)
	}
	o.Sampling.Seed = 6
	if c := genNew(t, m, p, specOpts(o, &NGram{}, false)); slices.Equal(a.Tokens, c.Tokens) {
		t.Fatalf("seeds 5 and 6 sample the same %v", c.Tokens)
	}
}

// forcedFirst makes the first generated token tok, whatever the logits,
// so that the second token's distribution is fixed.
type forcedFirst struct {
	at  int
	tok int32
}

func (f *forcedFirst) Process(logits []float32, hist []int32) {
	if len(hist) == f.at {
		for i := range logits {
			if int32(i) != f.tok {
				logits[i] = float32(math.Inf(-1))
			}
		}
	}
}

// fixedDrafter proposes the same draft every time, with q a fixed
// distribution (nil: a point mass), its draft sampled from q per seed.
type fixedDrafter struct {
	tok int32
	q   []float32
	n   int // drafts made
}

func (f *fixedDrafter) Draft(_ context.Context, hist []int32, _ int, sp sampling.Params, out []int32) ([]int32, error) {
	f.n++
	t := f.tok
	if f.q != nil {
		t = sampling.Pick(f.q, sampling.Uniform(sp.Seed, uint32(len(hist)), 99))
	}
	return append(out, t), nil
}

func (f *fixedDrafter) Q(int) []float32 { return f.q }

// The tokens speculative sampling accepts or puts in a draft's place are
// distributed as the target's: a chi-square goodness-of-fit test over
// many seeds of the token after a fixed context, drafted by a point mass
// (n-gram's case) and by a wrong distribution q (a draft model's), at
// significance 0.001 with the degrees of freedom of the bins that expect
// at least 5 draws (the rest pooled). A rule that accepts every draft
// fails it, so the test can fail.
func TestSpeculativeSamplingKeepsTheTargetDistribution(t *testing.T) {
	m := storiesModel(t)
	prompt := m.Tokenizer.Tokenize("Once upon a time, there was a little", true, false)
	knobs := Sampling{Temperature: 1.5}
	first := int32(m.Tokenizer.Tokenize(" girl", false, false)[0])
	force := func() []Processor { return []Processor{&forcedFirst{at: len(prompt), tok: first}} }
	// The target's distribution of the second token.
	var logits [][]float32
	genNew(t, m, prompt, GenerateOptions{MaxTokens: 2, IgnoreEOS: true, Sampling: knobs, Processors: force(), Logits: stepLogits(&logits)})
	target := make([]float32, m.vocab)
	smp := sampling.New(m.vocab)
	smp.Probs(logits[1], knobs.params(uint32(m.vocab)), target)
	top := sampling.Argmax(target)
	second := int32(-1) // the second most likely token, the point draft
	for i, v := range target {
		if int32(i) != top && (second < 0 || v > target[second]) {
			second = int32(i)
		}
	}
	wrongQ := make([]float32, m.vocab) // half on the second token, half spread over the top 8
	wrongQ[second] = 0.5
	idx := make([]int, m.vocab)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return -cmpF(target[a], target[b]) })
	for _, i := range idx[:8] {
		wrongQ[i] += 0.5 / 8
	}
	const seeds = 3000
	run := func(t *testing.T, d *fixedDrafter, rule func(p, q float32, u float64) bool, seeds int) []int {
		counts := make([]int, m.vocab)
		s := sess(t, m)
		n := len(prompt) - 1
		gen(t, s, prompt[:n], GenerateOptions{MaxTokens: 1})
		for seed := range seeds {
			s.Rewind(n) // the prompt but its last token stays in the cache
			k := knobs
			k.Seed = uint32(seed)
			// Three tokens: the second is a verify pass's first row (a
			// pass for the last token alone would waste its bonus row).
			o := specOpts(GenerateOptions{MaxTokens: 3, IgnoreEOS: true, Sampling: k, Processors: force()}, d, true)
			o.Spec.Max, o.Spec.acceptRule = 1, rule
			res, err := s.Generate(bg, prompt[n:], o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tokens) != 3 || res.Tokens[0] != first || res.Spec.Passes < 1 {
				t.Fatalf("seed %d: tokens %v, %+v", seed, res.Tokens, res.Spec)
			}
			counts[res.Tokens[1]]++
		}
		return counts
	}
	for _, tc := range []struct {
		name string
		d    *fixedDrafter
		rule func(p, q float32, u float64) bool
		fit  bool
		n    int
	}{
		{"a point draft", &fixedDrafter{tok: second}, nil, true, seeds},
		{"a draft from a wrong q", &fixedDrafter{q: wrongQ}, nil, true, seeds},
		{"a rule that accepts every draft fails", &fixedDrafter{tok: second}, func(float32, float32, float64) bool { return true }, false, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chi, df, crit := chiSquare(run(t, tc.d, tc.rule, tc.n), target, tc.n)
			t.Logf("chi-square %.1f, %d degrees of freedom, critical value %.1f at 0.001", chi, df, crit)
			if fits := chi <= crit; fits != tc.fit {
				t.Fatalf("chi-square %.1f against %.1f (df %d): fits=%v, want %v", chi, crit, df, fits, tc.fit)
			}
		})
	}
}

func cmpF(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chiSquare is the statistic of counts against n draws from p, over the
// tokens expected at least 5 times and one bin pooling the rest, its
// degrees of freedom and the critical value at significance 0.001
// (Wilson–Hilferty's approximation of the chi-square quantile).
func chiSquare(counts []int, p []float32, n int) (chi float64, df int, crit float64) {
	var restE, restO float64
	bins := 0
	for i, pi := range p {
		e := float64(pi) * float64(n)
		if e >= 5 {
			d := float64(counts[i]) - e
			chi += d * d / e
			bins++
		} else {
			restE += e
			restO += float64(counts[i])
		}
	}
	if restE >= 5 {
		d := restO - restE
		chi += d * d / restE
		bins++
	} else if restO > 0 {
		chi += restO * restO / max(restE, 1e-9) // draws where almost none belong
	}
	df = bins - 1
	const z = 3.0902 // the standard normal's 0.999 quantile
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return chi, df, k * c * c * c
}

// A Batcher's speculating generations give what they give alone, their
// drafts rows of the step's batch beside other generations' rows.
func TestBatcherSpeculates(t *testing.T) {
	m := storiesModel(t)
	prompts := []string{copyPrompt, randomPrompt, batchPrompts[3]}
	b := m.NewBatcher()
	var gens []*Gen
	for i, p := range prompts {
		o := GenerateOptions{MaxTokens: 40, IgnoreEOS: true}
		if i < 2 {
			o = specOpts(o, &NGram{}, i == 0)
		}
		g, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(p, true, false), o)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	if err := b.Run(bg); err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		want := genNew(t, m, m.Tokenizer.Tokenize(p, true, false), GenerateOptions{MaxTokens: 40, IgnoreEOS: true})
		if got := gens[i].Result(); !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("%s: batched %v\nalone %v", p, got.Tokens, want.Tokens)
		}
	}
	if gens[0].Result().Spec.Accepted == 0 {
		t.Fatalf("the copying prompt accepted no draft: %+v", gens[0].Result().Spec)
	}
	// Sampled: a speculating generation in a Batcher draws what it draws
	// in a session (the same passes, the same uniforms).
	o := specOpts(GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: Sampling{Temperature: 0.9, TopK: 40, Seed: 3}}, &NGram{}, false)
	bs := m.NewBatcher()
	g, err := bs.Add(bg, sess(t, m), m.Tokenizer.Tokenize(copyPrompt, true, false), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := bs.Run(bg); err != nil {
		t.Fatal(err)
	}
	want := genNew(t, m, m.Tokenizer.Tokenize(copyPrompt, true, false), o)
	counts := func(s SpecStats) SpecStats {
		return SpecStats{Passes: s.Passes, Drafted: s.Drafted, Accepted: s.Accepted, Plain: s.Plain}
	}
	if got := g.Result(); !slices.Equal(got.Tokens, want.Tokens) || counts(got.Spec) != counts(want.Spec) || want.Spec.Passes == 0 {
		t.Fatalf("sampled, batched %v %+v\nalone %v %+v", got.Tokens, got.Spec, want.Tokens, want.Spec)
	}
}

// A speculative generation allocates per call, not per token: with either
// drafter, greedy or sampled, 80 tokens more cost no allocation more.
func TestSpeculativeDecodeDoesNotAllocatePerToken(t *testing.T) {
	m := storiesModel(t)
	draft := loadOn(t, stories(t), m)
	p := m.Tokenizer.Tokenize(copyPrompt, true, false)
	md, err := NewModelDrafter(m, draft, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer md.Close()
	listed, err := NewModelDrafter(m, draft, 6) // its LM head over the ids below 64 and the conversation's
	if err != nil {
		t.Fatal(err)
	}
	defer listed.Close()
	listed.SetShortlist(64)
	for _, d := range []Drafter{&NGram{}, md, listed} {
		for _, smp := range []Sampling{{}, {Temperature: 0.9, TopK: 40, Seed: 1}} {
			s := sess(t, m)
			allocs := func(n int) float64 {
				return testing.AllocsPerRun(5, func() {
					s.Reset()
					if _, err := s.Generate(bg, p, specOpts(GenerateOptions{MaxTokens: n, IgnoreEOS: true, Sampling: smp}, d, false)); err != nil {
						t.Fatal(err)
					}
				})
			}
			short, long := allocs(20), allocs(100)
			if long != short {
				t.Fatalf("%T, sampling %+v: %v allocations for 100 tokens, %v for 20", d, smp, long, short)
			}
		}
	}
}

// Drafts share the step's output rows: with every slot speculating at
// the longest drafts, each decoding generation still gets its token every
// step, and a prompt that arrives meanwhile is fed.
func TestBatcherDraftsLeaveRoomForEveryone(t *testing.T) {
	m := storiesModel(t)
	b := m.NewBatcher()
	p := m.Tokenizer.Tokenize(copyPrompt, true, false)
	var gens []*Gen
	for range testSeqs - 1 {
		g, err := b.Add(bg, sess(t, m), p, GenerateOptions{MaxTokens: 200, IgnoreEOS: true, Spec: &Speculation{Drafter: &NGram{}, Max: 31, Fixed: true}})
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	if err := b.Step(bg); err != nil { // the prompts
		t.Fatal(err)
	}
	late, err := b.Add(bg, sess(t, m), p, GenerateOptions{MaxTokens: 5, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 4 {
		before := make([]int, len(gens))
		for i, g := range gens {
			before[i] = len(g.Result().Tokens)
		}
		if err := b.Step(bg); err != nil {
			t.Fatal(err)
		}
		for i, g := range gens {
			if len(g.Result().Tokens) == before[i] {
				t.Fatalf("step %d: generation %d made no token", step, i)
			}
		}
	}
	if len(late.Result().Tokens) == 0 {
		t.Fatal("the prompt that came late was not fed in 4 steps")
	}
}
