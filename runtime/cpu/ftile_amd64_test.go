//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// floatTileRows returns four weight rows of dt, k elements each, rb bytes
// apart (rb above the row's bytes, so the stride is tested): rows of very
// different scales, and with bad set a NaN in row 1 and ±Inf in rows 2, 3.
func floatTileRows(t *testing.T, r *rand.Rand, dt dtype.Type, k, rb int, bad bool) []byte {
	t.Helper()
	wt := weightTypeOf(dt)
	w := Alloc(3*rb + wt.rowBytes(k))
	for row, scale := range []float64{1e-3, 1, 37, 1e4} {
		src := randFloats(r, k, scale)
		if bad {
			switch row {
			case 1:
				src[k/2] = float32(math.NaN())
			case 2:
				src[k-1] = float32(math.Inf(1))
			case 3:
				src[0] = float32(math.Inf(-1))
			}
		}
		if err := dtype.Quantize(dt, src, w[row*rb:row*rb+wt.rowBytes(k)]); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// The float tile is, for each of its sixteen pairs, the one-row dot it
// stands for, bit for bit: dotF32 on the widened weight row (the GEMM's
// path without the tile), and the dispatched dot of the row's own type
// (dotF16, dotBF16), at whole sixteens, with tails, below sixteen, at
// activation row offsets 0, 4 and 5 of nine rows, and with NaN and Inf.
func TestFloatTileIsTheOneRowDot(t *testing.T) {
	needCPU(t, haveAVX512, "AVX-512")
	r := rand.New(rand.NewPCG(41, 42))
	for _, dt := range []dtype.Type{dtype.F32, dtype.F16, dtype.BF16} {
		wt := weightTypeOf(dt)
		for _, k := range []int{5, 16, 32, 48, 1024, 1024 + 5, 4096 + 13} {
			for _, bad := range []bool{false, true} {
				const m = 9
				rb := wt.rowBytes(k) + 64
				w := floatTileRows(t, r, dt, k, rb, bad)
				x := make([]float32, 0, m*k)
				for i := range m {
					x = append(x, randFloats(r, k, math.Pow(10, float64(i%5-2)))...)
				}
				wt.roundAct(x)
				wf := make([]float32, k)
				for _, i := range []int{0, 4, 5} {
					var got [16]float32
					wt.f44(w, rb, x, i, k, &got)
					for row := range 4 {
						wr := w[row*rb : row*rb+wt.rowBytes(k)]
						wt.dequant(wr, wf)
						for j := range 4 {
							xj := x[(i+j)*k : (i+j)*k+k]
							g := math.Float32bits(got[4*j+row])
							if want := dotF32(wf, xj); g != math.Float32bits(want) {
								t.Errorf("%v k=%d bad=%v i=%d: weight row %d, x row %d: %g (%#x), dotF32 %g (%#x)",
									dt, k, bad, i, row, i+j, got[4*j+row], g, want, math.Float32bits(want))
							}
							if own := wt.f(wr, xj); g != math.Float32bits(own) {
								t.Errorf("%v k=%d bad=%v i=%d: weight row %d, x row %d: %g, the type's dot %g",
									dt, k, bad, i, row, i+j, got[4*j+row], own)
							}
						}
					}
				}
			}
		}
	}
}

// The GEMM with the tile writes the bits it wrote without it: rows of W
// and of X past the last whole four included (n 19, m 11), with a bias
// and a tail in K.
func TestGEMMFloatTileChangesNoBits(t *testing.T) {
	needCPU(t, haveAVX512, "AVX-512")
	r := rand.New(rand.NewPCG(43, 44))
	h := newHarness(t, 2)
	for _, dt := range []dtype.Type{dtype.F32, dtype.F16, dtype.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			wt := weightTypeOf(dt)
			const m, n, k = 11, 19, 1024 + 5
			w, _ := weights(t, r, dt, n, k)
			x := f32bytes(randFloats(r, m*k, 1))
			bv := f32bytes(randFloats(r, n, 1))
			name := kernels.GEMMName(dt, false, dtype.F32)
			p := kernels.GEMMParams{M: m, N: n, K: k, LDA: k, LDC: n}
			var ys [2][]byte
			f44 := wt.f44
			for pass := range ys {
				ys[pass] = Alloc(4 * m * n)
				if pass == 1 {
					wt.f44 = nil
				}
				h.run(name, p, consts{"has_bias": 1}, binds{"w": w, "x": x, "y": ys[pass], "bias": bv})
			}
			wt.f44 = f44
			got, want := f32s(ys[0]), f32s(ys[1])
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d,%d]: tile %g, row by row %g", i/n, i%n, got[i], want[i])
				}
			}
		})
	}
}
