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

// cache fills cs with (cos, sin) of each pair at position pos:
// cs[2i], cs[2i+1].
func (c *ropeCfg) cache(cs []float32, pos int) {
	theta := float32(pos)
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
		cs[i0] = float32(co) * mscale
		cs[i0+1] = float32(s) * mscale
		theta *= c.thetaScale
	}
}

// rotate turns the first dims elements of x (one head) by cs, in place.
func rotate(x, cs []float32, dims int, neox bool) {
	if neox {
		h := dims / 2
		for i := range h {
			c, s := cs[2*i], cs[2*i+1]
			x0, x1 := x[i], x[i+h]
			x[i] = x0*c - x1*s
			x[i+h] = x0*s + x1*c
		}
		return
	}
	for i := 0; i < dims; i += 2 {
		c, s := cs[i], cs[i+1]
		x0, x1 := x[i], x[i+1]
		x[i] = x0*c - x1*s
		x[i+1] = x0*s + x1*c
	}
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
		r.cfg.cache(cs, pos)
		for hh := range int(p.NHeads) {
			off := t*int(p.Stride) + hh*hd
			r.act.load(h[:rd], x, off, rd)
			rotate(h, cs, rd, r.neox)
			r.act.store(x, off, h[:rd])
		}
	}
}

// ropeKV is rope[_neox]_qkv_write[_rows]_* and
// head_norm_rope_neox_kv_write[_rows]_*: for each token, (optionally
// RMSNorm each head of q and k, then) rotate q into q_out, rotate k and
// write it, and v, into the F16 KV cache at (h·max_ctx + p)·head_dim, p the
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
	cfg    ropeCfg
	// slots
	sq, sk, sv, sqn, skn, sqo, skc, svc, sf, spos, sseq int
	e                                                   *Exec
}

func bindRoPEKV(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	r := &ropeKV{act: actOf(k.Act), neox: k.Variant&kernels.NeoX != 0, norm: k.Op == kernels.OpHeadNormRoPEKVWrite,
		factor: c.b("has_factors"), rows: k.Variant&kernels.Rows != 0}
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
	e.b.scratch.needWorker(int(p.RopeDim)+int(max(p.HeadDim, p.HeadDimV)), 0)
	return nil
}

func (r *ropeKV) run(e *Exec) {
	r.e = e
	p := &r.p
	e.b.pool.run(r, int(p.NTokens), 1, int((p.NHeads+2*p.NKVHeads)*p.HeadDim)*r.act.size()*4)
}

func (r *ropeKV) do(w, i0, i1 int) {
	p, e := &r.p, r.e
	hd, hdv, rd := int(p.HeadDim), int(p.HeadDimV), int(p.RopeDim)
	ws := e.b.scratch.workers[w].f
	cs, h := ws[:rd], ws[rd:rd+max(hd, hdv)]
	q, k, v, qo := e.buf(r.sq), e.buf(r.sk), e.buf(r.sv), e.buf(r.sqo)
	kc, vc := u16s(e.buf(r.skc)), u16s(e.buf(r.svc))
	var qn, kn []float32
	if r.norm {
		qn, kn = f32s(e.buf(r.sqn))[:hd], f32s(e.buf(r.skn))[:hd]
	}
	nkv, mc := int(p.NKVHeads), int(p.MaxCtx)
	for t := i0; t < i1; t++ {
		pos, seq := int(p.Position)+t, 0
		if r.rows {
			pos, seq = int(u32s(e.buf(r.spos))[t]), int(u32s(e.buf(r.sseq))[t])
		}
		kslot, vslot := seq*nkv*mc*hd, seq*nkv*mc*hdv
		if pos >= mc || kslot+nkv*mc*hd > len(kc) || vslot+nkv*mc*hdv > len(vc) {
			continue
		}
		r.cfg.cache(cs, pos)
		for hh := range int(p.NHeads) {
			off := t*int(p.QStride) + hh*hd
			x := h[:hd]
			r.act.load(x, q, off, hd)
			if r.norm {
				rmsnorm(x, x, qn, p.Eps)
			}
			rotate(x, cs, rd, r.neox)
			r.act.store(qo, off, x)
		}
		for hh := range int(p.NKVHeads) {
			off := t*int(p.KVStride) + hh*hd
			x := h[:hd]
			r.act.load(x, k, off, hd)
			if r.norm {
				rmsnorm(x, x, kn, p.Eps)
			}
			rotate(x, cs, rd, r.neox)
			dst := kc[kslot+(hh*mc+pos)*hd:][:hd]
			for i, f := range x {
				dst[i] = f2h(f)
			}
			offv := t*int(p.KVStride) + hh*hdv
			dv := vc[vslot+(hh*mc+pos)*hdv:][:hdv]
			if r.act == actF16 {
				copy(dv, u16s(v)[offv:offv+hdv])
			} else {
				for i, f := range f32s(v)[offv : offv+hdv] {
					dv[i] = f2h(f)
				}
			}
		}
	}
}
