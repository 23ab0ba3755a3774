package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// pooling is pool_*: output j (j < n_rows) is input j's rows
// [ranges[2j], ranges[2j+1]) of x pooled by the pooling constant, then,
// with l2_normalize, divided by its L2 norm; out is F32, n_rows rows of dim.
//
//   - mean: each column summed in float32 over the rows in row order, then
//     divided by the row count (the GPU kernel's order, column by column);
//   - cls, last: the first or the last row, widened;
//   - l2_normalize: the sum of squares in float64, its inverse square root
//     rounded to float32 and multiplied in; a zero vector stays zero
//     (inverse 0), where a GPU sums its squares in float.
//
// An empty range, or one whose last row reaches past x's binding (the
// ranges are host data, as gather_rows' rows), gives a row of zeros. The
// pooled vector is built in its output row, so a run allocates nothing;
// the pool splits outputs.
type pooling struct {
	p         kernels.PoolParams
	act       act
	mode      uint32
	normalize bool
	e         *Exec
}

func bindPool(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	pl := &pooling{act: actOf(k.Act), mode: c.u("pooling", 0), normalize: c.b("l2_normalize")}
	return pl, unsafe.Pointer(&pl.p)
}

func (pl *pooling) prepare(*Exec) error {
	if pl.mode < kernels.PoolMean || pl.mode > kernels.PoolLast {
		return fmt.Errorf("pooling mode %d: %w", pl.mode, ErrUnsupported)
	}
	return nil
}

// inside reports whether input j's range is non-empty and its rows lie in
// x (n elements): the last row's dim elements end within it.
func (pl *pooling) inside(start, end uint32, n int) bool {
	return end > start && (int(end)-1)*int(pl.p.AStride)+int(pl.p.Dim) <= n
}

func (pl *pooling) run(e *Exec) {
	pl.e = e
	rows := int(pl.p.NRows)
	// What an output reads: its input's rows for the mean, one row else.
	n, rg, read := len(e.buf(0))/pl.act.size(), u32s(e.buf(1)), 0
	for j := range rows {
		if s, t := rg[2*j], rg[2*j+1]; pl.inside(s, t, n) {
			read++
			if pl.mode == kernels.PoolMean {
				read += int(t-s) - 1
			}
		}
	}
	e.b.pool.run(pl, rows, 1, (read/max(rows, 1)+1)*int(pl.p.Dim)*pl.act.size())
}

func (pl *pooling) do(_, i0, i1 int) {
	p, e := &pl.p, pl.e
	dim, as := int(p.Dim), int(p.AStride)
	xb := e.buf(0)
	n := len(xb) / pl.act.size()
	rg, out := u32s(e.buf(1)), f32s(e.buf(2))
	for j := i0; j < i1; j++ {
		o := out[j*dim : j*dim+dim]
		start, end := rg[2*j], rg[2*j+1]
		if !pl.inside(start, end, n) {
			clear(o)
			continue
		}
		switch pl.mode {
		case kernels.PoolMean:
			clear(o)
			for r := int(start); r < int(end); r++ {
				pl.addRow(o, xb, r*as)
			}
			c := float32(end - start)
			for i := range o {
				o[i] /= c
			}
		case kernels.PoolCLS:
			pl.act.load(o, xb, int(start)*as, dim)
		default: // kernels.PoolLast
			pl.act.load(o, xb, (int(end)-1)*as, dim)
		}
		if pl.normalize {
			s := 0.0
			for _, v := range o {
				s += float64(v) * float64(v)
			}
			inv := float32(0)
			if s > 0 {
				inv = float32(1 / math.Sqrt(s))
			}
			for i := range o {
				o[i] *= inv
			}
		}
	}
}

// addRow adds x's row at element off to o, in float32.
func (pl *pooling) addRow(o []float32, xb []byte, off int) {
	if pl.act == actF16 {
		for i, h := range u16s(xb)[off : off+len(o)] {
			o[i] += f16tab[h]
		}
		return
	}
	for i, v := range f32s(xb)[off : off+len(o)] {
		o[i] += v
	}
}
