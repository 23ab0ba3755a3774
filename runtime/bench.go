package runtime

import (
	"context"
	"math"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"github.com/akunu-dev/akunu/runtime/membw"
)

// BenchResult is one measurement of prompt processing (pp) and token
// generation (tg), in tokens per second, over reps runs.
type BenchResult struct {
	PP, TG       []float64 // tok/s per repetition
	PromptTokens int
	GenTokens    int
	// DecodeContext is the prompt the tg test decodes after: its tokens
	// are at positions before the first one timed.
	DecodeContext int
}

// benchPrompt is n tokens: what they say does not matter to the timing.
func (m *Model) benchPrompt(n, salt int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(1 + (i+salt*7)%max(1, m.vocab-1))
	}
	return p
}

// BenchProgress hears of each repetition as it ends (rep counts from 1;
// the warm-up is rep 0) with its tokens per second: prompt and decode for
// Bench, 0 and the aggregate decode for BenchBatch.
type BenchProgress func(rep int, ppRate, tgRate float64)

// Bench runs reps repetitions, after one warm-up, of a pp-token prefill
// and of tg greedy decode tokens (EOS ignored) after a one-token prompt,
// each from an empty session: llama-bench's pp and tg tests.
func (m *Model) Bench(pp, tg, reps int) (*BenchResult, error) {
	return m.BenchEach(pp, tg, 1, reps, nil)
}

// BenchEach is Bench with the tg test decoding after a prompt of ctx
// tokens (≥ 1; llama-bench's tg test starts from an empty context, and a
// session's first token is a prompt's), telling each repetition to each
// (which may be nil). With ctx == pp one generation serves both tests.
func (m *Model) BenchEach(pp, tg, ctx, reps int, each BenchProgress) (*BenchResult, error) {
	ctx = max(ctx, 1)
	r := &BenchResult{PromptTokens: pp, GenTokens: tg, DecodeContext: ctx}
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	gen := func(prompt []int32, n int) (*Result, error) {
		s.Reset()
		return s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: n, IgnoreEOS: true})
	}
	for i := -1; i < reps; i++ {
		first := 1
		if ctx == pp {
			first = tg + 1
		}
		res, err := gen(m.benchPrompt(pp, 0), first)
		if err != nil {
			return nil, err
		}
		ppRate := float64(pp) / res.PromptTime.Seconds()
		if ctx != pp {
			if res, err = gen(m.benchPrompt(ctx, 0), tg+1); err != nil {
				return nil, err
			}
		}
		tgRate := float64(len(res.Tokens)-1) / res.DecodeTime.Seconds()
		if each != nil {
			each(i+1, ppRate, tgRate)
		}
		if i < 0 {
			continue
		}
		r.PP = append(r.PP, ppRate)
		r.TG = append(r.TG, tgRate)
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
	return m.BenchBatchEach(b, pp, tg, reps, nil)
}

// BenchBatchEach is BenchBatch telling each repetition to each (which may
// be nil).
func (m *Model) BenchBatchEach(b, pp, tg, reps int, each BenchProgress) (*BatchBenchResult, error) {
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
		rate := float64(n) / time.Since(t).Seconds()
		if each != nil {
			each(rep+1, 0, rate)
		}
		if rep >= 0 {
			r.TG = append(r.TG, rate)
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
// read; a copy also writes as many), with a 256 MiB buffer, on one core.
// ReadBandwidth, on every core, is the ceiling akunu bench holds a CPU
// decode to.
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

// readBandwidthBytes is ReadBandwidth's buffer: past the last-level cache
// of the CPUs we run on (16-36 MiB on laptops and Apple's chips, 32-96 MiB
// on most servers), so that what is timed is memory.
const readBandwidthBytes = 512 << 20

// ReadBandwidth measures the host's memory read bandwidth in bytes/s the
// way a CPU decode reads its weights: threads goroutines (GOMAXPROCS for
// 0) each summing its share of a buffer larger than the last-level cache
// with vector loads (membw.Sum), the best of four passes over pages already
// faulted in. A decode whose working set fits in the caches can read faster
// than this.
func ReadBandwidth(threads int) float64 {
	if threads <= 0 {
		threads = goruntime.GOMAXPROCS(0)
	}
	buf := make([]uint64, readBandwidthBytes/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	sums := make([]uint64, threads*8) // a cache line per goroutine
	chunk := (len(buf) + threads - 1) / threads
	best := 0.0
	for range 4 {
		var wg sync.WaitGroup
		t := time.Now()
		for g := range threads {
			part := buf[min(g*chunk, len(buf)):min((g+1)*chunk, len(buf))]
			wg.Go(func() { sums[g*8] = membw.Sum(part) })
		}
		wg.Wait()
		best = max(best, readBandwidthBytes/time.Since(t).Seconds())
	}
	readSink = sums[0]
	return best
}

// readSink keeps a sum alive, so that the reads are not optimized away.
var readSink uint64

// BenchEmbed embeds b inputs of n tokens each (distinct, so nothing is
// shared between them) reps times after a warm-up, and reports inputs per
// second per repetition. The inputs go through Embed as a user's would:
// packed into as few replays as the programs and sequence slots allow.
func (m *Model) BenchEmbed(b, n, reps int, each BenchProgress) ([]float64, error) {
	inputs := make([][]int32, b)
	for i := range inputs {
		inputs[i] = m.benchPrompt(n, i+1)
	}
	var out []float64
	for i := -1; i < reps; i++ {
		t0 := time.Now()
		if _, err := m.Embed(context.Background(), inputs); err != nil {
			return nil, err
		}
		rate := float64(b) / time.Since(t0).Seconds()
		if each != nil {
			each(i+1, 0, rate)
		}
		if i >= 0 {
			out = append(out, rate)
		}
	}
	return out, nil
}
