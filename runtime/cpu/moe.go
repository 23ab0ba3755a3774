package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/kernels"
)

// The routing and the weighted sum of a mixture-of-experts FFN, as
// llama.cpp's build_moe_ffn computes them with softmax gating (Qwen3-MoE,
// Mixtral): soft_max of the router logits, argsort_top_k, get_rows of the
// chosen probabilities, and with norm_w sum_rows, a clamp and div; after
// the experts (gemv_id.go), each expert's output times its weight, the
// slots added in order. kernels/gpu/moe.h is the GPU twin.

// moeWeightsMin is the least the sum of a row's weights is divided by:
// llama.cpp clamps it there (the smallest normal F16, 2^-14) against a
// division by zero.
const moeWeightsMin = 6.103515625e-5

// noExpert is the id of a slot that chose nothing (a row whose
// probabilities are NaN); gemv_id gives zeros for it, as for any id past
// its experts.
const noExpert = 0xFFFFFFFF

// moeRoute is moe_route_*: for each row, in float32,
//
//   - m = the largest logit, e_i = exp(l_i − m) (float64 exp, rounded),
//     s = Σ e_i in expert order, p_i = e_i / s;
//   - k rounds, round j taking the largest p not yet taken, the lower
//     expert among equals: ids[r·k + j] = its expert, weights[r·k + j] = p;
//   - with norm_w, the k weights divided by max(their sum in round order,
//     2^-14).
//
// The GPU twin sums s in another order (lanes, then a tree), so its
// probabilities differ in the last bits; a near tie can then choose
// differently. A row whose p are NaN (a NaN or +inf logit, or every logit
// −inf) takes nothing: ids noExpert, weights 0. The pool splits rows; each
// worker's probabilities live in its scratch, so a run allocates nothing.
type moeRoute struct {
	p    kernels.MoERouteParams
	act  act
	norm bool
	e    *Exec
}

func bindMoERoute(k *kernels.Kernel, c constants) (impl, unsafe.Pointer) {
	m := &moeRoute{act: actOf(k.Act), norm: c.b("norm_w")}
	return m, unsafe.Pointer(&m.p)
}

func (m *moeRoute) prepare(e *Exec) error {
	ne, k := int(m.p.NExpert), int(m.p.K)
	if ne < 1 || ne > kernels.MoEMaxExperts || k < 1 || k > min(kernels.MoEMaxSlots, ne) {
		return fmt.Errorf("%d experts, %d chosen: %w", ne, k, ErrUnsupported)
	}
	e.b.scratch.needWorker(ne, 0)
	return nil
}

func (m *moeRoute) run(e *Exec) {
	m.e = e
	rows := int(m.p.NRows)
	e.b.pool.run(m, rows, e.b.pool.split(rows, 1), int(m.p.NExpert)*4*int(m.p.K))
}

func (m *moeRoute) do(w, i0, i1 int) {
	ne, k, as := int(m.p.NExpert), int(m.p.K), int(m.p.AStride)
	pr := m.e.b.scratch.workers[w].f[:ne]
	lb, ids, ws := m.e.buf(0), u32s(m.e.buf(1)), f32s(m.e.buf(2))
	for r := i0; r < i1; r++ {
		m.act.load(pr, lb, r*as, ne)
		mx := float32(math.Inf(-1))
		for _, v := range pr {
			mx = max(mx, v)
		}
		var s float32
		for i, v := range pr {
			ev := float32(math.Exp(float64(v - mx)))
			pr[i] = ev
			s += ev
		}
		for i := range pr {
			pr[i] /= s
		}
		id, wt := ids[r*k:r*k+k], ws[r*k:r*k+k]
		var sum float32
		for j := range k {
			best, bi := float32(-1), uint32(noExpert)
			for i, v := range pr {
				if v > best { // i grows: an equal p keeps the lower expert
					best, bi = v, uint32(i)
				}
			}
			var wj float32
			if bi != noExpert {
				wj = best
				pr[bi] = -1 // taken: probabilities are ≥ 0
			}
			sum += wj
			id[j], wt[j] = bi, wj
		}
		if m.norm {
			d := max(sum, moeWeightsMin)
			for j := range wt {
				wt[j] /= d
			}
		}
	}
}

// moeSum is moe_sum_*: out[r] = Σ_j weights[r·n_slots + j]·y[r, j], each
// product rounded to float32 before it is added (no fused multiply-add:
// llama.cpp multiplies the experts' outputs by their weights as a tensor,
// then adds the slots), starting from slot 0's product, in slot order. A
// worker accumulates a row in its scratch; the pool splits rows.
type moeSum struct {
	p   kernels.MoESumParams
	act act
	e   *Exec
}

func bindMoESum(k *kernels.Kernel, _ constants) (impl, unsafe.Pointer) {
	m := &moeSum{act: actOf(k.Act)}
	return m, unsafe.Pointer(&m.p)
}

func (m *moeSum) prepare(e *Exec) error {
	if m.p.N == 0 || m.p.NSlots == 0 {
		return fmt.Errorf("n %d, n_slots %d: %w", m.p.N, m.p.NSlots, ErrUnsupported)
	}
	e.b.scratch.needWorker(0, int(m.p.N))
	return nil
}

func (m *moeSum) run(e *Exec) {
	m.e = e
	rows := int(m.p.NRows)
	e.b.pool.run(m, rows, e.b.pool.split(rows, 1), int(m.p.N)*int(m.p.NSlots)*m.act.size())
}

func (m *moeSum) do(w, i0, i1 int) {
	n, ns, ys, os := int(m.p.N), int(m.p.NSlots), int(m.p.YStride), int(m.p.OutStride)
	acc := m.e.b.scratch.workers[w].acc[:n]
	yb, ws, out := m.e.buf(0), f32s(m.e.buf(1)), m.e.buf(2)
	for r := i0; r < i1; r++ {
		wr := ws[r*ns : r*ns+ns]
		for j, wj := range wr {
			off := r*ys + j*n
			if m.act == actF16 {
				y := u16s(yb)[off : off+n]
				if j == 0 {
					for i, h := range y {
						acc[i] = wj * f16tab[h]
					}
					continue
				}
				for i, h := range y {
					acc[i] += float32(wj * f16tab[h])
				}
				continue
			}
			y := f32s(yb)[off : off+n]
			if j == 0 {
				for i, v := range y {
					acc[i] = wj * v
				}
				continue
			}
			for i, v := range y {
				acc[i] += float32(wj * v)
			}
		}
		m.act.store(out, r*os, acc)
	}
}
