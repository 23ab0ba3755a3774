package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// kFor is an awkward K for dt: not a multiple of 256 where the blocks allow
// it, not a multiple of 4 for the float types.
func kFor(dt dtype.Type) int {
	switch dt.BlockSize() {
	case 1:
		return 100
	case 32:
		return 32 * 7
	}
	return 256 * 3
}

// gemvTol is the stated tolerance of one output of a GEMV with weights of
// type dt:
//
//   - float32 accumulation: 1e-5 · Σ|w·x| (K ≤ a few thousand products);
//   - quantized weights meet the activations quantized to 8 bits per block
//     of ggml's vec_dot_type (32 for Q8_0/Q8_1, 256 for Q8_K) with scale
//     d = amax/127, so each activation is off by at most d/2, plus
//     127·d·2^-11 where the scale is stored as f16 (Q8_0/Q8_1), and the
//     output by Σ_i |w_i| times that;
//   - F16 and BF16 weights meet the activation rounded to their type:
//     Σ_i |w_i·x_i| · 2^-11 (2^-8 for BF16);
//   - an F16 output is rounded once: |y| · 2^-11.
func gemvTol(w []float64, x []float32, dt dtype.Type, f16 bool, y float64) float64 {
	aq := weightTypeOf(dt).aq
	bs := qk
	if aq == aqQ8_K {
		bs = qkK
	}
	var sabs, qerr float64
	for b := 0; b < len(x); b += bs {
		var amax float64
		for i := b; i < min(b+bs, len(x)); i++ {
			amax = max(amax, math.Abs(float64(x[i])))
		}
		d := amax / 127
		per := d / 2
		if aq == aqQ8_0 || aq == aqQ8_1 {
			per += 127 * d * f16ulp
		}
		for i := b; i < min(b+bs, len(x)); i++ {
			p := math.Abs(w[i] * float64(x[i]))
			sabs += p
			switch aq {
			case aqQ8_0, aqQ8_1, aqQ8_K:
				qerr += math.Abs(w[i]) * per
			case aqF16:
				qerr += p * f16ulp
			case aqBF16:
				qerr += p / 256
			}
		}
	}
	tol := 1e-5*sabs + qerr
	if f16 {
		tol += math.Abs(y) * f16ulp * 1.01
	}
	return tol + 1e-6
}

func TestGEMVMatchesFloat64Reference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := newHarness(t, 3)
	for _, k := range kernels.All() {
		if k.Op != kernels.OpGEMV || k.Variant&kernels.GLU != 0 { // _glu: TestPlanarGLUGivesTheUnfusedBits
			continue
		}
		for _, bias := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s bias=%v", k.Name, bias), func(t *testing.T) {
				dt, a := k.DType, actOf(k.Act)
				n, kk := 37, kFor(dt)
				if k.Variant&kernels.X16 != 0 { // whole groups of 16 rows
					n = 48
				}
				w, wref := weights(t, r, dt, n, kk)
				w = layout(t, k, w, kk)
				silu := k.Variant&kernels.SiLU != 0
				bs := binds{"w": w}
				var x []float32 // what the kernel's dot sees, float32
				if silu {
					gate, up := randFloats(r, kk, 2), randFloats(r, kk, 1)
					bs["gate"], bs["up"] = actBytes(a, gate), actBytes(a, up)
					gs, us := stored(a, gate), stored(a, up)
					x = make([]float32, kk)
					for i := range x {
						x[i] = silu32(float32(gs[i])) * float32(us[i])
					}
				} else {
					x0 := randFloats(r, kk, 1)
					bs["x"] = actBytes(a, x0)
					xs := stored(a, x0)
					x = make([]float32, kk)
					for i := range x {
						x[i] = float32(xs[i])
					}
				}
				y := Alloc(n * a.size())
				bs["y"] = y
				bv := randFloats(r, n, 1)
				if bias {
					bs["bias"] = f32bytes(bv)
				}
				// the norm_fold forms: _norm's scale from partial sums,
				// _res's residual (n), next norm weight and partials
				sc, norm, res := 1.0, k.Variant&kernels.Norm != 0, k.Variant&kernels.Residual != 0
				var res0 []float64
				var nw []float32
				parts := uint32(0)
				switch {
				case norm: // a residual's Σ², in three partials
					ps := make([]float32, 3)
					ss := 0.0
					for i, v := range randFloats(r, kk, 3) {
						ps[i%3] += v * v
						ss += float64(v) * float64(v)
					}
					bs["partials"], parts = f32bytes(ps), 3
					sc = 1 / math.Sqrt(ss/float64(kk)+1e-5)
				case res: // a partial a row (nr and nsg are 1 here)
					rv := randFloats(r, n, 3)
					nw = randFloats(r, n, 1)
					bs["res"], bs["norm_w"], res0 = actBytes(a, rv), f32bytes(nw), stored(a, rv)
					bs["partials"], parts = Alloc(4*n), uint32(n)
				}
				h.run(k.Name, kernels.GEMVParams{N: uint32(n), K: uint32(kk), Eps: 1e-5, Parts: parts}, consts{"has_bias": b2u(bias)}, bs)
				got := actFloats(a, y, n)
				var gotRes []float64
				if res {
					gotRes = actFloats(a, bs["res"], n)
					for row, p := range f32s(bs["partials"])[:n] {
						if want := gotRes[row] * gotRes[row]; !near(float64(p), want, want*1e-6+1e-9) {
							t.Fatalf("row %d: partial %g, want res² %g", row, p, want)
						}
					}
				}
				for row := range n {
					var want float64
					wr := wref[row*kk : row*kk+kk]
					for i := range kk {
						want += wr[i] * float64(x[i])
					}
					tol := gemvTol(wr, x, dt, a == actF16, want*sc) * max(sc, 1)
					want *= sc
					if bias {
						want += float64(bv[row])
					}
					if res { // res gets the result, rounded, plus itself, rounded; y is that times the weight, rounded
						rtol := tol + math.Abs(want+res0[row])*2*f16ulp + 1e-6
						if !near(gotRes[row], want+res0[row], rtol) {
							t.Fatalf("row %d: res %g, want %g (tolerance %g)", row, gotRes[row], want+res0[row], rtol)
						}
						want, tol = gotRes[row]*float64(nw[row]), math.Abs(gotRes[row]*float64(nw[row]))*f16ulp+1e-6
					}
					if !near(got[row], want, tol) {
						t.Fatalf("row %d: got %g, want %g (tolerance %g)", row, got[row], want, tol)
					}
				}
			})
		}
	}
}

// layout is w (rows of k elements) as kernel k reads it: repacked for
// the _x16 kernels, as it is for the others.
func layout(t testing.TB, k *kernels.Kernel, w []byte, kk int) []byte {
	t.Helper()
	if k.Variant&kernels.Planar != 0 {
		out := Alloc(len(w))
		if err := kernels.ToPlanar(k.DType, out, w); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if k.Variant&kernels.X16 == 0 {
		return w
	}
	out := Alloc(len(w))
	if err := x16Of(k.DType).repack(out, w, kk); err != nil {
		t.Fatal(err)
	}
	return out
}

func silu32(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func TestGEMMEqualsRowByRowReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := newHarness(t, 2)
	for _, k := range kernels.All() {
		if k.Op != kernels.OpGEMM {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			dt, a := k.DType, actOf(k.Act)
			m, n, kk := 5, 19, kFor(dt)
			if k.Variant&kernels.Small == 0 {
				m = 11
			}
			if k.Variant&kernels.X16 != 0 { // whole groups of 16 rows
				n = 48
			}
			pairs := k.Variant&kernels.GLU != 0 // planar_glu: rows gate and up in turn, written gates then ups
			if pairs {
				n = 20
			}
			lda, ldc := kk+3, n+2
			w, wref := weights(t, r, dt, n, kk)
			w = layout(t, k, w, kk)
			x0 := randFloats(r, m*lda, 1)
			xb := actBytes(a, x0)
			xs := actFloats(a, xb, m*lda)
			y := Alloc(m * ldc * a.size())
			bv := randFloats(r, n, 1)
			h.run(k.Name, kernels.GEMMParams{M: uint32(m), N: uint32(n), K: uint32(kk), LDA: uint32(lda), LDC: uint32(ldc)},
				consts{"has_bias": 1}, binds{"w": w, "x": xb, "y": y, "bias": f32bytes(bv)})
			got := actFloats(a, y, m*ldc)
			for i := range m {
				x := make([]float32, kk)
				for j := range x {
					x[j] = float32(xs[i*lda+j])
				}
				for row := range n {
					d := row
					if pairs {
						d = (row&1)*(n/2) + row/2
					}
					want := float64(bv[d])
					wr := wref[row*kk : row*kk+kk]
					for j := range kk {
						want += wr[j] * float64(x[j])
					}
					tol := gemvTol(wr, x, dt, a == actF16, want)
					if !near(got[i*ldc+d], want, tol) {
						t.Fatalf("[%d,%d]: got %g, want %g (tolerance %g)", i, d, got[i*ldc+d], want, tol)
					}
				}
			}
		})
	}
}

func TestEmbeddingReadsTheTokenSlot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := newHarness(t, 2)
	for _, k := range kernels.All() {
		if k.Op != kernels.OpEmbedding {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			dt, a := k.DType, actOf(k.Act)
			vocab, dim := 13, kFor(dt)
			table, ref := weights(t, r, dt, vocab, dim)
			ids := Alloc(4 * 8)
			copy(u32s(ids), []uint32{9, 9, 3, 7, 99, 1, 0, 0})
			stride := dim + 5
			out := Alloc(3 * stride * a.size())
			h.run(k.Name, kernels.EmbeddingParams{Dim: uint32(dim), Vocab: uint32(vocab), TokenSlot: 2, NTokens: 3, Scale: 1.5, OutStride: uint32(stride)},
				nil, binds{"table": table, "ids": ids, "out": out})
			got := actFloats(a, out, 3*stride)
			for tok, id := range []int{3, 7, 99} {
				for i := range dim {
					var want float64
					if id < vocab {
						want = float64(float32(ref[id*dim+i]) * 1.5)
					}
					if a == actF16 {
						want = float64(h2f(f2h(float32(want))))
					}
					if got[tok*stride+i] != want {
						t.Fatalf("token %d (id %d) element %d: got %g, want %g", tok, id, i, got[tok*stride+i], want)
					}
				}
			}
		})
	}
}

// The planar GEMV's twin gives the plain GEMV's bits on the same weights
// in the file's layout, so an NVIDIA plan replayed on the CPU gives the
// same logits with the planar layout as without it: every row count
// around the four-row passes, with and without a bias.
func TestPlanarGEMVGivesThePlainGEMVsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	h := newHarness(t, 3)
	const kk = 512
	for _, dt := range []dtype.Type{dtype.Q4_0, dtype.Q6_K} {
		plain := "gemv_" + strings.ToLower(dt.String())
		for _, n := range []int{1, 3, 4, 7, 37, 64} {
			for _, bias := range []bool{false, true} {
				w, _ := weights(t, r, dt, n, kk)
				p := Alloc(len(w))
				if err := kernels.ToPlanar(dt, p, w); err != nil {
					t.Fatal(err)
				}
				x := actBytes(actF16, randFloats(r, kk, 1))
				bv := f32bytes(randFloats(r, n, 1))
				out := map[string][]byte{}
				for name, wb := range map[string][]byte{plain: w, plain + "_planar": p} {
					y := Alloc(2 * n)
					bs := binds{"w": wb, "x": x, "y": y}
					if bias {
						bs["bias"] = bv
					}
					h.run(name, kernels.GEMVParams{N: uint32(n), K: kk}, consts{"has_bias": b2u(bias)}, bs)
					out[name] = y
				}
				if !bytes.Equal(out[plain], out[plain+"_planar"]) {
					t.Errorf("%v n %d bias %v: the planar GEMV's y differs from the plain one's", dt, n, bias)
				}
			}
		}
	}
}

// The _glu planar GEMV over interleaved gate and up rows gives the bits of
// the gate|up GEMV followed by silu_gate's arithmetic.
func TestPlanarGLUGivesTheUnfusedBits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	h := newHarness(t, 3)
	const kk = 512
	for _, norm := range []bool{false, true} {
		for _, n := range []int{1, 2, 5, 37, 64} {
			for _, bias := range []bool{false, true} {
				w, _ := weights(t, r, dtype.Q4_0, 2*n, kk) // gate rows, then up rows
				rb := len(w) / (2 * n)
				pairs, p, pw := Alloc(len(w)), Alloc(len(w)), Alloc(len(w))
				if err := kernels.InterleaveRows(pairs, w[:n*rb], w[n*rb:], rb); err != nil {
					t.Fatal(err)
				}
				if err := kernels.ToPlanar(dtype.Q4_0, p, pairs); err != nil {
					t.Fatal(err)
				}
				if err := kernels.ToPlanar(dtype.Q4_0, pw, w); err != nil {
					t.Fatal(err)
				}
				x := actBytes(actF16, randFloats(r, kk, 1))
				bv := randFloats(r, 2*n, 1) // the gate's biases, then the up's
				bp := make([]float32, 2*n)  // in the interleaved rows' order
				for i := range n {
					bp[2*i], bp[2*i+1] = bv[i], bv[n+i]
				}
				y2, y := Alloc(2*2*n), Alloc(2*n)
				bs := binds{"w": w, "x": x, "y": y2}
				bsg := binds{"w": p, "x": x, "y": y}
				if bias {
					bs["bias"], bsg["bias"] = f32bytes(bv), f32bytes(bp)
				}
				prm := kernels.GEMVParams{N: uint32(2 * n), K: kk}
				plain, glu := "gemv_q4_0", "gemv_q4_0_planar_glu"
				if norm { // the unfused form is the planar _norm GEMV, the same partial sums
					bs["w"] = pw
					bs["partials"] = f32bytes(randFloats(r, 3, 1))
					for i, v := range f32s(bs["partials"]) {
						f32s(bs["partials"])[i] = v*v*kk + 1
					}
					bsg["partials"] = bs["partials"]
					prm.Eps, prm.Parts = 1e-5, 3
					plain, glu = "gemv_q4_0_planar_norm", "gemv_q4_0_planar_glu_norm"
				}
				h.run(plain, prm, consts{"has_bias": b2u(bias)}, bs)
				h.run(glu, prm, consts{"has_bias": b2u(bias)}, bsg)
				gate, up := make([]float32, n), make([]float32, n)
				actF16.load(gate, y2, 0, n)
				actF16.load(up, y2, n, n)
				siluMul(gate, up)
				want := Alloc(2 * n)
				actF16.store(want, 0, gate)
				if !bytes.Equal(y, want) {
					t.Errorf("%s n %d bias %v: y differs from %s's and silu_gate's", glu, n, bias, plain)
				}
			}
		}
	}
}
