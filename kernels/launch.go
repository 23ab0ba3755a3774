package kernels

import (
	"errors"
	"fmt"

	"github.com/akunu-dev/akunu/specs/chips"
)

// ErrLaunch is wrapped by CheckLaunch's errors.
var ErrLaunch = errors.New("launch does not follow the kernel's geometry rule")

// ShapeOf recovers the shape a command of kernel k was sized for from its
// worst-case parameters and its pipeline's constants (x, as CheckExtents
// takes it): the inverse of the compiler's shape → parameters step, one
// parameter field per shape field. A patched row count is at its largest,
// which is the value the command's grid was sized for.
func (k *Kernel) ShapeOf(x *Extents) (Shape, error) {
	r := &rule{k: k, x: x}
	if len(x.Params) != k.Params.Size {
		return Shape{}, fmt.Errorf("%d parameter bytes, %s takes %d: %w", len(x.Params), k.Name, k.Params.Size, ErrLaunch)
	}
	i := func(name string) int { return int(min(r.u(name), 1<<31-1)) }
	var s Shape
	switch k.Op {
	case OpGEMV:
		s = Shape{N: i("n"), K: i("k"), Bias: r.on("has_bias")}
	case OpGEMM:
		s = Shape{Tokens: i("m"), N: i("n"), K: i("k"), Bias: r.on("has_bias")}
	case OpEmbedding:
		s = Shape{Tokens: i("n_tokens"), Dim: i("dim")}
	case OpRMSNorm, OpLayerNorm, OpHeadRMSNorm:
		s = Shape{Tokens: i("n_rows"), Dim: i("dim"), Heads: i("n_heads"), Bias: r.on("has_bias")}
	case OpRoPE:
		s = Shape{Tokens: i("n_tokens"), Heads: i("n_heads"), HeadDim: i("head_dim"), Factors: r.on("has_factors")}
	case OpRoPEQKVWrite, OpHeadNormRoPEKVWrite:
		s = Shape{Tokens: i("n_tokens"), Heads: i("n_heads"), KVHeads: i("n_kv_heads"), HeadDim: i("head_dim"),
			HeadDimV: i("head_dim_v"), Factors: r.on("has_factors")}
	case OpAttentionDecodeRoPE:
		s = Shape{Tokens: 1, Heads: i("n_heads"), KVHeads: i("n_kv_heads"), HeadDim: i("head_dim"), HeadDimV: i("head_dim_v"),
			MaxCtx: i("max_ctx"), Softcap: r.on("has_softcap"), Window: r.on("has_window"), Factors: r.on("has_factors")}
	case OpAttentionDecode, OpAttentionPrefill, OpAttentionDecodeReduce:
		s = Shape{Tokens: i("n_tokens"), Heads: i("n_heads"), KVHeads: i("n_kv_heads"), HeadDim: i("head_dim"),
			HeadDimV: i("head_dim_v"), MaxCtx: i("max_ctx"), Softcap: r.on("has_softcap"), Window: r.on("has_window")}
	case OpArgmax:
		s = Shape{Tokens: i("n_rows"), Vocab: i("n")}
	case OpGumbelTopK:
		s = Shape{Vocab: i("vocab")}
	case OpBiasAdd, OpAdd, OpMul, OpScale, OpSoftcap, OpSiLU, OpGELU, OpSiLUGate, OpGELUGate, OpCopy, OpConvert, OpGatherRows:
		s = Shape{Tokens: i("n_rows"), Dim: i("n_cols"), LastRow: r.on("last_row")}
	case OpPool:
		m, _ := r.constant("pooling")
		s = Shape{Tokens: i("n_rows"), Dim: i("dim"), Pooling: int(min(m, 1<<31-1)), Normalize: r.on("l2_normalize")}
	case OpMoERoute:
		s = Shape{Tokens: i("n_rows"), Experts: i("n_expert"), Slots: i("k"), Norm: r.on("norm_w")}
	case OpGEMVID, OpGEMMID:
		s = Shape{Tokens: i("n_rows"), N: i("n"), K: i("k"), Experts: i("n_expert"), Slots: i("n_slots")}
	case OpMoESum:
		s = Shape{Tokens: i("n_rows"), Dim: i("n"), Slots: i("n_slots")}
	default:
		return Shape{}, fmt.Errorf("%s: no shape recovery for op %v: %w", k.Name, k.Op, ErrLaunch)
	}
	if r.err != nil {
		return Shape{}, fmt.Errorf("%v: %w", r.err, ErrLaunch)
	}
	return s, nil
}

// CheckLaunch checks a command's launch against kernel k's geometry rule
// for the shape its parameters give (ShapeOf) under tuning t: the grid,
// the threadgroup and its memory must be what the rule gives. A patched
// row count is at its largest in x, which is the compiled value (Resolve
// refuses a patch that writes more), and no rule reads a patched position
// or kv_len, so a grid that follows the rule at the largest patched values
// is the rule's grid: equality, not a bound. The error gives both
// launches and the shape.
func (k *Kernel) CheckLaunch(x *Extents, t chips.Tuning, grid, tg [3]uint32, tgMem uint32) error {
	s, err := k.ShapeOf(x)
	if err != nil {
		return err
	}
	l, err := k.Geometry(s, t)
	if err != nil {
		return fmt.Errorf("%v (shape %s): %w", err, s, ErrLaunch)
	}
	var want [3]uint32
	for d := range 3 {
		want[d] = uint32(min(l.Grid[d], 1<<32-1))
		if tg[d] != uint32(l.Threadgroup[d]) {
			return fmt.Errorf("%s: threadgroup %v, the rule gives %v for %s: %w", k.Name, tg, l.Threadgroup, s, ErrLaunch)
		}
	}
	for d := range 3 {
		if grid[d] != want[d] {
			return fmt.Errorf("%s: grid %v, the rule gives %v for %s: %w", k.Name, grid, want, s, ErrLaunch)
		}
	}
	if int(tgMem) != l.TGMem {
		return fmt.Errorf("%s: %d bytes of threadgroup memory, the rule gives %d for %s: %w", k.Name, tgMem, l.TGMem, s, ErrLaunch)
	}
	return nil
}

// String renders the shape's non-zero fields, as "N=1024 K=4096".
func (s Shape) String() string {
	out := ""
	add := func(name string, v int) {
		if v != 0 {
			if out != "" {
				out += " "
			}
			out += fmt.Sprintf("%s=%d", name, v)
		}
	}
	add("Tokens", s.Tokens)
	add("N", s.N)
	add("K", s.K)
	add("Dim", s.Dim)
	add("Vocab", s.Vocab)
	add("Heads", s.Heads)
	add("KVHeads", s.KVHeads)
	add("HeadDim", s.HeadDim)
	add("HeadDimV", s.HeadDimV)
	add("MaxCtx", s.MaxCtx)
	add("Experts", s.Experts)
	add("Slots", s.Slots)
	return out
}
