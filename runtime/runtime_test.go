package runtime

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

func storiesModel(t testing.TB) *Model {
	t.Helper()
	model := stories(t)
	return load(t, compile(t, model, "cpu-avx2:2"), model, 2)
}

var bg = context.Background()

func gen(t *testing.T, s *Session, prompt []int32, o GenerateOptions) *Result {
	t.Helper()
	r, err := s.Generate(bg, prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// genNew generates from a fresh session, closed afterwards.
func genNew(t *testing.T, m *Model, prompt []int32, o GenerateOptions) *Result {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return gen(t, s, prompt, o)
}

func TestChainEqualsOneTokenPerSubmission(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	chain := genNew(t, m, p, GenerateOptions{MaxTokens: 64, IgnoreEOS: true})
	one := genNew(t, m, p, GenerateOptions{MaxTokens: 64, IgnoreEOS: true, TopLogits: 1})
	if !slices.Equal(chain.Tokens, one.Tokens) {
		t.Fatalf("chain %v\none-by-one %v", chain.Tokens, one.Tokens)
	}
	for i, tl := range one.TopLogits {
		if tl[0].ID != one.Tokens[i] {
			t.Fatalf("step %d: top logit %d, token %d", i, tl[0].ID, one.Tokens[i])
		}
	}
}

// The Apple plans keep F16 activations, the CPU plan F32: the logits then
// differ by F16 rounding through the layers (about 1e-3 of max|logit| on
// stories260K), and the greedy tokens agree unless a top-2 margin is below
// that, which this prompt does not meet in 64 steps.
func TestPlansOfEveryChipGiveTheSameTokens(t *testing.T) {
	model := stories(t)
	var want []int32
	for _, chip := range []string{"cpu-avx2:2", "m1", "m4-max"} {
		m := load(t, compile(t, model, chip), model, 2)
		r := genNew(t, m, m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 64, IgnoreEOS: true})
		if want == nil {
			want = r.Tokens
			continue
		}
		if !slices.Equal(r.Tokens, want) {
			t.Errorf("%s: %v\nwant %v", chip, r.Tokens, want)
		}
	}
}

func TestSampling(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	greedy := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true}).Tokens
	knobs := Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}
	t.Run("a fixed seed samples the same tokens twice", func(t *testing.T) {
		a := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens
		b := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens
		if !slices.Equal(a, b) {
			t.Fatalf("%v\n%v", a, b)
		}
		if slices.Equal(a, greedy) {
			t.Fatalf("sampling at temperature 0.9 gave the greedy tokens")
		}
		k2 := knobs
		k2.Seed = 43
		if c := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: k2}).Tokens; slices.Equal(a, c) {
			t.Fatalf("seeds 42 and 43 gave the same tokens")
		}
	})
	t.Run("the chain and the host sampler draw the same tokens", func(t *testing.T) {
		a := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs}).Tokens
		b := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: knobs, TopLogits: 2}).Tokens
		pen := knobs
		pen.RepeatPenalty = 1.0000001 // the host path, with a penalty that changes nothing
		c := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: pen}).Tokens
		if !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Fatalf("chain %v\nper step %v\nhost %v", a, b, c)
		}
	})
	t.Run("temperature 0 and top-k 1 are greedy", func(t *testing.T) {
		for _, s := range []Sampling{{Temperature: 0, Seed: 3}, {Temperature: 1.5, TopK: 1, Seed: 3}} {
			if got := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: s}).Tokens; !slices.Equal(got, greedy) {
				t.Fatalf("%+v: %v, want %v", s, got, greedy)
			}
		}
	})
	t.Run("a repetition penalty changes greedy output", func(t *testing.T) {
		got := genNew(t, m, p, GenerateOptions{MaxTokens: 40, IgnoreEOS: true, Sampling: Sampling{RepeatPenalty: 1.5}}).Tokens
		if slices.Equal(got, greedy) {
			t.Fatalf("penalty 1.5 left the greedy tokens")
		}
	})
}

func TestStops(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time", true, false)
	t.Run("-n stops at the limit", func(t *testing.T) {
		for _, n := range []int{1, 5, 17, 33} {
			r := genNew(t, m, p, GenerateOptions{MaxTokens: n, IgnoreEOS: true})
			if len(r.Tokens) != n || r.Stop != StopLimit {
				t.Fatalf("-n %d: %d tokens, stop %s", n, len(r.Tokens), r.Stop)
			}
		}
	})
	t.Run("EOS stops generation and is the last token", func(t *testing.T) {
		// stories260K rarely ends a story greedily: declare the 11th greedy
		// token an end-of-generation token, as a plan's EOG list would.
		g := genNew(t, m, p, GenerateOptions{MaxTokens: 11, IgnoreEOS: true}).Tokens
		eog := slices.Index(g, g[10])
		pt := m.Plan.Model.Tokenizer
		pt.EOG = append(slices.Clone(pt.EOG), g[10])
		saved := m.Tokenizer
		defer func() { m.Tokenizer = saved }()
		var err error
		if m.Tokenizer, err = Tokenizer(&pt); err != nil {
			t.Fatal(err)
		}
		r := genNew(t, m, p, GenerateOptions{MaxTokens: 100})
		if r.Stop != StopEOS || len(r.Tokens) != eog+1 || r.Tokens[eog] != g[10] {
			t.Fatalf("stop %s after %d tokens, last %d", r.Stop, len(r.Tokens), r.Tokens[len(r.Tokens)-1])
		}
		for _, tok := range r.Tokens[:len(r.Tokens)-1] {
			if m.Tokenizer.IsEOG(tok) {
				t.Fatalf("EOG %d before the end", tok)
			}
		}
	})
	t.Run("a full context stops with its reason, and refuses more", func(t *testing.T) {
		s := sess(t, m)
		r := gen(t, s, p, GenerateOptions{IgnoreEOS: true})
		if r.Stop != StopContext || s.Pos() != m.Ctx() || len(s.History()) != m.Ctx()+1 {
			t.Fatalf("stop %s, pos %d, history %d, ctx %d", r.Stop, s.Pos(), len(s.History()), m.Ctx())
		}
		if _, err := s.Generate(bg, []int32{1}, GenerateOptions{}); !errors.Is(err, ErrContextFull) {
			t.Fatalf("a turn past the context: %v", err)
		}
		long := make([]int32, m.Ctx()+1)
		if _, err := sess(t, m).Generate(bg, long, GenerateOptions{}); !errors.Is(err, ErrContextFull) {
			t.Fatalf("a prompt longer than the context: %v", err)
		}
	})
}

func TestMultiTurnEqualsOneLongPrompt(t *testing.T) {
	m := storiesModel(t)
	a := m.Tokenizer.Tokenize("Once upon a time", true, false)
	b := m.Tokenizer.Tokenize(" there was a dog", false, false)
	s := sess(t, m)
	r1 := gen(t, s, a, GenerateOptions{MaxTokens: 20, IgnoreEOS: true})
	r2 := gen(t, s, b, GenerateOptions{MaxTokens: 30, IgnoreEOS: true})
	long := slices.Concat(a, r1.Tokens, b)
	r := genNew(t, m, long, GenerateOptions{MaxTokens: 30, IgnoreEOS: true})
	if !slices.Equal(r2.Tokens, r.Tokens) {
		t.Fatalf("second turn %v\none prompt %v", r2.Tokens, r.Tokens)
	}
	if got := len(r2.Prompt); got != len(b)+1 {
		t.Fatalf("the second turn fed %d tokens, want the pending one and %d", got, len(b))
	}
}

// Prompts longer than the largest batch program go in chunks; the result
// is the same as feeding the tokens one row per Forward.
func TestPrefillChunksEqualTokenByToken(t *testing.T) {
	m := storiesModel(t)
	p := m.Tokenizer.Tokenize("Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friends.", true, false)
	for len(p) < 600 {
		p = append(p, p[1:]...)
	}
	p = p[:600]
	whole := genNew(t, m, p, GenerateOptions{MaxTokens: 16, IgnoreEOS: true})
	s := sess(t, m)
	var b Batch
	for i, tok := range p[:len(p)-1] {
		b.Reset()
		b.Add(tok, int32(i), int32(s.Seq()), false)
		if err := m.Forward(bg, &b); err != nil {
			t.Fatal(err)
		}
	}
	s.hist = append(s.hist, p[:len(p)-1]...)
	step := gen(t, s, p[len(p)-1:], GenerateOptions{MaxTokens: 16, IgnoreEOS: true})
	if !slices.Equal(whole.Tokens, step.Tokens) {
		t.Fatalf("chunked %v\nrow by row %v", whole.Tokens, step.Tokens)
	}
}

func TestDecodeStepDoesNotAllocate(t *testing.T) {
	m := storiesModel(t)
	s := sess(t, m)
	gen(t, s, m.Tokenizer.Tokenize("Once", true, false), GenerateOptions{MaxTokens: 1})
	n := len(s.steps)
	if a := testing.AllocsPerRun(20, func() { s.chain(m.decode, n) }); a != 0 {
		t.Fatalf("a chain of %d decode steps allocates %v times", n, a)
	}
	s.setSampling(Sampling{Temperature: 1, Seed: 1}.params(uint32(m.Vocab())))
	if a := testing.AllocsPerRun(20, func() { s.chain(m.sampled, n) }); a != 0 {
		t.Fatalf("a chain of %d sampled steps allocates %v times", n, a)
	}
	if a := testing.AllocsPerRun(20, func() { s.launch(m.decode, s.Pos(), n, 1); m.be.WaitOldest() }); a != 0 {
		t.Fatalf("an overlapped chain of %d decode steps and its hand-off allocate %v times", n, a)
	}
}

// A decode step of several sequences (one row each, every row out, logits
// read) through Forward allocates nothing either.
func TestBatchedDecodeStepDoesNotAllocate(t *testing.T) {
	t.Run("batch", func(t *testing.T) { batchedStepAllocs(t, storiesModel(t)) })
	t.Run("as-decode", func(t *testing.T) { // the 4 sequences as 4 decode steps (a GPU's way)
		model := stories(t)
		m, log := loadLogged(t, compile(t, model, "cpu-avx2:2"), model, rowsLog{decode: 4})
		batchedStepAllocs(t, m)
		if log.steps[m.decode.h] == 0 {
			t.Fatal("the 4 sequences' steps did not run as decode steps")
		}
	})
}

func batchedStepAllocs(t *testing.T, m *Model) {
	var ss []*Session
	for range 4 {
		s := sess(t, m)
		gen(t, s, m.Tokenizer.Tokenize("Once upon a time", true, false), GenerateOptions{MaxTokens: 1})
		ss = append(ss, s)
	}
	var b Batch
	// 4 sequences through a batch program; 1 through the decode program
	// (Forward's lone row).
	for _, n := range []int{len(ss), 1} {
		step := func() {
			b.Reset()
			for _, s := range ss[:n] {
				m.Rewind(s.Seq(), 5)
				b.Add(s.History()[5], 5, int32(s.Seq()), true)
			}
			b.ReadLogits = true
			if err := m.Forward(bg, &b); err != nil {
				t.Fatal(err)
			}
		}
		step()
		if a := testing.AllocsPerRun(20, step); a != 0 {
			t.Fatalf("a batched decode step of %d sequences allocates %v times", n, a)
		}
	}
}

func TestModelMismatchIsRefused(t *testing.T) {
	model := stories(t)
	plan := compile(t, model, "cpu-avx2:2")
	other := synthModel(t, "llama", 0)
	_, err := Load(plan, Options{Model: other})
	if !errors.Is(err, plans.ErrPlanMismatch) {
		t.Fatalf("another model: %v", err)
	}
	t.Log(err)
	// Same size, another header: flip a byte of the metadata.
	data, _ := os.ReadFile(model)
	i := bytes.Index(data, []byte("<unk>"))
	data[i] = '['
	bad := filepath.Join(t.TempDir(), "stories260K.gguf")
	os.WriteFile(bad, data, 0o644)
	if _, err := Load(plan, Options{Model: bad}); !errors.Is(err, plans.ErrPlanMismatch) {
		t.Fatalf("a changed header: %v", err)
	}
	if _, err := Load(plan, Options{Model: filepath.Join(t.TempDir(), "none.gguf")}); !errors.Is(err, ErrModelFile) {
		t.Fatalf("a missing file: %v", err)
	}
}

// TestRewindContinuesFromAPrefix: rewinding to a prefix and feeding other
// tokens gives what a fresh session fed the same conversation gives.
func TestRewindContinuesFromAPrefix(t *testing.T) {
	m := storiesModel(t)
	p1 := m.Tokenizer.Tokenize("Once upon a time, there was a little", true, false)
	p2 := m.Tokenizer.Tokenize(" dog who liked to run", false, false)
	p3 := m.Tokenizer.Tokenize(" girl named Lily", false, false)
	o := GenerateOptions{MaxTokens: 12}

	s := sess(t, m)
	if _, err := s.Generate(bg, append(slices.Clone(p1), p2...), o); err != nil {
		t.Fatal(err)
	}
	s.Rewind(len(p1))
	got, err := s.Generate(bg, p3, o)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := sess(t, m).Generate(bg, append(slices.Clone(p1), p3...), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, fresh.Tokens) {
		t.Errorf("after Rewind: %v, fresh: %v", got.Tokens, fresh.Tokens)
	}
}

// freeLog is a backend that counts the buffers freed, or (keep) frees
// none.
type freeLog struct {
	Backend
	freed int
	keep  bool
}

func (f *freeLog) Free(b device.Buffer) {
	f.freed++
	if !f.keep {
		f.Backend.Free(b)
	}
}

// A GPU plan's weights that no command reads (the sources of its
// concatenated q|k|v and gate|up rows and of its planar layouts) are freed
// at load, once what is derived from them is built; the rest stay, and the
// model decodes exactly as with every weight kept.
func TestWeightsReadOnlyToDeriveAreFreed(t *testing.T) {
	model := synthModel(t, "llama", dtype.Q4_0)
	plan := compile(t, model, "h100-sxm")
	run := func(keep bool) (*Model, *freeLog, []stepLog) {
		log := &freeLog{Backend: NewCPU(2), keep: keep}
		t.Cleanup(log.Close)
		m, err := Load(plan, Options{Model: model, Backend: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m, log, ours(t, m, m.Tokenizer.Tokenize(cudaLongPrompt, true, false), 6)
	}
	m, log, got := run(false)
	bound := map[uint32]bool{}
	for _, pr := range m.Plan.Programs {
		for _, c := range pr.Commands {
			for _, b := range c.Bindings {
				bound[b.Buffer] = true
			}
		}
	}
	var want int64
	n := 0
	for i, b := range m.Plan.Buffers {
		if b.Kind == plans.BufWeight && !bound[uint32(i)] {
			want += int64(b.Size)
			n++
			if _, err := m.ReadBuffer(i); err == nil {
				t.Errorf("buffer %s: read after it was freed", b.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("the plan has no weight that only derived buffers read; the test needs one")
	}
	if m.FreedWeights != want || log.freed != n {
		t.Fatalf("freed %d buffers, %d bytes; want the %d unbound weights' %d", log.freed, m.FreedWeights, n, want)
	}
	t.Logf("%d weight bytes freed (%d buffers)", want, n)
	_, _, ref := run(true)
	for i := range ref {
		if got[i].tok != ref[i].tok || !slices.Equal(got[i].logits, ref[i].logits) {
			t.Fatalf("step %d: with the source weights freed, token %d; kept, %d (or the logits differ)", i, got[i].tok, ref[i].tok)
		}
	}
}
