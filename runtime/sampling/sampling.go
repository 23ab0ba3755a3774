package sampling

import (
	"math"
	"sort"

	"github.com/akunu-dev/akunu/kernels"
)

// Params are the sampling knobs as the kernel's parameter struct holds
// them (the position is the noise stream's counter).
type Params = kernels.SamplingParams

// Sampler holds the candidate arrays of one vocabulary. Not safe for
// concurrent use.
type Sampler struct {
	idx []int32
	lv  []float32
	pv  []float32
	n   int // live candidates
}

// New sizes a sampler for vocab logits.
func New(vocab int) *Sampler {
	return &Sampler{idx: make([]int32, vocab), lv: make([]float32, vocab), pv: make([]float32, vocab)}
}

// fmix32 is MurmurHash3's finalizer.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Key is the noise stream's key for a seed and a position.
func Key(seed, position uint32) uint32 { return fmix32(fmix32(seed^0x9E3779B9) + position) }

// Noise is the Gumbel noise of token i under key: −ln(−ln(u)),
// u = ((fmix32(key ^ i) >> 8) + 0.5) / 2^24 ∈ (0, 1).
func Noise(key uint32, i int) float32 {
	h := fmix32(key ^ uint32(i))
	u := (float64(h>>8) + 0.5) / (1 << 24)
	return float32(-math.Log(-math.Log(u)))
}

// Argmax is the lowest index of the largest logit; NaNs never win.
func Argmax(l []float32) int32 {
	best, bv := 0, float32(math.Inf(-1))
	for i, v := range l {
		if v > bv {
			best, bv = i, v
		}
	}
	return int32(best)
}

// filter leaves the kept candidates in s (index, logit, unnormalized
// probability) and returns the largest logit m; false when no logit is
// finite or the temperature is not positive (greedy).
//
// The math every backend's twin follows:
//
//  1. m = max_i l_i (NaNs count as −inf). Temperature ≤ 0 means greedy.
//  2. Candidates, in llama.cpp's default sampler order (top-k, top-p,
//     min-p, then temperature): top_k > 0 keeps the top_k largest (ties to
//     the lower index); with p_i = e^(l_i − m) / Σ over the candidates,
//     top_p < 1 keeps the shortest prefix, by (p desc, index asc), whose
//     sum reaches top_p; min_p > 0 drops p_i < min_p · p_max.
//  3. A kept logit becomes (l_i − m)·(1/T) + g_i, every other −inf, with
//     g_i = Noise(Key(seed, position), i). The noise depends on (seed,
//     position, i) alone, so a replay samples the same tokens and a chain
//     of N tokens needs no state between them. Subtracting m first keeps
//     F16 finite.
func (s *Sampler) filter(logits []float32, p *Params) (float32, bool) {
	if !(p.Temperature > 0) {
		return 0, false
	}
	s.n = 0
	m := float32(math.Inf(-1))
	for i, l := range logits {
		if l != l || math.IsInf(float64(l), -1) {
			continue
		}
		s.idx[s.n], s.lv[s.n] = int32(i), l
		s.n++
		m = max(m, l)
	}
	if s.n == 0 {
		return 0, false
	}
	// top-k: a heap of the k best, only when it cuts.
	if k := int(p.TopK); k > 0 && k < s.n {
		s.topK(k)
	}
	var z float32
	for c := range s.n {
		s.pv[c] = float32(math.Exp(float64(s.lv[c] - m)))
		z += s.pv[c]
	}
	if p.TopP < 1 && p.TopP > 0 {
		s.topP(m, z, p.TopP)
	}
	if p.MinP > 0 { // relative to the top token (p = 1 before normalization)
		live := 0
		for c := range s.n {
			if s.pv[c] >= p.MinP {
				s.idx[live], s.lv[live], s.pv[live] = s.idx[c], s.lv[c], s.pv[c]
				live++
			}
		}
		s.n = live
	}
	return m, true
}

// Apply turns logits, in place, into values whose argmax is a sample of
// the filtered, tempered distribution (the Gumbel-max trick): the kernel's
// output. A greedy p, or logits with nothing finite, are left as they are.
func (s *Sampler) Apply(logits []float32, p Params) {
	m, ok := s.filter(logits, &p)
	if !ok {
		return
	}
	ninf := float32(math.Inf(-1))
	for i := range logits {
		logits[i] = ninf
	}
	key, invT := Key(p.Seed, p.Position), 1/p.Temperature
	for c := range s.n {
		i := s.idx[c]
		logits[i] = (s.lv[c]-m)*invT + Noise(key, int(i))
	}
}

// Draw returns the token argmax would pick after Apply, without changing
// logits: the same candidates, the same values, ties to the lower id.
func (s *Sampler) Draw(logits []float32, p Params) int32 {
	m, ok := s.filter(logits, &p)
	if !ok {
		return Argmax(logits)
	}
	key, invT := Key(p.Seed, p.Position), 1/p.Temperature
	best, bv := int32(-1), float32(math.Inf(-1))
	for c := range s.n {
		i := s.idx[c]
		v := (s.lv[c]-m)*invT + Noise(key, int(i))
		if best < 0 || v > bv || v == bv && i < best {
			best, bv = i, v
		}
	}
	if best < 0 { // min-p kept nothing: Apply leaves −inf everywhere, argmax 0
		return 0
	}
	return best
}

// Len, Less and Swap sort the live candidates by (logit desc, index asc),
// which is (p desc, index asc).
func (s *Sampler) Len() int { return s.n }
func (s *Sampler) Less(a, b int) bool {
	if s.lv[a] != s.lv[b] {
		return s.lv[a] > s.lv[b]
	}
	return s.idx[a] < s.idx[b]
}
func (s *Sampler) Swap(a, b int) {
	s.idx[a], s.idx[b] = s.idx[b], s.idx[a]
	s.lv[a], s.lv[b] = s.lv[b], s.lv[a]
	s.pv[a], s.pv[b] = s.pv[b], s.pv[a]
}

// topK keeps the k best candidates, by (logit desc, index asc): a min-heap
// of the k best so far (its root the worst of them) over the first k slots,
// O(n log k).
func (s *Sampler) topK(k int) {
	worse := func(a, b int) bool { // candidate a ranks below b
		if s.lv[a] != s.lv[b] {
			return s.lv[a] < s.lv[b]
		}
		return s.idx[a] > s.idx[b]
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= k {
				return
			}
			if c+1 < k && worse(c+1, c) {
				c++
			}
			if !worse(c, i) {
				return
			}
			s.Swap(i, c)
			i = c
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for c := k; c < s.n; c++ {
		if worse(0, c) {
			s.idx[0], s.lv[0] = s.idx[c], s.lv[c]
			down(0)
		}
	}
	s.n = k
}

// topP keeps the nucleus: only candidates in the first e-fold buckets that
// already hold top_p of the mass can be in it, so only they are sorted.
func (s *Sampler) topP(m, z, topP float32) {
	var mass [66]float32
	for c := range s.n {
		b := min(int(m-s.lv[c]), 65)
		mass[b] += s.pv[c]
	}
	need := topP * z
	var cum float32
	bucket := 65
	for b := range mass {
		cum += mass[b]
		if cum >= need {
			bucket = b
			break
		}
	}
	live := 0
	for c := range s.n {
		if min(int(m-s.lv[c]), 65) <= bucket {
			s.idx[live], s.lv[live], s.pv[live] = s.idx[c], s.lv[c], s.pv[c]
			live++
		}
	}
	s.n = live
	sort.Sort(s)
	cum = 0
	for c := range s.n {
		cum += s.pv[c]
		if cum >= need {
			s.n = c + 1
			return
		}
	}
}

// Probs writes into p (len(logits) floats) the distribution Draw samples
// from: each candidate's tempered probability, normalized, and 0 for every
// other token; a greedy params (or logits with nothing finite) is a point
// mass on the argmax. Speculative verification weighs drafts by it, so it
// must describe exactly what unspeculated sampling draws from.
func (s *Sampler) Probs(logits []float32, prm Params, p []float32) {
	clear(p)
	m, ok := s.filter(logits, &prm)
	if !ok || s.n == 0 {
		p[Argmax(logits)] = 1
		return
	}
	invT := 1 / prm.Temperature
	var z float64
	for c := range s.n {
		v := math.Exp(float64((s.lv[c] - m) * invT))
		p[s.idx[c]] = float32(v)
		z += v
	}
	if !(z > 0) || math.IsInf(z, 0) {
		clear(p)
		p[Argmax(logits)] = 1
		return
	}
	inv := 1 / z
	for c := range s.n {
		p[s.idx[c]] = float32(float64(p[s.idx[c]]) * inv)
	}
}

// Uniform is a number in (0, 1) from the counter-based stream (seed,
// position, stream): 53 bits from two hashes, so that a draw by inverse
// CDF can reach every token of a large vocabulary. Speculative sampling's
// accept/reject draws use it, so a seed reproduces them without state.
func Uniform(seed, position, stream uint32) float64 {
	k := Key(seed^(stream*0x632BE5AB+0x85157AF5), position)
	hi := uint64(fmix32(k^0x68E31DA4)) >> 5 // 27 bits
	lo := uint64(fmix32(k^0xB5297A4D)) >> 6 // 26 bits
	return (float64(hi<<26|lo) + 0.5) / (1 << 53)
}

// Pick draws a token from weights w (non-negative, not necessarily
// normalized) by inverse CDF at u ∈ (0, 1): the first token whose
// cumulative weight reaches u·Σw. All-zero weights pick the argmax.
func Pick(w []float32, u float64) int32 {
	var z float64
	for _, v := range w {
		if v > 0 {
			z += float64(v)
		}
	}
	if !(z > 0) {
		return Argmax(w)
	}
	t, cum, last := u*z, 0.0, int32(-1)
	for i, v := range w {
		if v > 0 {
			cum += float64(v)
			last = int32(i)
			if cum >= t {
				return int32(i)
			}
		}
	}
	return last // rounding left t past the sum: the last token with weight
}
