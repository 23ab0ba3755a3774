package kernels

// The parameter structs: one per kernel family, the bytes a command binds at
// its kernel's parameter slot. They are declared here once; the generator
// (internal/gen) writes metal/ShaderTypes.h from them, and layout.go checks
// at start-up that each one has the layout a C compiler gives it.
//
// Rules every struct keeps (checkLayout enforces them):
//   - fields are uint32, int32, float32 or uint16, each tagged with its C name
//     (`c:"kv_len"`); padding is blank fields (`_ uint32`), never implicit;
//   - the size is a multiple of 16 bytes, so a struct can sit in a constant
//     buffer or an array of them without the compiler adding a tail;
//   - a field the runtime rewrites per token carries `patch:"ROLE"`, is a
//     uint32 at a 4-byte-aligned offset, and no role appears twice in a struct.
//
// The patch roles are the plan's patch kinds: "token" (the slot of the token
// ids buffer an embedding reads), "position" (the position of the first
// token), "kv_len" (cached positions attended), "out_slot" (the slot argmax
// writes) and "batch" (the rows of a batch: tokens, or, for the commands
// after a batch's gather_rows, its output rows).
//
// Element counts and strides are in elements of the buffer's dtype, never in
// bytes; byte offsets into buffers are the bindings' business, not the
// parameters'.

// GEMVParams is the parameter struct of every gemv_* kernel:
// y[N] = W[N×K] · x[K] (+ bias[N]), for one token.
type GEMVParams struct {
	N     uint32  `c:"n"`     // output rows: rows of W and elements of y
	K     uint32  `c:"k"`     // elements of x and of one row of W; a multiple of the weight's block size
	Eps   float32 `c:"eps"`   // the RMS norm's epsilon (the _norm forms; 0 otherwise)
	Parts uint32  `c:"parts"` // the _res forms' threadgroups, each a partial Σres²; the _norm forms add them (0 otherwise)
}

// GEMMParams is the parameter struct of the prefill GEMMs (simd_gemm_*):
// Y[M×N] = X[M×K] · W[N×K]ᵀ (+ bias[N]). W's rows are contiguous (its row
// stride follows from K and its dtype), so it has no leading dimension.
type GEMMParams struct {
	M   uint32 `c:"m" patch:"batch"` // rows of X and Y: tokens in this batch (≤ the bucket the grid was sized for)
	N   uint32 `c:"n"`               // output columns: rows of W
	K   uint32 `c:"k"`               // inner dimension: a multiple of the weight's block size
	LDA uint32 `c:"lda"`             // elements between consecutive rows of X (≥ K)
	LDC uint32 `c:"ldc"`             // elements between consecutive rows of Y (≥ N)
	_   uint32
	_   uint32
	_   uint32
}

// EmbeddingParams is the parameter struct of embedding_lookup_*:
// out[i] = table[ids[token_slot + i]] * scale, for i < n_tokens.
type EmbeddingParams struct {
	Dim       uint32  `c:"dim"`                      // elements of one row of the table
	Vocab     uint32  `c:"vocab"`                    // rows of the table; an id ≥ vocab gives a row of zeros
	TokenSlot uint32  `c:"token_slot" patch:"token"` // index in the ids buffer of the first token
	NTokens   uint32  `c:"n_tokens" patch:"batch"`   // rows to look up
	Scale     float32 `c:"scale"`                    // multiplies every element: Gemma's sqrt(dim), 1 otherwise
	OutStride uint32  `c:"out_stride"`               // elements between consecutive rows of out (≥ dim)
	_         uint32
	_         uint32
}

// NormParams is the parameter struct of the RMSNorm and LayerNorm kernels,
// row-wise and per head. Each of n_rows rows holds n_heads slices of dim
// elements, normalized independently (n_heads is 1 for a row norm).
type NormParams struct {
	Dim    uint32  `c:"dim"`                  // elements normalized together
	NRows  uint32  `c:"n_rows" patch:"batch"` // rows: tokens
	NHeads uint32  `c:"n_heads"`              // slices per row: heads for head_rmsnorm, 1 otherwise
	Stride uint32  `c:"stride"`               // elements between consecutive rows, of the input and the output
	Eps    float32 `c:"eps"`                  // added to the variance (mean square) before the square root
	_      uint32
	_      uint32
	_      uint32
}

// RoPEParams is the parameter struct of the stand-alone rope kernels, which
// rotate one tensor of n_tokens rows × n_heads heads in place. The frequency
// of pair i is theta^(-2i/rope_dim) · freq_scale / factors[i] (factors bound
// only when has_factors), adjusted by YaRN when ext_factor ≠ 0.
type RoPEParams struct {
	Position   uint32  `c:"position" patch:"position"` // position of the first row
	NTokens    uint32  `c:"n_tokens" patch:"batch"`    // rows
	NHeads     uint32  `c:"n_heads"`                   // heads per row
	HeadDim    uint32  `c:"head_dim"`                  // elements per head
	RopeDim    uint32  `c:"rope_dim"`                  // leading elements of a head that rotate (≤ head_dim, even)
	Stride     uint32  `c:"stride"`                    // elements between consecutive rows
	OrigCtx    uint32  `c:"orig_ctx"`                  // YaRN: the context length the model was trained with
	Theta      float32 `c:"theta"`                     // the RoPE base (10000, 500000, ...)
	FreqScale  float32 `c:"freq_scale"`                // linear scaling: 1 / scaling factor
	AttnFactor float32 `c:"attn_factor"`               // multiplies cos and sin (YaRN's and Phi-3's mscale); 1 otherwise
	ExtFactor  float32 `c:"ext_factor"`                // YaRN extrapolation mix; 0 disables YaRN
	BetaFast   float32 `c:"beta_fast"`                 // YaRN: the ramp runs from the dimension that turns beta_fast times over orig_ctx (32)
	BetaSlow   float32 `c:"beta_slow"`                 // YaRN: to the one that turns beta_slow times (1)
	_          uint32
	_          uint32
	_          uint32
}

// RoPEQKVWriteParams is the parameter struct of the fused kernels that rotate
// q and k, write k and v into the KV cache at their positions and q to its
// output (rope_qkv_write, rope_neox_qkv_write, head_norm_rope_neox_kv_write).
// The KV cache of a layer is head-major: [n_kv_heads, max_ctx, head_dim] F16,
// so the row of kv head h at position p starts at (h·max_ctx + p)·head_dim.
type RoPEQKVWriteParams struct {
	Position   uint32  `c:"position" patch:"position"` // position of the first token
	NTokens    uint32  `c:"n_tokens" patch:"batch"`    // tokens: 1 in decode
	NHeads     uint32  `c:"n_heads"`                   // query heads
	NKVHeads   uint32  `c:"n_kv_heads"`                // key/value heads
	HeadDim    uint32  `c:"head_dim"`                  // elements per q and k head
	HeadDimV   uint32  `c:"head_dim_v"`                // elements per v head
	RopeDim    uint32  `c:"rope_dim"`                  // leading elements of a head that rotate (≤ head_dim, even)
	MaxCtx     uint32  `c:"max_ctx"`                   // positions per head in the cache: its stride between heads
	QStride    uint32  `c:"q_stride"`                  // elements between consecutive tokens' rows of q (and of q_out)
	KVStride   uint32  `c:"kv_stride"`                 // elements between consecutive tokens' rows of k and of v
	OrigCtx    uint32  `c:"orig_ctx"`                  // YaRN: the context length the model was trained with
	Theta      float32 `c:"theta"`                     // the RoPE base
	FreqScale  float32 `c:"freq_scale"`                // linear scaling: 1 / scaling factor
	AttnFactor float32 `c:"attn_factor"`               // multiplies cos and sin; 1 otherwise
	ExtFactor  float32 `c:"ext_factor"`                // YaRN extrapolation mix; 0 disables YaRN
	BetaFast   float32 `c:"beta_fast"`                 // YaRN: the ramp runs from the dimension that turns beta_fast times over orig_ctx (32)
	BetaSlow   float32 `c:"beta_slow"`                 // YaRN: to the one that turns beta_slow times (1)
	Eps        float32 `c:"eps"`                       // head_norm_rope_*: the per-head RMSNorm epsilon; unused otherwise
	_          uint32
	_          uint32
}

// AttentionParams is the parameter struct of the flash-attention kernels,
// decode and prefill: softmax(softcap(scale · q·kᵀ)) · v over the cached keys
// of one layer, causal, optionally limited to a sliding window. Query head h
// reads kv head h / (n_heads / n_kv_heads).
type AttentionParams struct {
	NHeads   uint32  `c:"n_heads"`                   // query heads
	NKVHeads uint32  `c:"n_kv_heads"`                // key/value heads; divides n_heads
	HeadDim  uint32  `c:"head_dim"`                  // elements per q and k head (equals the head_dim constant)
	HeadDimV uint32  `c:"head_dim_v"`                // elements per v head and output head
	KVLen    uint32  `c:"kv_len" patch:"kv_len"`     // cached positions after this batch is written: position + n_tokens
	MaxCtx   uint32  `c:"max_ctx"`                   // positions per head in the cache: its stride between heads
	Position uint32  `c:"position" patch:"position"` // position of the first query
	NTokens  uint32  `c:"n_tokens" patch:"batch"`    // queries: 1 in decode
	Window   uint32  `c:"window"`                    // sliding window: a query at p sees keys > p - window; 0 = all
	QStride  uint32  `c:"q_stride"`                  // elements between consecutive tokens' rows of q
	OStride  uint32  `c:"o_stride"`                  // elements between consecutive tokens' rows of out
	Scale    float32 `c:"scale"`                     // multiplies q·k: 1/sqrt(head_dim) for most models
	Softcap  float32 `c:"softcap"`                   // > 0: scores become softcap · tanh(scores / softcap) (Gemma 2)
	_        uint32
	_        uint32
	_        uint32
}

// AttentionRoPEParams is the parameter struct of the decode attention that
// rotates its own q and k (flash_attention_decode_rope_*): AttentionParams'
// fields, then RoPEQKVWriteParams' rotation, for one token at position.
type AttentionRoPEParams struct {
	NHeads     uint32  `c:"n_heads"`                   // query heads
	NKVHeads   uint32  `c:"n_kv_heads"`                // key/value heads; divides n_heads
	HeadDim    uint32  `c:"head_dim"`                  // elements per q and k head (equals the head_dim constant)
	HeadDimV   uint32  `c:"head_dim_v"`                // elements per v head and output head
	KVLen      uint32  `c:"kv_len" patch:"kv_len"`     // cached positions after this token is written: position + 1
	MaxCtx     uint32  `c:"max_ctx"`                   // positions per head in the cache: its stride between heads
	Position   uint32  `c:"position" patch:"position"` // the token's position
	Window     uint32  `c:"window"`                    // sliding window: the query sees keys > position - window; 0 = all
	Scale      float32 `c:"scale"`                     // multiplies q·k
	Softcap    float32 `c:"softcap"`                   // > 0: scores become softcap · tanh(scores / softcap)
	RopeDim    uint32  `c:"rope_dim"`                  // leading elements of a head that rotate (≤ head_dim, even)
	OrigCtx    uint32  `c:"orig_ctx"`                  // YaRN: the context length the model was trained with
	Theta      float32 `c:"theta"`                     // the RoPE base
	FreqScale  float32 `c:"freq_scale"`                // linear scaling: 1 / scaling factor
	AttnFactor float32 `c:"attn_factor"`               // multiplies cos and sin; 1 otherwise
	ExtFactor  float32 `c:"ext_factor"`                // YaRN extrapolation mix; 0 disables YaRN
	BetaFast   float32 `c:"beta_fast"`                 // YaRN ramp start
	BetaSlow   float32 `c:"beta_slow"`                 // YaRN ramp end
	Eps        float32 `c:"eps"`                       // the _norm forms: the per-head RMSNorm epsilon
	_          uint32
}

// ElementwiseParams is the parameter struct of the elementwise kernels (add,
// mul, scale, softcap, silu, gelu, the gates, bias_add, copy, convert): n_rows
// rows of n_cols elements, each operand with its own row stride, so that a
// row can be read out of a wider buffer (gate|up) without a copy.
type ElementwiseParams struct {
	NRows     uint32  `c:"n_rows" patch:"batch"` // rows: tokens
	NCols     uint32  `c:"n_cols"`               // elements per row
	AStride   uint32  `c:"a_stride"`             // elements between rows of the first input
	BStride   uint32  `c:"b_stride"`             // of the second input (binary ops and gates; else 0)
	OutStride uint32  `c:"out_stride"`           // of the output
	Alpha     float32 `c:"alpha"`                // scale: the factor; softcap: the cap; else 0
	_         uint32
	_         uint32
}

// ArgmaxParams is the parameter struct of argmax_*: for each of n_rows rows
// r of n logits, ids[out_slot + r] = the index of the row's largest logit
// (the lowest index among equals). n_rows 0 means 1: a format-1 plan's
// argmax, which had padding there.
type ArgmaxParams struct {
	N       uint32 `c:"n"`                         // logits per row: the vocabulary size
	OutSlot uint32 `c:"out_slot" patch:"out_slot"` // slot of the ids buffer written for row 0: the next token's
	NRows   uint32 `c:"n_rows" patch:"batch"`      // rows of logits, n apart: a batch's output rows; 1 in decode
	_       uint32
}

// SamplingParams is the parameter struct of gumbel_topk_*: logits outside
// top_k, top_p and min_p become -inf, the rest logits/temperature + Gumbel
// noise drawn from (seed, position), so that argmax then samples the
// tempered distribution.
type SamplingParams struct {
	Vocab       uint32  `c:"vocab"`                     // logits
	TopK        uint32  `c:"top_k"`                     // keep the k largest; 0 = all
	Seed        uint32  `c:"seed"`                      // the RNG stream
	Position    uint32  `c:"position" patch:"position"` // the RNG counter: the position of the token sampled
	Temperature float32 `c:"temperature"`               // > 0
	TopP        float32 `c:"top_p"`                     // keep the smallest set with probability ≥ top_p; 1 = all
	MinP        float32 `c:"min_p"`                     // drop tokens less probable than min_p × the top one; 0 = none
	_           uint32
}

// PoolParams is the parameter struct of pool_*: output j (j < n_rows) is
// the rows [ranges[2j], ranges[2j+1]) of x, pooled by the pooling constant
// (mean, first row, last row) and, with l2_normalize, divided by its L2 norm:
// one embedding per input of a batch whose inputs are packed back to back.
// out is F32, n_rows rows of dim, contiguous: what the host reads.
type PoolParams struct {
	Dim     uint32 `c:"dim"`                  // elements of a row of x and of a pooled vector
	NRows   uint32 `c:"n_rows" patch:"batch"` // pooled vectors: the batch's inputs
	AStride uint32 `c:"a_stride"`             // elements between consecutive rows of x (≥ dim)
	_       uint32
}

// MoERouteParams is the parameter struct of moe_route_*: for each row r <
// n_rows, the router's n_expert logits (at r·a_stride) become
// probabilities by a softmax in float (max-subtracted), the k largest are
// chosen (equal ones: the lower expert first), and their experts and
// probabilities are written, in descending order, to ids[r·k + j] (uint32)
// and weights[r·k + j] (F32); with the norm_w constant the k weights are
// divided by their sum (llama.cpp's build_moe_ffn with softmax gating).
type MoERouteParams struct {
	NExpert uint32 `c:"n_expert"`             // logits per row: the experts (1..1024)
	K       uint32 `c:"k"`                    // experts chosen per row (1..min(32, n_expert))
	NRows   uint32 `c:"n_rows" patch:"batch"` // rows: tokens
	AStride uint32 `c:"a_stride"`             // elements between consecutive rows of logits (≥ n_expert)
}

// GEMVIDParams is the parameter struct of gemv_id_*: the expert-indexed
// GEMV of a mixture-of-experts FFN. W is n_expert matrices of n rows × k
// elements back to back (each row stored as a GEMV's), and for row r <
// n_rows and slot j < n_slots, with e = ids[r·n_slots + j],
// y[r·y_stride + j·n + i] = W_e[i]·x[r·x_stride + j·x_slot ...], i < n. An
// e ≥ n_expert gives zeros.
type GEMVIDParams struct {
	N       uint32 `c:"n"`                    // output rows of one expert's matrix
	K       uint32 `c:"k"`                    // elements of x per slot and of a weight row; whole blocks of the weight's dtype
	NSlots  uint32 `c:"n_slots"`              // experts per row: the route's k
	NRows   uint32 `c:"n_rows" patch:"batch"` // rows: tokens
	NExpert uint32 `c:"n_expert"`             // matrices in W; a larger id gives zeros
	XStride uint32 `c:"x_stride"`             // elements between consecutive rows of x
	XSlot   uint32 `c:"x_slot"`               // elements between the slots of a row of x: 0, one x a row (gate, up); k, one per slot (down)
	YStride uint32 `c:"y_stride"`             // elements between consecutive rows of y (≥ n_slots·n)
}

// MoESumParams is the parameter struct of moe_sum_*: out[r·out_stride + i] =
// Σ_j weights[r·n_slots + j] · y[r·y_stride + j·n + i], i < n, r < n_rows,
// summed in float in slot order from slot 0: the weighted sum of a row's
// experts' outputs.
type MoESumParams struct {
	N         uint32 `c:"n"`                    // elements of one expert's output (and of a row of out)
	NSlots    uint32 `c:"n_slots"`              // experts per row
	NRows     uint32 `c:"n_rows" patch:"batch"` // rows: tokens
	YStride   uint32 `c:"y_stride"`             // elements between consecutive rows of y (≥ n_slots·n)
	OutStride uint32 `c:"out_stride"`           // elements between consecutive rows of out (≥ n)
	_         uint32
	_         uint32
	_         uint32
}

// paramStructs lists the parameter structs in the order ShaderTypes.h
// declares them.
var paramStructs = []any{
	GEMVParams{},
	GEMMParams{},
	EmbeddingParams{},
	NormParams{},
	RoPEParams{},
	RoPEQKVWriteParams{},
	AttentionParams{},
	AttentionRoPEParams{},
	ElementwiseParams{},
	ArgmaxParams{},
	SamplingParams{},
	PoolParams{},
	MoERouteParams{},
	GEMVIDParams{},
	MoESumParams{},
}
