package kernels

import (
	"fmt"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/specs/chips"
)

// Op is a kernel family: kernels of one op share their bindings, parameter
// struct and geometry rule, and differ by weight dtype, variant and
// activation dtype.
type Op uint8

const (
	OpInvalid               Op = iota
	OpGEMV                     // y = W·x for one token
	OpGEMM                     // Y = X·Wᵀ for a prefill batch
	OpEmbedding                // rows of the token embedding table
	OpRMSNorm                  // x / rms(x) · w
	OpLayerNorm                // (x - mean) / std · w + b
	OpHeadRMSNorm              // RMSNorm of each head, in place
	OpRoPE                     // rotary embedding of one tensor, in place
	OpRoPEQKVWrite             // RoPE of q and k, k and v into the KV cache
	OpHeadNormRoPEKVWrite      // per-head RMSNorm of q and k, then OpRoPEQKVWrite
	OpAttentionDecode          // flash attention, one query per head
	OpAttentionDecodeReduce    // merges the partial results of the parallel decode kernel
	OpAttentionPrefill         // flash attention, a batch of queries, causal
	OpBiasAdd                  // x += bias, broadcast over rows
	OpAdd                      // out = a + b
	OpMul                      // out = a * b
	OpScale                    // out = x · alpha
	OpSoftcap                  // out = alpha · tanh(x / alpha)
	OpSiLU                     // out = x · sigmoid(x)
	OpGELU                     // out = gelu(x), tanh approximation
	OpSiLUGate                 // out = silu(gate) · up
	OpGELUGate                 // out = gelu(gate) · up
	OpCopy                     // out = x
	OpConvert                  // out = x, converted to another dtype
	OpArgmax                   // ids[slot] = argmax(logits)
	OpGumbelTopK               // logits = masked(logits)/T + Gumbel noise
	OpGatherRows               // out[j] = x[rows[j]]: the rows of a batch that produce outputs
	OpPool                     // out[j] = the pooled rows of input j, L2-normalized or not: an embedding per input
	OpMoERoute                 // the k experts of each row: softmax of the router logits, top k, ids and weights
	OpGEMVID                   // y[r, j] = W[ids[r, j]]·x[r, j]: the expert-indexed matrix product of a MoE FFN
	OpMoESum                   // out[r] = Σ_j weights[r, j]·y[r, j]: the experts' outputs of a row, weighted
	OpGEMMID                   // OpGEMVID for a batch: the rows grouped by expert, a GEMM per expert
	OpAttentionDecodeRoPE      // the parallel decode attention rotating (and head-normalizing) its q and k and writing k, v to the cache
	numOps
)

// opNames are the ops' names in JSON and messages.
var opNames = [numOps]string{
	"invalid", "gemv", "gemm", "embedding", "rmsnorm", "layernorm", "head_rmsnorm",
	"rope", "rope_qkv_write", "head_norm_rope_kv_write", "attention_decode",
	"attention_decode_reduce", "attention_prefill", "bias_add", "add", "mul", "scale",
	"softcap", "silu", "gelu", "silu_gate", "gelu_gate", "copy", "convert", "argmax",
	"gumbel_topk", "gather_rows", "pool", "moe_route", "gemv_id", "moe_sum",
	"gemm_id", "attention_decode_rope",
}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// MarshalText writes the op's name.
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Typed reports whether the op's kernels are specialized by a dtype other
// than the activations' (the weight's, the table's, or a conversion's
// target), which then appears in their names.
func (o Op) Typed() bool {
	switch o {
	case OpGEMV, OpGEMM, OpEmbedding, OpConvert, OpGEMVID, OpGEMMID:
		return true
	}
	return false
}

// Variant is a set of flags that select a kernel's shape within its op.
type Variant uint16

const (
	LargeK      Variant = 1 << iota // GEMV: a row split across SIMD groups (_l)
	Wide                            // GEMV: many rows per threadgroup for large N (gemv_wide_)
	SiLU                            // GEMV: silu(gate)·up computed on the fly from x (_silu)
	Small                           // GEMM: 2–8 rows (simd_gemm_small_)
	Residual                        // norms: residual += x first, the sum normalized (residual_)
	NeoX                            // RoPE: pairs (i, i+d/2) rather than (2i, 2i+1) (_neox)
	Fast                            // decode attention: tiled over the KV range (_fast)
	Parallel                        // decode attention: KV range split over threadgroups (_parallel)
	V2                              // prefill attention: tiled over queries and keys (_v2)
	Rows                            // RoPE, KV writes, prefill attention: each row's position and sequence slot from io buffers (_rows)
	X16                             // GEMV, GEMM: the weight repacked in 16-row interleaved groups (_x16; docs/formats.md)
	KVQ8                            // KV writes, attention: the KV cache in Q8_0 blocks, not F16 (_kvq8_0)
	KVF32                           // KV writes, attention: the KV cache in F32 (_kvf32)
	Planar                          // GEMV, small GEMM: the weight's quants and scales in two planes (_planar; docs/formats.md#planar)
	GLU                             // GEMV: W's rows gate and up in turn; y[i] = silu(row 2i·x)·(row 2i+1·x) (_glu); planar small GEMM: W's rows gate and up in turn, Y written gate rows then up rows
	Norm                            // GEMV: x is a _res GEMV's res·norm_w; the product is scaled by 1/rms(res) (_norm)
	numVariants = iota
)

var variantNames = [numVariants]string{"large_k", "wide", "silu", "small", "residual", "neox", "fast", "parallel", "v2", "rows", "x16", "kv_q8_0", "kv_f32", "planar", "glu", "norm"}

// KVTypes are the types a KV cache can be stored in, the default first;
// kvVariants are their variant flags (F16 has none).
var (
	KVTypes    = []dtype.Type{dtype.F16, dtype.Q8_0, dtype.F32}
	kvVariants = []Variant{0, KVQ8, KVF32}
)

// KVVariant is the variant flag of a KV cache of type t; ok is false for a
// type no kernel stores the cache in.
func KVVariant(t dtype.Type) (v Variant, ok bool) {
	for i, k := range KVTypes {
		if k == t {
			return kvVariants[i], true
		}
	}
	return 0, false
}

// Names lists the flags of v, in declaration order.
func (v Variant) Names() []string {
	out := []string{}
	for i := range numVariants {
		if v&(1<<i) != 0 {
			out = append(out, variantNames[i])
		}
	}
	if rest := v &^ (1<<numVariants - 1); rest != 0 {
		out = append(out, fmt.Sprintf("0x%x", uint16(rest)))
	}
	return out
}

func (v Variant) String() string {
	if v == 0 {
		return "standard"
	}
	return strings.Join(v.Names(), "+")
}

// allowed lists the variant flags each op's names can carry.
var allowed = [numOps]Variant{
	OpGEMV:                LargeK | Wide | SiLU | X16 | Planar | GLU | Norm | Residual,
	OpGEMM:                Small | X16 | Planar | GLU,
	OpRMSNorm:             Residual,
	OpLayerNorm:           Residual,
	OpRoPE:                NeoX | Rows,
	OpRoPEQKVWrite:        NeoX | Rows | KVQ8 | KVF32,
	OpHeadNormRoPEKVWrite: NeoX | Rows | KVQ8 | KVF32,
	OpAttentionDecode:     Fast | Parallel | KVQ8 | KVF32,
	OpAttentionPrefill:    V2 | Rows | KVQ8 | KVF32,
	OpAttentionDecodeRoPE: NeoX | Norm,
}

// Spec identifies a kernel by what it does: its op, the dtype of its weight
// (ops that have one: Op.Typed), its variant and the dtype of its
// activations (F16 in Apple plans; F32 in CPU plans). Spec.Name turns it into
// the kernel's name.
type Spec struct {
	Op      Op         `json:"op"`
	DType   dtype.Type `json:"-"` // the weight's (table's, conversion target's) type; ignored unless Op.Typed
	Variant Variant    `json:"-"`
	Act     dtype.Type `json:"-"` // F16 or F32
}

// Name is THE naming convention: the only code that knows how a kernel's
// name is spelled. It follows the akunu engine's names:
//
//	gemv[_wide]_<dtype>[_x16|_planar[_glu]][_l][_silu|_norm|_res][_f32]  gemv_q4_0, gemv_q4_0_l, gemv_wide_q6_k, gemv_q4_k_silu, gemv_q4_0_x16_f32, gemv_q4_0_planar, gemv_q4_0_planar_glu, gemv_q4_0_planar_norm, gemv_q4_0_planar_glu_norm, gemv_q4_0_planar_res
//	simd_gemm[_small]_<dtype>[_x16|_planar[_glu]][_f32]  simd_gemm_q8_0, simd_gemm_small_f16, simd_gemm_q4_0_x16_f32, simd_gemm_small_q4_0_planar
//	gemv_id_<dtype>[_f32]                     gemv_id_q4_k, gemv_id_q8_0_f32
//	gemm_id_<dtype>[_f32]                     gemm_id_q4_0, gemm_id_q6_k_f32
//	embedding_lookup_<dtype>[_f32]            embedding_lookup_q6_k
//	convert_<act>_to_<dtype>                  convert_f16_to_f32
//	[residual_]rmsnorm_<act>, [residual_]layernorm_<act>, head_rmsnorm_<act>
//	rope[_neox][_rows]_<act>, rope[_neox]_qkv_write[_rows][_kv]_<act>, head_norm_rope[_neox]_kv_write[_rows][_kv]_<act>
//	flash_attention_decode[_fast|_parallel][_kv]_<act>, flash_attention_decode_reduce_<act>, flash_attention_decode_rope[_neox][_norm]_<act>
//	flash_attention_prefill[_v2][_rows][_kv]_<act>
//	<op>_<act> for the rest: add_f16, silu_gate_f16, argmax_f16, gumbel_topk_f16, pool_f16, moe_route_f16, moe_sum_f32, ...
//
// <dtype> is the GGML name in lower case (q4_k). Kernels with a weight carry
// the weight's dtype in their name and, as in the engine, say nothing of F16
// activations; their F32-activation twins end in _f32. The other kernels
// always end in their activation dtype. [_kv] is the KV cache's type where
// it is not F16: _kvq8_0 or _kvf32 (flash_attention_decode_kvq8_0_f32).
func (s Spec) Name() (string, error) {
	if s.Op == OpInvalid || s.Op >= numOps {
		return "", fmt.Errorf("kernels: invalid op %v", s.Op)
	}
	if s.Act != dtype.F16 && s.Act != dtype.F32 {
		return "", fmt.Errorf("kernels: %v: activations are F16 or F32, not %v", s.Op, s.Act)
	}
	if bad := s.Variant &^ allowed[s.Op]; bad != 0 {
		return "", fmt.Errorf("kernels: %v has no %v variant", s.Op, bad)
	}
	if s.Variant&(LargeK|Wide) == LargeK|Wide || s.Variant&(Fast|Parallel) == Fast|Parallel || s.Variant&X16 != 0 && s.Variant&(LargeK|Wide) != 0 ||
		s.Variant&Planar != 0 && s.Variant&(SiLU|X16) != 0 || s.Op == OpGEMM && s.Variant&Planar != 0 && s.Variant&Small == 0 ||
		s.Variant&GLU != 0 && s.Variant&(LargeK|Wide|SiLU|X16|Planar) != Planar ||
		s.Op == OpGEMV && s.Variant&(Norm|Residual) != 0 && s.Variant&(Norm|Residual|SiLU|X16) != s.Variant&(Norm|Residual) ||
		s.Variant&(KVQ8|KVF32) == KVQ8|KVF32 {
		return "", fmt.Errorf("kernels: %v: variants %v exclude each other", s.Op, s.Variant)
	}
	dt := ""
	if s.Op.Typed() {
		info, ok := s.DType.Lookup()
		if !ok {
			return "", fmt.Errorf("kernels: %v: %w: code %d", s.Op, dtype.ErrUnknownType, uint32(s.DType))
		}
		dt = strings.ToLower(info.Name)
	}
	act := strings.ToLower(s.Act.String())
	// actTail is the suffix of kernels with a weight: none for F16.
	actTail := ""
	if s.Act != dtype.F16 {
		actTail = "_" + act
	}
	v := s.Variant
	flag := func(f Variant, text string) string {
		if v&f != 0 {
			return text
		}
		return ""
	}
	// kv is the KV cache's type where it is not F16.
	kv := flag(KVQ8, "_kvq8_0") + flag(KVF32, "_kvf32")
	switch s.Op {
	case OpGEMV:
		return "gemv" + flag(Wide, "_wide") + "_" + dt + flag(X16, "_x16") + flag(Planar, "_planar") + flag(GLU, "_glu") + flag(LargeK, "_l") + flag(SiLU, "_silu") + flag(Norm, "_norm") + flag(Residual, "_res") + actTail, nil
	case OpGEMM:
		return "simd_gemm" + flag(Small, "_small") + "_" + dt + flag(X16, "_x16") + flag(Planar, "_planar") + flag(GLU, "_glu") + actTail, nil
	case OpGEMVID:
		return "gemv_id_" + dt + actTail, nil
	case OpGEMMID:
		return "gemm_id_" + dt + actTail, nil
	case OpEmbedding:
		return "embedding_lookup_" + dt + actTail, nil
	case OpConvert:
		return "convert_" + act + "_to_" + dt, nil
	case OpRMSNorm, OpLayerNorm:
		return flag(Residual, "residual_") + s.Op.String() + "_" + act, nil
	case OpRoPE:
		return "rope" + flag(NeoX, "_neox") + flag(Rows, "_rows") + "_" + act, nil
	case OpRoPEQKVWrite:
		return "rope" + flag(NeoX, "_neox") + "_qkv_write" + flag(Rows, "_rows") + kv + "_" + act, nil
	case OpHeadNormRoPEKVWrite:
		return "head_norm_rope" + flag(NeoX, "_neox") + "_kv_write" + flag(Rows, "_rows") + kv + "_" + act, nil
	case OpAttentionDecode:
		return "flash_attention_decode" + flag(Fast, "_fast") + flag(Parallel, "_parallel") + kv + "_" + act, nil
	case OpAttentionDecodeReduce:
		return "flash_attention_decode_reduce_" + act, nil
	case OpAttentionDecodeRoPE:
		return "flash_attention_decode_rope" + flag(NeoX, "_neox") + flag(Norm, "_norm") + "_" + act, nil
	case OpAttentionPrefill:
		return "flash_attention_prefill" + flag(V2, "_v2") + flag(Rows, "_rows") + kv + "_" + act, nil
	}
	return s.Op.String() + "_" + act, nil
}

// name is Spec.Name for the helpers below: "" when the spec is invalid, a
// name no kernel has.
func name(s Spec) string {
	n, err := s.Name()
	if err != nil {
		return ""
	}
	return n
}

// GEMVName is the name of the GEMV kernel for weights of type dt, variant v
// (LargeK, Wide, SiLU) and activations act. It is a name by the convention;
// whether the catalog has the kernel is Lookup's answer ("" for an invalid
// combination).
func GEMVName(dt dtype.Type, v Variant, act dtype.Type) string {
	return name(Spec{Op: OpGEMV, DType: dt, Variant: v, Act: act})
}

// GEMMName is the name of the prefill GEMM for weights of type dt; small
// picks the kernel for 2–8 rows.
func GEMMName(dt dtype.Type, small bool, act dtype.Type) string {
	v := Variant(0)
	if small {
		v = Small
	}
	return name(Spec{Op: OpGEMM, DType: dt, Variant: v, Act: act})
}

// GEMVIDName is the name of the expert-indexed GEMV (a MoE FFN's gate, up
// and down projections) for expert matrices of type dt.
func GEMVIDName(dt, act dtype.Type) string {
	return name(Spec{Op: OpGEMVID, DType: dt, Act: act})
}

// GEMMIDName is the name of the expert-indexed GEMM, gemv_id's form for a
// batch (the rows grouped by expert), for expert matrices of type dt.
func GEMMIDName(dt, act dtype.Type) string {
	return name(Spec{Op: OpGEMMID, DType: dt, Act: act})
}

// EmbeddingName is the name of the embedding lookup in a table of type dt,
// writing activations of type act.
func EmbeddingName(dt, act dtype.Type) string {
	return name(Spec{Op: OpEmbedding, DType: dt, Act: act})
}

// OpName is the name of a kernel of an op without a weight (norms, RoPE,
// attention, elementwise, sampling) with variant v and activations act.
func OpName(op Op, v Variant, act dtype.Type) string {
	return name(Spec{Op: op, Variant: v, Act: act})
}

// GEMVVariant turns the chip tuning's choice into variant flags.
func GEMVVariant(v chips.GEMVVariant) (Variant, error) {
	switch v {
	case chips.GEMVStandard, "":
		return 0, nil
	case chips.GEMVLargeK:
		return LargeK, nil
	case chips.GEMVWide:
		return Wide, nil
	}
	return 0, fmt.Errorf("kernels: unknown GEMV variant %q", v)
}

// AttentionVariant turns the chip tuning's choice of attention kernel into
// variant flags (of OpAttentionDecode or OpAttentionPrefill).
func AttentionVariant(v chips.AttnVariant) (Variant, error) {
	switch v {
	case chips.AttnStandard, chips.AttnV1, "":
		return 0, nil
	case chips.AttnFast:
		return Fast, nil
	case chips.AttnParallel:
		return Parallel, nil
	case chips.AttnV2:
		return V2, nil
	}
	return 0, fmt.Errorf("kernels: unknown attention variant %q", v)
}
