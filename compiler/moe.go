package compiler

import (
	"fmt"

	"github.com/akunu-dev/akunu/kernels"
)

// Mixture-of-experts nodes: their kernels and their commands. A route
// value's storage holds, for the program's rows, k u32 expert ids a row
// and after them k f32 gate weights a row (ValueInfo.Route); the route,
// matmul_id and moe_sum commands bind its two halves.

// selectMoE picks the kernel of a route, matmul_id or moe_sum node: a
// batch of more than 8 rows takes gemm_id, which groups the rows by expert
// (each expert's matrix read once per tile of its rows), fewer gemv_id.
func (s *state) selectMoE(p *program, n Node) ([]*kernels.Kernel, error) {
	switch n := n.(type) {
	case *Route:
		return s.find(kernels.Spec{Op: kernels.OpMoERoute})
	case *MatMulID:
		dt := s.tensors[n.Weight].Type
		op, what := kernels.OpGEMVID, "GEMV (gemv_id)"
		if p.rowsOf(n.In[0]) > 8 {
			op, what = kernels.OpGEMMID, "GEMM (gemm_id)"
		}
		ks, err := s.find(kernels.Spec{Op: op, DType: dt})
		if err != nil {
			return nil, fmt.Errorf("%s: %v has no expert-indexed %s for %s: %w", n.Weight, dt, what, s.opts.Chip, err)
		}
		return ks, nil
	case *MoESum:
		return s.find(kernels.Spec{Op: kernels.OpMoESum})
	}
	return nil, fmt.Errorf("%s: %w: no kernel for %s", n.base().Label, ErrUnsupported, n.Kind())
}

// routeHalves are the bindings of a route value's ids and weights.
func (e *emitter) routeHalves(v ValueID) (ids, weights bref) {
	r := e.act(v)
	rows, k := uint64(e.p.rowsOf(v)), uint64(e.p.g.Values[v].Route)
	half := 4 * rows * k
	return bref{buf: r.buf, off: r.off, len: half}, bref{buf: r.buf, off: r.off + half, len: half}
}

// moe emits the command of a route, matmul_id or moe_sum node.
func (e *emitter) moe(n Node, k *kernels.Kernel) error {
	b := n.base()
	switch n := n.(type) {
	case *Route:
		logits := b.In[0]
		rows := e.p.rowsOf(logits)
		ids, weights := e.routeHalves(b.Out[0])
		return e.emit(n, k, kernels.Shape{Tokens: rows, Experts: n.Experts, Slots: n.K, Norm: n.Norm},
			kernels.MoERouteParams{NExpert: uint32(n.Experts), K: uint32(n.K), NRows: uint32(rows), AStride: e.stride(logits)},
			map[string]bref{"logits": e.act(logits), "ids": ids, "weights": weights}, e.class(logits), e.actRead(logits))
	case *MatMulID:
		x, y := b.In[0], b.Out[0]
		rows := e.p.rowsOf(x)
		ids, _ := e.routeHalves(b.In[1])
		w := e.weight(n.Weight)
		// A row reads its k experts' matrices: decode's bytes are the
		// active parameters, not the tensor; a batch reads at most every
		// expert once.
		expert := w.len / uint64(n.Experts)
		read := expert*uint64(min(n.Experts, rows*n.Slots)) + e.actRead(x) + ids.len
		xSlot := 0
		if n.PerSlot {
			xSlot = n.K
		}
		return e.emit(n, k, kernels.Shape{Tokens: rows, N: n.N, K: n.K, Experts: n.Experts, Slots: n.Slots},
			kernels.GEMVIDParams{N: uint32(n.N), K: uint32(n.K), NSlots: uint32(n.Slots), NRows: uint32(rows), NExpert: uint32(n.Experts),
				XStride: e.stride(x), XSlot: uint32(xSlot), YStride: e.stride(y)},
			map[string]bref{"w": w, "x": e.act(x), "ids": ids, "y": e.act(y)}, e.class(x), read)
	case *MoESum:
		y, out := b.In[0], b.Out[0]
		rows := e.p.rowsOf(y)
		_, weights := e.routeHalves(b.In[1])
		return e.emit(n, k, kernels.Shape{Tokens: rows, Dim: n.N, Slots: n.Slots},
			kernels.MoESumParams{N: uint32(n.N), NSlots: uint32(n.Slots), NRows: uint32(rows), YStride: e.stride(y), OutStride: e.stride(out)},
			map[string]bref{"y": e.act(y), "weights": weights, "out": e.act(out)}, e.class(y), e.actRead(y)+weights.len)
	}
	return fmt.Errorf("%w: cannot emit %s", ErrUnsupported, n.Kind())
}
