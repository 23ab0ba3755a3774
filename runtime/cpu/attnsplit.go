package cpu

import "math"

// A decode step's attention over an F16 cache has a kv head's item per
// thread only while there are as many kv heads as threads: the Qwen3-0.6B
// shape's 8 on the 16-core host leave half the pool waiting, and each
// item streams its head's cached rows on one core (~28 µs a layer at 256
// positions, a fifth of a Q4_0 draft's step). attnSplit spreads a kv head
// over parts threads in two pool runs, each of which gives every score and
// every output element the bits the one-item form gives it:
//
//  1. scores: item (kv head, part) computes the scores of the part's keys
//     (8 or more, which the pair kernel scores alike wherever the range
//     starts) for the head's query heads into a shared row per query
//     head, and the part's maximum;
//  2. values: item (kv head, part) takes the maximum of the parts',
//     normalizes a private copy of each query head's whole score row as
//     the one-item form does (one order of the exponentials' sum), and
//     accumulates its part of the value columns over every key in order
//     (a column's sum is the same apart from the others: accF16x2Cols).
//
// It needs the AVX-512 pair kernels (accF16x2Cols), query heads in pairs
// (every group even), no soft cap or window, and value columns that part
// into whole groups of 16; else the one-item form runs.
type attnSplit struct {
	a      *attention
	parts  int       // threads a kv head's work is spread over; 0: no split
	scores []float32 // n_heads rows of max_ctx scores
	maxes  []float32 // n_heads × parts: each part's largest score
	values attnSplitValues
}

// attnSplitValues is the second run's task (attnSplit's do is the first's).
type attnSplitValues struct{ s *attnSplit }

// splitMinKeys is the fewest visible keys a split is taken for: below it
// the second pool run costs more than the parts save.
const splitMinKeys = 64

// prepare decides the parts for a's kernel on e's pool.
func (s *attnSplit) prepare(a *attention, e *Exec) {
	p := &a.p
	s.a, s.parts, s.values.s = a, 0, s
	group, blocks := a.group()
	threads := e.b.pool.threads
	hd, hdv := int(p.HeadDim), int(p.HeadDimV)
	if accF16x2Cols == nil || a.rows || a.parallel || a.kv != kvF16 || a.softcap || a.window || group%2 != 0 ||
		int(p.NHeads)%group != 0 || hd%16 != 0 || threads < 2*blocks {
		return
	}
	parts := threads / blocks
	for parts > 1 && hdv%(16*parts) != 0 {
		parts--
	}
	if parts < 2 {
		return
	}
	s.parts = parts
	nh, mc := int(p.NHeads), int(p.MaxCtx)
	s.scores = grow(s.scores, nh*mc)
	s.maxes = grow(s.maxes, nh*parts)
}

// run runs the split for a one-token step and reports whether it did: not
// for a batch of tokens, or too few keys for every part to hold 8.
func (s *attnSplit) run(e *Exec) bool {
	p := &s.a.p
	if s.parts == 0 || p.NTokens != 1 || !s.takes(int(p.KVLen)) {
		return false
	}
	_, blocks := s.a.group()
	items := blocks * s.parts
	e.b.pool.run(s, items, 1, coldBytes)
	e.b.pool.run(&s.values, items, 1, coldBytes)
	return true
}

var negInf = float32(math.Inf(-1))

// coldBytes is what a split's item is taken to touch for the pool's
// threshold: its rows are cold, and a run of them is worth the pool.
const coldBytes = 64 << 10

// rows is kv head kvh's visible key and value rows (f16 bytes) and their
// count.
func (s *attnSplit) rows(kvh int) (kb, vb []byte, n int) {
	_, _, _, kb, vb = s.a.span(kvh) // one token: item kvh is token 0's kv head kvh
	return kb, vb, len(kb) / (2 * int(s.a.p.HeadDim))
}

// takes reports whether a step of n visible keys is split: from
// splitMinKeys, and where every part holds 8 keys or more (keyRange).
func (s *attnSplit) takes(n int) bool { return n >= max(splitMinKeys, 8*s.parts*s.parts) }

// keyRange is the keys [lo, hi) of n that part scores. With n at least
// 8·parts² (takes) every part holds 8 keys or more, so that the pair kernel
// scores them all (a key's score has the same bits in any slot of any
// range it takes; fewer than 8 keys go through the one-head kernel, an
// ulp apart).
func (s *attnSplit) keyRange(n, part int) (lo, hi int) {
	c := (n + s.parts - 1) / s.parts
	return min(part*c, n), min((part+1)*c, n)
}

// do is the scores run: items are (kv head, part).
func (s *attnSplit) do(w, i0, i1 int) {
	a := s.a
	p := &a.p
	hd, mc := int(p.HeadDim), int(p.MaxCtx)
	group, _ := a.group()
	ws := &a.e.b.scratch.workers[w]
	q0, q1 := ws.f[:hd], ws.f[hd:2*hd]
	qb := a.e.buf(0)
	for it := i0; it < i1; it++ {
		kvh, part := it/s.parts, it%s.parts
		kb, _, n := s.rows(kvh)
		lo, hi := s.keyRange(n, part)
		kr := u16s(kb)
		if lo < hi {
			prefetchL2(kb[2*lo*hd : 2*lo*hd+min(2*(hi-lo)*hd, a.ahead)])
		}
		for h := kvh * group; h < (kvh+1)*group; h += 2 {
			if lo >= hi {
				s.maxes[h*s.parts+part], s.maxes[(h+1)*s.parts+part] = negInf, negInf
				continue
			}
			a.act.load(q0, qb, h*hd, hd) // ggml converts q to the f16 K cache's type
			scaleRoundF16(q0, 1)
			a.act.load(q1, qb, (h+1)*hd, hd)
			scaleRoundF16(q1, 1)
			s.maxes[h*s.parts+part], s.maxes[(h+1)*s.parts+part] = scoresF16x2(kr[lo*hd:hi*hd], q0, q1, p.Scale,
				s.scores[h*mc+lo:h*mc+hi], s.scores[(h+1)*mc+lo:(h+1)*mc+hi])
		}
	}
}

// do is the values run: items are (kv head, part of the value columns).
func (v *attnSplitValues) do(w, i0, i1 int) {
	s := v.s
	a := s.a
	p := &a.p
	hdv, mc := int(p.HeadDimV), int(p.MaxCtx)
	group, _ := a.group()
	ws := &a.e.b.scratch.workers[w]
	cols := hdv / s.parts
	out := a.e.buf(3)
	for it := i0; it < i1; it++ {
		kvh, part := it/s.parts, it%s.parts
		_, vb, n := s.rows(kvh)
		vr := u16s(vb)
		c0 := part * cols
		prefetchL2(vb[:min(len(vb), a.ahead)]) // rows of which this part reads a slice
		for h := kvh * group; h < (kvh+1)*group; h += 2 {
			m0, m1 := negInf, negInf
			for k := range s.parts {
				m0, m1 = max(m0, s.maxes[h*s.parts+k]), max(m1, s.maxes[(h+1)*s.parts+k])
			}
			sc0, sc1 := ws.f[:n], ws.f[mc:mc+n]
			copy(sc0, s.scores[h*mc:h*mc+n])
			copy(sc1, s.scores[(h+1)*mc:(h+1)*mc+n])
			a.softmax(sc0, m0, true)
			a.softmax(sc1, m1, true)
			acc0, acc1 := ws.acc[:cols], ws.acc[hdv:hdv+cols]
			clear(acc0)
			clear(acc1)
			accF16x2Cols(acc0, acc1, sc0, sc1, vr[c0:], hdv)
			a.act.store(out, h*hdv+c0, acc0)
			a.act.store(out, (h+1)*hdv+c0, acc1)
		}
	}
}
