package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// norm is rmsnorm, residual_rmsnorm, layernorm, residual_layernorm and
// head_rmsnorm. Sums are float64, as ggml's are; the pool splits rows when
// a prefill batch makes them worth it. The residual forms store
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
	e.b.scratch.needWorker(int(n.p.Dim), 0)
	return nil
}

func (n *norm) run(e *Exec) {
	n.e = e
	heads := max(int(n.p.NHeads), 1)
	items := int(n.p.NRows)
	if n.head {
		items *= heads
	}
	dim := int(n.p.Dim)
	e.b.pool.run(n, items, e.b.pool.split(items, 1), dim*n.act.size()*2)
}

func (n *norm) do(w, i0, i1 int) {
	e := n.e
	dim, stride := int(n.p.Dim), int(n.p.Stride)
	heads := max(int(n.p.NHeads), 1)
	f := e.b.scratch.workers[w].f[:dim]
	xb, ob := e.buf(n.sx), e.buf(n.sout)
	weight := f32s(e.buf(n.sw))[:dim]
	for it := i0; it < i1; it++ {
		off := it * stride
		if n.head {
			off = it/heads*stride + it%heads*dim
		}
		n.act.load(f, xb, off, dim)
		if n.residual {
			rb := e.buf(n.sres)
			for i := range f {
				f[i] += n.act.get(rb, off+i)
			}
			n.act.store(rb, off, f)
			if n.act == actF16 {
				n.act.load(f, rb, off, dim) // normalize what was stored
			}
		}
		eps := float64(n.p.Eps)
		if n.layer {
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
		} else {
			rmsnorm(f, f, weight, n.p.Eps)
		}
		n.act.store(ob, off, f)
	}
}

// rmsnorm writes x / sqrt(mean(x²) + eps) · weight into dst (which may be
// x), the sum of squares in float64 as ggml's rms_norm.
func rmsnorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		dst[i] = v * scale * weight[i]
	}
}
