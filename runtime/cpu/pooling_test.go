package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/kernels"
)

// poolRef is the pooled, optionally normalized vector of rows [start, end)
// of x (rows of as, dim used) in float64: nil for a range that pools
// nothing (empty, or past the rows x holds).
func poolRef(x []float64, as, dim, start, end, mode int, normalize bool) []float64 {
	if end <= start || (end-1)*as+dim > len(x) {
		return nil
	}
	v := make([]float64, dim)
	switch mode {
	case kernels.PoolMean:
		for r := start; r < end; r++ {
			for i := range v {
				v[i] += x[r*as+i]
			}
		}
		for i := range v {
			v[i] /= float64(end - start)
		}
	case kernels.PoolCLS:
		copy(v, x[start*as:][:dim])
	case kernels.PoolLast:
		copy(v, x[(end-1)*as:][:dim])
	}
	if normalize {
		s := 0.0
		for _, e := range v {
			s += e * e
		}
		if s > 0 {
			for i := range v {
				v[i] /= math.Sqrt(s)
			}
		}
	}
	return v
}

// Inputs of 1, 3 and 17 rows packed back to back (a_stride > dim), then a
// zero row, an empty range and a range past x: every mode, normalized or
// not, against the float64 reference. CLS and last without normalization
// are the stored rows exactly; the mean and the norms are float32 sums of
// up to 17 terms (F16 rows are exact in float32), held within 1e-5 of the
// output's largest element. A range that pools nothing writes zeros over
// what was there, the zero row stays zero when normalized, and the row
// past n_rows is left alone.
func TestPoolingMatchesTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const dim, as = 50, 53
	lengths := []int{1, 3, 17}
	type rng struct{ start, end int }
	var ranges []rng
	rows := 0
	for _, n := range lengths {
		ranges = append(ranges, rng{rows, rows + n})
		rows += n
	}
	zero := rows // a row of zeros, pooled alone
	rows++
	ranges = append(ranges, rng{zero, zero + 1}, rng{5, 5}, rng{rows - 1, rows + 1})
	nOut := len(ranges)
	names := []string{"input of 1 row", "input of 3 rows", "input of 17 rows", "the zero row", "an empty range", "a range past x"}
	for _, at := range acts() {
		a := actOf(at)
		src := randFloats(r, rows*as, 1)
		clear(src[zero*as:][:as])
		xb := actBytes(a, src)
		x := actFloats(a, xb, rows*as)
		rb := Alloc(8 * nOut)
		for j, g := range ranges {
			u32s(rb)[2*j], u32s(rb)[2*j+1] = uint32(g.start), uint32(g.end)
		}
		for _, mode := range []int{kernels.PoolMean, kernels.PoolCLS, kernels.PoolLast} {
			for _, normalize := range []bool{false, true} {
				name := kernels.OpName(kernels.OpPool, 0, at)
				out := Alloc(4 * (nOut + 1) * dim) // one row more than n_rows
				for i := range f32s(out) {
					f32s(out)[i] = float32(math.NaN())
				}
				c := consts{"pooling": uint32(mode), "l2_normalize": 0}
				if normalize {
					c["l2_normalize"] = 1
				}
				h := newHarness(t, 2)
				e := h.bind(name, kernels.PoolParams{Dim: dim, NRows: uint32(nOut), AStride: as}, c, binds{"x": xb, "ranges": rb, "out": out})
				e.Run()
				got := f32s(out)
				for j, g := range ranges {
					want := poolRef(x, as, dim, g.start, g.end, mode, normalize)
					row := got[j*dim:][:dim]
					scale := 0.0
					for _, v := range want {
						scale = max(scale, math.Abs(v))
					}
					tol := 1e-5 * scale
					if mode != kernels.PoolMean && !normalize {
						tol = 0 // the row itself, widened
					}
					for i, v := range row {
						w := 0.0
						if want != nil {
							w = want[i]
						}
						if !near(float64(v), w, tol) {
							t.Fatalf("%s, pooling %d, normalize %v, %s: [%d] = %g, want %g", name, mode, normalize, names[j], i, v, w)
						}
					}
				}
				for i, v := range got[nOut*dim:] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("%s: out past n_rows written at %d: %g", name, i, v)
					}
				}
				if n := testing.AllocsPerRun(20, e.Run); n != 0 {
					t.Fatalf("%s: a run allocates %v times", name, n)
				}
			}
		}
	}
}

// A pipeline without a pooling mode the kernel knows is refused when it
// is bound, not run as some mode.
func TestPoolingRefusesAnUnknownMode(t *testing.T) {
	h := newHarness(t, 1)
	for _, c := range []consts{{"l2_normalize": 1}, {"pooling": 4}} {
		p, cmd := h.command("pool_f32", kernels.PoolParams{Dim: 4, NRows: 1, AStride: 4}, c,
			binds{"x": Alloc(16), "ranges": Alloc(8), "out": Alloc(16)})
		if _, err := h.exec(p, cmd); err == nil {
			t.Errorf("constants %v: bound", c)
		}
	}
}
