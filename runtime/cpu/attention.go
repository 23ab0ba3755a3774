package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// attention is every flash_attention_* kernel. On the CPU each computes the
// exact softmax attention of its queries, in two passes over the keys
// (scores, then the weighted sum of V), so the standard, fast and v2
// variants are one code path:
//
//	out = Σ_j softmax_j(s) · v_j,  s_j = softcap(scale · q·k_j)
//
// Query t of a command sits at position kv_len − n_tokens + t (the last
// n_tokens positions of the cache, which the command's rope_qkv_write has
// just filled), or with the Rows variant at pos[t] in sequence slot seq[t]
// of the cache (slots lie n_kv_heads·max_ctx rows apart); it sees keys j ≤
// its position and, with a window w, j > position − w. Query head h reads
// kv head h / (n_heads / n_kv_heads). The pool splits (token, kv head)
// pairs (or (kv head, split)); an item takes the query heads of its kv
// head two at a time, so each pass over the keys and values serves two
// heads (GQA's sharing: the f16 rows are read and widened once for both).
// A Rows query whose position or slot lies outside the cache (which the
// runtime never asks for) gets zeros.
//
// The parallel decode kernel writes, for each (head, split), the partial
// state over keys [s·c, (s+1)·c) with c = ceil(kv_len / n_splits): the
// unnormalized output Σ e^(s_j − m)·v_j, then m and Σ e^(s_j − m)
// ([n_heads, n_splits, head_dim_v + 2] floats); the reduce kernel merges
// the splits. An empty split has m = −inf and zero sum and output.
type attention struct {
	p        kernels.AttentionParams
	act      act
	softcap  bool
	window   bool
	parallel bool
	rows     bool
	kv       kvType
	splits   int
	split    attnSplit // a decode step's kv heads spread over the pool (attnsplit.go)
	ahead    int       // bytes of an item's rows asked for up front (prepare)
	e        *Exec
}

func bindAttention(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	a := &attention{act: actOf(k.Act), softcap: c.b("has_softcap"), window: c.b("has_window"),
		parallel: k.Variant&kernels.Parallel != 0, rows: k.Variant&kernels.Rows != 0, kv: kvOf(k.Variant)}
	a.splits = int(c.u("n_splits", 1))
	return a, unsafe.Pointer(&a.p)
}

func (a *attention) prepare(e *Exec) error {
	p := &a.p
	a.splits = max(a.splits, 1)
	e.b.scratch.needWorker(2*(int(p.MaxCtx)+int(p.HeadDim)), 2*int(p.HeadDimV))
	if a.kv == kvQ8 {
		e.b.scratch.needWorkerQ8(2 * int(p.HeadDim))
	}
	a.ahead = math.MaxInt
	if group, _ := a.group(); accF16x2Cols != nil && a.kv == kvF16 && group%2 == 0 && int(p.HeadDim)%16 == 0 && int(p.HeadDimV)%16 == 0 {
		a.ahead = pairsAhead
	}
	a.split.prepare(a, e)
	return nil
}

// pairsAhead is how far ahead of their rows the AVX-512 pair kernels ask
// for lines (8 KiB: scores four groups of eight keys on at hd 128, values
// 32 rows on); an item asks for only that much of its rows up front where
// they run. The other forms ask for every row up front.
const pairsAhead = 8 << 10

// group is the query heads per kv head; blocks is how many groups there
// are (the last one short if n_heads is not a multiple).
func (a *attention) group() (group, blocks int) {
	nh := int(a.p.NHeads)
	group = max(nh/max(int(a.p.NKVHeads), 1), 1)
	return group, (nh + group - 1) / group
}

func (a *attention) run(e *Exec) {
	a.e = e
	if a.split.run(e) {
		return
	}
	p := &a.p
	_, blocks := a.group()
	items := int(p.NTokens) * blocks
	if a.parallel {
		items = blocks * a.splits
	}
	kv := int(p.KVLen)
	if a.rows { // the last row's keys: a bound on what an item reads
		kv = int(u32s(e.buf(4))[max(int(p.NTokens), 1)-1]) + 1
	}
	e.b.pool.run(a, items, 1, kv*(a.kv.rowBytes(int(p.HeadDim))+a.kv.rowBytes(int(p.HeadDimV))))
}

// span is item it's token, kv head and split, and the key and value rows
// its queries see (whole cached rows, kv.rowBytes each).
func (a *attention) span(it int) (t, kvh, split int, kr, vr []byte) {
	p, e := &a.p, a.e
	hd, hdv, mc := a.kv.rowBytes(int(p.HeadDim)), a.kv.rowBytes(int(p.HeadDimV)), int(p.MaxCtx)
	kc, vc := e.buf(1), e.buf(2)
	if a.parallel {
		kvh, split = it/a.splits, it%a.splits
	} else {
		_, blocks := a.group()
		t, kvh = it/blocks, it%blocks
	}
	kvLen := int(p.KVLen)
	pos, base := kvLen-int(p.NTokens)+t, 0
	if a.rows {
		seq := int(u32s(e.buf(5))[t])
		pos, kvLen = int(u32s(e.buf(4))[t]), 0
		base = seq * int(p.NKVHeads) * mc
		if end := base + int(p.NKVHeads)*mc; pos < mc && end*hd <= len(kc) && end*hdv <= len(vc) {
			kvLen = pos + 1
		}
	}
	hi := min(pos+1, kvLen)
	lo := 0
	if a.window && p.Window > 0 {
		lo = max(0, pos-int(p.Window)+1)
	}
	if a.parallel {
		c := (kvLen + a.splits - 1) / a.splits
		lo, hi = max(lo, split*c), min(hi, (split+1)*c)
	}
	n := max(hi-lo, 0) // a split past kv_len is empty
	if n == 0 {
		lo, base = 0, 0 // nothing is read: keep the slices in range
	}
	return t, kvh, split, kc[(base+kvh*mc+lo)*hd:][:n*hd], vc[(base+kvh*mc+lo)*hdv:][:n*hdv]
}

func (a *attention) do(w, i0, i1 int) {
	p, e := &a.p, a.e
	hd, hdv := int(p.HeadDim), int(p.HeadDimV)
	nh := int(p.NHeads)
	group, _ := a.group()
	ws := &e.b.scratch.workers[w]
	mc := int(p.MaxCtx)
	q0, q1 := ws.f[:hd], ws.f[hd:2*hd]
	s0, s1 := ws.f[2*hd:2*hd+mc], ws.f[2*hd+mc:2*hd+2*mc]
	acc0, acc1 := ws.acc[:hdv], ws.acc[hdv:2*hdv]
	qb, out := e.buf(0), e.buf(3)
	for it := i0; it < i1; it++ {
		t, kvh, split, kb, vb := a.span(it)
		// The rows come from DRAM (a step streams every weight through
		// the caches after it read them): ask for all of them at once.
		// The hardware's streams alone left too few misses in flight: a
		// batch of eight at 16–48 keys took ~116 µs a layer, ~96 with
		// this.
		prefetchL2(kb[:min(len(kb), a.ahead)])
		prefetchL2(vb[:min(len(vb), a.ahead)])
		hEnd := min(nh, (kvh+1)*group)
		if a.kv != kvF16 {
			a.heads(ws, t, split, kvh*group, hEnd, kb, vb)
			continue
		}
		kr, vr := u16s(kb), u16s(vb)
		n := len(kr) / hd
		for h := kvh * group; h < hEnd; h += 2 {
			two := h+1 < hEnd
			// ggml converts q to the f16 K cache's type.
			a.act.load(q0, qb, t*int(p.QStride)+h*hd, hd)
			scaleRoundF16(q0, 1)
			sc0, sc1 := s0[:n], s1[:n]
			var m0, m1 float32
			if two {
				a.act.load(q1, qb, t*int(p.QStride)+(h+1)*hd, hd)
				scaleRoundF16(q1, 1)
				m0, m1 = scoresF16x2(kr, q0, q1, p.Scale, sc0, sc1)
			} else {
				m0 = scoresF16(kr, q0, p.Scale, sc0)
			}
			m0, sum0 := a.softmax(sc0, m0, true)
			var sum1 float32
			clear(acc0)
			if two {
				m1, sum1 = a.softmax(sc1, m1, true)
				clear(acc1)
				accF16x2(acc0, acc1, sc0, sc1, vr)
			} else {
				accF16(acc0, sc0, vr)
			}
			a.finish(out, t, h, split, acc0, m0, sum0)
			if two {
				a.finish(out, t, h+1, split, acc1, m1, sum1)
			}
		}
	}
}

// softmax turns one head's scores sc (their max m) into the weights that
// meet V, and returns the max (after the soft cap) and Σ e^(s − m). The
// parallel kernel's weights stay unnormalized; otherwise they take ggml's
// path: normalized first and, for an f16 V (round), each rounded to f16
// (the V product's activation type).
func (a *attention) softmax(sc []float32, m float32, round bool) (float32, float32) {
	if a.softcap && a.p.Softcap > 0 {
		m = float32(math.Inf(-1))
		for j, s := range sc {
			sc[j] = a.p.Softcap * float32(math.Tanh(float64(s/a.p.Softcap)))
			m = max(m, sc[j])
		}
	}
	sum := expSum(sc, m)
	switch {
	case a.parallel || sum <= 0:
	case round:
		scaleRoundF16(sc, 1/sum)
	default:
		inv := 1 / sum
		for j := range sc {
			sc[j] *= inv
		}
	}
	return m, sum
}

// heads is do's work for query heads [h0, h1) of token t over a cache
// that is not F16 (kb, vb: the visible key and value rows), two heads at a
// time as for F16 (each pass over the rows serves both): q quantized to
// Q8_0 for a Q8_0 cache (ggml's vec_dot_type for q8_0 keys) or as it is
// for an F32 one.
func (a *attention) heads(ws *workerScratch, t, split, h0, h1 int, kb, vb []byte) {
	p := &a.p
	hd, hdv, mc := int(p.HeadDim), int(p.HeadDimV), int(p.MaxCtx)
	krb := a.kv.rowBytes(hd)
	n := len(kb) / krb
	q := [2][]float32{ws.f[:hd], ws.f[hd : 2*hd]}
	sc := [2][]float32{ws.f[2*hd : 2*hd+mc][:n], ws.f[2*hd+mc : 2*hd+2*mc][:n]}
	acc := [2][]float32{ws.acc[:hdv], ws.acc[hdv : 2*hdv]}
	qb, out := a.e.buf(0), a.e.buf(3)
	for h := h0; h < h1; h += 2 {
		k := min(2, h1-h) // heads this pass
		var m, sum [2]float32
		for i := range k {
			a.act.load(q[i], qb, t*int(p.QStride)+(h+i)*hd, hd)
		}
		if a.kv == kvQ8 {
			var qs [2][]int8
			var d [2][]float32
			for i := range k {
				qs[i], d[i], _ = ws.q8.row(aqQ8_0, i, hd)
				quantizeQ8_0(q[i], qs[i], d[i], nil)
			}
			if k == 2 {
				m[0], m[1] = scoresQ8x2(kb, krb, qs[0], qs[1], d[0], d[1], p.Scale, sc[0], sc[1])
			} else {
				m[0] = scoresQ8(kb, krb, qs[0], d[0], p.Scale, sc[0])
			}
		} else {
			for i := range k {
				m[i] = scoresF32(f32s(kb)[:n*hd], q[i], p.Scale, sc[i])
			}
		}
		for i := range k {
			m[i], sum[i] = a.softmax(sc[i], m[i], false)
			clear(acc[i])
		}
		switch {
		case a.kv == kvQ8 && k == 2:
			accQ8x2(acc[0], acc[1], sc[0], sc[1], vb)
		case a.kv == kvQ8:
			accQ8(acc[0], sc[0], vb)
		default:
			for i := range k {
				accF32(acc[i], sc[i], f32s(vb)[:n*hdv])
			}
		}
		for i := range k {
			a.finish(out, t, h+i, split, acc[i], m[i], sum[i])
		}
	}
}

// finish writes head h's result: the parallel kernel's partial state, or
// the output row of token t.
func (a *attention) finish(out []byte, t, h, split int, acc []float32, m, sum float32) {
	hdv := len(acc)
	if a.parallel {
		part := f32s(out)[(h*a.splits+split)*(hdv+2):][:hdv+2]
		copy(part, acc)
		part[hdv], part[hdv+1] = m, sum
		return
	}
	a.act.store(out, t*int(a.p.OStride)+h*hdv, acc)
}

// The attention pieces, one head's work over its n visible positions (the
// portable forms; attn_amd64.go installs AVX2 twins that agree with them to
// float32 rounding):
//
//   - scoresF16: out[j] = scale·(k_j·q) for the f16 key rows k_j (len(q)
//     elements each); returns max_j out[j] (−inf for none).
//   - expSum: s[j] = e^(s[j] − m); returns Σ s[j].
//   - scaleRoundF16: p[j] = f16(p[j]·a), rounded to nearest even.
//   - accF16: acc += Σ_j p[j]·v_j for the f16 value rows v_j (len(acc)
//     elements each).
//
// and two heads' over the same rows (GQA): scoresF16x2 and accF16x2 are
// scoresF16 and accF16 for each head, which AVX-512 twins compute in one
// pass over the rows (attn_amd64.go; within float32 rounding of them).
var (
	scoresF16     = scoresF16Go
	expSum        = expSumGo
	scaleRoundF16 = scaleRoundF16Go
	accF16        = accF16Go
	scoresF16x2   = scoresF16x2Each
	accF16x2      = accF16x2Each
	// accF16x2Cols is accF16x2 over some of the value columns, the rows
	// stride elements apart: nil where only the whole rows' forms exist
	// (the decode attention then keeps a kv head's values to one thread).
	accF16x2Cols func(acc0, acc1, p0, p1 []float32, v []uint16, stride int)
)

func scoresF16x2Each(k []uint16, q0, q1 []float32, scale float32, out0, out1 []float32) (float32, float32) {
	return scoresF16(k, q0, scale, out0), scoresF16(k, q1, scale, out1)
}

func accF16x2Each(acc0, acc1, p0, p1 []float32, v []uint16) {
	accF16(acc0, p0, v)
	accF16(acc1, p1, v)
}

func scoresF16Go(k []uint16, q []float32, scale float32, out []float32) float32 {
	hd := len(q)
	m := float32(math.Inf(-1))
	for j := range out {
		s := scale * dotF16(k[j*hd:j*hd+hd], q) // bit-identical on every path
		out[j] = s
		m = max(m, s)
	}
	return m
}

func expSumGo(s []float32, m float32) float32 {
	var sum float32
	for j, v := range s {
		e := float32(math.Exp(float64(v - m)))
		s[j] = e
		sum += e
	}
	return sum
}

func scaleRoundF16Go(p []float32, a float32) {
	for j, v := range p {
		p[j] = h2f(f2h(v * a))
	}
}

func accF16Go(acc, p []float32, v []uint16) {
	hdv := len(acc)
	for j, pj := range p {
		axpyF16(acc, pj, v[j*hdv:j*hdv+hdv])
	}
}

// attnReduce is flash_attention_decode_reduce_*: per head, the splits'
// partial states merged into the normalized output.
type attnReduce struct {
	p      kernels.AttentionParams
	act    act
	splits int
	hdv    int
}

func bindAttnReduce(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	r := &attnReduce{act: actOf(k.Act), splits: max(int(c.u("n_splits", 1)), 1), hdv: int(c.u("head_dim_v", 0))}
	return r, unsafe.Pointer(&r.p)
}

func (r *attnReduce) prepare(e *Exec) error {
	if r.hdv == 0 {
		r.hdv = int(r.p.HeadDimV)
	}
	e.b.scratch.f = grow(e.b.scratch.f, r.hdv)
	return nil
}

func (r *attnReduce) run(e *Exec) {
	hdv := r.hdv
	parts, out := f32s(e.buf(0)), e.buf(1)
	acc := e.b.scratch.f[:hdv]
	for h := range int(r.p.NHeads) {
		ph := parts[h*r.splits*(hdv+2):][:r.splits*(hdv+2)]
		m := float32(math.Inf(-1))
		for s := range r.splits {
			m = max(m, ph[s*(hdv+2)+hdv])
		}
		clear(acc)
		var sum float32
		if !math.IsInf(float64(m), -1) {
			for s := range r.splits {
				part := ph[s*(hdv+2):][:hdv+2]
				if part[hdv+1] == 0 {
					continue
				}
				c := float32(math.Exp(float64(part[hdv] - m)))
				sum += c * part[hdv+1]
				for i := range acc {
					acc[i] += c * part[i]
				}
			}
		}
		if sum > 0 {
			inv := 1 / sum
			for i := range acc {
				acc[i] *= inv
			}
		}
		r.act.store(out, h*hdv, acc)
	}
}
