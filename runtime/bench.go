package runtime

import (
	"math"
	"time"
)

// BenchResult is one measurement of prompt processing (pp) and token
// generation (tg), in tokens per second, over reps runs.
type BenchResult struct {
	PP, TG       []float64 // tok/s per repetition
	PromptTokens int
	GenTokens    int
}

// Bench runs reps repetitions of a pp-token prefill followed by tg greedy
// decode tokens (EOS ignored) from an empty session, after one warm-up.
// The prompt is token 1 repeated after BOS-like id 1: what it says does not
// matter to the timing.
func (m *Model) Bench(pp, tg, reps int) (*BenchResult, error) {
	prompt := make([]int32, pp)
	for i := range prompt {
		prompt[i] = int32(1 + i%max(1, len(m.logits)-1))
	}
	r := &BenchResult{PromptTokens: pp, GenTokens: tg}
	for i := -1; i < reps; i++ {
		s := m.NewSession()
		res, err := s.Generate(prompt, GenerateOptions{MaxTokens: tg + 1, IgnoreEOS: true})
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
