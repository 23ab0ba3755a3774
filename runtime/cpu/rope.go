package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// RoPE as ggml's rope (ggml-cpu ops.cpp, ggml_compute_forward_rope_flt):
// pair i (0 ≤ i < rope_dim/2) of a head at position p turns by
//
//	theta_i = p · base^(-2i/rope_dim) / factor_i
//
// the base power taken as ggml does, by repeated float32 multiplication
// with theta_scale = base^(-2/rope_dim); then YaRN (ext_factor ≠ 0) mixes
// the interpolated angle freq_scale·theta_i with theta_i by a ramp over
// the dimensions between the correction dims, and scales cos and sin by
// attn_factor (times 1 + 0.1·ln(1/freq_scale) under YaRN). Without YaRN the
// angle is freq_scale·theta_i. "norm" rotates the pairs (2i, 2i+1), NeoX
// the pairs (i, i + rope_dim/2); elements past rope_dim are left alone.

// ropeCfg is what the angle depends on besides the position.
type ropeCfg struct {
	dims                int
	base, freqScale     float32
	attnFactor, extFact float32
	corr0, corr1        float32
	thetaScale          float32
	factors             []float32 // nil: none
}

func newRopeCfg(ropeDim int, base, freqScale, attnFactor, extFactor, betaFast, betaSlow float32, origCtx int) ropeCfg {
	c := ropeCfg{dims: ropeDim, base: base, freqScale: freqScale, attnFactor: attnFactor, extFact: extFactor}
	if c.freqScale == 0 {
		c.freqScale = 1
	}
	if c.attnFactor == 0 {
		c.attnFactor = 1
	}
	c.thetaScale = float32(math.Pow(float64(base), -2/float64(ropeDim)))
	if extFactor != 0 {
		corr := func(nRot float32) float64 {
			return float64(ropeDim) * math.Log(float64(origCtx)/(float64(nRot)*2*math.Pi)) / (2 * math.Log(float64(base)))
		}
		c.corr0 = float32(max(0, math.Floor(float64(float32(corr(betaFast))))))
		c.corr1 = float32(min(float64(ropeDim-1), math.Ceil(float64(float32(corr(betaSlow))))))
	}
	return c
}

// cache fills cs (dims floats) with (cos, sin) of each pair i at position
// pos: interleaved, cs[2i] and cs[2i+1], or split (the NeoX layout, whose
// rotation reads the two halves as vectors), cs[i] and cs[dims/2+i].
func (c *ropeCfg) cache(cs []float32, pos int, split bool) {
	theta := float32(pos)
	h := c.dims / 2
	for i0 := 0; i0 < c.dims; i0 += 2 {
		ff := float32(1)
		if c.factors != nil {
			ff = c.factors[i0/2]
		}
		extrap := theta / ff
		interp := c.freqScale * extrap
		t := interp
		mscale := c.attnFactor
		if c.extFact != 0 {
			y := (float32(i0/2) - c.corr0) / max(0.001, c.corr1-c.corr0)
			ramp := (1 - min(1, max(0, y))) * c.extFact
			t = interp*(1-ramp) + extrap*ramp
			mscale *= 1 + 0.1*float32(math.Log(float64(1/c.freqScale)))
		}
		s, co := math.Sincos(float64(t))
		if split {
			cs[i0/2], cs[h+i0/2] = float32(co)*mscale, float32(s)*mscale
		} else {
			cs[i0], cs[i0+1] = float32(co)*mscale, float32(s)*mscale
		}
		theta *= c.thetaScale
	}
}

// rotate turns the first len(cs) elements of x (one head) by cs, in place:
// NeoX pairs (i, i + len(cs)/2) with the split table, else pairs (2i,
// 2i+1) with the interleaved one.
func rotate(x, cs []float32, neox bool) {
	if neox {
		rotateNeoX(x, cs)
		return
	}
	rotatePairs(x, cs)
}

// rope is rope_* and rope_neox_*: each head of each row of x, in place.
// Row t is at position + t, or with the Rows variant at pos[t].
type rope struct {
	p      kernels.RoPEParams
	act    act
	neox   bool
	factor bool
	rows   bool
	cfg    ropeCfg
	e      *Exec
}

func bindRoPE(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	r := &rope{act: actOf(k.Act), neox: k.Variant&kernels.NeoX != 0, factor: c.b("has_factors"), rows: k.Variant&kernels.Rows != 0}
	return r, unsafe.Pointer(&r.p)
}

func (r *rope) prepare(e *Exec) error {
	p := &r.p
	r.cfg = newRopeCfg(int(p.RopeDim), p.Theta, p.FreqScale, p.AttnFactor, p.ExtFactor, p.BetaFast, p.BetaSlow, int(p.OrigCtx))
	if r.factor {
		r.cfg.factors = f32s(e.buf(1))[:p.RopeDim/2]
	}
	e.b.scratch.needWorker(int(p.RopeDim)+int(p.HeadDim), 0)
	return nil
}

func (r *rope) run(e *Exec) {
	r.e = e
	n := int(r.p.NTokens)
	e.b.pool.run(r, n, 1, int(r.p.NHeads*r.p.HeadDim)*r.act.size()*4)
}

func (r *rope) do(w, i0, i1 int) {
	p := &r.p
	hd, rd := int(p.HeadDim), int(p.RopeDim)
	ws := r.e.b.scratch.workers[w].f
	cs, h := ws[:rd], ws[rd:rd+hd]
	x := r.e.buf(0)
	for t := i0; t < i1; t++ {
		pos := int(p.Position) + t
		if r.rows {
			pos = int(u32s(r.e.buf(2))[t])
		}
		r.cfg.cache(cs, pos, r.neox)
		for hh := range int(p.NHeads) {
			off := t*int(p.Stride) + hh*hd
			r.act.load(h[:rd], x, off, rd)
			rotate(h, cs, r.neox)
			r.act.store(x, off, h[:rd])
		}
	}
}

// ropeKV is rope[_neox]_qkv_write[_rows]_* and
// head_norm_rope_neox_kv_write[_rows]_*: for each token, (optionally
// RMSNorm each head of q and k, then) rotate q into q_out, rotate k and
// write it, and v, into the KV cache (F16, or Q8_0 or F32 with the _kv
// variants: kvcache.go) at row h·max_ctx + p, p the
// token's position: position + t, or with the Rows variant pos[t], in
// sequence slot seq[t] of the cache (slots lie n_kv_heads·max_ctx rows
// apart). A row whose position or slot lies outside the cache (which the
// runtime never asks for) writes nothing.
type ropeKV struct {
	p      kernels.RoPEQKVWriteParams
	act    act
	neox   bool
	norm   bool
	factor bool
	rows   bool
	kv     kvType
	cfg    ropeCfg
	// slots
	sq, sk, sv, sqn, skn, sqo, skc, svc, sf, spos, sseq int
	e                                                   *Exec
}

func bindRoPEKV(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	r := &ropeKV{act: actOf(k.Act), neox: k.Variant&kernels.NeoX != 0, norm: k.Op == kernels.OpHeadNormRoPEKVWrite,
		factor: c.b("has_factors"), rows: k.Variant&kernels.Rows != 0, kv: kvOf(k.Variant)}
	slot := map[string]int{}
	for _, b := range k.Bindings {
		slot[b.Name] = b.Slot
	}
	r.sq, r.sk, r.sv, r.sqn, r.skn = slot["q"], slot["k"], slot["v"], slot["q_norm"], slot["k_norm"]
	r.sqo, r.skc, r.svc, r.sf = slot["q_out"], slot["k_cache"], slot["v_cache"], slot["factors"]
	r.spos, r.sseq = slot["pos"], slot["seq"]
	return r, unsafe.Pointer(&r.p)
}

func (r *ropeKV) prepare(e *Exec) error {
	p := &r.p
	r.cfg = newRopeCfg(int(p.RopeDim), p.Theta, p.FreqScale, p.AttnFactor, p.ExtFactor, p.BetaFast, p.BetaSlow, int(p.OrigCtx))
	if r.factor {
		r.cfg.factors = f32s(e.buf(r.sf))[:p.RopeDim/2]
	}
	e.b.scratch.needWorker(headGroup*int(p.HeadDim), 0)
	if r.kv == kvQ8 {
		e.b.scratch.needWorkerQ8(int(max(p.HeadDim, p.HeadDimV)))
	}
	e.b.scratch.rope.need(int(p.NTokens), int(p.RopeDim))
	return nil
}

func (r *ropeKV) run(e *Exec) {
	r.e = e
	p := &r.p
	e.b.scratch.rope.use(&r.cfg, r.neox)
	e.b.pool.run(r, int(p.NTokens), 1, int((p.NHeads+2*p.NKVHeads)*p.HeadDim)*r.act.size()*4)
}

// ropeTab holds the (cos, sin) tables of a step's tokens, one per token of
// the batch: every layer's ropeKV command in a step turns its tokens by the
// same angles (one configuration, the same positions), so the first layer
// computes them (64 float64 sincos a token for head_dim 128: a fifth of
// the command) and the others read them. A token's table is valid while
// the configuration and the layout are the ones it was computed for and
// its position is the one recorded.
type ropeTab struct {
	cfg   ropeCfg
	split bool
	pos   []int     // per token: the position of its table; −1 none
	cs    []float32 // per token: rope_dim floats
	dims  int
}

func (t *ropeTab) need(tokens, dims int) {
	if len(t.pos) < tokens || t.dims < dims {
		n := max(tokens, len(t.pos))
		t.dims = max(dims, t.dims)
		t.pos = make([]int, n)
		t.cs = make([]float32, n*t.dims)
		for i := range t.pos {
			t.pos[i] = -1
		}
	}
}

// use makes the tables c's, with the layout split or not: when they were
// another configuration's, none is valid. It runs before the pool's
// workers read the tables, one command at a time.
func (t *ropeTab) use(c *ropeCfg, split bool) {
	if t.split == split && t.cfg.same(c) {
		return
	}
	t.cfg, t.split = *c, split
	for i := range t.pos {
		t.pos[i] = -1
	}
}

// table is token i's table at position pos, computed if it is not there.
// Each token of a command belongs to one worker.
func (t *ropeTab) table(i, pos int) []float32 {
	cs := t.cs[i*t.dims : i*t.dims+t.cfg.dims]
	if t.pos[i] != pos {
		t.cfg.cache(cs, pos, t.split)
		t.pos[i] = pos
	}
	return cs
}

// same reports that c and d give the same tables (the factors are a
// weight: the same buffer holds the same values).
func (c *ropeCfg) same(d *ropeCfg) bool {
	sameF := len(c.factors) == len(d.factors) && (len(c.factors) == 0 || &c.factors[0] == &d.factors[0])
	return sameF && c.dims == d.dims && c.base == d.base && c.freqScale == d.freqScale && c.attnFactor == d.attnFactor &&
		c.extFact == d.extFact && c.corr0 == d.corr0 && c.corr1 == d.corr1 && c.thetaScale == d.thetaScale
}

// headGroup is how many heads ropeKV prepares at once: the rows that
// rmsScales sums side by side.
const headGroup = 8

func (r *ropeKV) do(w, i0, i1 int) {
	// The cache rows the tokens write are cold (the last step streamed
	// every weight through the caches): ask for all of them first, so
	// that their misses overlap (a batch of eight: ~33 → ~27 µs a layer).
	p := &r.p
	kc, vc := r.e.buf(r.skc), r.e.buf(r.svc)
	hd, hdv, mc := r.kv.rowBytes(int(p.HeadDim)), r.kv.rowBytes(int(p.HeadDimV)), int(p.MaxCtx)
	for t := i0; t < i1; t++ {
		if pos, kslot, vslot, ok := r.slot(t); ok {
			for hh := range int(p.NKVHeads) {
				prefetchL2(kc[kslot+(hh*mc+pos)*hd:][:hd])
				prefetchL2(vc[vslot+(hh*mc+pos)*hdv:][:hdv])
			}
		}
	}
	ws := &r.e.b.scratch.workers[w]
	for t := i0; t < i1; t++ {
		if pos, kslot, vslot, ok := r.slot(t); ok {
			r.token(ws, t, pos, kslot, vslot)
		}
	}
}

// slot is token t's position and the first K and V cache bytes of its
// sequence slot; not ok when they lie outside the cache.
func (r *ropeKV) slot(t int) (pos, kslot, vslot int, ok bool) {
	p, e := &r.p, r.e
	nkv, mc := int(p.NKVHeads), int(p.MaxCtx)
	pos, seq := int(p.Position)+t, 0
	if r.rows {
		pos, seq = int(u32s(e.buf(r.spos))[t]), int(u32s(e.buf(r.sseq))[t])
	}
	kr, vr := r.kv.rowBytes(int(p.HeadDim)), r.kv.rowBytes(int(p.HeadDimV))
	kslot, vslot = seq*nkv*mc*kr, seq*nkv*mc*vr
	ok = pos < mc && kslot+nkv*mc*kr <= len(e.buf(r.skc)) && vslot+nkv*mc*vr <= len(e.buf(r.svc))
	return pos, kslot, vslot, ok
}

// token computes token t at position pos: its q heads into q_out, its k
// and v heads into the cache at slots kslot, vslot.
func (r *ropeKV) token(ws *workerScratch, t, pos, kslot, vslot int) {
	p, e := &r.p, r.e
	hd, hdv := int(p.HeadDim), int(p.HeadDimV)
	h := ws.f[:headGroup*hd]
	q, k, v, qo := e.buf(r.sq), e.buf(r.sk), e.buf(r.sv), e.buf(r.sqo)
	kc, vc := e.buf(r.skc), e.buf(r.svc)
	kr, vr := r.kv.rowBytes(hd), r.kv.rowBytes(hdv)
	var qn, kn []float32
	if r.norm {
		qn, kn = f32s(e.buf(r.sqn))[:hd], f32s(e.buf(r.skn))[:hd]
	}
	nh, nkv, mc := int(p.NHeads), int(p.NKVHeads), int(p.MaxCtx)
	cs := e.b.scratch.rope.table(t, pos)
	for h0 := 0; h0 < nh; h0 += headGroup {
		n := min(headGroup, nh-h0)
		off := t*int(p.QStride) + h0*hd
		if r.act == actF32 { // straight into q_out (which may be q)
			r.heads(ws, f32s(qo)[off:off+n*hd], q, off, n, qn, cs)
		} else {
			x := h[:n*hd]
			r.heads(ws, x, q, off, n, qn, cs)
			r.act.store(qo, off, x)
		}
	}
	for h0 := 0; h0 < nkv; h0 += headGroup {
		n := min(headGroup, nkv-h0)
		x := h[:n*hd]
		r.heads(ws, x, k, t*int(p.KVStride)+h0*hd, n, kn, cs)
		for i := range n {
			hh := h0 + i
			r.kv.store(kc[kslot+(hh*mc+pos)*kr:][:kr], x[i*hd:i*hd+hd], ws.q8.qs, ws.q8.d)
			offv := t*int(p.KVStride) + hh*hdv
			dv := vc[vslot+(hh*mc+pos)*vr:][:vr]
			if r.act == actF16 { // F16 activations come with an F16 cache only (kernels.kvSpecs)
				copy(u16s(dv), u16s(v)[offv:offv+hdv])
			} else {
				r.kv.store(dv, f32s(v)[offv:offv+hdv], ws.q8.qs, ws.q8.d)
			}
		}
	}
}

// heads writes into x n ≤ headGroup heads of src (head_dim elements each,
// one after another from element off): RMS-normed by weight when the
// kernel norms (their sums of squares side by side, each head's in its own
// order), then rotated by cs. x may be src's own elements.
func (r *ropeKV) heads(ws *workerScratch, x []float32, src []byte, off, n int, weight, cs []float32) {
	hd := int(r.p.HeadDim)
	in := x
	if r.act == actF32 {
		in = f32s(src)[off : off+n*hd]
	} else {
		r.act.load(x, src, off, n*hd)
	}
	if r.norm {
		sc := ws.sc[:n]
		rmsScales(sc, in, hd, hd, r.p.Eps)
		for i, s := range sc {
			scaleMul(x[i*hd:i*hd+hd], in[i*hd:i*hd+hd], weight, s)
		}
	} else if len(in) > 0 && &in[0] != &x[0] {
		copy(x, in)
	}
	for i := range n {
		rotate(x[i*hd:], cs, r.neox)
	}
}
