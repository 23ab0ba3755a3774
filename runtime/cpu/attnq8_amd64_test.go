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

// The assembly Q8_0 scores are the portable ones bit for bit (the same
// dot, the loop over keys moved into assembly), and so is their max: one
// key and many, one block a head and several, extreme bytes and scales.
func TestScoresQ8MatchPortable(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(43, 44))
	for _, hd := range []int{32, 64, 128} {
		for _, n := range []int{1, 2, 9, 100} {
			rb := hd / qk * 34
			k := make([]byte, n*rb)
			qs, d := make([]int8, hd), make([]float32, hd/qk)
			for j := range n {
				kvQ8.store(k[j*rb:j*rb+rb], randFloats(r, hd, math.Pow(10, float64(j%5-2))), qs, d)
				if j%3 == 2 {
					k[j*rb+2], k[j*rb+3] = 0x80, 0x7f
				}
			}
			quantizeQ8_0Go(randFloats(r, hd, 3), qs, d, nil)
			got, want := make([]float32, n), make([]float32, n)
			mg := scoresQ8Asm(k, rb, qs, d, 0.125, got)
			mw := scoresQ8Go(k, rb, qs, d, 0.125, want)
			for j := range n {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("hd %d n %d key %d: %g, portable %g", hd, n, j, got[j], want[j])
				}
			}
			if mg != mw {
				t.Fatalf("hd %d n %d: max %g, portable %g", hd, n, mg, mw)
			}
		}
	}
}

// The two-head forms are the one-head forms for each head, bit for bit.
func TestQ8PairsAreTheOneHeadForms(t *testing.T) {
	needCPU(t, haveAVX512, "AVX-512")
	r := rand.New(rand.NewPCG(45, 46))
	for _, hd := range []int{32, 64, 128} {
		for _, n := range []int{1, 5, 70} {
			rb := hd / qk * 34
			kv := make([]byte, n*rb)
			qs, d := make([]int8, 2*hd), make([]float32, 2*hd/qk)
			for j := range n {
				kvQ8.store(kv[j*rb:j*rb+rb], randFloats(r, hd, math.Pow(10, float64(j%5-2))), qs, d)
			}
			quantizeQ8_0Go(randFloats(r, 2*hd, 2), qs, d, nil)
			qs0, qs1, d0, d1 := qs[:hd], qs[hd:], d[:hd/qk], d[hd/qk:]
			s0, s1, w0, w1 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			m0, m1 := scoresQ8x2Asm(kv, rb, qs0, qs1, d0, d1, 0.1, s0, s1)
			n0, n1 := scoresQ8Asm(kv, rb, qs0, d0, 0.1, w0), scoresQ8Asm(kv, rb, qs1, d1, 0.1, w1)
			for j := range n {
				if math.Float32bits(s0[j]) != math.Float32bits(w0[j]) || math.Float32bits(s1[j]) != math.Float32bits(w1[j]) {
					t.Fatalf("hd %d n %d key %d: pair %g %g, one head %g %g", hd, n, j, s0[j], s1[j], w0[j], w1[j])
				}
			}
			if m0 != n0 || m1 != n1 {
				t.Fatalf("hd %d n %d: pair maxima %g %g, one head %g %g", hd, n, m0, m1, n0, n1)
			}
			p0, p1 := randFloats(r, n, 1), randFloats(r, n, 1)
			a0, a1 := randFloats(r, hd, 1), randFloats(r, hd, 1)
			b0, b1 := append([]float32(nil), a0...), append([]float32(nil), a1...)
			accQ8x2Asm(a0, a1, p0, p1, kv)
			accQ8Asm(b0, p0, kv)
			accQ8Asm(b1, p1, kv)
			for c := range hd {
				if math.Float32bits(a0[c]) != math.Float32bits(b0[c]) || math.Float32bits(a1[c]) != math.Float32bits(b1[c]) {
					t.Fatalf("hd %d n %d column %d: pair %g %g, one head %g %g", hd, n, c, a0[c], a1[c], b0[c], b1[c])
				}
			}
		}
	}
}
