package runtime

import (
	"math"
	"sort"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/cpu"
)

// Sampling are the knobs of a generation, as llama.cpp names them.
type Sampling struct {
	// Temperature ≤ 0 is greedy (argmax); so is TopK 1.
	Temperature float32
	TopK        int     // keep the k most likely; 0 = all
	TopP        float32 // nucleus; 0 or 1 = all
	MinP        float32 // drop tokens below MinP × the top one's probability; 0 = none
	// RepeatPenalty > 0 and ≠ 1 divides the positive logits (multiplies
	// the negative ones) of the last RepeatLastN tokens of the session, as
	// llama.cpp does; it needs the logits on the host at every step, so it
	// disables chain decode (docs/runtime.md).
	RepeatPenalty float32
	RepeatLastN   int // 0 = 64
	Seed          uint32
}

// Greedy reports whether the knobs pick the argmax.
func (s Sampling) Greedy() bool {
	return !(s.Temperature > 0) || s.TopK == 1
}

func (s Sampling) penalized() bool { return s.RepeatPenalty > 0 && s.RepeatPenalty != 1 }

// params is the gumbel_topk parameter struct for s.
func (s Sampling) params(vocab uint32) kernels.SamplingParams {
	p := kernels.SamplingParams{Vocab: vocab, TopK: uint32(max(s.TopK, 0)), Seed: s.Seed, Temperature: s.Temperature, TopP: s.TopP, MinP: s.MinP}
	if !(p.TopP > 0) || p.TopP > 1 {
		p.TopP = 1
	}
	if s.Greedy() {
		p.Temperature = 0
	}
	return p
}

// sampler is the host twin of the gumbel_topk kernel (its math is written
// out in runtime/cpu/sample.go and kernels/params.go): the same candidates,
// the same counter-based Gumbel noise from (seed, position, id), so that a
// token sampled here is the token the sampled program would have drawn
// from the same logits. The loop uses it where the device cannot sample:
// the first token after prefill (prefill programs end in argmax) and
// every token under a repetition penalty. Its slices are sized once.
type sampler struct {
	idx []int32
	lv  []float32
	pv  []float32
	n   int
}

func newSampler(vocab int) *sampler {
	return &sampler{idx: make([]int32, vocab), lv: make([]float32, vocab), pv: make([]float32, vocab)}
}

func (g *sampler) Len() int { return g.n }
func (g *sampler) Less(a, b int) bool {
	if g.lv[a] != g.lv[b] {
		return g.lv[a] > g.lv[b]
	}
	return g.idx[a] < g.idx[b]
}
func (g *sampler) Swap(a, b int) {
	g.idx[a], g.idx[b] = g.idx[b], g.idx[a]
	g.lv[a], g.lv[b] = g.lv[b], g.lv[a]
	g.pv[a], g.pv[b] = g.pv[b], g.pv[a]
}

// argmax is the lowest index of the largest logit; NaNs never win.
func argmax(l []float32) int32 {
	best, bv := 0, float32(math.Inf(-1))
	for i, v := range l {
		if v > bv {
			best, bv = i, v
		}
	}
	return int32(best)
}

// sample draws a token from logits with p at position pos (the position
// of the token whose logits these are).
func (g *sampler) sample(logits []float32, p kernels.SamplingParams, pos uint32) int32 {
	if !(p.Temperature > 0) {
		return argmax(logits)
	}
	m := float32(math.Inf(-1))
	for _, v := range logits {
		if v > m {
			m = v
		}
	}
	g.n = 0
	for i, v := range logits {
		if v != v || math.IsInf(float64(v), -1) {
			continue
		}
		g.idx[g.n], g.lv[g.n] = int32(i), v
		g.n++
	}
	if k := int(p.TopK); k > 0 && k < g.n {
		sort.Sort(g)
		g.n = k
	}
	// Unnormalized probabilities (the top one is 1), summed in float32 as
	// the kernel does.
	var z float32
	for j := 0; j < g.n; j++ {
		g.pv[j] = float32(math.Exp(float64(g.lv[j] - m)))
		z += g.pv[j]
	}
	if p.TopP > 0 && p.TopP < 1 {
		sort.Sort(g)
		need, cum := p.TopP*z, float32(0)
		for j := 0; j < g.n; j++ {
			cum += g.pv[j]
			if cum >= need {
				g.n = j + 1
				break
			}
		}
	}
	if p.MinP > 0 {
		keep := 0
		for j := 0; j < g.n; j++ {
			if g.pv[j] >= p.MinP {
				g.idx[keep], g.lv[keep], g.pv[keep] = g.idx[j], g.lv[j], g.pv[j]
				keep++
			}
		}
		g.n = keep
	}
	if g.n == 0 {
		return argmax(logits)
	}
	key := cpu.GumbelKey(p.Seed, pos)
	best, bv := int32(0), float32(math.Inf(-1))
	for j := 0; j < g.n; j++ {
		v := (g.lv[j]-m)/p.Temperature + cpu.GumbelNoise(key, int(g.idx[j]))
		if v > bv || v == bv && g.idx[j] < best {
			best, bv = g.idx[j], v
		}
	}
	return best
}

// penalize applies llama.cpp's repetition penalty to logits for every
// distinct token of recent.
func penalize(logits []float32, recent []int32, penalty float32, seen []bool) {
	for _, t := range recent {
		if t < 0 || int(t) >= len(logits) || seen[t] {
			continue
		}
		seen[t] = true
		if logits[t] > 0 {
			logits[t] /= penalty
		} else {
			logits[t] *= penalty
		}
	}
	for _, t := range recent {
		if t >= 0 && int(t) < len(seen) {
			seen[t] = false
		}
	}
}
