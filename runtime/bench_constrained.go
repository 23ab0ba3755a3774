package runtime

import (
	"context"
	"fmt"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

// ConstrainedBench is decode speed with and without a grammar, measured
// in alternation so that both see the same machine state.
type ConstrainedBench struct {
	Free, Constrained []float64 // decode tok/s per repetition
	Tokens            []int     // tokens each constrained run made
}

// BenchConstrained times reps pairs of generations from the same pp-token
// prompt after one warm-up pair: tg tokens unconstrained (EOS ignored),
// then up to tg tokens under x's grammar, which ends where the grammar
// does, both with smp (a sampled run's seed is smp's plus the
// repetition, so sampled runs walk different paths of the grammar).
// Greedy is the harsher test: the free run then chooses its tokens inside
// the plan, with no logits read by the host. The index's mask cache is
// shared across repetitions, as a server shares it across requests with
// one schema. A rate needs at least two decode tokens.
func (m *Model) BenchConstrained(pp, tg, reps int, x *grammar.Index, smp Sampling, each BenchProgress) (*ConstrainedBench, error) {
	prompt := m.benchPrompt(pp, 0)
	r := &ConstrainedBench{}
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rate := func(res *Result) float64 {
		if len(res.Tokens) < 2 || res.DecodeTime <= 0 {
			return 0
		}
		return float64(len(res.Tokens)-1) / res.DecodeTime.Seconds()
	}
	for i := -1; i < reps; i++ {
		smp := smp
		smp.Seed += uint32(i + 1)
		s.Reset()
		free, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: tg + 1, IgnoreEOS: true, Sampling: smp})
		if err != nil {
			return nil, err
		}
		s.Reset()
		con, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: tg + 1, Sampling: smp, Processors: []Processor{NewConstraint(x)}})
		if err != nil {
			return nil, fmt.Errorf("bench: the constrained run: %w", err)
		}
		if len(con.Tokens) < 2 {
			return nil, fmt.Errorf("bench: the constrained run made %d tokens; a rate needs 2 (a grammar whose sentences are longer)", len(con.Tokens))
		}
		if each != nil {
			each(i+1, rate(free), rate(con))
		}
		if i < 0 {
			continue
		}
		r.Free = append(r.Free, rate(free))
		r.Constrained = append(r.Constrained, rate(con))
		r.Tokens = append(r.Tokens, len(con.Tokens))
	}
	return r, nil
}
