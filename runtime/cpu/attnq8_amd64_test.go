//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The AVX2 Q8_0 value accumulation against the portable one: every column
// within float32 rounding of the terms' magnitudes (its products are fused
// into the adds), for heads of one to five blocks, one row and many, rows
// of extreme bytes (−128, 127) and scales of very different sizes; the
// accumulator's prior contents are kept.
func TestAccQ8MatchesPortable(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(41, 42))
	for _, hdv := range []int{32, 64, 128, 160} {
		for _, n := range []int{1, 3, 37} {
			rb := hdv / qk * 34
			v := make([]byte, n*rb)
			qs, d := make([]int8, hdv), make([]float32, hdv/qk)
			for j := range n {
				x := randFloats(r, hdv, math.Pow(10, float64(j%5-2)))
				kvQ8.store(v[j*rb:j*rb+rb], x, qs, d)
				if j%4 == 1 {
					v[j*rb+2], v[j*rb+3] = 0x80, 0x7f
				}
			}
			p := randFloats(r, n, 1)
			init := randFloats(r, hdv, 1)
			got, want := append([]float32(nil), init...), append([]float32(nil), init...)
			accQ8Asm(got, p, v)
			accQ8Go(want, p, v)
			for c := range hdv {
				mag := math.Abs(float64(init[c]))
				for j := range n {
					b := v[j*rb+c/qk*34:]
					mag += math.Abs(float64(p[j]) * float64(int8(b[2+c%qk])) * float64(f16tab[uint16(b[0])|uint16(b[1])<<8]))
				}
				if math.Abs(float64(got[c]-want[c])) > 4e-7*mag {
					t.Fatalf("hdv %d n %d column %d: %g, portable %g (magnitude %g)", hdv, n, c, got[c], want[c], mag)
				}
			}
		}
	}
}
