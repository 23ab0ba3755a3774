package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
)

// elementwise is bias_add, add, mul, scale, softcap, silu, gelu, silu_gate,
// gelu_gate, copy, convert and gather_rows: n_rows rows of n_cols, each
// operand with its own row stride. A row is widened to float32, computed,
// and stored in the output's dtype (convert_f16_to_f32 reads F16 and
// writes F32). gather_rows reads output row r from input row rows[r]; a
// row index past the input (which the runtime never writes) gives a row of
// zeros.
type elementwise struct {
	p       kernels.ElementwiseParams
	op      kernels.Op
	in, out act
	lastRow bool
	// slots: a (or x), b (or gate's up, or bias), out
	sa, sb, so int
	e          *Exec
}

func bindElementwise(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	el := &elementwise{op: k.Op, in: actOf(k.Act), out: actOf(k.Act), lastRow: c.b("last_row"), sb: -1}
	if k.Op == kernels.OpConvert {
		el.out = actOf(k.DType)
		if k.DType != dtype.F16 && k.DType != dtype.F32 {
			el.out = actF32
		}
	}
	switch len(k.Bindings) - 1 {
	case 3: // a, b, out
		el.sa, el.sb, el.so = 0, 1, 2
	default: // x, out; bias_add: x (in place), bias
		el.sa, el.so = 0, 1
		if k.Op == kernels.OpBiasAdd {
			el.sb, el.so = 1, 0
		}
	}
	return el, unsafe.Pointer(&el.p)
}

func (el *elementwise) prepare(e *Exec) error {
	e.b.scratch.needWorker(2*int(el.p.NCols), 0)
	return nil
}

func (el *elementwise) run(e *Exec) {
	el.e = e
	rows := int(el.p.NRows)
	if el.lastRow {
		rows = min(rows, 1)
	}
	e.b.pool.run(el, rows, e.b.pool.split(rows, 1), int(el.p.NCols)*el.in.size()*3)
}

func (el *elementwise) do(w, i0, i1 int) {
	p, e := &el.p, el.e
	n := int(p.NCols)
	ws := e.b.scratch.workers[w].f
	x, y := ws[:n], ws[n:2*n]
	ab, ob := e.buf(el.sa), e.buf(el.so)
	var bb []byte
	if el.sb >= 0 {
		bb = e.buf(el.sb)
	}
	for r := i0; r < i1; r++ {
		src := r
		if el.lastRow {
			src = int(p.NRows) - 1
		}
		if el.op == kernels.OpGatherRows {
			src = int(u32s(bb)[r])
			if (src*int(p.AStride)+n)*el.in.size() > len(ab) {
				clear(x)
				el.out.store(ob, r*int(p.OutStride), x)
				continue
			}
		}
		orow := r * int(p.OutStride)
		if el.op == kernels.OpBiasAdd {
			orow = r * int(p.AStride)
		}
		if el.direct(ab, bb, ob, src, r, orow) {
			continue
		}
		el.in.load(x, ab, src*int(p.AStride), n)
		switch el.op {
		case kernels.OpBiasAdd:
			for i, b := range f32s(bb)[:n] {
				x[i] += b
			}
		case kernels.OpAdd, kernels.OpMul, kernels.OpSiLUGate, kernels.OpGELUGate:
			el.in.load(y, bb, r*int(p.BStride), n)
			switch el.op {
			case kernels.OpAdd:
				for i := range x {
					x[i] += y[i]
				}
			case kernels.OpMul:
				for i := range x {
					x[i] *= y[i]
				}
			case kernels.OpSiLUGate:
				siluMul(x, y)
			default:
				for i := range x {
					x[i] = gelu(x[i]) * y[i]
				}
			}
		case kernels.OpScale:
			for i := range x {
				x[i] *= p.Alpha
			}
		case kernels.OpSoftcap:
			for i := range x {
				x[i] = p.Alpha * float32(math.Tanh(float64(x[i]/p.Alpha)))
			}
		case kernels.OpSiLU:
			for i := range x {
				x[i] = silu(x[i])
			}
		case kernels.OpGELU:
			for i := range x {
				x[i] = gelu(x[i])
			}
		}
		el.out.store(ob, orow, x)
	}
}

// direct computes row r without the widened copies where the dtypes allow:
// a copy (or gather) between buffers of one dtype moves the bytes (an F16
// NaN keeps its payload, which the round trip through float32 replaced
// with the sign and 0x7e00), and an F32 silu_gate copies x to the output and gates it there,
// unless the output row overlaps up's. It reports whether it did.
func (el *elementwise) direct(ab, bb, ob []byte, src, r, orow int) bool {
	p := &el.p
	n := int(p.NCols)
	switch {
	case (el.op == kernels.OpCopy || el.op == kernels.OpGatherRows) && el.in == el.out:
		sz := el.in.size()
		copy(ob[orow*sz:(orow+n)*sz], ab[src*int(p.AStride)*sz:][:n*sz])
		return true
	case el.op == kernels.OpSiLUGate && el.in == actF32 && el.out == actF32:
		dst, y := f32s(ob)[orow:orow+n], f32s(bb)[r*int(p.BStride):][:n]
		if overlap(dst, y) {
			return false
		}
		copy(dst, f32s(ab)[src*int(p.AStride):][:n])
		siluMul(dst, y)
		return true
	}
	return false
}

// overlap reports whether a and b share memory.
func overlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(4*len(b)) && b0 < a0+uintptr(4*len(a))
}
