package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The dispatched dot products (assembly where the CPU has it) against the
// portable ones: both follow ggml's AVX2 lane layout and reduction order
// with unfused products, so they must agree to the bit (except the VNNI
// four-row forms, reordered, which agree to float32 rounding).
func TestDotTwinsMatchPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, k := range []int{32, 96, 1024, 4096 + 64} {
		x := randFloats(r, k, 1)
		q := &q8act{}
		q.need(k)
		for _, c := range []struct {
			dt       dtype.Type
			got, ref qdot
		}{{dtype.Q4_0, dotQ4_0, dotQ4_0Go}, {dtype.Q8_0, dotQ8_0, dotQ8_0Go}, {dtype.Q6_K, dotQ6_K, dotQ6_KGo}} {
			if k%c.dt.BlockSize() != 0 {
				continue
			}
			w, _ := weights(t, r, c.dt, 1, k)
			aq := weightTypeOf(c.dt).aq
			q.quantize(aq, x, 1, k)
			qs, d, s := q.row(aq, 0, k)
			got, want := c.got(w, qs, d, s), c.ref(w, qs, d, s)
			if got != want {
				t.Errorf("%v k=%d: %g, portable %g", c.dt, k, got, want)
			}
		}
		for _, kk := range []int{k, k - 5} {
			wf := randFloats(r, kk, 1)
			wh := make([]uint16, kk)
			for i, v := range wf {
				wh[i] = f2h(v)
			}
			if got, want := dotF32(wf, x[:kk]), dotF32Go(wf, x[:kk]); got != want {
				t.Errorf("f32 k=%d: %g, portable %g", kk, got, want)
			}
			if got, want := dotF16(wh, x[:kk]), dotF16Go(wh, x[:kk]); got != want {
				t.Errorf("f16 k=%d: %g, portable %g", kk, got, want)
			}
			wb := make([]uint16, kk)
			for i, v := range wf {
				wb[i] = uint16(math.Float32bits(v) >> 16)
			}
			if got, want := dotBF16(wb, x[:kk]), dotBF16Go(wb, x[:kk]); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("bf16 k=%d: %g, portable %g", kk, got, want)
			}
		}
	}
}

// The four-row twins against the portable one-row dots, row by row, with
// rows apart by more than their length (a weight matrix's stride).
func TestDotX4TwinsMatchPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, k := range []int{32, 64, 96, 172, 1024, 4096 + 64} {
		x := randFloats(r, k, 1)
		q := &q8act{}
		q.need(k)
		for _, c := range []struct {
			dt  dtype.Type
			ref qdot
		}{{dtype.Q4_0, dotQ4_0Go}, {dtype.Q8_0, dotQ8_0Go}} {
			wt := weightTypeOf(c.dt)
			if wt.q4 == nil || k%c.dt.BlockSize() != 0 {
				continue
			}
			rb := wt.rowBytes(k)
			w, deq := weights(t, r, c.dt, 5, k)
			q.quantize(wt.aq, x, 1, k)
			qs, d, s := q.row(wt.aq, 0, k)
			var got [4]float32
			wt.q4(w, rb, qs, d, s, &got)
			for j := range got {
				want := c.ref(w[j*rb:j*rb+rb], qs, d, s)
				if got[j] == want {
					continue
				}
				// The VNNI forms sum in another order: float32
				// rounding of the terms' magnitudes is all it may differ by.
				var mag float64
				for i := range k {
					mag += math.Abs(deq[j*k+i] * float64(qs[i]) * float64(d[i/qk]))
				}
				if !wt.reordered || math.Abs(float64(got[j]-want)) > 1e-6*mag {
					t.Errorf("%v k=%d row %d: %g, portable %g", c.dt, k, j, got[j], want)
				}
			}
		}
		if f4 := weightTypeOf(dtype.F32).f4; f4 != nil {
			wf := randFloats(r, 5*k, 1)
			var got [4]float32
			f4(f32bytes(wf), 4*k, x, &got)
			for j := range got {
				if want := dotF32Go(wf[j*k:j*k+k], x); got[j] != want {
					t.Errorf("f32 k=%d row %d: %g, portable %g", k, j, got[j], want)
				}
			}
		}
	}
}
