package runtime

import (
	"context"
	"math"
	"slices"
	"time"
)

// BenchResult is one measurement of prompt processing (pp) and token
// generation (tg), in tokens per second, over reps runs.
type BenchResult struct {
	PP, TG       []float64 // tok/s per repetition
	PromptTokens int
	GenTokens    int
}

// benchPrompt is n tokens: what they say does not matter to the timing.
func (m *Model) benchPrompt(n, salt int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(1 + (i+salt*7)%max(1, m.vocab-1))
	}
	return p
}

// Bench runs reps repetitions of a pp-token prefill followed by tg greedy
// decode tokens (EOS ignored) from an empty session, after one warm-up.
func (m *Model) Bench(pp, tg, reps int) (*BenchResult, error) {
	prompt := m.benchPrompt(pp, 0)
	r := &BenchResult{PromptTokens: pp, GenTokens: tg}
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for i := -1; i < reps; i++ {
		s.Reset()
		res, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: tg + 1, IgnoreEOS: true})
		if err != nil {
			return nil, err
		}
		if i < 0 {
			continue
		}
		r.PP = append(r.PP, float64(pp)/res.PromptTime.Seconds())
		r.TG = append(r.TG, float64(len(res.Tokens)-1)/res.DecodeTime.Seconds())
	}
	return r, nil
}

// BatchBenchResult is one measurement of batched decode: B sequences
// decoding together, aggregate tokens per second over reps runs.
type BatchBenchResult struct {
	B         int
	TG        []float64 // aggregate tok/s per repetition
	GenTokens int       // per sequence
}

// BenchBatch decodes b sequences together (a short distinct prompt each,
// tg greedy tokens each, EOS ignored) through a Batcher, reps times after
// a warm-up, and reports the aggregate decode rate: every token after each
// sequence's first, over the time from the step that gave the last first
// token to the end. The model needs b sequence slots.
func (m *Model) BenchBatch(b, pp, tg, reps int) (*BatchBenchResult, error) {
	r := &BatchBenchResult{B: b, GenTokens: tg}
	ss := make([]*Session, b)
	for i := range ss {
		var err error
		if ss[i], err = m.NewSession(); err != nil {
			return nil, err
		}
		defer ss[i].Close()
	}
	ctx := context.Background()
	for rep := -1; rep < reps; rep++ {
		bt := m.NewBatcher()
		gens := make([]*Gen, b)
		for i, s := range ss {
			s.Reset()
			var err error
			if gens[i], err = bt.Add(ctx, s, m.benchPrompt(pp, i), GenerateOptions{MaxTokens: tg + 1, IgnoreEOS: true}); err != nil {
				return nil, err
			}
		}
		for slices.ContainsFunc(gens, func(g *Gen) bool { return len(g.Result().Tokens) == 0 }) {
			if err := bt.Step(ctx); err != nil {
				return nil, err
			}
		}
		t := time.Now()
		if err := bt.Run(ctx); err != nil {
			return nil, err
		}
		n := 0
		for _, g := range gens {
			n += len(g.Result().Tokens) - 1
		}
		if rep >= 0 {
			r.TG = append(r.TG, float64(n)/time.Since(t).Seconds())
		}
	}
	return r, nil
}

// MeanSD is the mean and the sample standard deviation of xs.
func MeanSD(xs []float64) (float64, float64) {
	var s, s2 float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	for _, x := range xs {
		s2 += (x - mean) * (x - mean)
	}
	if len(xs) < 2 {
		return mean, 0
	}
	return mean, math.Sqrt(s2 / float64(len(xs)-1))
}

// Median is the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MemcpyBandwidth measures the host's copy bandwidth in bytes/s (bytes
// read; a copy also writes as many), with a 256 MiB buffer: the ceiling a
// CPU target's decode is held to, since CPU profiles state none.
func MemcpyBandwidth() float64 {
	const n = 256 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	best := 0.0
	for range 3 {
		t := time.Now()
		copy(dst, src)
		best = max(best, n/time.Since(t).Seconds())
	}
	return best
}
