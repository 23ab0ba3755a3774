package cpu

import (
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// gemvID is gemv_id_*: for row r and slot j, with e = ids[r·n_slots + j],
// y[r·y_stride + j·n + i] = W_e[i]·x_{r,j} (i < n), W being n_expert
// matrices of n rows back to back; an e at or past n_expert gives zeros.
//
// Each output is what the plain GEMV (gemv.go) computes for W_e and the
// same x, bit for bit: x_{r,j} is widened to float32 and, for quantized
// weights, quantized to the weight type's vec_dot_type (rounded to the
// weight's type for the half ones), and the rows meet it through the
// same dot products, four rows at a time from row 0 of the matrix where
// the CPU has the four-row dot (q4, f4) and one at a time past the last
// whole four, as the GEMV's chunks of whole quads do.
//
// A run prepares the distinct x vectors once (one a row when x_slot is 0,
// the gate and up projections; one a slot otherwise, the down projection)
// across the pool, then groups the (row, slot) pairs by expert, so that
// in prefill each expert's matrix is read once per run: the pool's items
// are (expert chosen, chunk of its rows), and an item meets every pair
// that chose its expert while the chunk is in cache. The grouping lives
// in slices sized at bind (for the command's most rows); a run allocates
// nothing.
type gemvID struct {
	p       kernels.GEMVIDParams
	wt      *weightType
	act     act
	maxRows int

	// The run's pairs (r·n_slots + j) by expert: start[e] .. start[e+1]
	// index order; pos is the fill cursor; experts lists the experts some
	// pair chose, in expert order.
	start, pos []int32
	order      []int32
	experts    []int32

	// per run, for do
	e     *Exec
	w, yb []byte
	x     []float32
	q     *q8act
	rb    int
	xper  int // x vectors a row: 1 when x_slot is 0, else n_slots
	chunk int // matrix rows per item: whole quads
	nc    int // items per expert
	in    gemvIDIn
}

func bindGEMVID(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	g := &gemvID{wt: weightTypeOf(k.DType), act: actOf(k.Act)}
	g.in.g = g
	return g, unsafe.Pointer(&g.p)
}

func (g *gemvID) prepare(e *Exec) error {
	if g.wt == nil {
		return fmt.Errorf("no weight type %v: %w", e.Kernel.DType, ErrUnsupported)
	}
	n, k, ns, ne, rows := int(g.p.N), int(g.p.K), int(g.p.NSlots), int(g.p.NExpert), int(g.p.NRows)
	if n < 1 || k < 1 || ns < 1 || ne < 1 {
		return fmt.Errorf("n %d, k %d, n_slots %d, n_expert %d: %w", n, k, ns, ne, ErrUnsupported)
	}
	if k%g.wt.bs != 0 { // a weight block is whole activation blocks
		return fmt.Errorf("k %d is not whole blocks of %v: %w", k, g.wt.dt, ErrUnsupported)
	}
	if w := ne * n * g.wt.rowBytes(k); len(e.buf(0)) < w {
		return fmt.Errorf("W holds %d bytes, %d experts of %d×%d %v need %d: %w", len(e.buf(0)), ne, n, k, g.wt.dt, w, ErrUnsupported)
	}
	if rows > 0 {
		sz := g.act.size()
		xEnd := ((rows-1)*int(g.p.XStride) + (ns-1)*int(g.p.XSlot) + k) * sz
		yEnd := ((rows-1)*int(g.p.YStride) + ns*n) * sz
		if len(e.buf(1)) < xEnd || len(e.buf(2)) < 4*rows*ns || len(e.buf(3)) < yEnd {
			return fmt.Errorf("x, ids or y hold %d, %d, %d bytes for %d rows of %d slots: %w",
				len(e.buf(1)), len(e.buf(2)), len(e.buf(3)), rows, ns, ErrUnsupported)
		}
	}
	g.maxRows = rows
	xper := 1
	if g.p.XSlot != 0 {
		xper = ns
	}
	s := &e.b.scratch
	s.f = grow(s.f, rows*xper*k)
	if g.wt.q != nil {
		s.q8.need(rows * xper * k)
	}
	g.start, g.pos = make([]int32, ne+1), make([]int32, ne)
	g.order, g.experts = make([]int32, rows*ns), make([]int32, 0, min(ne, rows*ns))
	return nil
}

func (g *gemvID) run(e *Exec) {
	rows, ns, n, k := int(g.p.NRows), int(g.p.NSlots), int(g.p.N), int(g.p.K)
	if rows > g.maxRows {
		panic(fmt.Sprintf("cpu: %s: batch %d above the %d rows bound", e.Label, rows, g.maxRows))
	}
	s := &e.b.scratch
	g.e, g.w, g.yb, g.rb = e, e.buf(0), e.buf(3), g.wt.rowBytes(k)
	g.xper = 1
	if g.p.XSlot != 0 {
		g.xper = ns
	}
	nx := rows * g.xper
	g.x, g.q = s.f[:nx*k], nil
	if g.wt.q != nil {
		g.q = &s.q8
	}
	e.b.pool.run(&g.in, nx, e.b.pool.split(nx, 1), 5*k)

	// The pairs by expert (a counting sort); an id past the experts gives
	// its slot zeros here.
	ne, ys := int(g.p.NExpert), int(g.p.YStride)
	ids := u32s(e.buf(2))[:rows*ns]
	clear(g.start)
	for i, id := range ids {
		if int64(id) >= int64(ne) {
			off := i/ns*ys + i%ns*n
			if g.act == actF16 {
				clear(u16s(g.yb)[off : off+n])
			} else {
				clear(f32s(g.yb)[off : off+n])
			}
			continue
		}
		g.start[id+1]++
	}
	g.experts = g.experts[:0]
	for x := range ne {
		if g.start[x+1] > 0 {
			g.experts = append(g.experts, int32(x))
		}
		g.start[x+1] += g.start[x]
		g.pos[x] = g.start[x]
	}
	for i, id := range ids {
		if int64(id) < int64(ne) {
			g.order[g.pos[id]] = int32(i)
			g.pos[id]++
		}
	}

	// Items: (expert, chunk of whole quads of its rows), a few per worker
	// over all the chosen experts' rows, at least ~16 KiB of weights each.
	na := len(g.experts)
	if na == 0 {
		return
	}
	g.chunk = min(e.b.pool.gemvGrain(na*n, g.rb, 4), (n+3)&^3)
	g.nc = (n + g.chunk - 1) / g.chunk
	pairs := max(1, int(g.start[ne])/na)
	e.b.pool.run(g, na*g.nc, 1, g.chunk*g.rb*pairs)
}

func (g *gemvID) do(wk, i0, i1 int) {
	n, ns, ys, k := int(g.p.N), int(g.p.NSlots), int(g.p.YStride), int(g.p.K)
	mb := n * g.rb
	for it := i0; it < i1; it++ {
		x := int(g.experts[it/g.nc])
		r0 := it % g.nc * g.chunk
		r1 := min(n, r0+g.chunk)
		we := g.w[x*mb : x*mb+mb]
		for _, pi := range g.order[g.start[x]:g.start[x+1]] {
			r, j := int(pi)/ns, int(pi)%ns
			xi := r * g.xper
			if g.xper > 1 {
				xi += j
			}
			g.rows(wk, we, xi, k, r*ys+j*n, r0, r1)
		}
	}
}

// rows computes rows [i0, i1) of one expert's matrix we against x vector
// xi into y from element yoff, as gemv.do computes a chunk (i0 a multiple
// of 4).
func (g *gemvID) rows(wk int, we []byte, xi, k, yoff, i0, i1 int) {
	rb := g.rb
	x := g.x[xi*k : xi*k+k]
	var qs []int8
	var d, s []float32
	if g.q != nil {
		qs, d, s = g.q.row(g.wt.aq, xi, k)
	}
	r := i0
	if q4, f4 := g.wt.q4, g.wt.f4; q4 != nil && g.q != nil || f4 != nil {
		v := &g.e.b.scratch.workers[wk].v4
		for ; r+4 <= i1; r += 4 {
			w := we[r*rb : r*rb+4*rb]
			if q4 != nil {
				q4(w, rb, qs, d, s, v)
			} else {
				f4(w, rb, x, v)
			}
			for c := range v {
				g.act.set(g.yb, yoff+r+c, v[c])
			}
		}
	}
	for ; r < i1; r++ {
		row := we[r*rb : r*rb+rb]
		var v float32
		if g.q != nil {
			v = g.wt.q(row, qs, d, s)
		} else {
			v = g.wt.f(row, x)
		}
		g.act.set(g.yb, yoff+r, v)
	}
}

// gemvIDIn prepares x vectors [i0, i1): row r's slot j (or its one x)
// widened to float32, then quantized for quantized weights or rounded for
// half ones, as the GEMV prepares its x.
type gemvIDIn struct{ g *gemvID }

func (t *gemvIDIn) do(_, i0, i1 int) {
	g := t.g
	k, xs, xsl := int(g.p.K), int(g.p.XStride), int(g.p.XSlot)
	xb := g.e.buf(1)
	for i := i0; i < i1; i++ {
		r, j := i/g.xper, i%g.xper
		x := g.x[i*k : i*k+k]
		g.act.load(x, xb, r*xs+j*xsl, k)
		if g.q != nil {
			g.q.quantizeRow(g.wt.aq, x, i, k)
		} else {
			g.wt.roundAct(x)
		}
	}
}
