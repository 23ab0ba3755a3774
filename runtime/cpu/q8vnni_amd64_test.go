//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The Q8_0 4×4 tile sums in its own order (sixteen lanes, fused scaling):
// each of its results is held to the portable dot within float32 rounding
// of the terms' magnitudes, at odd block counts, a single block, rows of
// very different scales and an activation row offset. Weight rows of
// full-range bytes (−128 and 127 included) test the sign flip.
func TestDotQ8_0x4x4MatchesPortable(t *testing.T) {
	q44 := weightTypeOf(dtype.Q8_0).q44
	needCPU(t, q44 != nil, "4×4 Q8_0 tile (AVX-512 VNNI)")
	r := rand.New(rand.NewPCG(29, 30))
	wt := weightTypeOf(dtype.Q8_0)
	for _, k := range []int{32, 64, 96, 1024, 4096 + 32} {
		const m = 9
		x := randFloats(r, m*k, 1)
		for i := range k {
			x[2*k+i] *= 1e-6
			x[5*k+i] *= 1e4
		}
		q := &q8act{}
		q.need(m * k)
		q.quantize(wt.aq, x, m, k)
		rb := wt.rowBytes(k)
		w, _ := weights(t, r, dtype.Q8_0, 4, k)
		for b := range 4 * k / qk { // the extremes of the bytes
			blk := w[b*34+2 : b*34+34]
			blk[0], blk[1] = 0x80, 0x7f
		}
		for _, i0 := range []int{0, 4, 5} {
			var tile [16]float32
			q44(w, rb, q, i0, k, &tile)
			for j := range 4 {
				qs, d, s := q.row(wt.aq, i0+j, k)
				for c := range 4 {
					row := w[c*rb : c*rb+rb]
					want := dotQ8_0Go(row, qs, d, s)
					var mag float64
					for i := range k {
						blk := row[i/qk*34:]
						mag += math.Abs(float64(int8(blk[2+i%qk])) * float64(f16le(blk, 0)) * float64(qs[i]) * float64(d[i/qk]))
					}
					if got := tile[4*j+c]; math.Abs(float64(got-want)) > 1e-6*mag || math.IsNaN(float64(got)) {
						t.Errorf("k=%d activation row %d, weight row %d: tile %g, portable %g (terms' magnitude %g)", k, i0+j, c, got, want, mag)
					}
				}
			}
		}
	}
}

// The decode GEMV's four-row Q8_0 dot is the 4×4 tile's row, bit for bit:
// a verify pass or a prefill computes each row as the decode step does,
// so speculation and batching cannot move a greedy token. Odd block
// counts (the AVX2 tail), a single block, extreme weight bytes and rows of
// very different scales; each activation row both as the tile's row j and
// alone.
func TestDotQ8_0x4VNNIIsTheTilesRow(t *testing.T) {
	wt := weightTypeOf(dtype.Q8_0)
	needCPU(t, wt.q44 != nil, "4×4 Q8_0 tile (AVX-512 VNNI)")
	r := rand.New(rand.NewPCG(31, 32))
	for _, k := range []int{32, 64, 96, 1024, 3072 + 32} {
		const m = 8
		x := randFloats(r, m*k, 1)
		for i := range k {
			x[2*k+i] *= 1e-6
			x[5*k+i] *= 1e4
		}
		q := &q8act{}
		q.need(m * k)
		q.quantize(wt.aq, x, m, k)
		rb := wt.rowBytes(k)
		w, _ := weights(t, r, dtype.Q8_0, 4, k)
		for b := range 4 * k / qk {
			blk := w[b*34+2 : b*34+34]
			blk[0], blk[1] = 0x80, 0x7f
		}
		for i0 := 0; i0 < m; i0 += 4 {
			var tile [16]float32
			wt.q44(w, rb, q, i0, k, &tile)
			for j := range 4 {
				qs, d, s := q.row(wt.aq, i0+j, k)
				var row [4]float32
				wt.q4(w, rb, qs, d, s, &row)
				for c := range 4 {
					if math.Float32bits(row[c]) != math.Float32bits(tile[4*j+c]) {
						t.Errorf("k=%d activation row %d, weight row %d: four-row dot %g, tile %g", k, i0+j, c, row[c], tile[4*j+c])
					}
				}
			}
		}
	}
}
