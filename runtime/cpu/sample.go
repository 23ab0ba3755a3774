package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// argmax is argmax_*: for each of n_rows rows of n logits (0 rows: one),
// ids[out_slot + r] = the index of the row's largest logit, the lowest
// index among equals; NaNs never win.
type argmax struct {
	p   kernels.ArgmaxParams
	act act
}

func bindArgmax(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	a := &argmax{act: actOf(k.Act)}
	return a, unsafe.Pointer(&a.p)
}

func (a *argmax) run(e *Exec) {
	n := int(a.p.N)
	ids := u32s(e.buf(1))
	for r := range max(int(a.p.NRows), 1) {
		best, bv := 0, float32(math.Inf(-1))
		if a.act == actF32 {
			for i, v := range f32s(e.buf(0))[r*n : r*n+n] {
				if v > bv {
					best, bv = i, v
				}
			}
		} else {
			for i, h := range u16s(e.buf(0))[r*n : r*n+n] {
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
