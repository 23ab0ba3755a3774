package cpu

import (
	"math"
	"sort"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// argmax is argmax_*: ids[out_slot] = the index of the largest of n
// logits, the lowest index among equals; NaNs never win.
type argmax struct {
	p   kernels.ArgmaxParams
	act act
}

func bindArgmax(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	a := &argmax{act: actOf(k.Act)}
	return a, unsafe.Pointer(&a.p)
}

func (a *argmax) run(e *Exec) {
	l := e.buf(0)
	best, bv := 0, float32(math.Inf(-1))
	n := int(a.p.N)
	if a.act == actF32 {
		for i, v := range f32s(l)[:n] {
			if v > bv {
				best, bv = i, v
			}
		}
	} else {
		for i, h := range u16s(l)[:n] {
			if v := f16tab[h]; v > bv {
				best, bv = i, v
			}
		}
	}
	u32s(e.buf(1))[a.p.OutSlot] = uint32(best)
}

// gumbel is gumbel_topk_*: it turns the logits, in place, into values whose
// argmax is a sample of the filtered, tempered distribution (the Gumbel-max
// trick). The math, which every backend's twin follows:
//
//  1. m = max_i l_i (NaNs count as −inf). Temperature ≤ 0 means greedy:
//     the logits are left as they are.
//  2. Candidates, in llama.cpp's default sampler order (top-k, top-p,
//     min-p, then temperature): top_k > 0 keeps the top_k largest (ties to
//     the lower index); with p_i = e^(l_i − m) / Σ over the candidates,
//     top_p < 1 keeps the shortest prefix, by (p desc, index asc), whose
//     sum reaches top_p; min_p > 0 drops p_i < min_p · p_max.
//  3. A kept logit becomes (l_i − m)/T + g_i, every other −inf, with the
//     Gumbel noise g_i = −ln(−ln(u_i)),
//     u_i = ((h_i >> 8) + 0.5) / 2^24 ∈ (0, 1),
//     h_i = fmix32(fmix32(fmix32(seed ^ 0x9E3779B9) + position) ^ i),
//     fmix32 being MurmurHash3's finalizer (uint32 arithmetic, wrapping).
//     The noise depends on (seed, position, i) alone: a counter-based RNG,
//     so a replay samples the same tokens and a chain of N tokens needs no
//     state between them. Subtracting m first keeps F16 finite.
type gumbel struct {
	p   kernels.SamplingParams
	act act
	// candidates: index, logit, probability
	idx []int32
	lv  []float32
	pv  []float32
	n   int // live candidates
}

func bindGumbel(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	g := &gumbel{act: actOf(k.Act)}
	return g, unsafe.Pointer(&g.p)
}

func (g *gumbel) prepare(*Exec) error {
	v := int(g.p.Vocab)
	g.idx, g.lv, g.pv = make([]int32, v), make([]float32, v), make([]float32, v)
	return nil
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// gumbelNoise is g_i for token i of the stream key fmix32(fmix32(seed ^
// 0x9E3779B9) + position).
func gumbelNoise(key uint32, i int) float32 {
	h := fmix32(key ^ uint32(i))
	u := (float64(h>>8) + 0.5) / (1 << 24)
	return float32(-math.Log(-math.Log(u)))
}

func gumbelKey(seed, position uint32) uint32 { return fmix32(fmix32(seed^0x9E3779B9) + position) }

// GumbelKey and GumbelNoise are the kernel's noise stream, for a host
// sampler that must draw the token the kernel would (runtime's first token
// after prefill, and every token under a repetition penalty).
func GumbelKey(seed, position uint32) uint32 { return gumbelKey(seed, position) }

// GumbelNoise is the noise added to token i's tempered logit under key.
func GumbelNoise(key uint32, i int) float32 { return gumbelNoise(key, i) }

// Len, Less and Swap sort the live candidates by (logit desc, index asc),
// which is (p desc, index asc).
func (g *gumbel) Len() int { return g.n }
func (g *gumbel) Less(a, b int) bool {
	if g.lv[a] != g.lv[b] {
		return g.lv[a] > g.lv[b]
	}
	return g.idx[a] < g.idx[b]
}
func (g *gumbel) Swap(a, b int) {
	g.idx[a], g.idx[b] = g.idx[b], g.idx[a]
	g.lv[a], g.lv[b] = g.lv[b], g.lv[a]
	g.pv[a], g.pv[b] = g.pv[b], g.pv[a]
}

func (g *gumbel) run(e *Exec) {
	p := &g.p
	if !(p.Temperature > 0) {
		return
	}
	v := int(p.Vocab)
	lb := e.buf(0)
	// 1. candidates: every finite logit.
	g.n = 0
	m := float32(math.Inf(-1))
	for i := range v {
		l := g.act.get(lb, i)
		if l != l || math.IsInf(float64(l), -1) {
			continue
		}
		g.idx[g.n], g.lv[g.n] = int32(i), l
		g.n++
		m = max(m, l)
	}
	if g.n == 0 {
		return
	}
	// 2a. top-k: sort only when it cuts (a full sort of the vocabulary is
	// the price of an exact tie rule; top_k is usually small, but the
	// kernel runs once per sampled token).
	if k := int(p.TopK); k > 0 && k < g.n {
		g.topK(k)
	}
	var z float32
	for c := range g.n {
		g.pv[c] = float32(math.Exp(float64(g.lv[c] - m)))
		z += g.pv[c]
	}
	// 2b. top-p: only candidates in the first e-fold buckets that already
	// hold top_p of the mass can be in the nucleus, so only they are sorted.
	if p.TopP < 1 && p.TopP > 0 {
		g.topP(m, z)
	}
	// 2c. min-p, relative to the top token (p = 1 before normalization).
	if p.MinP > 0 {
		live := 0
		for c := range g.n {
			if g.pv[c] >= p.MinP {
				g.idx[live], g.lv[live], g.pv[live] = g.idx[c], g.lv[c], g.pv[c]
				live++
			}
		}
		g.n = live
	}
	// 3. write: −inf everywhere, then the kept tokens tempered and noised.
	ninf := float32(math.Inf(-1))
	for i := range v {
		g.act.set(lb, i, ninf)
	}
	key := gumbelKey(p.Seed, p.Position)
	invT := 1 / p.Temperature
	for c := range g.n {
		i := int(g.idx[c])
		g.act.set(lb, i, (g.lv[c]-m)*invT+gumbelNoise(key, i))
	}
}

// topK keeps the k best candidates, by (logit desc, index asc): a min-heap
// of the k best so far (its root the worst of them) over the first k slots,
// O(n log k).
func (g *gumbel) topK(k int) {
	worse := func(a, b int) bool { // candidate a ranks below b
		if g.lv[a] != g.lv[b] {
			return g.lv[a] < g.lv[b]
		}
		return g.idx[a] > g.idx[b]
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
			g.Swap(i, c)
			i = c
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for c := k; c < g.n; c++ {
		if worse(0, c) {
			g.idx[0], g.lv[0] = g.idx[c], g.lv[c]
			down(0)
		}
	}
	g.n = k
}

func (g *gumbel) topP(m, z float32) {
	var mass [66]float32
	for c := range g.n {
		b := min(int(m-g.lv[c]), 65)
		mass[b] += g.pv[c]
	}
	need := g.p.TopP * z
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
	for c := range g.n {
		if min(int(m-g.lv[c]), 65) <= bucket {
			g.idx[live], g.lv[live], g.pv[live] = g.idx[c], g.lv[c], g.pv[c]
			live++
		}
	}
	g.n = live
	sort.Sort(g)
	cum = 0
	for c := range g.n {
		cum += g.pv[c]
		if cum >= need {
			g.n = c + 1
			return
		}
	}
}
