package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// attnSplit's two pieces give the one-item attention's bits: the scores of
// each part's keys (keyRange's, 8 or more each where run splits; a part
// of fewer keys would go through the one-head kernel, an ulp apart) equal
// the whole row's, and each part's value columns (accF16x2Cols, the rows a head's
// width apart) equal those columns of the whole rows' accumulation, for
// heads of 64 to 256 (the 128-column blocks and the 16-column tails).
func TestAttnSplitPiecesMatchTheWholeRows(t *testing.T) {
	needCPU(t, accF16x2Cols != nil, "AVX-512")
	r := rand.New(rand.NewPCG(61, 62))
	for _, hd := range []int{64, 128, 256} {
		for _, n := range []int{64, 65, 70, 150, 901} {
			k, v := make([]uint16, n*hd), make([]uint16, n*hd)
			for i := range k {
				k[i], v[i] = f2h(float32(r.NormFloat64())), f2h(float32(r.NormFloat64()))
			}
			q0, q1 := randFloats(r, hd, 1), randFloats(r, hd, 1)
			w0, w1 := make([]float32, n), make([]float32, n)
			m0, m1 := scoresF16x2(k, q0, q1, 0.09, w0, w1)
			p0, p1 := randFloats(r, n, 1), randFloats(r, n, 1)
			a0, a1 := make([]float32, hd), make([]float32, hd)
			accF16x2(a0, a1, p0, p1, v)
			for _, parts := range []int{2, 4, 8} {
				name := fmt.Sprintf("hd %d, %d keys, %d parts", hd, n, parts)
				s := attnSplit{parts: parts}
				if s.takes(n) { // as attnSplit.run takes a split
					g0, g1 := make([]float32, n), make([]float32, n)
					pm0, pm1 := negInf, negInf
					for part := range parts {
						lo, hi := s.keyRange(n, part)
						if lo >= hi {
							continue
						}
						x0, x1 := scoresF16x2(k[lo*hd:hi*hd], q0, q1, 0.09, g0[lo:hi], g1[lo:hi])
						pm0, pm1 = max(pm0, x0), max(pm1, x1)
					}
					checkBits(t, name+": scores, head 0", g0, w0)
					checkBits(t, name+": scores, head 1", g1, w1)
					if pm0 != m0 || pm1 != m1 {
						t.Fatalf("%s: the parts' maxima %v, %v; the whole row's %v, %v", name, pm0, pm1, m0, m1)
					}
				}
				cols := hd / parts
				if cols%16 != 0 {
					continue
				}
				g0, g1 := make([]float32, hd), make([]float32, hd)
				for part := range parts {
					c0 := part * cols
					accF16x2Cols(g0[c0:c0+cols], g1[c0:c0+cols], p0, p1, v[c0:], hd)
				}
				checkBits(t, name+": values, head 0", g0, a0)
				checkBits(t, name+": values, head 1", g1, a1)
			}
		}
	}
}
