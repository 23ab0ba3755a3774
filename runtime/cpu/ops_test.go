package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

// Norms: float64 sums like ours, so F32 agrees to float32 rounding of a
// handful of operations (relative 1e-5); F16 outputs add one rounding
// (2^-11 relative, 1e-3 stated).
func TestNormsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	h := newHarness(t, 2)
	const dim, rows, stride = 97, 3, 101
	for _, at := range acts() {
		a := actOf(at)
		tol := 1e-5
		if a == actF16 {
			tol = 1e-3
		}
		for _, layer := range []bool{false, true} {
			for _, residual := range []bool{false, true} {
				for _, bias := range []bool{false, true} {
					if bias && !layer {
						continue
					}
					op := kernels.OpRMSNorm
					if layer {
						op = kernels.OpLayerNorm
					}
					v := kernels.Variant(0)
					if residual {
						v = kernels.Residual
					}
					name := kernels.OpName(op, v, at)
					t.Run(fmt.Sprintf("%s bias=%v", name, bias), func(t *testing.T) {
						x0, r0 := randFloats(r, rows*stride, 2), randFloats(r, rows*stride, 2)
						wv, bv := randFloats(r, dim, 1), randFloats(r, dim, 1)
						xb, rb, out := actBytes(a, x0), actBytes(a, r0), Alloc(rows*stride*a.size())
						xs, rs := actFloats(a, xb, rows*stride), actFloats(a, rb, rows*stride)
						bs := binds{"x": xb, "weight": f32bytes(wv), "out": out}
						if residual {
							bs["residual"] = rb
						}
						if bias {
							bs["bias"] = f32bytes(bv)
						}
						h.run(name, kernels.NormParams{Dim: dim, NRows: rows, NHeads: 1, Stride: stride, Eps: 1e-5}, consts{"has_bias": b2u(bias)}, bs)
						got := actFloats(a, out, rows*stride)
						gotRes := actFloats(a, rb, rows*stride)
						for row := range rows {
							v := make([]float64, dim)
							for i := range v {
								v[i] = xs[row*stride+i]
								if residual {
									v[i] = float64(float32(v[i] + rs[row*stride+i]))
									if a == actF16 {
										v[i] = float64(h2f(f2h(float32(v[i]))))
									}
									if gotRes[row*stride+i] != v[i] {
										t.Fatalf("residual [%d,%d] = %g, want %g", row, i, gotRes[row*stride+i], v[i])
									}
								}
							}
							want := refNorm(v, wv, bv, layer, bias, 1e-5)
							for i := range dim {
								g := got[row*stride+i]
								if !near(g, want[i], tol*(1+math.Abs(want[i]))) {
									t.Fatalf("[%d,%d]: got %g, want %g", row, i, g, want[i])
								}
							}
						}
					})
				}
			}
		}
		t.Run(kernels.OpName(kernels.OpHeadRMSNorm, 0, at), func(t *testing.T) {
			const hd, heads = 16, 3
			x0 := randFloats(r, rows*stride, 2)
			wv := randFloats(r, hd, 1)
			xb := actBytes(a, x0)
			xs := actFloats(a, xb, rows*stride)
			h.run(kernels.OpName(kernels.OpHeadRMSNorm, 0, at), kernels.NormParams{Dim: hd, NRows: rows, NHeads: heads, Stride: stride, Eps: 1e-6}, nil,
				binds{"x": xb, "weight": f32bytes(wv)})
			got := actFloats(a, xb, rows*stride)
			for row := range rows {
				for hh := range heads {
					off := row*stride + hh*hd
					want := refNorm(xs[off:off+hd], wv, nil, false, false, 1e-6)
					for i := range hd {
						if !near(got[off+i], want[i], tol*(1+math.Abs(want[i]))) {
							t.Fatalf("row %d head %d [%d]: got %g, want %g", row, hh, i, got[off+i], want[i])
						}
					}
				}
				for i := heads * hd; i < stride; i++ { // untouched past the heads
					if got[row*stride+i] != xs[row*stride+i] {
						t.Fatalf("row %d element %d past the heads changed", row, i)
					}
				}
			}
		})
	}
}

func refNorm(x []float64, w, b []float32, layer, bias bool, eps float64) []float64 {
	n := float64(len(x))
	var mean float64
	if layer {
		for _, v := range x {
			mean += v
		}
		mean /= n
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	s := 1 / math.Sqrt(ss/n+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = (v - mean) * s * float64(w[i])
		if bias {
			out[i] += float64(b[i])
		}
	}
	return out
}

// ropeRef is llama.cpp's rope written directly in float64: pair i turns by
// theta_i = p·base^(-2i/d)/ff_i, YaRN-mixed with freq_scale·theta_i when
// ext_factor ≠ 0; "norm" pairs (2i, 2i+1), NeoX (i, i+d/2).
func ropeRef(x []float64, pos, d int, neox bool, base, fs, af, ext, bf, bsl float64, orig int, ff []float32) []float64 {
	out := append([]float64(nil), x...)
	var c0, c1 float64
	if ext != 0 {
		cd := func(nRot float64) float64 {
			return float64(d) * math.Log(float64(orig)/(nRot*2*math.Pi)) / (2 * math.Log(base))
		}
		c0 = max(0, math.Floor(cd(bf)))
		c1 = min(float64(d-1), math.Ceil(cd(bsl)))
	}
	for i := range d / 2 {
		f := 1.0
		if ff != nil {
			f = float64(ff[i])
		}
		extrap := float64(pos) * math.Pow(base, -2*float64(i)/float64(d)) / f
		th := fs * extrap
		ms := af
		if ext != 0 {
			y := (float64(i) - c0) / max(0.001, c1-c0)
			ramp := (1 - min(1, max(0, y))) * ext
			th = th*(1-ramp) + extrap*ramp
			ms *= 1 + 0.1*math.Log(1/fs)
		}
		c, s := math.Cos(th)*ms, math.Sin(th)*ms
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+d/2
		}
		out[a] = x[a]*c - x[b]*s
		out[b] = x[a]*s + x[b]*c
	}
	return out
}

// RoPE tolerance: ggml's angle is p·theta_scale^i accumulated in float32,
// off by up to ~i·2^-24 relative, so at positions ≤ 100 and |x| ≤ 4 the
// outputs differ from float64 by < 1e-3 absolute; F16 adds its rounding.
func TestRoPEMatchesLlamaCppFormula(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	h := newHarness(t, 2)
	const hd, rd, heads, tokens, stride = 64, 48, 3, 2, 200
	for _, at := range acts() {
		a := actOf(at)
		for _, neox := range []bool{false, true} {
			for _, pos := range []int{0, 37} {
				for _, yarn := range []bool{false, true} {
					for _, factors := range []bool{false, true} {
						v := kernels.Variant(0)
						if neox {
							v = kernels.NeoX
						}
						name := kernels.OpName(kernels.OpRoPE, v, at)
						t.Run(fmt.Sprintf("%s pos=%d yarn=%v factors=%v", name, pos, yarn, factors), func(t *testing.T) {
							p := kernels.RoPEParams{Position: uint32(pos), NTokens: tokens, NHeads: heads, HeadDim: hd, RopeDim: rd, Stride: stride,
								OrigCtx: 4096, Theta: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
							if yarn {
								p.FreqScale, p.ExtFactor, p.AttnFactor = 0.25, 1, 1
							}
							ff := make([]float32, rd/2)
							for i := range ff {
								ff[i] = 1 + float32(i)/8
							}
							x0 := randFloats(r, tokens*stride, 1)
							xb := actBytes(a, x0)
							xs := actFloats(a, xb, tokens*stride)
							bs := binds{"x": xb}
							var fref []float32
							if factors {
								bs["factors"] = f32bytes(ff)
								fref = ff
							}
							h.run(name, p, consts{"head_dim": hd, "has_factors": b2u(factors)}, bs)
							got := actFloats(a, xb, tokens*stride)
							for tok := range tokens {
								for hh := range heads {
									off := tok*stride + hh*hd
									want := ropeRef(xs[off:off+hd], pos+tok, rd, neox, float64(p.Theta), float64(p.FreqScale), float64(p.AttnFactor),
										float64(p.ExtFactor), 32, 1, 4096, fref)
									for i := range hd {
										tol := 1e-3
										if a == actF16 {
											tol += math.Abs(want[i]) * 2 * f16ulp
										}
										if !near(got[off+i], want[i], tol) {
											t.Fatalf("token %d head %d [%d]: got %g, want %g", tok, hh, i, got[off+i], want[i])
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
