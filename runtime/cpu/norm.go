package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// norm is rmsnorm, residual_rmsnorm, layernorm, residual_layernorm and
// head_rmsnorm. Sums are float64, as ggml's are, each row's added in
// element order; RMS is x / sqrt(mean(x²) + eps) · weight, rounded after
// each product (rmsScale, scaleMul). The pool splits rows when a prefill
// batch makes them worth it. The residual forms store
// residual + x first and normalize the stored value, so the fused kernel
// equals add followed by the norm also in F16.
type norm struct {
	p        kernels.NormParams
	act      act
	layer    bool
	residual bool
	head     bool
	bias     bool
	// slots
	sx, sres, sw, sb, sout int

	e *Exec
}

func bindNorm(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	n := &norm{act: actOf(k.Act), layer: k.Op == kernels.OpLayerNorm, residual: k.Variant&kernels.Residual != 0,
		head: k.Op == kernels.OpHeadRMSNorm, bias: c.b("has_bias")}
	slot := map[string]int{}
	for _, b := range k.Bindings {
		slot[b.Name] = b.Slot
	}
	n.sx, n.sres, n.sw, n.sb, n.sout = slot["x"], slot["residual"], slot["weight"], slot["bias"], slot["out"]
	if n.head {
		n.sout = n.sx
	}
	return n, unsafe.Pointer(&n.p)
}

func (n *norm) prepare(e *Exec) error {
	e.b.scratch.needWorker(normGroup*int(n.p.Dim), 0)
	return nil
}

// normGroup is how many rows the RMS form normalizes at once: the rows
// whose sums of squares rmsScales adds side by side. A chunk of the pool
// is at least that many rows where there are rows enough for every
// thread (run).
const normGroup = headGroup

func (n *norm) run(e *Exec) {
	n.e = e
	heads := max(int(n.p.NHeads), 1)
	items := int(n.p.NRows)
	if n.head {
		items *= heads
	}
	dim := int(n.p.Dim)
	grain := e.b.pool.split(items, 1)
	if !n.layer {
		grain = e.b.pool.split(items, normGroup)
		if t := e.b.pool.threads; items < normGroup*t {
			// Few rows (a verify pass, a draft's catch-up): a row is
			// latency (its residual from the cores that wrote it, its
			// squares a chain of adds), so the rows go out a few a
			// thread, each row's scale the same bits in any group
			// (TestRMSScalesMatchPortable). The Qwen3-0.6B shape's 8-row
			// pass: 11 µs a norm inline on the 16-core host.
			grain = (items + t - 1) / t
		}
	}
	e.b.pool.run(n, items, grain, dim*n.act.size()*2)
}

// offset is the first element of item it: a row, or a head of a row.
func (n *norm) offset(it int) int {
	if n.head {
		heads := max(int(n.p.NHeads), 1)
		return it/heads*int(n.p.Stride) + it%heads*int(n.p.Dim)
	}
	return it * int(n.p.Stride)
}

// load widens item it into f; the residual forms add the residual, store
// the sum into it and go on with what was stored.
func (n *norm) load(f []float32, off int) {
	e := n.e
	n.act.load(f, e.buf(n.sx), off, len(f))
	if !n.residual {
		return
	}
	rb := e.buf(n.sres)
	if n.act == actF32 {
		addRow(f, f32s(rb)[off:off+len(f)])
	} else {
		for i := range f {
			f[i] += n.act.get(rb, off+i)
		}
	}
	n.act.store(rb, off, f)
	if n.act == actF16 {
		n.act.load(f, rb, off, len(f)) // normalize what was stored
	}
}

func (n *norm) do(w, i0, i1 int) {
	e := n.e
	dim := int(n.p.Dim)
	ws := &e.b.scratch.workers[w]
	ob := e.buf(n.sout)
	weight := f32s(e.buf(n.sw))[:dim]
	if !n.layer {
		// RMS: up to normGroup rows loaded, their scales computed side by
		// side (each row's squares added in element order), then applied.
		for g := i0; g < i1; g += normGroup {
			rows := min(normGroup, i1-g)
			f := ws.f[:rows*dim]
			for j := range rows {
				n.load(f[j*dim:j*dim+dim], n.offset(g+j))
			}
			sc := ws.sc[:rows]
			rmsScales(sc, f, dim, dim, n.p.Eps)
			for j, s := range sc {
				fj := f[j*dim : j*dim+dim]
				scaleMul(fj, fj, weight, s)
				n.act.store(ob, n.offset(g+j), fj)
			}
		}
		return
	}
	f := ws.f[:dim]
	for it := i0; it < i1; it++ {
		off := n.offset(it)
		n.load(f, off)
		eps := float64(n.p.Eps)
		var sum float64
		for _, v := range f {
			sum += float64(v)
		}
		mean := float32(sum / float64(dim))
		var ss float64
		for i, v := range f {
			f[i] = v - mean
			ss += float64(f[i]) * float64(f[i])
		}
		scale := float32(1 / math.Sqrt(ss/float64(dim)+eps))
		for i := range f {
			f[i] = f[i] * scale * weight[i]
		}
		if n.bias {
			for i, b := range f32s(e.buf(n.sb))[:dim] {
				f[i] += b
			}
		}
		n.act.store(ob, off, f)
	}
}
