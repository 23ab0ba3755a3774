package kernels

import (
	"slices"
	"strings"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// family describes the kernels of one op: what they bind, their parameter
// struct, their constants, their geometry rule, and which specs exist.
type family struct {
	op          Op
	params      any // a zero value of the parameter struct
	summary     func(Spec) string
	bindings    func(Spec) []Binding // slots are their order; the parameter struct is appended
	constants   func(Spec) []Constant
	geometry    geometryRule
	geometryDoc func(Spec) string // the rule in one line
	instances   func() []Spec
}

// weightTypes are the weight dtypes with GEMV, GEMM and embedding kernels:
// the types llama.cpp's quantizer writes for the supported architectures
// (Q4_K_M and Q5_K_M files mix in Q6_K and Q8_0; Q2_K and Q3_K files in
// Q4_K, Q5_K and Q6_K; BF16 from recent converters), and the two I-quants
// without a codebook, IQ4_NL and IQ4_XS (ADR 0018). Others (the grid
// I-quants IQ1/IQ2/IQ3, TQ*, MXFP4) have no kernel: a model using one fails
// to compile with ErrNoKernel.
var weightTypes = []dtype.Type{
	dtype.F32, dtype.F16, dtype.Q4_0, dtype.Q4_1, dtype.Q5_0, dtype.Q5_1,
	dtype.Q8_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.BF16,
	dtype.Q2_K, dtype.Q3_K, dtype.IQ4_NL, dtype.IQ4_XS,
}

// largeKTypes have the large-K GEMV (_l): the 4-bit types, and Q6_K, as
// the tuning's LargeKTypes name them.
var largeKTypes = []dtype.Type{dtype.Q4_0, dtype.Q4_1, dtype.Q4_K, dtype.IQ4_NL, dtype.IQ4_XS, dtype.Q6_K}

// acts are the activation dtypes: F16 (Apple plans), F32 (CPU plans).
var acts = []dtype.Type{dtype.F16, dtype.F32}

// specs lists op × acts × variants (no weight type).
func specs(op Op, actList []dtype.Type, variants ...Variant) []Spec {
	if len(variants) == 0 {
		variants = []Variant{0}
	}
	var out []Spec
	for _, a := range actList {
		for _, v := range variants {
			out = append(out, Spec{Op: op, Variant: v, Act: a})
		}
	}
	return out
}

// typed lists op × acts × weight types × variants.
func typed(op Op, actList, types []dtype.Type, variants ...Variant) []Spec {
	var out []Spec
	for _, a := range actList {
		for _, dt := range types {
			for _, v := range variants {
				out = append(out, Spec{Op: op, DType: dt, Variant: v, Act: a})
			}
		}
	}
	return out
}

var f16Only = []dtype.Type{dtype.F16}

// kvSpecs lists op × variants with a Q8_0 and an F32 KV cache: F32
// activations only, the CPU's (the GPU kernels read an F16 cache; ADR 0021).
func kvSpecs(op Op, variants ...Variant) []Spec {
	var out []Spec
	for _, kv := range kvVariants[1:] { // the types but F16
		for _, v := range variants {
			out = append(out, Spec{Op: op, Variant: v | kv, Act: dtype.F32})
		}
	}
	return out
}

var f32Only = []dtype.Type{dtype.F32}

// Binding constructors; slots are assigned by order.
func in(name string, role Role, doc string) Binding {
	return Binding{Name: name, Access: Read, Role: role, Doc: doc}
}
func out(name string, role Role, doc string) Binding {
	return Binding{Name: name, Access: Write, Role: role, Doc: doc}
}
func inout(name string, role Role, doc string) Binding {
	return Binding{Name: name, Access: ReadWrite, Role: role, Doc: doc}
}
func when(b Binding, constant string) Binding { b.When = constant; return b }
func elem(b Binding, e string) Binding        { b.Elem = e; return b }

// constants numbers the constants in order.
func constants(cs ...Constant) []Constant {
	for i := range cs {
		cs[i].Index = i
	}
	return cs
}
func cbool(name, doc string) Constant { return Constant{Name: name, Type: ConstBool, Doc: doc} }
func cuint(name, doc string) Constant { return Constant{Name: name, Type: ConstUint, Doc: doc} }

func fixed(s string) func(Spec) string { return func(Spec) string { return s } }

var (
	biasConst    = cbool("has_bias", "a bias is bound and added")
	factorsConst = cbool("has_factors", "a RoPE frequency-factor tensor is bound (Llama 3.1, Phi-3)")
	headDimConst = cuint("head_dim", "elements per q and k head")
	attnConsts   = []Constant{
		headDimConst,
		cuint("head_dim_v", "elements per v head"),
		cbool("has_softcap", "scores are soft-capped (Gemma 2)"),
		cbool("has_window", "a sliding window limits the keys"),
	}
)

// repacked are the weight types with a 16-row interleaved layout (X16), for
// the CPU (F32 activations): the recipe repack:<dtype>x16 builds it.
var repacked = []dtype.Type{dtype.Q4_0, dtype.Q8_0, dtype.Q4_K, dtype.Q6_K}

// RepackOneRow reports whether dt's x16 layout is worth it for a matrix
// that meets one row at a time, as the LM head does (a prompt's last row,
// a decode step's): its one-row x16 kernel keeps up with the plain dot.
// Not Q6_K: putting sixteen rows' 6-bit quants together for a single
// activation row cost the Qwen3-0.6B shape's Q6_K LM head a fifth of its
// decode speed (docs/adr/0008-cpu-backend.md).
func RepackOneRow(dt dtype.Type) bool { return dt != dtype.Q6_K }

// RepackRecipe is the derived-buffer recipe of dt's X16 layout
// ("repack:q4_0x16"), "" for a type without one.
func RepackRecipe(dt dtype.Type) string {
	for _, r := range repacked {
		if r == dt {
			return "repack:" + strings.ToLower(dt.String()) + "x16"
		}
	}
	return ""
}

// planarTypes are the weight types with a planar layout (Planar): the GPU
// GEMVs' (F16 activations); the recipe repack:<dtype>_planar builds it.
var planarTypes = []dtype.Type{dtype.Q4_0, dtype.Q6_K}

// PlanarPairsRecipe is the recipe of the planar layout of two stacked
// weights (gate, up) whose rows are interleaved, gate row i then up row i
// ("repack:q4_0_planar_pairs"; the _glu GEMVs read it), "" for a type
// without one.
func PlanarPairsRecipe(dt dtype.Type) string {
	if r := PlanarRecipe(dt); r != "" {
		return r + "_pairs"
	}
	return ""
}

// PlanarRecipe is the derived-buffer recipe of dt's planar layout
// ("repack:q4_0_planar"), "" for a type without one.
func PlanarRecipe(dt dtype.Type) string {
	if !slices.Contains(planarTypes, dt) {
		return ""
	}
	return "repack:" + strings.ToLower(dt.String()) + "_planar"
}

const (
	docWeightPlanar = "W [N, K] in two planes: every block's quants, row after row, then every block's F16 scale (docs/formats.md#planar)"
	docWeightX16    = "W [N, K] repacked in 16-row groups (docs/formats.md#repacked); N a multiple of 16"
	docWeight       = "W [N, K] in the kernel's dtype, rows contiguous"
	docBias         = "bias [N], F32"
)

// families is the catalog's table, in catalog order.
var families = []*family{
	{
		op: OpGEMV, params: GEMVParams{},
		summary: func(s Spec) string {
			switch {
			case s.Variant&SiLU != 0:
				return "y = W·(silu(gate)·up) (+ bias): the down projection with the SiLU gate fused"
			case s.Variant&(GLU|Norm) == GLU|Norm:
				return "y[i] = silu(g)·u, g and u (W[2i]·x, W[2i+1]·x) / sqrt(Σ partials / K + eps) (+ bias): the gate|up projection after a folded RMS norm (x is res·norm_w), the SiLU gate applied"
			case s.Variant&Norm != 0:
				return "y = (W·x) / sqrt(Σ partials / K + eps) (+ bias): the RMS norm's scale after the product; x is res·norm_w and partials its Σres², written by a _res GEMV"
			case s.Variant&Residual != 0:
				return "res += W·x (+ bias), y = res·norm_w: the residual add, in place, and the next RMS norm but its scale (a _norm GEMV applies it)"
			case s.Variant&GLU != 0:
				return "y[i] = silu(W[2i]·x)·(W[2i+1]·x) (+ bias): the gate|up projection with the SiLU gate applied, W's gate and up rows in turn"
			}
			return "y = W·x (+ bias), one token"
		},
		bindings: func(s Spec) []Binding {
			x := []Binding{in("x", RoleActivation, "x [K]")}
			if s.Variant&SiLU != 0 {
				// gate and up are separate bindings so that a fused gate|up
				// buffer is bound twice, at offsets 0 and K elements.
				x = []Binding{in("gate", RoleActivation, "gate [K]"), in("up", RoleActivation, "up [K]")}
			}
			w := docWeight
			if s.Variant&X16 != 0 {
				w = docWeightX16
			}
			if s.Variant&Planar != 0 {
				w = docWeightPlanar
			}
			y := []Binding{out("y", RoleActivation, "y [N]")}
			if s.Variant&GLU != 0 {
				y = []Binding{out("y", RoleActivation, "y [N/2]: silu(gate)·up, each rounded to the activation type first")}
			}
			switch {
			case s.Variant&Norm != 0:
				x = []Binding{in("x", RoleActivation, "x [K]: res·norm_w, rounded"),
					elem(in("partials", RoleActivation, "partials [parts]: the _res GEMV's Σres², a threadgroup's each"), "f32")}
			case s.Variant&Residual != 0:
				y = []Binding{inout("res", RoleActivation, "res [N]: the residual, plus W·x rounded, rounded"),
					in("norm_w", RoleWeight, "norm_w [N]: the next RMS norm's weight, F32"),
					out("y", RoleActivation, "y [N]: res·norm_w, rounded"),
					elem(out("partials", RoleActivation, "partials [parts]: threadgroup g's Σres² of its rows"), "f32")}
			}
			return append(append(append([]Binding{in("w", RoleWeight, w)}, x...), y...),
				when(in("bias", RoleWeight, docBias), "has_bias"))
		},
		constants: func(s Spec) []Constant {
			cs := []Constant{
				cuint("nr", "rows of W per SIMD group"),
				cuint("nsg", "SIMD groups per threadgroup"),
				biasConst,
				cbool("vec_x", "x (gate, up) starts 16-byte aligned and K is a multiple of 16: the GPU kernels load x in 16-byte vectors"),
			}
			if s.Variant&Planar != 0 && s.DType == dtype.Q4_0 {
				cs = append(cs, cbool("preload", "a lane with one block a row loads it before waiting for the command before (tuning.gemv_preload_max_k)"))
			}
			return constants(cs...)
		},
		geometry: gemvGeometry, geometryDoc: func(s Spec) string {
			switch {
			case s.Variant&LargeK != 0:
				return "4 SIMD groups share nr rows, group g taking blocks g, g+4, ..., partial sums met in threadgroup memory; grid = ceil(N / nr)"
			case s.Variant&Wide != 0:
				return "8 SIMD groups per threadgroup, nr rows each; grid = ceil(N / (8·nr))"
			case s.Variant&Planar != 0:
				return "128 threads in nsg row groups of nr rows, a group's 128/nsg lanes striding over the blocks; grid = ceil(N / (nr·nsg))"
			}
			return "nsg SIMD groups per threadgroup, nr rows each, lanes striding over the blocks; grid = ceil(N / (nr·nsg))"
		},
		instances: func() []Spec {
			out := typed(OpGEMV, f16Only, weightTypes, 0, SiLU, Wide)
			out = append(out, typed(OpGEMV, f16Only, largeKTypes, LargeK, LargeK|SiLU)...)
			out = append(out, typed(OpGEMV, f32Only, weightTypes, 0, SiLU)...)
			out = append(out, typed(OpGEMV, f16Only, planarTypes, Planar)...)
			// the residual norms folded into the planar GEMVs around them
			// (tuning.fold_norms): NVIDIA plans
			out = append(out, typed(OpGEMV, f16Only, []dtype.Type{dtype.Q4_0}, Planar|GLU, Planar|Norm, Planar|GLU|Norm, Planar|Residual)...)
			// Q6_K's planar GEMVs keep the usual shapes (kernels/geometry.go)
			out = append(out, typed(OpGEMV, f16Only, []dtype.Type{dtype.Q6_K}, Planar|LargeK, Planar|Wide)...)
			return append(out, typed(OpGEMV, f32Only, repacked, X16, X16|SiLU)...)
		},
	},
	{
		op: OpGEMM, params: GEMMParams{},
		summary: func(s Spec) string {
			switch {
			case s.Variant&GLU != 0:
				return "Y = X·Wᵀ (+ bias), 2 to 8 rows, W's gate and up rows in turn (the decode program's gate|up buffer); Y gate rows then up rows"
			case s.Variant&Small != 0:
				return "Y = X·Wᵀ (+ bias), 2 to 8 rows"
			}
			return "Y = X·Wᵀ (+ bias), a prefill batch"
		},
		bindings: func(s Spec) []Binding {
			w := docWeight
			if s.Variant&X16 != 0 {
				w = docWeightX16
			}
			if s.Variant&Planar != 0 {
				w = docWeightPlanar
			}
			return []Binding{
				in("w", RoleWeight, w),
				in("x", RoleActivation, "X [M, lda]"),
				out("y", RoleActivation, "Y [M, ldc]"),
				when(in("bias", RoleWeight, docBias), "has_bias"),
			}
		},
		constants: func(s Spec) []Constant {
			if s.Variant&Planar != 0 { // the planar GEMV's, in its order: its body and file (gemv.h)
				return constants(
					cuint("nr", "rows of W per SIMD group"),
					cuint("nsg", "SIMD groups per threadgroup"),
					biasConst,
					cbool("vec_x", "X starts 16-byte aligned and lda and K are multiples of 16: the GPU kernel loads x in 16-byte vectors"),
					cbool("preload", "a lane with one block a row loads it before waiting for the command before (tuning.gemv_preload_max_k)"))
			}
			if s.Variant&Small != 0 && s.Act != dtype.F32 { // cols: the GPU kernel's
				return constants(biasConst,
					cbool("vec_x", "X starts 16-byte aligned and lda and K are multiples of 8: the GPU kernel loads X's rows in 16-byte vectors"),
					cuint("cols", "output features per SIMD group, 1 to 8"))
			}
			if s.Variant&Small != 0 || s.Act == dtype.F32 { // vec_x: the GPU kernels' (F16 activations)
				return constants(biasConst)
			}
			return constants(biasConst,
				cbool("vec_x", "X starts 16-byte aligned and lda and K are multiples of 8: the GPU kernels stage X in 16-byte vectors"))
		},
		geometry: gemmGeometry, geometryDoc: func(s Spec) string {
			if s.Variant&Planar != 0 {
				return "the planar GEMV's threadgroups (128 threads in nsg row groups of nr rows) once for each row of X, the row varying fastest; grid = (M, ceil(N / (nr·nsg)))"
			}
			if s.Variant&Small != 0 && s.Act == dtype.F32 {
				return "4 SIMD groups of 8 outputs each, over all (≤ 8) rows; grid = ceil(N / 32)"
			}
			if s.Variant&Small != 0 {
				return "4 SIMD groups of cols outputs each (8, halved while fewer than tuning.gemv_min_groups threadgroups, not below gemv_min_rows), over all (≤ 8) rows; grid = ceil(N / (4·cols))"
			}
			return "64×64 tiles of Y, K stepped by 64 through threadgroup memory, 4 SIMD groups; grid = (ceil(N/64), ceil(M/64))"
		},
		instances: func() []Spec {
			out := append(typed(OpGEMM, acts, weightTypes, 0, Small), typed(OpGEMM, f32Only, repacked, X16, Small|X16)...)
			// the batch programs' 2-8 rows over the decode program's planar
			// buffers (NVIDIA plans)
			return append(out, typed(OpGEMM, f16Only, []dtype.Type{dtype.Q4_0}, Small|Planar, Small|Planar|GLU)...)
		},
	},
	{
		op: OpEmbedding, params: EmbeddingParams{},
		summary: fixed("out[i] = table[ids[token_slot+i]] · scale"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("table", RoleWeight, "table [vocab, dim] in the kernel's dtype"),
				in("ids", RoleIO, "token ids, uint32"),
				out("out", RoleActivation, "out [n_tokens, out_stride]"),
			}
		},
		geometry: embeddingGeometry, geometryDoc: fixed("one threadgroup of 256 threads per token, thread i taking blocks i, i+256, ...; grid = tokens"),
		instances: func() []Spec { return typed(OpEmbedding, acts, weightTypes, 0) },
	},
	{
		op: OpConvert, params: ElementwiseParams{},
		summary: fixed("out = x converted: logits for the host"),
		bindings: func(s Spec) []Binding {
			return []Binding{
				in("x", RoleActivation, "x [n_rows, a_stride]"),
				out("out", RoleIO, "out [n_rows, out_stride] in the target dtype"),
			}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return []Spec{{Op: OpConvert, DType: dtype.F32, Act: dtype.F16}} },
	},
	{
		op: OpRMSNorm, params: NormParams{},
		summary: func(s Spec) string {
			if s.Variant&Residual != 0 {
				return "residual += x; out = residual / rms(residual) · weight"
			}
			return "out = x / rms(x) · weight, per row"
		},
		bindings: func(s Spec) []Binding {
			return normBindings(s, false)
		},
		geometry: normGeometry, geometryDoc: fixed("one threadgroup per row, min(NormTG, dim rounded up to 32) threads, reduced through threadgroup memory; grid = rows"),
		instances: func() []Spec { return specs(OpRMSNorm, acts, 0, Residual) },
	},
	{
		op: OpLayerNorm, params: NormParams{},
		summary: func(s Spec) string {
			if s.Variant&Residual != 0 {
				return "residual += x; out = (residual - mean) / std · weight (+ bias)"
			}
			return "out = (x - mean) / std · weight (+ bias), per row"
		},
		bindings:  func(s Spec) []Binding { return normBindings(s, true) },
		constants: func(Spec) []Constant { return constants(biasConst) },
		geometry:  normGeometry, geometryDoc: fixed("one threadgroup per row, min(NormTG, dim rounded up to 32) threads, reduced through threadgroup memory; grid = rows"),
		instances: func() []Spec { return specs(OpLayerNorm, acts, 0, Residual) },
	},
	{
		op: OpHeadRMSNorm, params: NormParams{},
		summary: fixed("x = x / rms(x) · weight for each head of each row, in place"),
		bindings: func(Spec) []Binding {
			return []Binding{
				inout("x", RoleActivation, "x [n_rows, stride], n_heads heads of dim each"),
				in("weight", RoleWeight, "weight [dim], F32, shared by the heads"),
			}
		},
		geometry: headNormGeometry, geometryDoc: fixed("one SIMD group per head, 8 per threadgroup; grid = ceil(rows·heads / 8)"),
		instances: func() []Spec { return specs(OpHeadRMSNorm, acts) },
	},
	{
		op: OpRoPE, params: RoPEParams{},
		summary: func(s Spec) string {
			return "rotate each head of x by its position, in place" + neoxNote(s) + rowsNote(s)
		},
		bindings: func(s Spec) []Binding {
			return append([]Binding{
				inout("x", RoleActivation, "x [n_tokens, stride], n_heads heads of head_dim"),
				when(in("factors", RoleWeight, "frequency factors [rope_dim/2], F32"), "has_factors"),
			}, rowsBindings(s)...)
		},
		constants: func(Spec) []Constant { return constants(headDimConst, factorsConst) },
		geometry:  ropeGeometry, geometryDoc: fixed("a threadgroup per (head, token), thread i owning pair i; grid = (heads, tokens)"),
		instances: func() []Spec { return specs(OpRoPE, acts, 0, NeoX, Rows, NeoX|Rows) },
	},
	{
		op: OpRoPEQKVWrite, params: RoPEQKVWriteParams{},
		summary: func(s Spec) string {
			return "rotate q and k; q to q_out, k and v into the KV cache at their positions" + neoxNote(s) + rowsNote(s) + kvWriteNote(s)
		},
		bindings:  func(s Spec) []Binding { return append(ropeKVBindings(s, false), rowsBindings(s)...) },
		constants: func(Spec) []Constant { return constants(headDimConst, factorsConst) },
		geometry:  ropeKVGeometry, geometryDoc: fixed("a threadgroup per (head, token), q heads then kv heads (which also copy v), thread i owning pair i; grid = (heads + kv_heads, tokens)"),
		instances: func() []Spec {
			return append(specs(OpRoPEQKVWrite, acts, 0, NeoX, Rows, NeoX|Rows), kvSpecs(OpRoPEQKVWrite, 0, NeoX, Rows, NeoX|Rows)...)
		},
	},
	{
		op: OpHeadNormRoPEKVWrite, params: RoPEQKVWriteParams{},
		summary: func(s Spec) string {
			return "RMSNorm each head of q and k (Qwen 3, Gemma 3), then rope_qkv_write" + neoxNote(s) + rowsNote(s) + kvWriteNote(s)
		},
		bindings:  func(s Spec) []Binding { return append(ropeKVBindings(s, true), rowsBindings(s)...) },
		constants: func(Spec) []Constant { return constants(headDimConst, factorsConst) },
		geometry:  ropeKVGeometry, geometryDoc: fixed("a threadgroup per (head, token), q heads then kv heads (which also copy v), thread i owning pair i; grid = (heads + kv_heads, tokens)"),
		// Only the NeoX form: the architectures with QK-norm (Qwen 3,
		// Gemma 3) all rotate NeoX-style.
		instances: func() []Spec {
			return append(specs(OpHeadNormRoPEKVWrite, acts, NeoX, NeoX|Rows), kvSpecs(OpHeadNormRoPEKVWrite, NeoX, NeoX|Rows)...)
		},
	},
	{
		op: OpAttentionDecode, params: AttentionParams{},
		summary: func(s Spec) string {
			switch {
			case s.Variant&Fast != 0:
				return "attention of one query per head over the KV cache, tiled over the keys"
			case s.Variant&Parallel != 0:
				return "attention of one query per head, the keys split over threadgroups: partial results"
			}
			return "attention of one query per head over the KV cache"
		},
		bindings: func(s Spec) []Binding {
			b := []Binding{
				in("q", RoleActivation, "q [n_heads, head_dim]"),
				in("k_cache", RoleKV, "K cache of the layer [n_kv_heads, max_ctx, head_dim], "+kvNote(s)),
				in("v_cache", RoleKV, "V cache of the layer [n_kv_heads, max_ctx, head_dim_v], "+kvNote(s)),
			}
			if s.Variant&Parallel != 0 {
				return append(b, out("partials", RoleScratch, "[n_heads, n_splits, head_dim_v + 2] float: outputs, max, sum"))
			}
			return append(b, out("out", RoleActivation, "out [n_heads, head_dim_v]"))
		},
		constants: func(s Spec) []Constant {
			cs := append([]Constant(nil), attnConsts...)
			if s.Variant&Parallel != 0 {
				cs = append(cs, cuint("n_splits", "threadgroups that share the key range of a head"))
			}
			return constants(cs...)
		},
		geometry: attnDecodeGeometry, geometryDoc: func(s Spec) string {
			switch {
			case s.Variant&Fast != 0:
				return "one threadgroup of 8 SIMD groups per query head, keys in tiles of 32, one per lane; grid = heads"
			case s.Variant&Parallel != 0:
				return "a threadgroup per (head, split) over n_splits slices of the keys, partial results to scratch; grid = (heads, n_splits)"
			}
			return "one threadgroup of 4 SIMD groups per query head, keys interleaved over the groups, merged in threadgroup memory; grid = heads"
		},
		instances: func() []Spec {
			return append(append(specs(OpAttentionDecode, f16Only, 0, Fast, Parallel), specs(OpAttentionDecode, f32Only)...),
				kvSpecs(OpAttentionDecode, 0)...)
		},
	},
	{
		op: OpAttentionDecodeRoPE, params: AttentionRoPEParams{},
		summary: func(s Spec) string {
			n := ""
			if s.Variant&Norm != 0 {
				n = " RMS-normalizes each head of q and k (Qwen 3, Gemma 3),"
			}
			return "flash_attention_decode_parallel that" + n + " rotates q and k itself" + neoxNote(s) +
				" and writes k and v into the cache at the token's position: rope_qkv_write and the attention in one command (decode, one token)"
		},
		bindings: func(s Spec) []Binding {
			b := []Binding{
				in("q", RoleActivation, "q [n_heads·head_dim], the token's query heads, not rotated"),
				in("k", RoleActivation, "k [n_kv_heads·head_dim], not rotated"),
				in("v", RoleActivation, "v [n_kv_heads·head_dim_v]"),
			}
			if s.Variant&Norm != 0 {
				b = append(b,
					in("q_norm", RoleWeight, "q head norm weight [head_dim], F32"),
					in("k_norm", RoleWeight, "k head norm weight [head_dim], F32"))
			}
			return append(b,
				inout("k_cache", RoleKV, "K cache of the layer [n_kv_heads, max_ctx, head_dim], F16; row position written"),
				inout("v_cache", RoleKV, "V cache of the layer [n_kv_heads, max_ctx, head_dim_v], F16; row position written"),
				out("partials", RoleScratch, "[n_heads, n_splits, head_dim_v + 2] float: outputs, max, sum"),
				when(in("factors", RoleWeight, "frequency factors [rope_dim/2], F32"), "has_factors"))
		},
		constants: func(Spec) []Constant {
			return constants(append(append([]Constant(nil), attnConsts...),
				cuint("n_splits", "threadgroups that share the key range of a head"), factorsConst)...)
		},
		geometry: attnDecodeRoPEGeometry, geometryDoc: fixed("as flash_attention_decode_parallel: a threadgroup per (head, split), partial results to scratch; each rotates its q head in threadgroup memory, and the threadgroups whose split holds the token's position rotate and write its k and v first; grid = (heads, n_splits)"),
		// NeoX with the head norm (Qwen 3, Gemma 3), NeoX (Qwen 2) and the
		// interleaved pairs (Llama).
		instances: func() []Spec { return specs(OpAttentionDecodeRoPE, f16Only, 0, NeoX, NeoX|Norm) },
	},
	{
		op: OpAttentionDecodeReduce, params: AttentionParams{},
		summary: fixed("merge the partial results of flash_attention_decode_parallel"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("partials", RoleScratch, "[n_heads, n_splits, head_dim_v + 2] float"),
				out("out", RoleActivation, "out [n_heads, head_dim_v]"),
			}
		},
		constants: func(Spec) []Constant {
			return constants(cuint("head_dim_v", "elements per v head"), cuint("n_splits", "splits to merge"))
		},
		geometry: attnReduceGeometry, geometryDoc: fixed("one threadgroup per head, thread i merging output element i over the splits; grid = heads"),
		instances: func() []Spec { return specs(OpAttentionDecodeReduce, f16Only) },
	},
	{
		op: OpAttentionPrefill, params: AttentionParams{},
		summary: func(s Spec) string {
			if s.Variant&V2 != 0 {
				return "causal attention of a batch of queries, tiled over queries and keys" + rowsNote(s)
			}
			return "causal attention of a batch of queries, one query row per SIMD group" + rowsNote(s)
		},
		bindings: func(s Spec) []Binding {
			return append([]Binding{
				in("q", RoleActivation, "q [n_tokens, q_stride], n_heads heads of head_dim"),
				in("k_cache", RoleKV, "K cache of the layer [n_kv_heads, max_ctx, head_dim], "+kvNote(s)),
				in("v_cache", RoleKV, "V cache of the layer [n_kv_heads, max_ctx, head_dim_v], "+kvNote(s)),
				out("out", RoleActivation, "out [n_tokens, o_stride], n_heads heads of head_dim_v"),
			}, rowsBindings(s)...)
		},
		constants: func(s Spec) []Constant {
			cs := append([]Constant(nil), attnConsts...)
			if s.Variant&V2 != 0 {
				cs = append(cs, cuint("kv_tile", "keys per tile"))
			}
			return constants(cs...)
		},
		geometry: attnPrefillGeometry, geometryDoc: func(s Spec) string {
			if s.Variant&V2 != 0 {
				return "32 query rows per threadgroup, keys in tiles of kv_tile staged in threadgroup memory; grid = (ceil(tokens/32), heads)"
			}
			return "one query row per SIMD group, 4 per threadgroup; grid = (ceil(tokens/4), heads)"
		},
		instances: func() []Spec {
			return append(append(specs(OpAttentionPrefill, f16Only, 0, V2, Rows, V2|Rows), specs(OpAttentionPrefill, f32Only, 0, Rows)...),
				kvSpecs(OpAttentionPrefill, 0, Rows)...)
		},
	},
	{
		op: OpBiasAdd, params: ElementwiseParams{},
		summary: fixed("x += bias, for every row"),
		bindings: func(Spec) []Binding {
			return []Binding{
				inout("x", RoleActivation, "x [n_rows, a_stride]"),
				in("bias", RoleWeight, "bias [n_cols], F32"),
			}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(OpBiasAdd, acts) },
	},
	binaryOp(OpAdd, "out = a + b (out may be a: the residual add)"),
	binaryOp(OpMul, "out = a · b"),
	unary(OpScale, "out = x · alpha"),
	unary(OpSoftcap, "out = alpha · tanh(x / alpha): soft-capping (Gemma 2 logits)"),
	unary(OpSiLU, "out = x · sigmoid(x)"),
	unary(OpGELU, "out = gelu(x), tanh approximation"),
	gate(OpSiLUGate, "out = silu(gate) · up"),
	gate(OpGELUGate, "out = gelu(gate) · up"),
	{
		op: OpCopy, params: ElementwiseParams{},
		summary: fixed("out = x; with last_row, row n_rows-1 of x to row 0 of out"),
		bindings: func(Spec) []Binding {
			return []Binding{in("x", RoleActivation, "x [n_rows, a_stride]"), out("out", RoleActivation, "out [n_rows, out_stride]")}
		},
		constants: func(Spec) []Constant {
			return constants(cbool("last_row", "copy only the last row (the batch's last token) to row 0"))
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(OpCopy, acts) },
	},
	{
		op: OpArgmax, params: ArgmaxParams{},
		summary: fixed("ids[out_slot + r] = argmax(logits row r), r < n_rows: greedy decoding, feeding the next embedding"),
		bindings: func(Spec) []Binding {
			return []Binding{in("logits", RoleActivation, "logits [n_rows, n]"), out("ids", RoleIO, "token ids, uint32")}
		},
		constants: func(s Spec) []Constant {
			if s.Act == dtype.F32 { // the CPU's: no GPU body
				return nil
			}
			return constants(cbool("vec_x", "the logits start 16-byte aligned and n is a multiple of 8: the GPU kernel reads them in 16-byte vectors"))
		},
		geometry: argmaxGeometry, geometryDoc: fixed("a threadgroup of 1024 threads per row over the vocabulary, reduced through threadgroup memory; grid = rows"),
		instances: func() []Spec { return specs(OpArgmax, acts) },
	},
	{
		op: OpGumbelTopK, params: SamplingParams{},
		summary: fixed("logits = top-k/top-p/min-p masked logits / temperature + Gumbel noise, in place (argmax then samples)"),
		bindings: func(Spec) []Binding {
			return []Binding{inout("logits", RoleActivation, "logits [vocab]")}
		},
		geometry: vocabGeometry, geometryDoc: fixed("one threadgroup of 1024 threads over the vocabulary, reduced through threadgroup memory"),
		instances: func() []Spec { return specs(OpGumbelTopK, acts) },
	},
	{
		op: OpGatherRows, params: ElementwiseParams{},
		summary: fixed("out[j] = x[rows[j]], j < n_rows: the rows of a batch whose logits are asked for"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("x", RoleActivation, "x [batch rows, a_stride]"),
				in("rows", RoleIO, "row indices [n_rows], uint32, each below the batch's rows"),
				out("out", RoleActivation, "out [n_rows, out_stride]"),
			}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(OpGatherRows, acts) },
	},
	{
		op: OpPool, params: PoolParams{},
		summary: fixed("out[j] = rows [ranges[2j], ranges[2j+1]) of x pooled (the pooling constant), L2-normalized with l2_normalize, j < n_rows: an embedding per input; an empty range, or one past x, gives zeros"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("x", RoleActivation, "x [batch rows, a_stride]: the last hidden states, inputs back to back"),
				in("ranges", RoleIO, "row ranges [n_rows, 2], uint32: input j's first row and the row after its last"),
				out("out", RoleIO, "out [n_rows, dim], F32"),
			}
		},
		constants: func(Spec) []Constant {
			return constants(
				cuint("pooling", "1 the mean of the rows, 2 the first row (CLS), 3 the last row: llama.cpp's llama_pooling_type"),
				cbool("l2_normalize", "divide the pooled vector by its L2 norm (a zero vector stays zero)"))
		},
		geometry: poolGeometry, geometryDoc: fixed("one threadgroup of 256 threads per output, thread i taking columns i, i+256, ..., the sum of squares reduced through threadgroup memory; grid = outputs"),
		instances: func() []Spec { return specs(OpPool, acts) },
	},
	{
		op: OpMoERoute, params: MoERouteParams{},
		summary: fixed("the k experts of each row r < n_rows: p = softmax(logits row r) in float, its k largest (the lower expert among equals) in descending order to ids[r·k + j] and weights[r·k + j]; with norm_w the k weights divided by their sum"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("logits", RoleActivation, "router logits [n_rows, a_stride], n_expert each"),
				elem(out("ids", RoleActivation, "expert ids [n_rows, k], uint32"), "u32"),
				elem(out("weights", RoleActivation, "expert weights [n_rows, k], F32"), "f32"),
			}
		},
		constants: func(Spec) []Constant {
			return constants(cbool("norm_w", "divide each row's k weights by their sum, clamped below at 2^-14 (llama.cpp's norm_w; Qwen3-MoE and Mixtral set it)"))
		},
		geometry: moeRouteGeometry, geometryDoc: fixed("one SIMD group per row, lane l taking experts l, l+32, ... in threadgroup memory, k rounds of simd_max/simd_min argmax; grid = rows"),
		instances: func() []Spec { return specs(OpMoERoute, acts) },
	},
	{
		op: OpGEMVID, params: GEMVIDParams{},
		summary:  fixed("y[r, j] = W[ids[r, j]]·x[r, j] for rows r < n_rows and slots j < n_slots: the expert-indexed GEMV of a MoE FFN; an id ≥ n_expert gives zeros"),
		bindings: idBindings,
		constants: func(Spec) []Constant {
			return constants(
				cuint("nr", "rows of W per SIMD group"),
				cuint("nsg", "SIMD groups per threadgroup"),
				cbool("vec_x", "x starts 16-byte aligned, and so does every slot (K a multiple of 16, x_stride and x_slot multiples of 16 bytes): the GPU kernels load x in 16-byte vectors"))
		},
		geometry: gemvIDGeometry, geometryDoc: fixed("the GEMV's standard shape per (slot, row): nsg SIMD groups of nr rows of the slot's expert; grid = (ceil(N / (nr·nsg)), slots, rows)"),
		instances: func() []Spec { return typed(OpGEMVID, acts, weightTypes, 0) },
	},
	{
		op: OpGEMMID, params: GEMVIDParams{},
		summary:  fixed("gemv_id for a batch: y[r, j] = W[ids[r, j]]·x[r, j] for rows r < n_rows and slots j < n_slots, the pairs grouped by expert and each expert's a tiled GEMM; an id ≥ n_expert gives zeros"),
		bindings: idBindings,
		geometry: gemmIDGeometry, geometryDoc: fixed("threadgroup (e, t): the (row, slot) pairs of expert e, listed in threadgroup memory from a scan of the ids, in 32×64 tiles of Y (columns 64t..) as simd_gemm's, 4 SIMD groups; grid = (Experts, ceil(N/64))"),
		instances: func() []Spec { return typed(OpGEMMID, acts, weightTypes, 0) },
	},
	{
		op: OpMoESum, params: MoESumParams{},
		summary: fixed("out[r] = Σ_j weights[r·n_slots + j]·y[r, j], j < n_slots, summed in float from slot 0 in slot order, r < n_rows: the weighted experts' outputs of a row"),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("y", RoleActivation, "y [n_rows, y_stride]: slot j of row r at r·y_stride + j·N, N each"),
				in("weights", RoleActivation, "expert weights [n_rows, n_slots], F32: moe_route's"),
				out("out", RoleActivation, "out [n_rows, out_stride]"),
			}
		},
		geometry: moeSumGeometry, geometryDoc: fixed("a thread per output element, 256 per threadgroup; grid = (ceil(N/256), rows)"),
		instances: func() []Spec { return specs(OpMoESum, acts) },
	},
}

// rowsBindings are what a Rows variant reads besides its other bindings:
// each row's position and sequence slot.
func rowsBindings(s Spec) []Binding {
	if s.Variant&Rows == 0 {
		return nil
	}
	return []Binding{
		in("pos", RoleIO, "positions [n_tokens], uint32: row t's position"),
		in("seq", RoleIO, "sequence slots [n_tokens], uint32: row t's slot of the KV cache"),
	}
}

// rowsNote is the summary's note for a Rows variant.
func rowsNote(s Spec) string {
	if s.Variant&Rows != 0 {
		return "; each row at its own position (and sequence slot) from pos and seq"
	}
	return ""
}

// idBindings are gemv_id's and gemm_id's bindings: the two compute the same
// products, one row-slot pair at a time or grouped by expert.
func idBindings(Spec) []Binding {
	return []Binding{
		in("w", RoleWeight, "W [n_expert, N, K] in the kernel's dtype: n_expert matrices of a GEMV's rows, back to back"),
		in("x", RoleActivation, "x [n_rows, x_stride]: slot j of row r at r·x_stride + j·x_slot, K each"),
		in("ids", RoleActivation, "expert ids [n_rows, n_slots], uint32: moe_route's"),
		out("y", RoleActivation, "y [n_rows, y_stride]: slot j of row r at r·y_stride + j·N, N each"),
	}
}

// kvNote is the KV cache's element type as a binding's doc says it.
func kvNote(s Spec) string {
	switch {
	case s.Variant&KVQ8 != 0:
		return "Q8_0 blocks (each row head_dim/32 blocks of 34 bytes)"
	case s.Variant&KVF32 != 0:
		return "F32"
	}
	return "F16"
}

// kvWriteNote says how a KV write stores a cache that is not F16.
func kvWriteNote(s Spec) string {
	switch {
	case s.Variant&KVQ8 != 0:
		return "; the cache in Q8_0 blocks, quantized as ggml's quantize_row_q8_0"
	case s.Variant&KVF32 != 0:
		return "; the cache in F32"
	}
	return ""
}

func neoxNote(s Spec) string {
	if s.Variant&NeoX != 0 {
		return " (NeoX pairs: i and i + rope_dim/2)"
	}
	return " (pairs 2i, 2i+1)"
}

func normBindings(s Spec, layer bool) []Binding {
	b := []Binding{in("x", RoleActivation, "x [n_rows, stride]")}
	if s.Variant&Residual != 0 {
		b = append(b, inout("residual", RoleActivation, "residual [n_rows, stride], updated to residual + x"))
	}
	b = append(b, in("weight", RoleWeight, "weight [dim], F32"))
	if layer {
		b = append(b, when(in("bias", RoleWeight, "bias [dim], F32"), "has_bias"))
	}
	return append(b, out("out", RoleActivation, "out [n_rows, stride]"))
}

func ropeKVBindings(s Spec, headNorm bool) []Binding {
	b := []Binding{
		in("q", RoleActivation, "q [n_tokens, q_stride], n_heads heads of head_dim"),
		in("k", RoleActivation, "k [n_tokens, kv_stride], n_kv_heads heads of head_dim"),
		in("v", RoleActivation, "v [n_tokens, kv_stride], n_kv_heads heads of head_dim_v"),
	}
	if headNorm {
		b = append(b,
			in("q_norm", RoleWeight, "q head norm weight [head_dim], F32"),
			in("k_norm", RoleWeight, "k head norm weight [head_dim], F32"))
	}
	return append(b,
		out("q_out", RoleActivation, "rotated q [n_tokens, q_stride]; may be q"),
		out("k_cache", RoleKV, "K cache of the layer [n_kv_heads, max_ctx, head_dim], "+kvNote(s)),
		out("v_cache", RoleKV, "V cache of the layer [n_kv_heads, max_ctx, head_dim_v], "+kvNote(s)),
		when(in("factors", RoleWeight, "frequency factors [rope_dim/2], F32"), "has_factors"))
}

func binaryOp(op Op, summary string) *family {
	return &family{
		op: op, params: ElementwiseParams{}, summary: fixed(summary),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("a", RoleActivation, "a [n_rows, a_stride]"),
				in("b", RoleActivation, "b [n_rows, b_stride]"),
				out("out", RoleActivation, "out [n_rows, out_stride]"),
			}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(op, acts) },
	}
}

func unary(op Op, summary string) *family {
	return &family{
		op: op, params: ElementwiseParams{}, summary: fixed(summary),
		bindings: func(Spec) []Binding {
			return []Binding{in("x", RoleActivation, "x [n_rows, a_stride]"), out("out", RoleActivation, "out [n_rows, out_stride]")}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(op, acts) },
	}
}

func gate(op Op, summary string) *family {
	return &family{
		op: op, params: ElementwiseParams{}, summary: fixed(summary),
		bindings: func(Spec) []Binding {
			return []Binding{
				in("gate", RoleActivation, "gate [n_rows, a_stride]"),
				in("up", RoleActivation, "up [n_rows, b_stride]"),
				out("out", RoleActivation, "out [n_rows, out_stride]"),
			}
		},
		geometry: elementwiseGeometry, geometryDoc: fixed("a thread per element, 256 per threadgroup; grid = (ceil(cols/256), rows)"),
		instances: func() []Spec { return specs(op, acts) },
	}
}
