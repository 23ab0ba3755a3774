package compiler

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/specs"
)

// program is one program of the plan as the later passes build it.
type program struct {
	name string
	kind plans.ProgramKind
	g    *Graph
	rows int // tokens per replay: 1, or the batch bucket
	// outRows are the most rows of a replay that produce outputs: 1, or
	// min(bucket, tuning.OutRows) in a batch program.
	outRows int
	// kernels per node of g: none (a view), one, or two (the parallel
	// decode attention and its reduction).
	kernels [][]*kernels.Kernel
}

// rowsOf is the number of rows value v has in p.
func (p *program) rowsOf(v ValueID) int {
	if p.g.Values[v].Out {
		return p.outRows
	}
	return p.rows
}

// batch reports whether p is a batch program: rows with positions and
// sequence slots of their own, outputs for the rows listed (or, embedding,
// for the inputs pooled).
func (p *program) batch() bool { return p.kind == plans.KindBatch || p.kind == plans.KindEmbed }

// selectPass picks the kernels of every program.
//
// Assumes: fused graphs, weight buffers.
// Guarantees: every node but split has its kernel(s) from the catalog, for
// the activation dtype (F16 on GPUs, F32 on CPUs): GEMV for one row
// (standard, large-K or wide by tuning.GEMV), GEMM for batches (small up to
// 8 rows), decode attention chosen for the plan's maximum context, prefill
// attention for the bucket; in batch programs the rows forms of RoPE, the
// KV write and attention, which read each row's position and sequence
// slot. A weight type without a kernel fails naming the tensor, wrapping
// kernels.ErrNoKernel.
func selectPass(s *state) (string, error) {
	s.progs = nil
	if g := s.graph(FormDecode); g != nil {
		s.progs = append(s.progs, &program{name: plans.ProgDecode, kind: plans.KindDecode, g: g, rows: 1, outRows: 1},
			&program{name: plans.ProgSampled, kind: plans.KindSampled, g: s.graph(FormSampled), rows: 1, outRows: 1})
	}
	if g := s.graph(FormBatch); g != nil {
		for _, b := range s.buckets {
			s.progs = append(s.progs, &program{name: plans.BatchName(uint32(b)), kind: plans.KindBatch, g: g,
				rows: b, outRows: min(b, max(s.tuning.OutRows, 1))})
		}
	}
	// An embedding replay packs up to one input per sequence slot.
	if g := s.graph(FormEmbed); g != nil {
		for _, b := range s.buckets {
			s.progs = append(s.progs, &program{name: plans.EmbedName(uint32(b)), kind: plans.KindEmbed, g: g,
				rows: b, outRows: min(b, max(s.tuning.MaxSeqs, 1))})
		}
	}
	distinct := map[string]bool{}
	for _, p := range s.progs {
		p.kernels = make([][]*kernels.Kernel, len(p.g.Nodes))
		for i, n := range p.g.Nodes {
			ks, err := s.selectNode(p, n)
			if err != nil {
				return "", err
			}
			p.kernels[i] = ks
			for _, k := range ks {
				distinct[k.Name] = true
			}
		}
	}
	return fmt.Sprintf("%d programs, %d distinct kernels", len(s.progs), len(distinct)), nil
}

func (s *state) find(sp kernels.Spec) ([]*kernels.Kernel, error) {
	sp.Act = s.act
	k, err := kernels.Find(sp)
	if err != nil {
		return nil, err
	}
	return []*kernels.Kernel{k}, nil
}

// f32Tensor holds norm weights, biases and RoPE factors to F32, as the
// kernels read them.
func (s *state) f32Tensor(names ...string) error {
	for _, n := range names {
		if t, ok := s.tensors[n]; ok && n != "" && t.Type != dtype.F32 {
			return fmt.Errorf("%s: %w: %v; norm weights, biases and RoPE factors must be F32", n, ErrUnsupported, t.Type)
		}
	}
	return nil
}

func (s *state) selectNode(p *program, n Node) ([]*kernels.Kernel, error) {
	switch n := n.(type) {
	case *Embed:
		dt := s.tensors[n.Table].Type
		ks, err := s.find(kernels.Spec{Op: kernels.OpEmbedding, DType: dt})
		if err != nil {
			return nil, fmt.Errorf("%s: %v has no embedding kernel for %s: %w", n.Table, dt, s.opts.Chip, err)
		}
		return ks, nil
	case *Norm:
		if err := s.f32Tensor(n.Weight, n.Bias); err != nil {
			return nil, err
		}
		sp := kernels.Spec{Op: kernels.OpRMSNorm}
		if n.LN {
			sp.Op = kernels.OpLayerNorm
		}
		if n.Residual {
			sp.Variant = kernels.Residual
		}
		return s.find(sp)
	case *HeadNorm:
		if err := s.f32Tensor(n.Weight); err != nil {
			return nil, err
		}
		return s.find(kernels.Spec{Op: kernels.OpHeadRMSNorm})
	case *MatMul:
		if err := s.f32Tensor(n.Biases...); err != nil {
			return nil, err
		}
		dt := s.tensors[n.Weights[0]].Type
		rows := p.rowsOf(n.Out[0])
		x16 := kernels.Variant(0)
		if _, ok := s.repacked(n); ok {
			x16 = kernels.X16
		}
		fold := forms(n) // the glu_fold and norm_fold rules' forms, planar only
		if rows == 1 {
			if _, ok := s.planar(n); ok {
				v := kernels.Planar | forms(n) // Q4_0's planar GEMV has one shape of its own; Q6_K's keep the usual ones
				if k, err := kernels.SelectGEMV(s.tuning, dt, n.N(), n.K, false, s.act); err == nil && dt != dtype.Q4_0 {
					v |= k.Variant
				}
				k, err := kernels.Find(kernels.Spec{Op: kernels.OpGEMV, DType: dt, Variant: v, Act: s.act})
				if err != nil {
					return nil, fmt.Errorf("%s: %v has no planar GEMV kernel for %s: %w", n.Weights[0], dt, s.opts.Chip, err)
				}
				return []*kernels.Kernel{k}, nil
			}
			if fold != 0 {
				return nil, fmt.Errorf("%s: %w: the glu_fold and norm_fold forms are planar GEMVs", n.Label, ErrUnsupported)
			}
			k, err := kernels.SelectGEMV(s.tuning, dt, n.N(), n.K, n.SiLU, s.act)
			if err == nil && x16 != 0 {
				k, err = kernels.Find(kernels.Spec{Op: kernels.OpGEMV, DType: dt, Variant: k.Variant | x16, Act: s.act})
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v has no GEMV kernel for %s: %w", n.Weights[0], dt, s.opts.Chip, err)
			}
			return []*kernels.Kernel{k}, nil
		}
		if n.SiLU || fold != 0 {
			return nil, fmt.Errorf("%s: %w: no SiLU-, GLU-, norm- or residual-fused GEMM (those rules are for decode)", n.Label, ErrUnsupported)
		}
		sp := kernels.Spec{Op: kernels.OpGEMM, DType: dt, Variant: x16}
		if rows <= 8 {
			sp.Variant |= kernels.Small
			// Over the decode program's planar buffer where there is one
			// (NVIDIA plans' Q4_0): its GEMV's body for each row.
			if i, ok := s.planar(n); ok && dt == dtype.Q4_0 && x16 == 0 && s.act == dtype.F16 {
				sp.Variant |= kernels.Planar
				if s.plan.Buffers[i].Recipe == kernels.PlanarPairsRecipe(dt) {
					sp.Variant |= kernels.GLU
				}
			}
		}
		ks, err := s.find(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: %v has no GEMM kernel for %s: %w", n.Weights[0], dt, s.opts.Chip, err)
		}
		return ks, nil
	case *Elementwise:
		if err := s.f32Tensor(n.Bias); err != nil {
			return nil, err
		}
		op, ok := map[string]kernels.Op{EwAdd: kernels.OpAdd, EwMul: kernels.OpMul, EwScale: kernels.OpScale,
			EwSiLU: kernels.OpSiLU, EwGELU: kernels.OpGELU, EwSoftcap: kernels.OpSoftcap, EwBiasAdd: kernels.OpBiasAdd,
			EwSiLUGate: kernels.OpSiLUGate, EwGELUGate: kernels.OpGELUGate}[n.Op]
		if !ok {
			return nil, fmt.Errorf("%s: no kernel for elementwise %s", n.Label, n.Op)
		}
		return s.find(kernels.Spec{Op: op})
	case *Rope:
		if err := s.f32Tensor(n.Factors, n.LongFactors); err != nil {
			return nil, err
		}
		return s.find(kernels.Spec{Op: kernels.OpRoPE, Variant: ropeVariant(n.Style) | rowsVariant(p)})
	case *RopeKV:
		if err := s.f32Tensor(n.QNorm, n.KNorm, n.Factors, n.LongFactors); err != nil {
			return nil, err
		}
		sp := kernels.Spec{Op: kernels.OpRoPEQKVWrite, Variant: ropeVariant(n.Style) | rowsVariant(p) | s.kvVar}
		if n.QNorm != "" {
			sp.Op = kernels.OpHeadNormRoPEKVWrite
		}
		return s.find(sp)
	case *Attention:
		if n.Rope != nil {
			if p.batch() {
				return nil, fmt.Errorf("%s: %w: the rotating attention is a decode kernel", n.Label, ErrUnsupported)
			}
			if err := s.f32Tensor(n.Rope.QNorm, n.Rope.KNorm, n.Rope.Factors, n.Rope.LongFactors); err != nil {
				return nil, err
			}
			k, err := kernels.Find(kernels.Spec{Op: kernels.OpAttentionDecodeRoPE, Variant: attnRoPEVariant(n.Rope), Act: s.act})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Label, err)
			}
			r, err := kernels.Find(kernels.Spec{Op: kernels.OpAttentionDecodeReduce, Act: s.act})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Label, err)
			}
			return []*kernels.Kernel{k, r}, nil
		}
		if !p.batch() {
			k, err := kernels.SelectDecodeAttention(s.tuning, s.ctx, s.act)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Label, err)
			}
			if s.kvVar != 0 {
				if k, err = kernels.Find(kernels.Spec{Op: k.Op, Variant: k.Variant | s.kvVar, Act: s.act}); err != nil {
					return nil, fmt.Errorf("%s: %w", n.Label, err)
				}
			}
			if k.Variant&kernels.Parallel == 0 {
				return []*kernels.Kernel{k}, nil
			}
			r, err := kernels.Find(kernels.Spec{Op: kernels.OpAttentionDecodeReduce, Act: s.act})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.Label, err)
			}
			return []*kernels.Kernel{k, r}, nil
		}
		k, err := kernels.SelectPrefillAttention(s.tuning, p.rows, s.act)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Label, err)
		}
		return s.find(kernels.Spec{Op: kernels.OpAttentionPrefill, Variant: k.Variant | kernels.Rows | s.kvVar})
	case *Split:
		return nil, nil
	case *Route, *MatMulID, *MoESum:
		return s.selectMoE(p, n)
	case *Tail:
		switch n.Op {
		case TailGather:
			return s.find(kernels.Spec{Op: kernels.OpGatherRows})
		case TailToHost:
			if s.act == dtype.F32 {
				return s.find(kernels.Spec{Op: kernels.OpCopy})
			}
			return s.find(kernels.Spec{Op: kernels.OpConvert, DType: dtype.F32})
		case TailSample:
			return s.find(kernels.Spec{Op: kernels.OpGumbelTopK})
		case TailArgmax:
			return s.find(kernels.Spec{Op: kernels.OpArgmax})
		case TailPool:
			return s.find(kernels.Spec{Op: kernels.OpPool})
		}
	}
	return nil, fmt.Errorf("%s: %w: no kernel for %s", n.base().Label, ErrUnsupported, n.Kind())
}

// rowsVariant is the Rows flag in a batch program.
func rowsVariant(p *program) kernels.Variant {
	if p.batch() {
		return kernels.Rows
	}
	return 0
}

func ropeVariant(st specs.RopeStyle) kernels.Variant {
	if st == specs.RopeNeox {
		return kernels.NeoX
	}
	return 0
}

// forms are the variant flags of the fused forms a matmul node has taken
// (the glu_fold and norm_fold rules): the planar GEMVs have them.
func forms(n *MatMul) kernels.Variant {
	var v kernels.Variant
	if n.GLU {
		v |= kernels.GLU
	}
	if n.Norm {
		v |= kernels.Norm
	}
	if n.Residual {
		v |= kernels.Residual
	}
	return v
}

// attnRoPEVariant is the variant of the rotating decode attention that
// does what r does: NeoX pairs or not, and the head norm.
func attnRoPEVariant(r *RopeKV) kernels.Variant {
	v := ropeVariant(r.Style)
	if r.QNorm != "" {
		v |= kernels.Norm
	}
	return v
}
