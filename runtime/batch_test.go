package runtime

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/cpu"
	"github.com/akunu-dev/akunu/runtime/device"
)

// batchPrompts are prompts of several lengths (one longer than a small
// bucket), so that a batch mixes sequences at different positions.
var batchPrompts = []string{
	"Once upon a time",
	"The little dog ran to the park and",
	"Lily",
	"One day, a girl named Sue found a big red ball in the garden. She wanted to play with it, so she",
	"Tom and his mom went",
	"The sun",
}

// stepLogits records every step's logits of a generation (a copy each).
func stepLogits(dst *[][]float32) func(int, []float32) {
	return func(_ int, l []float32) { *dst = append(*dst, slices.Clone(l)) }
}

// sameOrNearTie holds got to want token by token; where they part, the
// reference's top-2 margin at that step (want's logits, relative to its
// largest magnitude) must be within tol: the parity tests' rule for random
// weights. It returns the steps compared.
func sameOrNearTie(t *testing.T, name string, got, want []int32, wantLogits [][]float32, tol float64) int {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] == want[i] {
			continue
		}
		if i < len(wantLogits) {
			l := wantLogits[i]
			if m := margin(l); m <= tol*maxAbs(l) {
				t.Logf("%s: step %d: a near tie (margin %.3g) parts the sequences", name, i, m)
				return i
			}
		}
		t.Fatalf("%s: step %d: token %d, alone %d\nbatched %v\nalone   %v", name, i, got[i], want[i], got, want)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d tokens, alone %d", name, len(got), len(want))
	}
	return len(got)
}

// Sequences decoded together, in one batch per step (their prompts
// prefilled together too), give each the tokens it gives alone.
func TestBatchedDecodeEqualsAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(t *testing.T) *Model
		tol   float64
	}{
		{"stories260K", func(t *testing.T) *Model { return storiesModel(t) }, 1e-3},
		{"llama q8_0", func(t *testing.T) *Model { return synthLoad(t, "llama", dtype.Q8_0) }, 2e-2},
		{"qwen3 q4_k", func(t *testing.T) *Model { return synthLoad(t, "qwen3", dtype.Q4_K) }, 2e-2},
		{"gemma3 q4_0", func(t *testing.T) *Model { return synthLoad(t, "gemma3", dtype.Q4_0) }, 2e-2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model(t)
			const n = 24
			b := m.NewBatcher()
			var gens []*Gen
			for _, p := range batchPrompts {
				g, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(p, true, false), GenerateOptions{MaxTokens: n, IgnoreEOS: true})
				if err != nil {
					t.Fatal(err)
				}
				gens = append(gens, g)
			}
			if err := b.Run(bg); err != nil {
				t.Fatal(err)
			}
			for i, p := range batchPrompts {
				var logits [][]float32
				alone := genNew(t, m, m.Tokenizer.Tokenize(p, true, false), GenerateOptions{MaxTokens: n, IgnoreEOS: true, Logits: stepLogits(&logits)})
				r := gens[i].Result()
				if r.Stop != StopLimit || gens[i].Err() != nil {
					t.Fatalf("prompt %d: stop %s, %v", i, r.Stop, gens[i].Err())
				}
				sameOrNearTie(t, fmt.Sprintf("prompt %d", i), r.Tokens, alone.Tokens, logits, tc.tol)
			}
		})
	}
}

// encodeLog is a backend that counts the steps it encodes of each program.
type encodeLog struct {
	Backend
	steps map[device.Program]int
}

func (e *encodeLog) Encode(p device.Program, steps []plans.Step) {
	e.steps[p] += len(steps)
	e.Backend.Encode(p, steps)
}

// A lone sequence in a Batcher (a server with one request) steps through
// the decode program, one row a Forward, not through a batch program (on
// a GPU, GEMMs made for 2 to 8 rows at a fraction of the GEMVs' rate):
// its tokens and every step's logits are plain decode's, bit for bit.
func TestALoneBatchedSequenceIsPlainDecode(t *testing.T) {
	for _, model := range []func(t testing.TB) string{
		stories,
		func(t testing.TB) string { return synthModel(t, "qwen3", dtype.Q4_0) },
	} {
		t.Run(filepath.Base(model(t)), func(t *testing.T) {
			path := model(t)
			m, log := loadLogged(t, compile(t, path, "cpu-avx2:2"), path, rowsLog{})
			p := m.Tokenizer.Tokenize(batchPrompts[0], true, false)
			var got, want [][]float32
			b := m.NewBatcher()
			g, err := b.Add(bg, sess(t, m), p, GenerateOptions{MaxTokens: 20, IgnoreEOS: true, Logits: stepLogits(&got)})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Run(bg); err != nil {
				t.Fatal(err)
			}
			// The first token comes with the prompt's rows; the other 19
			// are one row each.
			if n := log.steps[m.decode.h]; n != 19 {
				t.Errorf("the decode program ran %d of the batched sequence's 19 decode steps", n)
			}
			alone := genNew(t, m, p, GenerateOptions{MaxTokens: 20, IgnoreEOS: true, Logits: stepLogits(&want)})
			if !slices.Equal(g.Result().Tokens, alone.Tokens) || len(got) != len(want) {
				t.Fatalf("batched alone %v (%d logits)\nplain %v (%d)", g.Result().Tokens, len(got), alone.Tokens, len(want))
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("step %d: the batched sequence's logits differ from plain decode's", i)
				}
			}
		})
	}
}

// rowsLog is an encodeLog that asks, as the CUDA backend does, for up to
// decode sequences' rows as decode steps (0: a lone row) and for replays
// of split < r ≤ 2·split rows cut in two (0: none).
type rowsLog struct {
	*encodeLog
	decode, split int
}

func (r rowsLog) DecodeRows(*plans.Plan) int { return max(1, r.decode) }
func (r rowsLog) SplitRows(*plans.Plan) int  { return r.split }

// loadLogged loads plan (of model) on a 2-thread CPU backend that counts
// its encodes, through rows (the zero rowsLog asks what the CPU asks
// itself); the model and the backend close with t.
func loadLogged(t *testing.T, plan, model string, rows rowsLog) (*Model, *encodeLog) {
	t.Helper()
	log := &encodeLog{Backend: NewCPU(2), steps: map[device.Program]int{}}
	t.Cleanup(log.Close)
	rows.encodeLog = log
	m, err := Load(plan, Options{Model: model, Backend: rows, Seqs: testSeqs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, log
}

// Where the backend asks for it (a GPU), the next tokens of up to
// DecodeRows sequences are that many decode steps, not one batch program;
// past it they are one batch program. Either way each sequence's tokens
// and every step's logits are what it gives alone.
func TestFewSequencesStepAsDecode(t *testing.T) {
	path := synthModel(t, "qwen3", dtype.Q4_0)
	plan := compile(t, path, "cpu-avx2:2")
	const seqs, tokens = 3, 12
	for _, tc := range []struct {
		rows, decodeSteps int
	}{
		{rows: 4, decodeSteps: seqs * (tokens - 1)}, // every step after the prompts'
		{rows: 2, decodeSteps: 0},                   // three rows are one batch program
	} {
		t.Run(fmt.Sprintf("rows=%d", tc.rows), func(t *testing.T) {
			m, log := loadLogged(t, plan, path, rowsLog{decode: tc.rows})
			b := m.NewBatcher()
			gens := make([]*Gen, seqs)
			got := make([][][]float32, seqs)
			for i := range gens {
				p := m.Tokenizer.Tokenize(batchPrompts[i], true, false)
				var err error
				if gens[i], err = b.Add(bg, sess(t, m), p, GenerateOptions{MaxTokens: tokens, IgnoreEOS: true, Logits: stepLogits(&got[i])}); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Run(bg); err != nil {
				t.Fatal(err)
			}
			if n := log.steps[m.decode.h]; n != tc.decodeSteps {
				t.Errorf("the decode program ran %d steps; want %d", n, tc.decodeSteps)
			}
			togetherIsAlone(t, m)
			for i, g := range gens {
				var want [][]float32
				alone := genNew(t, m, m.Tokenizer.Tokenize(batchPrompts[i], true, false), GenerateOptions{MaxTokens: tokens, IgnoreEOS: true, Logits: stepLogits(&want)})
				if !slices.Equal(g.Result().Tokens, alone.Tokens) || len(got[i]) != len(want) {
					t.Fatalf("sequence %d: batched %v (%d logits)\nalone %v (%d)", i, g.Result().Tokens, len(got[i]), alone.Tokens, len(want))
				}
				for k := range want {
					if !slices.Equal(got[i][k], want[k]) {
						t.Fatalf("sequence %d, step %d: the logits differ from its plain decode's", i, k)
					}
				}
			}
		})
	}
}

// A Batcher admits generations at any step (continuous batching): one
// that joins while others decode, and one sampled with its own seed, each
// give what they give alone.
func TestBatcherAdmitsGenerationsAtAnyStep(t *testing.T) {
	m := storiesModel(t)
	knobs := Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 11}
	b := m.NewBatcher()
	first, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(batchPrompts[0], true, false), GenerateOptions{MaxTokens: 30, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := b.Step(bg); err != nil {
			t.Fatal(err)
		}
	}
	late, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(batchPrompts[1], true, false), GenerateOptions{MaxTokens: 20, IgnoreEOS: true, Sampling: knobs})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(bg); err != nil {
		t.Fatal(err)
	}
	want0 := genNew(t, m, m.Tokenizer.Tokenize(batchPrompts[0], true, false), GenerateOptions{MaxTokens: 30, IgnoreEOS: true})
	want1 := genNew(t, m, m.Tokenizer.Tokenize(batchPrompts[1], true, false), GenerateOptions{MaxTokens: 20, IgnoreEOS: true, Sampling: knobs})
	if !slices.Equal(first.Result().Tokens, want0.Tokens) || !slices.Equal(late.Result().Tokens, want1.Tokens) {
		t.Fatalf("batched %v / %v\nalone   %v / %v", first.Result().Tokens, late.Result().Tokens, want0.Tokens, want1.Tokens)
	}
}

// While a generation decodes, a long prompt is fed BusyPrefillRows rows a
// step, so the decoding one gets a token every step; alone, it is fed in
// PrefillRows chunks.
func TestBatcherBoundsPrefillWhileOthersDecode(t *testing.T) {
	m := storiesModel(t)
	long := m.Tokenizer.Tokenize(strings.Repeat(batchPrompts[3]+" ", 6), true, false)
	b := m.NewBatcher()
	b.PrefillRows, b.BusyPrefillRows = 64, 8
	alone, err := b.Add(bg, sess(t, m), long, GenerateOptions{MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Step(bg); err != nil {
		t.Fatal(err)
	}
	if rows := b.b.Len(); rows != 64 {
		t.Fatalf("alone, a step fed %d prompt rows, want PrefillRows 64", rows)
	}
	if err := b.Run(bg); err != nil || !alone.Done() {
		t.Fatal(err)
	}
	dec, err := b.Add(bg, sess(t, m), m.Tokenizer.Tokenize(batchPrompts[0], true, false), GenerateOptions{MaxTokens: 40, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Step(bg); err != nil { // its prompt
		t.Fatal(err)
	}
	late, err := b.Add(bg, sess(t, m), long, GenerateOptions{MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	for steps := 0; !late.Done(); steps++ {
		before := len(dec.Result().Tokens)
		if err := b.Step(bg); err != nil {
			t.Fatal(err)
		}
		if rows := b.b.Len(); rows > 1+8 {
			t.Fatalf("step %d: %d rows while one decodes, want at most 1 + BusyPrefillRows 8", steps, rows)
		}
		if got := len(dec.Result().Tokens); got != before+1 && !dec.Done() {
			t.Fatalf("step %d: the decoding generation got %d tokens, want 1", steps, got-before)
		}
	}
	if len(long) <= 64 {
		t.Fatalf("the long prompt has %d tokens: too short to tell the budgets apart", len(long))
	}
}

// A session's next turn after a batched one continues exactly as after a
// lone one: the batch left its KV slot holding exactly its history.
func TestAfterABatchTheSessionContinues(t *testing.T) {
	m := storiesModel(t)
	a, b := sess(t, m), sess(t, m)
	bt := m.NewBatcher()
	for i, s := range []*Session{a, b} {
		if _, err := bt.Add(bg, s, m.Tokenizer.Tokenize(batchPrompts[i], true, false), GenerateOptions{MaxTokens: 12, IgnoreEOS: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bt.Run(bg); err != nil {
		t.Fatal(err)
	}
	more := m.Tokenizer.Tokenize(" and then", false, false)
	got := gen(t, a, more, GenerateOptions{MaxTokens: 12, IgnoreEOS: true})
	want := genNew(t, m, slices.Concat(a.History()[:len(a.History())-len(more)-12], more), GenerateOptions{MaxTokens: 12, IgnoreEOS: true})
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Fatalf("after a batch %v, one prompt %v", got.Tokens, want.Tokens)
	}
}

// CopyFrom gives a session another's prefix without computing it: its
// generation from there equals a fresh one over the same tokens.
func TestCopyPrefixContinuesLikeAFreshRun(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize(batchPrompts[3], true, false)
	src := sess(t, m)
	gen(t, src, p, GenerateOptions{MaxTokens: 8, IgnoreEOS: true})
	dst := sess(t, m)
	gen(t, dst, m.Tokenizer.Tokenize("Something else entirely", true, false), GenerateOptions{MaxTokens: 4}) // other KV in the slot
	n := len(p) - 3
	if err := dst.CopyFrom(src, n); err != nil {
		t.Fatal(err)
	}
	if dst.Pos() != n {
		t.Fatalf("the copy holds %d positions, want %d", dst.Pos(), n)
	}
	got := gen(t, dst, p[n:], GenerateOptions{MaxTokens: 16, IgnoreEOS: true})
	if len(got.Prompt) != 3 {
		t.Fatalf("fed %d tokens after the copy, want 3", len(got.Prompt))
	}
	want := genNew(t, m, p, GenerateOptions{MaxTokens: 16, IgnoreEOS: true})
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Fatalf("after CopyFrom %v, fresh %v", got.Tokens, want.Tokens)
	}
	if err := dst.CopyFrom(src, src.Pos()+1); err == nil {
		t.Fatal("copying more positions than the source holds succeeded")
	}
}

// Forward refuses rows that do not continue their sequence, a sequence
// the cache lacks, and a token outside the vocabulary, naming the row.
func TestForwardRefusesBadRows(t *testing.T) {
	m := storiesModel(t)
	s := sess(t, m)
	gen(t, s, m.Tokenizer.Tokenize("Once", true, false), GenerateOptions{MaxTokens: 1})
	pos := int32(s.Pos())
	for _, tc := range []struct {
		name string
		b    Batch
	}{
		{"a gap in the positions", Batch{Tokens: []int32{1}, Pos: []int32{pos + 1}, Seq: []int32{int32(s.Seq())}, Out: []bool{true}}},
		{"a position already held", Batch{Tokens: []int32{1}, Pos: []int32{pos - 1}, Seq: []int32{int32(s.Seq())}, Out: []bool{true}}},
		{"a sequence past the slots", Batch{Tokens: []int32{1}, Pos: []int32{0}, Seq: []int32{int32(m.Seqs())}, Out: []bool{true}}},
		{"a token past the vocabulary", Batch{Tokens: []int32{int32(m.Vocab())}, Pos: []int32{pos}, Seq: []int32{int32(s.Seq())}, Out: []bool{true}}},
		{"uneven arrays", Batch{Tokens: []int32{1, 2}, Pos: []int32{pos}, Seq: []int32{int32(s.Seq())}, Out: []bool{true}}},
		{"more outputs than a Forward gives", func() Batch {
			var b Batch
			for i := range m.MaxOutputs() + 1 {
				b.Add(1, pos+int32(i), int32(s.Seq()), true)
			}
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Pos()
			if err := m.Forward(bg, &tc.b); err == nil {
				t.Fatal("accepted")
			} else {
				t.Log(err)
			}
			if s.Pos() != before {
				t.Fatalf("a refused batch moved the sequence from %d to %d", before, s.Pos())
			}
		})
	}
	b := Batch{Tokens: []int32{1}, Pos: []int32{int32(m.Ctx())}, Seq: []int32{0}, Out: []bool{true}}
	m.Rewind(0, m.Ctx())
	m.kv.len[0] = m.Ctx()
	if err := m.Forward(bg, &b); !errors.Is(err, ErrContextFull) {
		t.Fatalf("a row at the context's end: %v", err)
	}
	m.kv.len[0] = 0
}

// Two models on one backend each give what they give alone, and closing
// one leaves the other working.
func TestModelsShareABackend(t *testing.T) {
	model := stories(t)
	plan := compile(t, model, "cpu-avx2:2")
	other := synthModel(t, "qwen3", dtype.Q8_0)
	otherPlan := compile(t, other, "cpu-avx2:2")
	be := NewCPU(2)
	defer be.Close()
	a, err := Load(plan, Options{Model: model, Backend: be, Seqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(otherPlan, Options{Model: other, Backend: be, Seqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	aloneA := genNew(t, load(t, plan, model, 2), []int32{1, 403, 407}, GenerateOptions{MaxTokens: 20, IgnoreEOS: true})
	aloneB := genNew(t, load(t, otherPlan, other, 2), []int32{1, 2, 3, 4}, GenerateOptions{MaxTokens: 20, IgnoreEOS: true})
	for range 2 { // interleaved, twice
		if got := genNew(t, a, []int32{1, 403, 407}, GenerateOptions{MaxTokens: 20, IgnoreEOS: true}); !slices.Equal(got.Tokens, aloneA.Tokens) {
			t.Fatalf("model a on a shared backend %v, alone %v", got.Tokens, aloneA.Tokens)
		}
		if got := genNew(t, b, []int32{1, 2, 3, 4}, GenerateOptions{MaxTokens: 20, IgnoreEOS: true}); !slices.Equal(got.Tokens, aloneB.Tokens) {
			t.Fatalf("model b on a shared backend %v, alone %v", got.Tokens, aloneB.Tokens)
		}
	}
	a.Close()
	if got := genNew(t, b, []int32{1, 2, 3, 4}, GenerateOptions{MaxTokens: 20, IgnoreEOS: true}); !slices.Equal(got.Tokens, aloneB.Tokens) {
		t.Fatalf("after the other model closed: %v, alone %v", got.Tokens, aloneB.Tokens)
	}
	b.Close()
}

// synthLoad loads a synthetic model compiled for the test CPU target.
func synthLoad(t *testing.T, arch string, dt dtype.Type) *Model {
	model := synthModel(t, arch, dt)
	return load(t, compile(t, model, "cpu-avx2:2"), model, 2)
}

// An NVIDIA plan's batch programs of 2 to 8 rows read the decode program's
// planar buffers (simd_gemm_small_q4_0_planar, and _planar_glu for
// gate|up's pairs of rows): the rows of one Forward (a verify pass's
// shape) give, row by row, the logits plain decode gives at the same
// positions, within the rounding of the norms that decode folds into its
// GEMVs, and the same tokens.
func TestPlanarBatchRowsAgreeWithDecode(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			model := synthModel(t, arch, dtype.Q4_0)
			planarRowsAgree(t, load(t, compile(t, model, "h100-sxm"), model, 0), 2e-2)
		})
	}
}

// planarRowsAgree holds 5 rows of one sequence through a batch program of
// m (an NVIDIA plan's) to plain decode's logits at those positions,
// within tol of the largest.
func planarRowsAgree(t *testing.T, m *Model, tol float64) {
	arch := m.Plan.Model.HParams.Arch
	for _, want := range []string{"simd_gemm_small_q4_0_planar", "simd_gemm_small_q4_0_planar_glu"} {
		if !slices.ContainsFunc(m.Plan.Pipelines, func(p plans.Pipeline) bool { return p.Kernel == want }) {
			t.Fatalf("the plan has no %s", want)
		}
	}
	prompt := m.Tokenizer.Tokenize(cudaLongPrompt, true, false)
	// 5 rows: one small batch program; 13: on CUDA two replays of them
	// (SplitRows), elsewhere batch.16.
	for _, n := range []int{6, 14} {
		ref := ours(t, m, prompt, n)
		s := sess(t, m)
		var b Batch
		for i, tok := range prompt { // the prompt: one batch program of its rows
			b.Add(tok, int32(i), int32(s.Seq()), i == len(prompt)-1)
		}
		if err := m.Forward(bg, &b); err != nil {
			t.Fatal(err)
		}
		b.Reset() // then the generated tokens as the rows of one Forward
		for i := range n - 1 {
			b.Add(ref[i].tok, int32(len(prompt)+i), int32(s.Seq()), true)
		}
		b.ReadLogits = true
		if err := m.Forward(bg, &b); err != nil {
			t.Fatal(err)
		}
		var got []int32
		var gotLogits [][]float32
		for j := range n - 1 {
			got, gotLogits = append(got, m.OutputToken(j)), append(gotLogits, slices.Clone(m.OutputLogits(j)))
		}
		var want []int32
		var wantLogits [][]float32
		for _, r := range ref[1:] {
			want, wantLogits = append(want, r.tok), append(wantLogits, r.logits)
		}
		agree, worst := holdToReference(t, arch, got, gotLogits, want, wantLogits, tol)
		t.Logf("%d of %d rows agree with decode, max |Δ|/max|logit| = %.3g", agree, n-1, worst)
	}
}

// Where the backend asks for it, a Forward of s < r ≤ 2s rows replays s
// rows and then the rest (a lone row with its output as a decode step),
// past 2s one program; the logits are the whole Forward's, bit for bit
// (the CPU's batch programs give every row the decode program's bits).
func TestSplitRowsReplayTwice(t *testing.T) {
	path := synthModel(t, "qwen3", dtype.Q4_0)
	plan := compile(t, path, "cpu-avx2:2")
	plain := load(t, plan, path, 2)
	for _, tc := range []struct {
		rows, split int
		replays     map[int]int // batch program rows: replays
		decode      int
	}{
		{rows: 7, split: 4, replays: map[int]int{4: 2}},
		{rows: 5, split: 4, replays: map[int]int{4: 1}, decode: 1},
		{rows: 9, split: 4, replays: map[int]int{16: 1}},
		{rows: 4, split: 4, replays: map[int]int{4: 1}},
	} {
		t.Run(fmt.Sprintf("%d rows split at %d", tc.rows, tc.split), func(t *testing.T) {
			m, log := loadLogged(t, plan, path, rowsLog{split: tc.split})
			var b Batch
			p := m.Tokenizer.Tokenize(randomPrompt, true, false)
			for r := range tc.rows {
				b.Add(p[r%len(p)], int32(r), 0, true)
			}
			b.ReadLogits = true
			want := make([][]float32, tc.rows)
			for _, mm := range []*Model{plain, m} {
				mm.Rewind(0, 0)
				if err := mm.Forward(bg, &b); err != nil {
					t.Fatal(err)
				}
				for r := range tc.rows {
					l := mm.OutputLogits(r)
					if mm == plain {
						want[r] = slices.Clone(l)
					} else if !slices.Equal(l, want[r]) {
						t.Fatalf("row %d: the split Forward's logits differ from the whole one's", r)
					}
				}
			}
			got := map[int]int{}
			for _, pr := range m.batch {
				if n := log.steps[pr.h]; n > 0 {
					got[int(pr.p.Batch)] = n
				}
			}
			if !maps.Equal(got, tc.replays) || log.steps[m.decode.h] != tc.decode {
				t.Fatalf("replays %v and %d decode steps; want %v and %d", got, log.steps[m.decode.h], tc.replays, tc.decode)
			}
		})
	}
}

// TestEncodeTimedIsEncode holds the CPU's timed replay (the profile
// BenchmarkDecodeCommands prints) to Encode: the same decode step gives
// the same logits bit for bit, and every command that runs is timed.
func TestEncodeTimedIsEncode(t *testing.T) {
	model := stories(t)
	m := load(t, compile(t, model, "cpu-avx2:2"), model, 2)
	be := m.be.(*cpu.Backend)
	var batch Batch
	batch.Add(1, 0, 0, true)
	if err := m.Forward(bg, &batch); err != nil {
		t.Fatal(err)
	}
	logits := func(timed bool) ([]float32, []int64) {
		ns := make([]int64, len(be.Commands(m.decode.h)))
		if err := m.writeToken(0, 42); err != nil {
			t.Fatal(err)
		}
		step := plans.Step{Pos: 1, Batch: 1}
		if timed {
			be.EncodeTimed(m.decode.h, step, ns)
		} else {
			be.Encode(m.decode.h, []plans.Step{step})
		}
		if err := be.Wait(); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, m.vocab)
		if err := be.Read(f32Bytes(out), m.io.logits, 0); err != nil {
			t.Fatal(err)
		}
		return out, ns
	}
	want, _ := logits(false)
	got, ns := logits(true)
	if !slices.Equal(got, want) {
		t.Fatal("the timed step's logits differ from Encode's")
	}
	for i, e := range be.Commands(m.decode.h) {
		if ns[i] <= 0 && !e.Grouped() {
			t.Errorf("command %d (%s) ran untimed", i, e.Label)
		}
	}
}
