package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// argmax is argmax_*: for each of n_rows rows of n logits (0 rows: one),
// ids[out_slot + r] = the index of the row's largest logit, the lowest
// index among equals; NaNs never win. The pool splits rows (a batch's
// rows are a vocabulary each).
type argmax struct {
	p   kernels.ArgmaxParams
	act act
	e   *Exec
}

func bindArgmax(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	a := &argmax{act: actOf(k.Act)}
	return a, unsafe.Pointer(&a.p)
}

func (a *argmax) run(e *Exec) {
	a.e = e
	rows := max(int(a.p.NRows), 1)
	e.b.pool.run(a, rows, 1, int(a.p.N)*a.act.size())
}

func (a *argmax) do(_, i0, i1 int) {
	n := int(a.p.N)
	ids := u32s(a.e.buf(1))
	for r := i0; r < i1; r++ {
		best := 0
		if a.act == actF32 {
			best = argmaxF32(f32s(a.e.buf(0))[r*n : r*n+n])
		} else {
			bv := float32(math.Inf(-1))
			for i, h := range u16s(a.e.buf(0))[r*n : r*n+n] {
				if v := f16tab[h]; v > bv {
					best, bv = i, v
				}
			}
		}
		ids[int(a.p.OutSlot)+r] = uint32(best)
	}
}

// gumbel is gumbel_topk_*: it turns the logits, in place, into values whose
// argmax is a sample of the filtered, tempered distribution (the Gumbel-max
// trick), with runtime/sampling's Apply: the one implementation of the
// sampler, which the runtime's host path shares (its comment has the math
// every backend's twin follows). F16 logits are widened into a scratch row
// and stored back.
type gumbel struct {
	p   kernels.SamplingParams
	act act
	s   *sampling.Sampler
	row []float32 // F16 logits widened
}

func bindGumbel(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	g := &gumbel{act: actOf(k.Act)}
	return g, unsafe.Pointer(&g.p)
}

func (g *gumbel) prepare(*Exec) error {
	v := int(g.p.Vocab)
	g.s = sampling.New(v)
	if g.act != actF32 {
		g.row = make([]float32, v)
	}
	return nil
}

func (g *gumbel) run(e *Exec) {
	p := g.p
	if !(p.Temperature > 0) {
		return
	}
	v := int(p.Vocab)
	lb := e.buf(0)
	if g.act == actF32 {
		g.s.Apply(f32s(lb)[:v], p)
		return
	}
	g.act.load(g.row, lb, 0, v)
	g.s.Apply(g.row, p)
	g.act.store(lb, 0, g.row)
}

// GumbelKey and GumbelNoise are the kernel's noise stream (runtime/sampling).
func GumbelKey(seed, position uint32) uint32 { return sampling.Key(seed, position) }

// GumbelNoise is the noise added to token i's tempered logit under key.
func GumbelNoise(key uint32, i int) float32 { return sampling.Noise(key, i) }
