package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// routeRef is moe_route of one row in float64: the softmax of the logits,
// the k largest probabilities (the lower expert among equals) in
// descending order, and with norm those k divided by their sum.
func routeRef(logits []float64, k int, norm bool) ([]uint32, []float64) {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, v)
	}
	p := make([]float64, len(logits))
	s := 0.0
	for i, v := range logits {
		p[i] = math.Exp(v - m)
		s += p[i]
	}
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
		p[i] /= s
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
	ids, ws := make([]uint32, k), make([]float64, k)
	sum := 0.0
	for j := range k {
		ids[j], ws[j] = uint32(idx[j]), p[idx[j]]
		sum += ws[j]
	}
	if norm {
		for j := range ws {
			ws[j] /= max(sum, moeWeightsMin)
		}
	}
	return ids, ws
}

// Router logits on a grid of 1/16 (exact in F16), so that two experts'
// probabilities are equal or differ by a factor of e^(1/16): float32 and
// float64 choose alike. Rows of a_stride > n_expert; every case with and
// without norm_w, F32 and F16 logits:
//
//   - 60 experts, 4 chosen, 5 rows: one row whose top three are equal (the
//     lower two are chosen, in expert order), one row of equal logits
//     (experts 0..3, each 1/60);
//   - k = n_expert (6 of 6: every expert, in descending order);
//   - one expert of one; the limits, 32 of 1024.
//
// ids must be the reference's exactly; weights within n_expert float32
// roundings of it. A row whose logits hold a NaN chooses nothing (ids
// 0xFFFFFFFF, weights 0), and the row past n_rows is left alone.
func TestMoERouteMatchesTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, tc := range []struct {
		name           string
		ne, k, rows, a int
	}{
		{"60 experts, 4 chosen", 60, 4, 5, 64},
		{"every expert chosen", 6, 6, 3, 7},
		{"one expert", 1, 1, 2, 1},
		{"32 of 1024", 1024, 32, 3, 1030},
	} {
		for _, at := range acts() {
			for _, norm := range []bool{false, true} {
				name := kernels.OpName(kernels.OpMoERoute, 0, at)
				t.Run(fmt.Sprintf("%s, %s, norm_w %v", tc.name, name, norm), func(t *testing.T) {
					a := actOf(at)
					src := make([]float32, tc.rows*tc.a)
					for i := range src {
						src[i] = float32(r.IntN(128)-64) / 16
					}
					if tc.ne == 60 {
						row1 := src[1*tc.a:][:tc.ne] // three equal maxima: 7, 20 and 41
						for _, i := range []int{7, 20, 41} {
							row1[i] = 5
						}
						clear(src[2*tc.a:][:tc.ne]) // every logit equal
					}
					nanRow := tc.rows - 1
					if tc.rows > 2 {
						src[nanRow*tc.a+tc.ne/2] = float32(math.NaN())
					} else {
						nanRow = -1
					}
					lb := actBytes(a, src)
					logits := actFloats(a, lb, len(src))
					ids, ws := Alloc(4*(tc.rows+1)*tc.k), Alloc(4*(tc.rows+1)*tc.k)
					for i := range u32s(ids) {
						u32s(ids)[i], f32s(ws)[i] = 0xDEADBEEF, float32(math.NaN())
					}
					h := newHarness(t, 3)
					e := h.bind(name, kernels.MoERouteParams{NExpert: uint32(tc.ne), K: uint32(tc.k), NRows: uint32(tc.rows), AStride: uint32(tc.a)},
						consts{"norm_w": b2u(norm)}, binds{"logits": lb, "ids": ids, "weights": ws})
					e.Run()
					for row := range tc.rows {
						gi, gw := u32s(ids)[row*tc.k:][:tc.k], f32s(ws)[row*tc.k:][:tc.k]
						if row == nanRow {
							for j := range tc.k {
								if gi[j] != noExpert || gw[j] != 0 {
									t.Fatalf("row %d (a NaN logit): slot %d is expert %d, weight %g; want none, 0", row, j, gi[j], gw[j])
								}
							}
							continue
						}
						wi, ww := routeRef(logits[row*tc.a:][:tc.ne], tc.k, norm)
						if !slices.Equal(gi, wi) {
							t.Fatalf("row %d: experts %v, want %v", row, gi, wi)
						}
						for j := range tc.k {
							if tol := 1e-9 + ww[j]*float64(tc.ne+4)*0x1p-24; !near(float64(gw[j]), ww[j], tol) {
								t.Fatalf("row %d slot %d (expert %d): weight %g, want %g (tolerance %.3g)", row, j, gi[j], gw[j], ww[j], tol)
							}
						}
					}
					if tc.ne == 60 {
						if got := u32s(ids)[1*tc.k:][:2]; !slices.Equal(got, []uint32{7, 20}) {
							t.Errorf("equal maxima: experts %v first, want the lower two [7 20]", got)
						}
						if got := u32s(ids)[2*tc.k:][:tc.k]; !slices.Equal(got, []uint32{0, 1, 2, 3}) {
							t.Errorf("equal logits: experts %v, want [0 1 2 3]", got)
						}
					}
					for i, v := range u32s(ids)[tc.rows*tc.k:] {
						if v != 0xDEADBEEF || !math.IsNaN(float64(f32s(ws)[tc.rows*tc.k+i])) {
							t.Fatalf("slot %d past n_rows written", i)
						}
					}
					if n := testing.AllocsPerRun(20, e.Run); n != 0 {
						t.Fatalf("a run allocates %v times", n)
					}
				})
			}
		}
	}
}

// moeSumRef is moe_sum in the order the kernel states: slot 0's product,
// then each later slot's product rounded to float32 and added, in slot
// order.
func moeSumRef(y []float32, w []float32, n, ns, ys int, row int) []float32 {
	out := make([]float32, n)
	for j := range ns {
		for i := range out {
			p := w[row*ns+j] * y[row*ys+j*n+i]
			if j == 0 {
				out[i] = p
			} else {
				out[i] += p
			}
		}
	}
	return out
}

// moe_sum is the straightforward loop, bit for bit, over rows of
// y_stride > n_slots·n into rows of out_stride > n; the gaps between rows
// and the row past n_rows are left alone.
func TestMoESumIsTheWeightedSumInSlotOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	const n, ns, rows = 300, 3, 5
	const ys, os = ns*n + 5, n + 3
	for _, at := range acts() {
		name := kernels.OpName(kernels.OpMoESum, 0, at)
		t.Run(name, func(t *testing.T) {
			a := actOf(at)
			yb := actBytes(a, randFloats(r, rows*ys, 2))
			y := make([]float32, rows*ys)
			for i, v := range actFloats(a, yb, len(y)) {
				y[i] = float32(v)
			}
			w := randFloats(r, rows*ns, 0.5)
			out := actBytes(a, slices.Repeat([]float32{float32(math.NaN())}, (rows+1)*os))
			h := newHarness(t, 3)
			e := h.bind(name, kernels.MoESumParams{N: n, NSlots: ns, NRows: rows, YStride: ys, OutStride: os}, nil,
				binds{"y": yb, "weights": f32bytes(w), "out": out})
			e.Run()
			got := actFloats(a, out, (rows+1)*os)
			for row := range rows {
				want := actFloats(a, actBytes(a, moeSumRef(y, w, n, ns, ys, row)), n)
				for i := range n {
					if g := got[row*os+i]; g != want[i] {
						t.Fatalf("row %d [%d] = %g, want %g", row, i, g, want[i])
					}
				}
				for i := n; i < os; i++ {
					if !math.IsNaN(got[row*os+i]) {
						t.Fatalf("row %d: the gap at %d written", row, i)
					}
				}
			}
			for i, v := range got[rows*os:] {
				if !math.IsNaN(v) {
					t.Fatalf("out past n_rows written at %d", i)
				}
			}
			if n := testing.AllocsPerRun(20, e.Run); n != 0 {
				t.Fatalf("a run allocates %v times", n)
			}
		})
	}
}

// gemv_id against the plain GEMV: for every weight type, F32 and F16
// activations, one x a row (x_slot 0, the gate and up projections) and
// one a slot (x_slot = K, the down projection), a decode row and a
// prefill batch of 37, random ids over 6 experts (repeated across slots
// and rows) and three ids past them: each (row, slot)'s y is, bit for bit,
// what gemv_<dtype> writes for the chosen expert's matrix and that x; an
// id past the experts gives zeros; the gaps of y_stride are left alone.
func TestGEMVIDIsThePlainGEMVOfTheChosenExpert(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	const ne, ns, n = 6, 4, 42 // n: ten quads and a remainder
	for _, k := range kernels.All() {
		if k.Op != kernels.OpGEMVID {
			continue
		}
		plain := kernels.GEMVName(k.DType, 0, k.Act)
		for _, perSlot := range []bool{false, true} {
			for _, rows := range []int{1, 37} {
				t.Run(fmt.Sprintf("%s per-slot x %v, %d rows", k.Name, perSlot, rows), func(t *testing.T) {
					a, kk := actOf(k.Act), kFor(k.DType)
					w, _ := weights(t, r, k.DType, ne*n, kk)
					mb := len(w) / ne
					xs, xsl := kk+5, 0
					if perSlot {
						xs, xsl = ns*kk+8, kk
					}
					ys := ns*n + 3
					xb := actBytes(a, randFloats(r, rows*xs, 1))
					ids := Alloc(4 * rows * ns)
					for i := range u32s(ids) {
						u32s(ids)[i] = uint32(r.IntN(ne))
					}
					u32s(ids)[0] = u32s(ids)[1] // a repeated expert in one row
					bad := map[int]bool{}
					for i, id := range []uint32{ne, ne + 7, 0xFFFFFFFF}[:min(3, rows)] {
						p := i*5 + 3
						u32s(ids)[p], bad[p] = id, true
					}
					yb := actBytes(a, slices.Repeat([]float32{float32(math.NaN())}, rows*ys))
					h := newHarness(t, 4)
					e := h.bind(k.Name, kernels.GEMVIDParams{N: n, K: uint32(kk), NSlots: ns, NRows: uint32(rows), NExpert: ne,
						XStride: uint32(xs), XSlot: uint32(xsl), YStride: uint32(ys)}, nil, binds{"w": w, "x": xb, "ids": ids, "y": yb})
					e.Run()

					// The reference: the plain GEMV over a copy of each
					// expert's matrix, fed each pair's x in turn.
					sz := a.size()
					rx, ry := Alloc(kk*sz), Alloc(n*sz)
					ref := make([]*Exec, ne)
					for x := range ne {
						we := Alloc(mb)
						copy(we, w[x*mb:])
						ref[x] = h.bind(plain, kernels.GEMVParams{N: n, K: uint32(kk)}, nil, binds{"w": we, "x": rx, "y": ry})
					}
					for i, id := range u32s(ids) {
						row, j := i/ns, i%ns
						got := yb[(row*ys+j*n)*sz:][:n*sz]
						if bad[i] {
							if slices.ContainsFunc(got, func(b byte) bool { return b != 0 }) {
								t.Fatalf("row %d slot %d (expert %d, past the %d): y is not zeros", row, j, id, ne)
							}
							continue
						}
						copy(rx, xb[(row*xs+j*xsl)*sz:][:kk*sz])
						ref[id].Run()
						if !slices.Equal(got, ry) {
							g, w := actFloats(a, got, n), actFloats(a, ry, n)
							for o := range n {
								if g[o] != w[o] && !(math.IsNaN(g[o]) && math.IsNaN(w[o])) {
									t.Fatalf("row %d slot %d (expert %d), output %d: %g, the plain GEMV's %g", row, j, id, o, g[o], w[o])
								}
							}
							t.Fatalf("row %d slot %d (expert %d): bits differ from the plain GEMV's", row, j, id)
						}
					}
					all := actFloats(a, yb, rows*ys)
					for row := range rows {
						for i := ns * n; i < ys && row*ys+i < len(all); i++ {
							if !math.IsNaN(all[row*ys+i]) {
								t.Fatalf("row %d: the gap at %d written", row, i)
							}
						}
					}
					if n := testing.AllocsPerRun(10, e.Run); n != 0 {
						t.Fatalf("a run allocates %v times", n)
					}
				})
			}
		}
	}
}

// A command whose n_rows patch goes below its compiled rows runs on the
// rows it names: gemv_id with 37 rows bound, then run for 5, writes the
// first 5 rows as the 5-row command does and leaves the rest.
func TestGEMVIDRunsThePatchedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	const ne, ns, n, kk, rows = 8, 2, 64, 256, 37
	dt := dtype.Q4_K
	w, _ := weights(t, r, dt, ne*n, kk)
	xb := actBytes(actF32, randFloats(r, rows*kk, 1))
	ids := Alloc(4 * rows * ns)
	for i := range u32s(ids) {
		u32s(ids)[i] = uint32(r.IntN(ne))
	}
	name := kernels.GEMVIDName(dt, dtype.F32)
	p := kernels.GEMVIDParams{N: n, K: kk, NSlots: ns, NRows: rows, NExpert: ne, XStride: kk, YStride: ns * n}
	h := newHarness(t, 4)
	all := Alloc(4 * rows * ns * n)
	h.run(name, p, nil, binds{"w": w, "x": xb, "ids": ids, "y": all})
	y := actBytes(actF32, slices.Repeat([]float32{float32(math.NaN())}, rows*ns*n))
	e := h.bind(name, p, nil, binds{"w": w, "x": xb, "ids": ids, "y": y})
	e.SetParam(12, 4, 5) // n_rows
	e.Run()
	if !slices.Equal(y[:4*5*ns*n], all[:4*5*ns*n]) {
		t.Fatal("the first 5 rows differ from the 37-row run's")
	}
	for i, v := range f32s(y)[5*ns*n:] {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("element %d past the 5 rows written", i)
		}
	}
}
