package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// The fused RoPE kernels equal their unfused compositions: rope on q and
// k, k and v stored to the F16 cache, and for the head-norm form
// head_rmsnorm first. F32 activations agree exactly; F16 ones differ by
// the intermediate rounding the unfused form adds (2 F16 ulps).
func TestFusedRoPEEqualsComposition(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	h := newHarness(t, 2)
	const hd, hdv, rd, nh, nkv, tokens, maxCtx, pos = 32, 32, 32, 4, 2, 3, 16, 5
	qs, kvs := nh*hd+7, nkv*hd+3
	for _, at := range acts() {
		a := actOf(at)
		for _, variant := range []struct {
			op   kernels.Op
			neox bool
		}{{kernels.OpRoPEQKVWrite, false}, {kernels.OpRoPEQKVWrite, true}, {kernels.OpHeadNormRoPEKVWrite, true}} {
			v := kernels.Variant(0)
			if variant.neox {
				v = kernels.NeoX
			}
			name := kernels.OpName(variant.op, v, at)
			t.Run(name, func(t *testing.T) {
				norm := variant.op == kernels.OpHeadNormRoPEKVWrite
				q0, k0, v0 := randFloats(r, tokens*qs, 1), randFloats(r, tokens*kvs, 1), randFloats(r, tokens*kvs, 1)
				qn, kn := randFloats(r, hd, 1), randFloats(r, hd, 1)
				qb, kb, vb := actBytes(a, q0), actBytes(a, k0), actBytes(a, v0)
				qo := Alloc(len(qb))
				kc, vc := Alloc(nkv*maxCtx*hd*2), Alloc(nkv*maxCtx*hdv*2)
				p := kernels.RoPEQKVWriteParams{Position: pos, NTokens: tokens, NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hdv, RopeDim: rd,
					MaxCtx: maxCtx, QStride: uint32(qs), KVStride: uint32(kvs), OrigCtx: 4096, Theta: 1e6, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}
				bs := binds{"q": qb, "k": kb, "v": vb, "q_out": qo, "k_cache": kc, "v_cache": vc}
				if norm {
					bs["q_norm"], bs["k_norm"] = f32bytes(qn), f32bytes(kn)
				}
				h.run(name, p, consts{"head_dim": hd}, bs)

				// The composition, on copies.
				q2, k2 := actBytes(a, q0), actBytes(a, k0)
				if norm {
					hn := kernels.OpName(kernels.OpHeadRMSNorm, 0, at)
					for tok := range tokens {
						h.run(hn, kernels.NormParams{Dim: hd, NRows: 1, NHeads: nh, Stride: uint32(qs), Eps: 1e-6}, nil, binds{"x": q2[tok*qs*a.size():], "weight": f32bytes(qn)})
						h.run(hn, kernels.NormParams{Dim: hd, NRows: 1, NHeads: nkv, Stride: uint32(kvs), Eps: 1e-6}, nil, binds{"x": k2[tok*kvs*a.size():], "weight": f32bytes(kn)})
					}
				}
				rn := kernels.OpName(kernels.OpRoPE, v, at)
				rp := kernels.RoPEParams{Position: pos, NTokens: tokens, NHeads: nh, HeadDim: hd, RopeDim: rd, Stride: uint32(qs), OrigCtx: 4096, Theta: 1e6, FreqScale: 1, AttnFactor: 1}
				h.run(rn, rp, consts{"head_dim": hd}, binds{"x": q2})
				rp.NHeads, rp.Stride = nkv, uint32(kvs)
				h.run(rn, rp, consts{"head_dim": hd}, binds{"x": k2})

				tol := 0.0
				if a == actF16 {
					tol = 4 * f16ulp
				}
				gq, wq := actFloats(a, qo, tokens*qs), actFloats(a, q2, tokens*qs)
				for tok := range tokens {
					for i := range nh * hd {
						j := tok*qs + i
						if !near(gq[j], wq[j], tol*(1+math.Abs(wq[j]))) {
							t.Fatalf("q_out[%d,%d] = %g, composition %g", tok, i, gq[j], wq[j])
						}
					}
				}
				kk, vs := actFloats(a, k2, tokens*kvs), actFloats(a, vb, tokens*kvs)
				kcache, vcache := u16s(kc), u16s(vc)
				for tok := range tokens {
					for hh := range nkv {
						for i := range hd {
							got := float64(h2f(kcache[(hh*maxCtx+pos+tok)*hd+i]))
							want := float64(h2f(f2h(float32(kk[tok*kvs+hh*hd+i]))))
							if !near(got, want, (tol+f16ulp)*(1+math.Abs(want))) {
								t.Fatalf("k cache [%d,%d,%d] = %g, composition %g", hh, pos+tok, i, got, want)
							}
							gv := float64(h2f(vcache[(hh*maxCtx+pos+tok)*hdv+i]))
							wv := float64(h2f(f2h(float32(vs[tok*kvs+hh*hdv+i]))))
							if gv != wv {
								t.Fatalf("v cache [%d,%d,%d] = %g, want %g", hh, pos+tok, i, gv, wv)
							}
						}
					}
				}
				for i := range maxCtx { // only positions pos..pos+tokens-1 written
					if (i < pos || i >= pos+tokens) && kcache[i*hd] != 0 {
						t.Fatalf("k cache position %d written", i)
					}
				}
			})
		}
	}
}

// kvRow is row j of a cache of type kv (rows of n elements), widened.
func kvRow(kv kvType, c []byte, j, n int) []float64 {
	rb := kv.rowBytes(n)
	row := c[j*rb : j*rb+rb]
	out := make([]float64, n)
	switch kv {
	case kvF16:
		for i, h := range u16s(row)[:n] {
			out[i] = float64(h2f(h))
		}
	case kvF32:
		for i, f := range f32s(row)[:n] {
			out[i] = float64(f)
		}
	case kvQ8:
		f := make([]float32, n)
		if err := dtype.Dequantize(dtype.Q8_0, row, f); err != nil {
			panic(err)
		}
		for i, v := range f {
			out[i] = float64(v)
		}
	}
	return out
}

// fillKV fills a cache of type kv with rows of n random elements in
// [-1, 1], stored as the KV write stores them.
func fillKV(r *rand.Rand, kv kvType, c []byte, rows, n int) {
	qs, d := make([]int8, n), make([]float32, n/qk+1)
	rb := kv.rowBytes(n)
	for j := range rows {
		kv.store(c[j*rb:j*rb+rb], randFloats(r, n, 1), qs, d)
	}
}

// attnRef is exact softmax attention in float64 over the stored cache (of
// type kv). For a Q8_0 cache q meets the keys quantized to Q8_0, as the
// kernel quantizes it (ggml's vec_dot_type for q8_0).
func attnRef(kv kvType, q []float64, kc, vc []byte, kvh, maxCtx, hd, hdv, pos, kvLen, window int, scale, softcap float64) []float64 {
	if kv == kvQ8 {
		qf := make([]float32, hd)
		for i := range qf {
			qf[i] = float32(q[i])
		}
		qs, d := make([]int8, hd), make([]float32, hd/qk)
		quantizeQ8_0Go(qf, qs, d, nil)
		q = make([]float64, hd)
		for i := range q {
			q[i] = float64(qs[i]) * float64(d[i/qk])
		}
	}
	lo, hi := 0, min(pos+1, kvLen)
	if window > 0 {
		lo = max(0, pos-window+1)
	}
	s := make([]float64, hi)
	m := math.Inf(-1)
	for j := lo; j < hi; j++ {
		var d float64
		for i, k := range kvRow(kv, kc, kvh*maxCtx+j, hd) {
			d += q[i] * k
		}
		d *= scale
		if softcap > 0 {
			d = softcap * math.Tanh(d/softcap)
		}
		s[j] = d
		m = max(m, d)
	}
	out := make([]float64, hdv)
	var sum float64
	for j := lo; j < hi; j++ {
		p := math.Exp(s[j] - m)
		sum += p
		for i, v := range kvRow(kv, vc, kvh*maxCtx+j, hdv) {
			out[i] += p * v
		}
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// Attention tolerance: float32 scores and sums over ≤ 64 keys of values
// ≤ ~3: 1e-4 absolute; F16 outputs add 2^-11 relative. Every cache type:
// the reference reads the stored rows (a Q8_0 cache's heads are whole
// blocks: 64 and 32 elements).
func TestAttentionMatchesExactSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	h := newHarness(t, 3)
	const maxCtx = 64
	type variant struct {
		name     string
		prefill  bool
		parallel bool
	}
	var variants []variant
	for _, k := range kernels.All() {
		switch k.Op {
		case kernels.OpAttentionDecode:
			variants = append(variants, variant{k.Name, false, k.Variant&kernels.Parallel != 0})
		case kernels.OpAttentionPrefill:
			variants = append(variants, variant{k.Name, true, false})
		}
	}
	for _, v := range variants {
		for _, group := range []int{1, 2, 4} {
			for _, window := range []int{0, 5} {
				for _, softcap := range []float32{0, 3} {
					for _, kvLen := range []int{1, 9, 50} {
						tokens := 1
						if v.prefill {
							tokens = min(kvLen, 4)
						}
						t.Run(fmt.Sprintf("%s gqa=%d window=%d softcap=%g kv=%d", v.name, group, window, softcap, kvLen), func(t *testing.T) {
							k, _ := kernels.Lookup(v.name)
							a, kv := actOf(k.Act), kvOf(k.Variant)
							hd, hdv := 40, 24
							if kv == kvQ8 {
								hd, hdv = 64, 32
							}
							nkv := 2
							nh := nkv * group
							qStride, oStride := nh*hd+1, nh*hdv+3
							q0 := randFloats(r, tokens*qStride, 1)
							qb := actBytes(a, q0)
							qs := actFloats(a, qb, tokens*qStride)
							// The Rows form reads the second of two sequence
							// slots (the first holds other keys), at each row's
							// own position.
							rows := k.Variant&kernels.Rows != 0
							slots := 1
							if rows {
								slots = 2
							}
							krb, vrb := kv.rowBytes(hd), kv.rowBytes(hdv)
							kcAll, vcAll := Alloc(slots*nkv*maxCtx*krb), Alloc(slots*nkv*maxCtx*vrb)
							fillKV(r, kv, kcAll, slots*nkv*maxCtx, hd)
							fillKV(r, kv, vcAll, slots*nkv*maxCtx, hdv)
							kc, vc := kcAll[(slots-1)*nkv*maxCtx*krb:], vcAll[(slots-1)*nkv*maxCtx*vrb:]
							posb, seqb := Alloc(4*tokens), Alloc(4*tokens)
							for i := range tokens {
								u32s(posb)[i], u32s(seqb)[i] = uint32(kvLen-tokens+i), 1
							}
							p := kernels.AttentionParams{NHeads: uint32(nh), NKVHeads: uint32(nkv), HeadDim: uint32(hd), HeadDimV: uint32(hdv), KVLen: uint32(kvLen), MaxCtx: maxCtx,
								Position: uint32(kvLen - tokens), NTokens: uint32(tokens), Window: uint32(window), QStride: uint32(qStride), OStride: uint32(oStride),
								Scale: float32(1 / math.Sqrt(float64(hd))), Softcap: softcap}
							c := consts{"head_dim": uint32(hd), "head_dim_v": uint32(hdv), "has_softcap": b2u(softcap > 0), "has_window": b2u(window > 0)}
							out := Alloc(tokens * oStride * a.size())
							if v.parallel {
								const splits = 4
								c["n_splits"] = splits
								parts := Alloc(nh * splits * (hdv + 2) * 4)
								h.run(v.name, p, c, binds{"q": qb, "k_cache": kc, "v_cache": vc, "partials": parts})
								h.run(kernels.OpName(kernels.OpAttentionDecodeReduce, 0, dtype.F16), p, consts{"head_dim_v": uint32(hdv), "n_splits": splits}, binds{"partials": parts, "out": out})
								oStride = nh * hdv // the reduce writes [n_heads, head_dim_v]
							} else if rows {
								p.KVLen, p.Position = 0, 0 // unused: the rows say
								h.run(v.name, p, c, binds{"q": qb, "k_cache": kcAll, "v_cache": vcAll, "out": out, "pos": posb, "seq": seqb})
							} else {
								h.run(v.name, p, c, binds{"q": qb, "k_cache": kc, "v_cache": vc, "out": out})
							}
							got := actFloats(a, out, tokens*oStride)
							for tok := range tokens {
								for hh := range nh {
									want := attnRef(kv, qs[tok*qStride+hh*hd:][:hd], kc, vc, hh/group, maxCtx, hd, hdv, kvLen-tokens+tok, kvLen, window,
										float64(p.Scale), float64(softcap))
									for i := range hdv {
										g := got[tok*oStride+hh*hdv+i]
										tol := 1e-4
										if !v.parallel && kv == kvF16 {
											// ggml's path rounds q to f16 (each score moves by at most
											// scale·Σ|q_i k_i|·2⁻¹¹ ≤ √hd·2⁻¹¹ for values in [-1, 1]) and
											// each softmax weight to f16 (2⁻¹¹ of |v| ≤ 1): the output
											// moves by at most (1 + 2√hd)·2⁻¹¹.
											tol += (1 + 2*math.Sqrt(float64(hd))) / 2048
										}
										if a == actF16 {
											tol += math.Abs(want[i]) * f16ulp
										}
										if !near(g, want[i], tol) {
											t.Fatalf("token %d head %d [%d]: got %g, want %g", tok, hh, i, g, want[i])
										}
									}
								}
							}
						})
					}
				}
			}
		}
	}
}

// The attention pieces (scoresF16, expSum, scaleRoundF16, accF16: AVX2
// twins where the CPU has them) agree with their portable forms: dot
// products and sums to float32 rounding of their terms, exp to 2 ulp of
// the exact value, the f16 rounding bit for bit. Head sizes and position
// counts straddle the groups of eight the assembly works in.
func TestAttentionPiecesMatchPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, hd := range []int{4, 8, 16, 64, 128, 256} {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 130, 257} {
			k := make([]uint16, n*hd)
			for i := range k {
				k[i] = f2h(float32(r.NormFloat64()))
			}
			q := randFloats(r, hd, 1)
			got, want := make([]float32, n), make([]float32, n)
			gm, wm := scoresF16(k, q, 0.125, got), scoresF16Go(k, q, 0.125, want)
			for j := range n {
				var mag float64
				for c := range hd {
					mag += math.Abs(float64(h2f(k[j*hd+c]) * q[c]))
				}
				if d := math.Abs(float64(got[j] - want[j])); d > 1e-6*0.125*mag+1e-30 {
					t.Fatalf("hd %d n %d: score %d = %g, portable %g", hd, n, j, got[j], want[j])
				}
			}
			if n > 0 && gm != slicesMax(got) || math.Abs(float64(gm-wm)) > 1e-5*math.Abs(float64(wm))+1e-30 && !math.IsInf(float64(wm), -1) {
				t.Fatalf("hd %d n %d: max %g, portable %g (of %v)", hd, n, gm, wm, got)
			}

			// exp over [−100, 0] (past the clamp) and the sum.
			s := make([]float32, n)
			for j := range s {
				s[j] = float32(-100 * r.Float64())
			}
			s0 := append([]float32(nil), s...)
			sum := expSum(s, 0)
			var ref float64
			for j, x := range s0 {
				e := math.Exp(float64(x))
				ref += e
				if d := math.Abs(float64(s[j]) - e); d > 2.5e-7*e && (e > 1e-37 || s[j] > 1e-37) {
					t.Fatalf("n %d: exp(%g) = %g, want %g", n, x, s[j], e)
				}
			}
			if math.Abs(float64(sum)-ref) > 1e-6*ref+1e-37 {
				t.Fatalf("n %d: Σexp %g, want %g", n, sum, ref)
			}

			// f16 rounding, bit for bit, over values around the subnormal
			// and overflow edges too.
			p, p2 := make([]float32, n), make([]float32, n)
			for j := range p {
				p[j] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-30)))
			}
			copy(p2, p)
			scaleRoundF16(p, 0.7)
			scaleRoundF16Go(p2, 0.7)
			for j := range p {
				if math.Float32bits(p[j]) != math.Float32bits(p2[j]) {
					t.Fatalf("n %d: f16(%g·0.7) = %g, portable %g", n, p2[j], p[j], p2[j])
				}
			}

			// The weighted sum of value rows.
			v := make([]uint16, n*hd)
			for i := range v {
				v[i] = f2h(float32(r.NormFloat64()))
			}
			w := randFloats(r, n, 1)
			acc, acc2 := randFloats(r, hd, 1), make([]float32, hd)
			copy(acc2, acc)
			accF16(acc, w, v)
			accF16Go(acc2, w, v)
			for c := range hd {
				mag := math.Abs(float64(acc2[c]))
				for j := range n {
					mag += math.Abs(float64(w[j] * h2f(v[j*hd+c])))
				}
				if d := math.Abs(float64(acc[c] - acc2[c])); d > 1e-6*mag {
					t.Fatalf("hd %d n %d: acc[%d] = %g, portable %g", hd, n, c, acc[c], acc2[c])
				}
			}
		}
	}
	// A NaN score stays NaN through exp.
	s := []float32{0, float32(math.NaN()), -1, -2, -3, -4, -5, -6}
	expSum(s, 0)
	if !math.IsNaN(float64(s[1])) {
		t.Fatalf("exp(NaN) = %g", s[1])
	}
}

// The two-head pieces (scoresF16x2, accF16x2: AVX-512 twins where the CPU
// has them) agree with the portable one-head forms run on each head, to
// float32 rounding of their terms, as the one-head twins do. Head sizes
// straddle the 16-element chunks and the 128-column blocks; position
// counts the groups of eight (a tail makes the kernel redo the last eight).
func TestAttentionPairsMatchPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, hd := range []int{8, 16, 64, 128, 144, 256} {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 63, 130, 257} {
			k := make([]uint16, n*hd)
			for i := range k {
				k[i] = f2h(float32(r.NormFloat64()))
			}
			q0, q1 := randFloats(r, hd, 1), randFloats(r, hd, 1)
			got0, got1 := make([]float32, n), make([]float32, n)
			want0, want1 := make([]float32, n), make([]float32, n)
			gm0, gm1 := scoresF16x2(k, q0, q1, 0.125, got0, got1)
			wm0, wm1 := scoresF16Go(k, q0, 0.125, want0), scoresF16Go(k, q1, 0.125, want1)
			for h, c := range []struct {
				q         []float32
				got, want []float32
				gm, wm    float32
			}{{q0, got0, want0, gm0, wm0}, {q1, got1, want1, gm1, wm1}} {
				for j := range n {
					var mag float64
					for i := range hd {
						mag += math.Abs(float64(h2f(k[j*hd+i]) * c.q[i]))
					}
					if d := math.Abs(float64(c.got[j] - c.want[j])); d > 1e-6*0.125*mag+1e-30 {
						t.Fatalf("hd %d n %d head %d: score %d = %g, portable %g", hd, n, h, j, c.got[j], c.want[j])
					}
				}
				if n > 0 && c.gm != slicesMax(c.got) || n == 0 && !math.IsInf(float64(c.gm), -1) {
					t.Fatalf("hd %d n %d head %d: max %g of %v", hd, n, h, c.gm, c.got)
				}
				if math.Abs(float64(c.gm-c.wm)) > 1e-5*math.Abs(float64(c.wm))+1e-30 && !math.IsInf(float64(c.wm), -1) {
					t.Fatalf("hd %d n %d head %d: max %g, portable %g", hd, n, h, c.gm, c.wm)
				}
			}

			v := make([]uint16, n*hd)
			for i := range v {
				v[i] = f2h(float32(r.NormFloat64()))
			}
			p0, p1 := randFloats(r, n, 1), randFloats(r, n, 1)
			acc0, acc1 := randFloats(r, hd, 1), randFloats(r, hd, 1)
			want0, want1 = append([]float32(nil), acc0...), append([]float32(nil), acc1...)
			accF16x2(acc0, acc1, p0, p1, v)
			accF16Go(want0, p0, v)
			accF16Go(want1, p1, v)
			for h, c := range []struct{ got, want, p []float32 }{{acc0, want0, p0}, {acc1, want1, p1}} {
				for i := range hd {
					mag := math.Abs(float64(c.want[i]))
					for j := range n {
						mag += math.Abs(float64(c.p[j] * h2f(v[j*hd+i])))
					}
					if d := math.Abs(float64(c.got[i] - c.want[i])); d > 1e-6*mag {
						t.Fatalf("hd %d n %d head %d: acc[%d] = %g, portable %g", hd, n, h, i, c.got[i], c.want[i])
					}
				}
			}
		}
	}
}

func slicesMax(s []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// The SiLU gate's twin agrees with the portable form to float32 rounding,
// across the exp clamps (|x| up to 200: past the high clamp a product that
// underflows to 0 comes out below 1e-30 instead) and on lengths that
// leave tails.
func TestSiLUMulMatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, n := range []int{1, 7, 8, 9, 100, 3072} {
		x, y := make([]float32, n), randFloats(r, n, 1)
		for i := range x {
			x[i] = float32(r.NormFloat64() * []float64{1, 10, 100}[i%3])
		}
		x[0] = 200
		if n > 1 {
			x[1] = -200
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		siluMul(got, y)
		siluMulGo(want, y)
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 3e-7*math.Abs(float64(want[i]))+1e-30 {
				t.Fatalf("n %d: silu(%g)·%g = %g, portable %g", n, x[i], y[i], got[i], want[i])
			}
		}
	}
	x := []float32{float32(math.NaN()), 1, 2, 3, 4, 5, 6, 7}
	siluMul(x, x)
	if !math.IsNaN(float64(x[0])) {
		t.Fatalf("silu(NaN) = %g", x[0])
	}
}

// The KV writes store each cache type from the same rotated rows: the F32
// cache holds them as they are (the F16 cache's rows are those rounded),
// the Q8_0 cache holds them quantized byte for byte as ggml's reference
// quantize_row_q8_0_ref does (random rows: no ties, where ggml's x86
// quantizer, which the kernel follows, rounds half to even), and nothing
// else of the cache is written; the Rows forms in sequence slot 1.
func TestKVWriteStoresEachCacheType(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	h := newHarness(t, 2)
	const hd, hdv, rd, nh, nkv, tokens, maxCtx, pos = 64, 32, 64, 4, 2, 3, 8, 4
	qs, kvs := nh*hd+5, nkv*hd+3
	for _, op := range []kernels.Op{kernels.OpRoPEQKVWrite, kernels.OpHeadNormRoPEKVWrite} {
		for _, rows := range []kernels.Variant{0, kernels.Rows} {
			q0, k0, v0 := randFloats(r, tokens*qs, 1), randFloats(r, tokens*kvs, 1), randFloats(r, tokens*kvs, 1)
			qn, kn := randFloats(r, hd, 1), randFloats(r, hd, 1)
			posb, seqb := Alloc(4*tokens), Alloc(4*tokens)
			for i := range tokens {
				u32s(posb)[i], u32s(seqb)[i] = uint32(pos+i), 1
			}
			slots := 1
			if rows != 0 {
				slots = 2
			}
			caches := map[kvType][2][]byte{}
			for _, kv := range []kvType{kvF16, kvF32, kvQ8} {
				v := kernels.NeoX | rows | [...]kernels.Variant{0, kernels.KVQ8, kernels.KVF32}[kv]
				name := kernels.OpName(op, v, dtype.F32)
				kc, vc := Alloc(slots*nkv*maxCtx*kv.rowBytes(hd)), Alloc(slots*nkv*maxCtx*kv.rowBytes(hdv))
				p := kernels.RoPEQKVWriteParams{Position: pos, NTokens: tokens, NHeads: nh, NKVHeads: nkv, HeadDim: hd, HeadDimV: hdv, RopeDim: rd,
					MaxCtx: maxCtx, QStride: uint32(qs), KVStride: uint32(kvs), OrigCtx: 4096, Theta: 1e6, FreqScale: 1, AttnFactor: 1, Eps: 1e-6}
				bs := binds{"q": f32bytes(q0), "k": f32bytes(k0), "v": f32bytes(v0), "q_out": Alloc(4 * len(q0)), "k_cache": kc, "v_cache": vc}
				if op == kernels.OpHeadNormRoPEKVWrite {
					bs["q_norm"], bs["k_norm"] = f32bytes(qn), f32bytes(kn)
				}
				if rows != 0 {
					bs["pos"], bs["seq"] = posb, seqb
				}
				h.run(name, p, consts{"head_dim": hd}, bs)
				caches[kv] = [2][]byte{kc[(slots-1)*nkv*maxCtx*kv.rowBytes(hd):], vc[(slots-1)*nkv*maxCtx*kv.rowBytes(hdv):]}
				for s := range slots - 1 { // the other slot is untouched
					for _, b := range kc[s*nkv*maxCtx*kv.rowBytes(hd) : (s+1)*nkv*maxCtx*kv.rowBytes(hd)] {
						if b != 0 {
							t.Fatalf("%s wrote sequence slot %d", name, s)
						}
					}
				}
			}
			for half, n := range [2]int{hd, hdv} {
				for row := range nkv * maxCtx {
					f32row := f32s(caches[kvF32][half])[row*n : row*n+n]
					f16row := u16s(caches[kvF16][half])[row*n : row*n+n]
					q8row := caches[kvQ8][half][row*kvQ8.rowBytes(n):][:kvQ8.rowBytes(n)]
					want := make([]byte, len(q8row))
					if err := dtype.Quantize(dtype.Q8_0, f32row, want); err != nil {
						t.Fatal(err)
					}
					written := row%maxCtx >= pos && row%maxCtx < pos+tokens
					for i, f := range f32row {
						if f2h(f) != f16row[i] || !written && f != 0 {
							t.Fatalf("%v half %d row %d [%d]: f32 cache %g, f16 cache %g (written %v)", op, half, row, i, f, h2f(f16row[i]), written)
						}
					}
					if string(q8row) != string(want) {
						t.Fatalf("%v half %d row %d: q8_0 cache % x, ggml's reference % x", op, half, row, q8row[:8], want[:8])
					}
				}
			}
		}
	}
}
