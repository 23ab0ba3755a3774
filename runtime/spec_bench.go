package runtime

import (
	"context"
	"fmt"
	"slices"
)

// SpecBenchResult compares plain and speculative greedy decode of one
// prompt in one process: tok/s per repetition of each, and the
// speculative runs' counts (of the last repetition).
type SpecBenchResult struct {
	Plain, Spec []float64 // decode tok/s per repetition
	Stats       SpecStats
	Tokens      int  // generated per run
	Same        bool // every speculative run gave the plain run's tokens (greedy)
}

// BenchSpec decodes tg tokens (EOS ignored) after prompt with smp (greedy
// or sampled), reps times after a warm-up, each repetition a plain run
// then a speculative one with the Speculation spec returns (called once a
// run, on a fresh session each), so that both see the same machine's
// state.
func (m *Model) BenchSpec(prompt []int32, tg, reps int, smp Sampling, spec func() (*Speculation, func(), error), each BenchProgress) (*SpecBenchResult, error) {
	r := &SpecBenchResult{Same: smp.Greedy()}
	ctx := context.Background()
	o := GenerateOptions{MaxTokens: tg + 1, IgnoreEOS: true, Sampling: smp}
	rate := func(res *Result) float64 { return float64(len(res.Tokens)-1) / res.DecodeTime.Seconds() }
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for rep := -1; rep < reps; rep++ {
		s.Reset()
		plain, err := s.Generate(ctx, prompt, o)
		if err != nil {
			return nil, err
		}
		sp, done, err := spec()
		if err != nil {
			return nil, err
		}
		s.Reset()
		so := o
		so.Spec = sp
		res, err := s.Generate(ctx, prompt, so)
		done()
		if err != nil {
			return nil, fmt.Errorf("runtime: the speculative run: %w", err)
		}
		r.Tokens = len(res.Tokens)
		r.Same = r.Same && slices.Equal(res.Tokens, plain.Tokens)
		if each != nil {
			each(rep+1, rate(plain), rate(res))
		}
		if rep >= 0 {
			r.Plain = append(r.Plain, rate(plain))
			r.Spec = append(r.Spec, rate(res))
			r.Stats = res.Spec
		}
	}
	return r, nil
}
