package cpu

import (
	"fmt"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// gemv is every gemv_* kernel: y = W·x (+ bias), or W·(silu(gate)·up) for
// the _silu forms. The large-K and wide variants differ from the standard
// one only in their GPU geometry; on the CPU they are the same code.
//
// The caller widens x to float32 once (and applies the SiLU gate), then,
// for quantized weights, quantizes it to 8 bits once; the pool then splits
// the rows of W in chunks, each row one dot product. The _x16 forms read W
// in an x16 layout (q4_0x16, q8_0x16, q4_kx16, q6_kx16; x16.go): the activation is also
// packed into the x16 records, and the pool splits groups of 16 rows, each
// one pass of the layout's kernel.
type gemv struct {
	p    kernels.GEMVParams
	wt   *weightType
	act  act
	silu bool
	bias bool
	x16  *x16Layout // the _x16 forms' layout
	y    int        // slot of y (3 for _silu, 2 otherwise)
	// planar: W in the planar layout (the _planar forms, GPU plans'):
	// each row is put back in the file's layout before its dot product.
	planar bool
	// glu (the _glu forms): W's rows are gate and up in turn; each row's
	// result, rounded to the activation type, goes to gu (gates, then
	// ups), and y is their SiLU gate, as silu_gate computes it.
	glu bool
	gu  []float32
	// The norm_fold rule's forms (GPU plans'). norm (_norm): x is a _res
	// GEMV's res·norm_w, and each row's product is scaled by the norm's
	// 1/rms of res (sc, computed once a run). res (_res): res += the
	// result (both rounded to the activation type, as residual_rmsnorm
	// adds them), and y = res·norm_w, rounded.
	norm, res bool
	sc        float32
	sub       rowSubset // OutputRows (outputrows.go)
	// binding slots of bias and partials (-1: none)
	bslot, pslot int
	tgRows       int // _res: rows a GPU threadgroup owns (nr·nsg), one partial each

	// per run, for do
	e  *Exec
	x  []float32
	q  *q8act
	w  []byte
	yb []byte
	bb []float32
	rb int
}

func bindGEMV(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	g := &gemv{wt: weightTypeOf(k.DType), act: actOf(k.Act), silu: k.Variant&kernels.SiLU != 0, bias: c.b("has_bias"),
		x16: x16For(k), planar: k.Variant&kernels.Planar != 0, glu: k.Variant&kernels.GLU != 0, norm: k.Variant&kernels.Norm != 0, res: k.Variant&kernels.Residual != 0}
	g.y, g.bslot, g.pslot = -1, -1, -1
	g.tgRows = int(c.u("nr", 1) * c.u("nsg", 1))
	for _, b := range k.Bindings { // y, bias and partials by name: the forms differ in what comes before
		switch b.Name {
		case "y":
			g.y = b.Slot
		case "bias":
			g.bslot = b.Slot
		case "partials":
			g.pslot = b.Slot
		}
	}
	return g, unsafe.Pointer(&g.p)
}

func (g *gemv) prepare(e *Exec) error {
	if g.wt == nil {
		return fmt.Errorf("no weight type %v: %w", e.Kernel.DType, ErrUnsupported)
	}
	n, k := int(g.p.N), int(g.p.K)
	if k%g.wt.bs != 0 { // a weight block is whole activation blocks
		return fmt.Errorf("k %d is not whole blocks of %v: %w", k, g.wt.dt, ErrUnsupported)
	}
	if len(e.buf(0)) < n*g.wt.rowBytes(k) {
		return fmt.Errorf("W holds %d bytes, %d×%d %v need %d: %w", len(e.buf(0)), n, k, g.wt.dt, n*g.wt.rowBytes(k), ErrUnsupported)
	}
	ny := n
	if g.glu {
		if n%2 != 0 {
			return fmt.Errorf("a gate|up GEMV of %d rows: not pairs: %w", n, ErrUnsupported)
		}
		ny = n / 2
		if len(g.gu) < n {
			g.gu = make([]float32, n)
		}
	}
	if len(e.buf(g.y)) < ny*g.act.size() {
		return fmt.Errorf("y holds %d bytes, %d rows need %d: %w", len(e.buf(g.y)), ny, ny*g.act.size(), ErrUnsupported)
	}
	if err := checkX16(e.Kernel, g.x16, g.act, n); err != nil {
		return err
	}
	if parts := int(g.p.Parts); (g.norm || g.res) && len(e.buf(g.pslot)) < 4*parts {
		return fmt.Errorf("partials hold %d bytes, %d need %d: %w", len(e.buf(g.pslot)), parts, 4*parts, ErrUnsupported)
	}
	if g.res && (len(e.buf(2)) < n*g.act.size() || len(e.buf(3)) < 4*n || g.tgRows <= 0 || int(g.p.Parts) < (n+g.tgRows-1)/g.tgRows) {
		return fmt.Errorf("res holds %d bytes, norm_w %d and partials %d, %d rows of %d a threadgroup need %d, %d and %d: %w",
			len(e.buf(2)), len(e.buf(3)), g.p.Parts, n, g.tgRows, n*g.act.size(), 4*n, (n+g.tgRows-1)/max(g.tgRows, 1), ErrUnsupported)
	}
	if g.x16 != nil {
		e.b.scratch.x16 = growBytes(e.b.scratch.x16, g.x16.recs(1, k))
	}
	if g.planar {
		if kernels.PlanarRecipe(g.wt.dt) == "" || g.wt.q == nil {
			return fmt.Errorf("a planar kernel of %v: %w", g.wt.dt, ErrUnsupported)
		}
		for i := range e.b.scratch.workers {
			ws := &e.b.scratch.workers[i]
			ws.row = growBytes(ws.row, 4*g.wt.rowBytes(k))
		}
	}
	s := &e.b.scratch
	s.f = grow(s.f, 2*k)
	if g.wt.q != nil {
		s.q8.need(k)
	}
	return nil
}

// x16For is the layout an _x16 kernel reads (x16.go), nil for another
// kernel or a weight type without one (checkX16 refuses that).
func x16For(k *kernels.Kernel) *x16Layout {
	if k.Variant&kernels.X16 == 0 {
		return nil
	}
	return x16Of(k.DType)
}

// checkX16 holds an _x16 kernel's command to what its layout l allows:
// a weight type with an x16 layout, whole groups of 16 rows, F32
// activations. Other kernels pass.
func checkX16(k *kernels.Kernel, l *x16Layout, a act, n int) error {
	if k.Variant&kernels.X16 == 0 {
		return nil
	}
	if l == nil || a != actF32 {
		return fmt.Errorf("an x16 kernel of %v with %d-byte activations: %w", k.DType, a.size(), ErrUnsupported)
	}
	if n%x16Rows != 0 {
		return fmt.Errorf("n %d is not whole groups of %d rows: %w", n, x16Rows, ErrUnsupported)
	}
	return nil
}

func growBytes(s []byte, n int) []byte {
	if len(s) >= n {
		return s
	}
	return make([]byte, n)
}

func (g *gemv) run(e *Exec) {
	g.bindRun(e, g.input(e))
	n, per := int(g.p.N), itemRows(g.x16)
	ib := per * g.rb
	t, items := g.sub.task(g, n/per) // restricted (OutputRows): the listed rows' items
	e.b.pool.run(t, items, e.b.pool.gemvGrain(items, ib, itemAlign(g.x16)), ib)
	if g.sub.on {
		g.sub.fill(g.act, g.yb, 1, n, n, per)
	}
	if g.glu { // silu_gate's arithmetic, on the whole row as it does (a _glu form is neither x16 nor restricted)
		gate, up := g.gu[:n/2], g.gu[n/2:n]
		siluMul(gate, up)
		g.act.store(g.yb, 0, gate)
	}
	if g.res { // each GPU threadgroup's Σres² of its rows, as stored
		rb, parts := e.buf(2), f32s(e.buf(g.pslot))
		for t := range (n + g.tgRows - 1) / g.tgRows {
			var ss float32
			for r := t * g.tgRows; r < min(n, (t+1)*g.tgRows); r++ {
				v := g.act.get(rb, r)
				ss += v * v
			}
			parts[t] = ss
		}
	}
}

func (g *gemv) do(wk, i0, i1 int) {
	k, rb := int(g.p.K), g.rb
	if g.x16 != nil { // items are groups of 16 rows
		gb := x16Rows * rb
		y := f32s(g.yb)
		g.x16.kernel(g.w[i0*gb:i1*gb], k/g.x16.bk, i1-i0, g.e.b.scratch.x16, 1, y[i0*x16Rows:], 0)
		if g.bias {
			addBias(y[i0*x16Rows:i1*x16Rows], g.bb[i0*x16Rows:i1*x16Rows])
		}
		return
	}
	r := i0
	if g.planar { // rows put back in the file's layout, then the same dot products as below
		qs, d, s := g.q.row(g.wt.aq, 0, k)
		ws := &g.e.b.scratch.workers[wk]
		rows := ws.row[:4*rb]
		for ; r < i1; r += 4 {
			m := min(4, i1-r)
			for j := range m {
				_ = kernels.PlanarRow(g.wt.dt, rows[j*rb:(j+1)*rb], g.w, int(g.p.N), r+j, k) // prepare checked the type and sizes
			}
			if m == 4 && g.wt.q4 != nil {
				g.wt.q4(rows, rb, qs, d, s, &ws.v4)
				for j := range ws.v4 {
					g.set(r+j, ws.v4[j])
				}
				continue
			}
			for j := range m {
				g.set(r+j, g.wt.q(rows[j*rb:(j+1)*rb], qs, d, s))
			}
		}
		return
	}
	if q4, f4 := g.wt.q4, g.wt.f4; q4 != nil && g.q != nil || f4 != nil {
		var qs []int8
		var d, s []float32
		if q4 != nil {
			qs, d, s = g.q.row(g.wt.aq, 0, k)
		}
		v := &g.e.b.scratch.workers[wk].v4 // a local would escape through q4
		for ; r+4 <= i1; r += 4 {
			w := g.w[r*rb : r*rb+4*rb]
			if q4 != nil {
				q4(w, rb, qs, d, s, v)
			} else {
				f4(w, rb, g.x, v)
			}
			for j := range v {
				g.set(r+j, v[j])
			}
		}
	}
	for ; r < i1; r++ {
		row := g.w[r*rb : r*rb+rb]
		var v float32
		if g.q != nil && g.wt.q != nil {
			qs, d, s := g.q.row(g.wt.aq, 0, k)
			v = g.wt.q(row, qs, d, s)
		} else {
			v = g.wt.f(row, g.x)
		}
		g.set(r, v)
	}
}

// input prepares x in the shared scratch as the dot products read it:
// loaded (for _silu, silu(gate)·up), then quantized to the weights'
// activation blocks (and packed for an x16 layout) or rounded for float
// weights.
func (g *gemv) input(e *Exec) []float32 {
	k := int(g.p.K)
	s := &e.b.scratch
	x := s.f[:k]
	g.act.load(x, e.buf(1), 0, k)
	if g.silu {
		up := s.f[k : 2*k]
		g.act.load(up, e.buf(2), 0, k)
		siluMul(x, up)
	}
	if g.wt.q != nil {
		s.q8.quantize(g.wt.aq, x, 1, k)
		if g.x16 != nil {
			g.x16.pack(s.x16, &s.q8, 0, 1, k)
		}
	} else {
		g.wt.roundAct(x)
	}
	return x
}

// bindRun points the run's fields (what do reads) at e's buffers and the
// prepared x, and computes the _norm form's scale.
func (g *gemv) bindRun(e *Exec, x []float32) {
	k := int(g.p.K)
	if g.norm { // the norm's scale, from the _res GEMV's partial sums
		var ss float64
		for _, v := range f32s(e.buf(g.pslot))[:g.p.Parts] {
			ss += float64(v)
		}
		g.sc = rmsScale(ss, k, g.p.Eps)
	}
	g.e, g.x, g.w, g.yb, g.rb = e, x, e.buf(0), e.buf(g.y), g.wt.rowBytes(k)
	if g.bias {
		g.bb = f32s(e.buf(g.bslot))
	}
	g.q = nil
	if g.wt.q != nil {
		g.q = &e.b.scratch.q8
	}
}

// addBias adds b to y, element by element.
func addBias(y, b []float32) {
	b = b[:len(y)]
	for i := range y {
		y[i] += b[i]
	}
}

// set stores row r's dot product v (scaled by the norm's 1/rms for _norm,
// plus its bias) into y; for _res into res, and res·norm_w into y.
func (g *gemv) set(r int, v float32) {
	if g.norm {
		v *= g.sc
	}
	if g.bias {
		v += g.bb[r]
	}
	if g.glu { // gate row r/2 or up row r/2, as the gate|up GEMV would store it
		if g.act == actF16 {
			v = h2f(f2h(v))
		}
		g.gu[r/2+(r&1)*(int(g.p.N)/2)] = v
		return
	}
	if g.res { // as residual_rmsnorm: the result as stored, plus the residual, stored; then times the norm's weight
		if g.act == actF16 {
			v = h2f(f2h(v))
		}
		rb := g.e.buf(2)
		g.act.set(rb, r, v+g.act.get(rb, r))
		v = g.act.get(rb, r) * f32s(g.e.buf(3))[r]
	}
	g.act.set(g.yb, r, v)
}

// gemm is simd_gemm[_small]_*: Y[M×N] = X[M×K]·Wᵀ (+ bias), the prefill
// GEMM. Quantized weights meet every row of X quantized once (the GEMV's
// numerics, row by row); float weights are widened a row at a time into
// the worker's scratch and meet the widened rows of X; where the CPU has
// the float tile (f44), four weight rows meet four rows of X per pass
// instead, to the same bits. The pool splits the rows of W, so each weight
// row is read once per command and stays in cache while it meets all M
// rows. The _x16 forms read W in an x16 layout: the pool splits
// groups of 16 rows, and each group meets the rows of X sixteen at a time
// (x16.go).
type gemm struct {
	p    kernels.GEMMParams
	wt   *weightType
	act  act
	bias bool
	x16  *x16Layout // the _x16 forms' layout
	// planar (the _planar small GEMM, GPU plans'): W in the planar layout,
	// each row put back in the file's layout before its dot products;
	// pairs (_planar_glu): its rows gate and up in turn, written gate rows
	// then up rows.
	planar, pairs bool
	maxM          int
	sub           rowSubset // OutputRows (outputrows.go)
	in            gemmIn
	// prev is the program's command before this one when it is a GEMM of
	// the same weight type and activation (Bind links them): a GEMM that
	// runs right after it on the same rows of X finds them prepared.
	prev *Exec

	e  *Exec
	w  []byte
	yb []byte
	bb []float32
	x  []float32
	q  *q8act
	rb int
}

func bindGEMM(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	g := &gemm{wt: weightTypeOf(k.DType), act: actOf(k.Act), bias: c.b("has_bias"), x16: x16For(k),
		planar: k.Variant&kernels.Planar != 0, pairs: k.Variant&kernels.GLU != 0}
	return g, unsafe.Pointer(&g.p)
}

func (g *gemm) prepare(e *Exec) error {
	if g.wt == nil {
		return fmt.Errorf("no weight type %v: %w", e.Kernel.DType, ErrUnsupported)
	}
	m, n, k := int(g.p.M), int(g.p.N), int(g.p.K)
	if k%g.wt.bs != 0 { // a weight block is whole activation blocks
		return fmt.Errorf("k %d is not whole blocks of %v: %w", k, g.wt.dt, ErrUnsupported)
	}
	if len(e.buf(0)) < n*g.wt.rowBytes(k) {
		return fmt.Errorf("W holds %d bytes, %d×%d %v need %d: %w", len(e.buf(0)), n, k, g.wt.dt, n*g.wt.rowBytes(k), ErrUnsupported)
	}
	g.maxM = m
	s := &e.b.scratch
	if err := checkX16(e.Kernel, g.x16, g.act, n); err != nil {
		return err
	}
	if g.planar {
		if kernels.PlanarRecipe(g.wt.dt) == "" || g.wt.q == nil || g.pairs && n%2 != 0 {
			return fmt.Errorf("a planar GEMM of %v, %d rows: %w", g.wt.dt, n, ErrUnsupported)
		}
		for i := range s.workers {
			s.workers[i].row = growBytes(s.workers[i].row, 4*g.wt.rowBytes(k))
		}
	}
	if g.x16 != nil {
		s.x16 = growBytes(s.x16, g.x16.recs(m, k))
	}
	s.f = grow(s.f, m*k)
	if g.wt.q != nil {
		s.q8.need(m * k)
	} else {
		s.needWorker(k, 0)
	}
	return nil
}

func (g *gemm) run(e *Exec) {
	m, n, k := int(g.p.M), int(g.p.N), int(g.p.K)
	if m > g.maxM {
		panic(fmt.Sprintf("cpu: %s: batch %d above the %d rows bound", e.Label, m, g.maxM))
	}
	s := &e.b.scratch
	g.e, g.x, g.w, g.yb, g.rb = e, s.f[:m*k], e.buf(0), e.buf(2), g.wt.rowBytes(k)
	if g.bias {
		g.bb = f32s(e.buf(3))
	}
	g.q = nil
	if g.wt.q != nil {
		g.q = &s.q8
	}
	// X's rows are widened and quantized (or rounded) across the pool
	// first: serial, they kept the workers spinning for an eighth of a
	// prefill. The projections that share an input (q, k and v; gate and
	// up) run one after another, and the ones after the first find them
	// done.
	if !g.prepared() {
		g.in.g = g
		e.b.pool.run(&g.in, m, e.b.pool.split(m, 1), 5*k)
	}
	per, align := itemRows(g.x16), itemAlign(g.x16)
	t, items := g.sub.task(g, n/per) // restricted (OutputRows): the listed rows' items
	e.b.pool.run(t, items, (e.b.pool.split(items, 1)+align-1)/align*align, per*g.rb*max(m, 1))
	if g.sub.on {
		g.sub.fill(g.act, g.yb, m, int(g.p.LDC), n, per)
	}
}

// prepared reports that the scratch holds this run's X prepared: the
// command that ran last on the backend is g.prev, which prepared the same
// rows of the same bytes (the same buffer and offset, M, K and row
// stride) and did not write them. Between the two nothing ran and the
// host wrote nothing (Write and Copy forget the last command).
func (g *gemm) prepared() bool {
	if g.prev == nil || g.e.b.last != g.prev {
		return false
	}
	pg := g.prev.impl.(*gemm)
	x, px := g.e.buf(1), pg.e.buf(1)
	m, k, lda := int(g.p.M), int(g.p.K), int(g.p.LDA)
	if m == 0 || pg.p.M != g.p.M || pg.p.K != g.p.K || pg.p.LDA != g.p.LDA || len(x) == 0 || len(px) == 0 || &x[0] != &px[0] {
		return false
	}
	sz := g.act.size()
	xEnd := ((m-1)*lda + k) * sz
	yEnd := ((m-1)*int(pg.p.LDC) + int(pg.p.N)) * sz
	return len(pg.yb) == 0 || !overlapBytes(x[:min(xEnd, len(x))], pg.yb[:min(yEnd, len(pg.yb))])
}

// overlapBytes reports whether a and b share memory.
func overlapBytes(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

// linkGEMMs links each GEMM of a program to the GEMM before it when their
// inputs are prepared alike (gemm.prev).
func linkGEMMs(execs []*Exec) {
	for i := 1; i < len(execs); i++ {
		g, ok := execs[i].impl.(*gemm)
		pg, pok := execs[i-1].impl.(*gemm)
		if ok && pok && g.wt == pg.wt && g.act == pg.act && g.x16 == pg.x16 {
			g.prev = execs[i-1]
		}
	}
}

// gemmIn prepares rows [i0, i1) of the GEMM's X: widened to float32, then
// quantized for quantized weights or rounded for half ones.
type gemmIn struct{ g *gemm }

func (t *gemmIn) do(_, i0, i1 int) {
	g := t.g
	k, lda := int(g.p.K), int(g.p.LDA)
	xb := g.e.buf(1)
	for i := i0; i < i1; i++ {
		x := g.x[i*k : i*k+k]
		if g.q != nil && g.act == actF32 {
			x = f32s(xb)[i*lda : i*lda+k] // quantized as it is: no widened copy
		} else {
			g.act.load(x, xb, i*lda, k)
		}
		if g.q != nil {
			g.q.quantizeRow(g.wt.aq, x, i, k)
			if g.x16 != nil {
				g.x16.pack(g.e.b.scratch.x16, g.q, i, int(g.p.M), k)
			}
		} else {
			g.wt.roundAct(x)
		}
	}
}

func (g *gemm) do(w, i0, i1 int) {
	m, k, rb, ldc := int(g.p.M), int(g.p.K), g.rb, int(g.p.LDC)
	if g.x16 != nil {
		g.doX16(i0, i1)
		return
	}
	if g.planar {
		g.doPlanar(w, i0, i1)
		return
	}
	var wf []float32
	if g.q == nil {
		wf = g.e.b.scratch.workers[w].f[:k]
	}
	r := i0
	if q4 := g.wt.q4; q4 != nil && g.q != nil {
		// Four weight rows per pass against each row of X, as the GEMV.
		// Where the CPU has the 4×4 tile, four rows of X at a time share
		// each pass's unpacking of the weights.
		ws := &g.e.b.scratch.workers[w]
		v, v16, q44 := &ws.v4, &ws.v16, g.wt.q44
		for ; r+4 <= i1; r += 4 {
			wq := g.w[r*rb : r*rb+4*rb]
			i := 0
			if q44 != nil {
				for ; i+4 <= m; i += 4 {
					q44(wq, rb, g.q, i, k, v16)
					g.setTile(i, r, ldc, v16)
				}
			}
			for ; i < m; i++ {
				qs, d, s := g.q.row(g.wt.aq, i, k)
				q4(wq, rb, qs, d, s, v)
				for c := range v {
					g.setAt(i, r+c, ldc, v[c])
				}
			}
		}
	}
	if f44 := g.wt.f44; f44 != nil && wf != nil && m >= 4 {
		// Float weights: four weight rows against four rows of X per
		// pass where the CPU has the tile; the rows of X past the last
		// whole four meet each weight row widened, as below.
		v16 := &g.e.b.scratch.workers[w].v16
		for ; r+4 <= i1; r += 4 {
			i := 0
			for ; i+4 <= m; i += 4 {
				f44(g.w[r*rb:r*rb+4*rb], rb, g.x, i, k, v16)
				g.setTile(i, r, ldc, v16)
			}
			for c := 0; c < 4 && i < m; c++ {
				g.wt.dequant(g.w[(r+c)*rb:(r+c)*rb+rb], wf)
				for ii := i; ii < m; ii++ {
					g.setAt(ii, r+c, ldc, dotF32(wf, g.x[ii*k:ii*k+k]))
				}
			}
		}
	}
	for ; r < i1; r++ {
		row := g.w[r*rb : r*rb+rb]
		if wf != nil {
			g.wt.dequant(row, wf)
		}
		var b float32
		if g.bias {
			b = g.bb[r]
		}
		for i := range m {
			var v float32
			if wf != nil {
				v = dotF32(wf, g.x[i*k:i*k+k])
			} else {
				qs, d, s := g.q.row(g.wt.aq, i, k)
				v = g.wt.q(row, qs, d, s)
			}
			g.act.set(g.yb, i*ldc+r, v+b)
		}
	}
}

// doPlanar computes weight rows [i0, i1) of a planar GEMM (i0 a multiple
// of 4): four rows at a time put back in the file's layout, then each row
// of X meets them as the planar GEMV's twin meets its one x (the same
// bits); a pairs row r goes to output r/2 (gate) or N/2 + r/2 (up).
func (g *gemm) doPlanar(w, i0, i1 int) {
	m, k, rb, ldc, n := int(g.p.M), int(g.p.K), g.rb, int(g.p.LDC), int(g.p.N)
	ws := &g.e.b.scratch.workers[w]
	rows := ws.row[:4*rb]
	col := func(r int) int {
		if g.pairs {
			return (r&1)*(n/2) + r/2
		}
		return r
	}
	for r := i0; r < i1; r += 4 {
		c := min(4, i1-r)
		for j := range c {
			_ = kernels.PlanarRow(g.wt.dt, rows[j*rb:(j+1)*rb], g.w, n, r+j, k) // prepare checked the type and sizes
		}
		for i := range m {
			qs, d, s := g.q.row(g.wt.aq, i, k)
			if c == 4 && g.wt.q4 != nil {
				g.wt.q4(rows, rb, qs, d, s, &ws.v4)
				for j := range ws.v4 {
					g.setAt(i, col(r+j), ldc, ws.v4[j])
				}
				continue
			}
			for j := range c {
				g.setAt(i, col(r+j), ldc, g.wt.q(rows[j*rb:(j+1)*rb], qs, d, s))
			}
		}
	}
}

// doX16 computes the outputs of groups [i0, i1) of 16 weight rows: up to 16
// rows of X (the kernel's accumulators), all the chunk's groups in one pass;
// past 16 rows, group by group, each meeting the passes of 16 rows in turn
// while its weights are in cache.
func (g *gemm) doX16(i0, i1 int) {
	m, k, ldc := int(g.p.M), int(g.p.K), int(g.p.LDC)
	l := g.x16
	nb, gb := k/l.bk, x16Rows*g.rb
	y, a := f32s(g.yb), g.e.b.scratch.x16
	step := i1 - i0
	if m > l.maxM {
		step = 1
	}
	for g0 := i0; g0 < i1; g0 += step {
		for c := 0; c < m; c += l.maxM {
			mc := min(l.maxM, m-c)
			l.kernel(g.w[g0*gb:(g0+step)*gb], nb, step, a[c*nb*l.rec:], mc, y[c*ldc+g0*x16Rows:], ldc)
		}
	}
	if g.bias {
		for i := range m {
			addBias(y[i*ldc+i0*x16Rows:i*ldc+i1*x16Rows], g.bb[i0*x16Rows:i1*x16Rows])
		}
	}
}

// setTile stores a 4×4 tile, Y[i+j][c+r] = t[4j+r] (plus column c+r's
// bias), as setAt would element by element. F32 outputs, a CPU plan's,
// are written a row of four at a time.
func (g *gemm) setTile(i, c, ldc int, t *[16]float32) {
	if g.bias || g.act == actF16 {
		for j := range 4 {
			for r := range 4 {
				g.setAt(i+j, c+r, ldc, t[4*j+r])
			}
		}
		return
	}
	y := f32s(g.yb)
	for j := range 4 {
		copy(y[(i+j)*ldc+c:][:4], t[4*j:4*j+4])
	}
}

// setAt stores Y[i][c] = v (plus column c's bias).
func (g *gemm) setAt(i, c, ldc int, v float32) {
	if g.bias {
		v += g.bb[c]
	}
	g.act.set(g.yb, i*ldc+c, v)
}

// embedding is embedding_lookup_*: out[i] = table[ids[token_slot+i]]·scale,
// a row of zeros for an id outside the vocabulary.
type embedding struct {
	p   kernels.EmbeddingParams
	wt  *weightType
	act act
}

func bindEmbedding(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	g := &embedding{wt: weightTypeOf(k.DType), act: actOf(k.Act)}
	return g, unsafe.Pointer(&g.p)
}

func (g *embedding) prepare(e *Exec) error {
	if g.wt == nil {
		return fmt.Errorf("no weight type %v: %w", e.Kernel.DType, ErrUnsupported)
	}
	dim := int(g.p.Dim)
	if dim%g.wt.bs != 0 {
		return fmt.Errorf("dim %d is not whole blocks of %v: %w", dim, g.wt.dt, ErrUnsupported)
	}
	if len(e.buf(0)) < int(g.p.Vocab)*g.wt.rowBytes(dim) {
		return fmt.Errorf("the table holds %d bytes, %d rows need %d: %w", len(e.buf(0)), g.p.Vocab, int(g.p.Vocab)*g.wt.rowBytes(dim), ErrUnsupported)
	}
	e.b.scratch.f = grow(e.b.scratch.f, dim)
	return nil
}

func (g *embedding) run(e *Exec) {
	dim, rb := int(g.p.Dim), g.wt.rowBytes(int(g.p.Dim))
	ids, table, out := u32s(e.buf(1)), e.buf(0), e.buf(2)
	f := e.b.scratch.f[:dim]
	for t := range int(g.p.NTokens) {
		id := ids[int(g.p.TokenSlot)+t]
		if id >= g.p.Vocab {
			clear(f)
		} else {
			g.wt.dequant(table[int(id)*rb:int(id)*rb+rb], f)
			if sc := g.p.Scale; sc != 1 && sc != 0 {
				for i := range f {
					f[i] *= sc
				}
			}
		}
		g.act.store(out, t*int(g.p.OutStride), f)
	}
}
