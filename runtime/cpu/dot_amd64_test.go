//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Where the VNNI form is installed, the AVX2 four-row Q4_0 dot it replaces
// (still the odd last block's path, and the path of CPUs without VNNI) is
// held to the portable one here, bit for bit, with odd block counts too.
func TestDotQ4_0x4AVX2StaysExact(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(25, 26))
	wt := weightTypeOf(dtype.Q4_0)
	for _, k := range []int{32, 96, 1024, 4096 + 32} {
		x := randFloats(r, k, 1)
		q := &q8act{}
		q.need(k)
		q.quantize(wt.aq, x, 1, k)
		qs, d, s := q.row(wt.aq, 0, k)
		rb := wt.rowBytes(k)
		w, _ := weights(t, r, dtype.Q4_0, 4, k)
		var got, vnni [4]float32
		dotQ4_0x4Asm(w, rb, qs, d, s, &got)
		for j := range got {
			if want := dotQ4_0Go(w[j*rb:j*rb+rb], qs, d, s); got[j] != want {
				t.Errorf("k=%d row %d: %g, portable %g", k, j, got[j], want)
			}
		}
		if haveVNNI { // odd block counts take the AVX2 kernel for the last one
			dotQ4_0x4VNNIAsm(w, rb, qs, d, s, &vnni)
			for j := range vnni {
				if d := vnni[j] - got[j]; d > 1e-4 || d < -1e-4 {
					t.Errorf("k=%d row %d: VNNI %g, AVX2 %g", k, j, vnni[j], got[j])
				}
			}
		}
	}
}

// The prefill GEMM's 4×4 tile is four calls of the four-row dot it stands
// for, bit for bit: at odd block counts (the AVX2 last block), at a single
// block, and at an activation row offset (the strides).
func TestDotQ4_0x4x4IsTheFourRowDot(t *testing.T) {
	q44 := weightTypeOf(dtype.Q4_0).q44
	needCPU(t, q44 != nil, "4×4 Q4_0 tile (AVX2 or AVX-512 VNNI)")
	r := rand.New(rand.NewPCG(27, 28))
	wt := weightTypeOf(dtype.Q4_0)
	for _, k := range []int{32, 64, 96, 1024, 4096 + 32} {
		const m = 9
		x := randFloats(r, m*k, 1)
		for i := range k { // rows of very different scales
			x[2*k+i] *= 1e-6
			x[5*k+i] *= 1e4
		}
		q := &q8act{}
		q.need(m * k)
		q.quantize(wt.aq, x, m, k)
		rb := wt.rowBytes(k)
		w, _ := weights(t, r, dtype.Q4_0, 4, k)
		for _, i0 := range []int{0, 4, 5} {
			var tile [16]float32
			q44(w, rb, q, i0, k, &tile)
			for j := range 4 {
				var want [4]float32
				qs, d, s := q.row(wt.aq, i0+j, k)
				wt.q4(w, rb, qs, d, s, &want)
				for c := range want {
					if got := tile[4*j+c]; math.Float32bits(got) != math.Float32bits(want[c]) {
						t.Errorf("k=%d activation row %d, weight row %d: tile %g, four-row dot %g", k, i0+j, c, got, want[c])
					}
				}
			}
		}
	}
}
