package chips

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
)

// Tuning is the policy a plan is compiled with, derived from a profile by
// the rules below and recorded whole in the plan's header.
//
// A threshold of 0 disables its variant: the target never uses it.
type Tuning struct {
	// FuseWeights concatenates the Q, K and V weights (and gate and up) into
	// one matrix each, so that one GEMV replaces three (two).
	FuseWeights bool `json:"fuse_weights"`
	// Q4LargeKThreshold: a GEMV over a 4-bit type (LargeKTypes) whose row
	// length K is at least this uses the large-K variant, which splits a row
	// across more SIMD groups.
	Q4LargeKThreshold int `json:"q4_large_k_threshold"`
	// WideGEMVThreshold: a GEMV with more than this many output rows N (an
	// LM head over a large vocabulary) uses the wide variant.
	WideGEMVThreshold int `json:"wide_gemv_threshold"`
	// ChainChunk is the number of decode tokens encoded in one submission
	// (one Metal command buffer), argmax feeding the next embedding on the GPU.
	ChainChunk int `json:"chain_chunk"`
	// PrefillChunk is the most prompt tokens one prefill batch processes;
	// scratch buffers are sized for it.
	PrefillChunk int `json:"prefill_chunk"`
	// NormTG is the threadgroup size of the RMSNorm/LayerNorm kernels.
	NormTG int `json:"norm_tg"`
	// LargeKTypes are the weight types (GGML names) that have a large-K GEMV.
	LargeKTypes []string `json:"large_k_types"`
	// AttnDecodeFastKV: decode attention over at least this many cached
	// positions uses the fast (tiled) kernel.
	AttnDecodeFastKV int `json:"attn_decode_fast_kv"`
	// AttnDecodeParallelKV: decode attention over at least this many cached
	// positions splits the KV range across threadgroups (split-K) and reduces.
	AttnDecodeParallelKV int `json:"attn_decode_parallel_kv"`
	// AttnPrefillV2Tokens: a prefill batch of at least this many tokens uses
	// the v2 (flash, tiled over queries and keys) attention kernel.
	AttnPrefillV2Tokens int `json:"attn_prefill_v2_tokens"`
	// MaxSeqs is the most sequence slots a runtime may give the KV cache
	// (a server's parallel conversations); it allocates only those it uses.
	MaxSeqs int `json:"max_seqs"`
	// OutRows is the most rows of one batch replay that produce logits (a
	// decode step of many sequences, a speculative verify pass); the logits
	// buffer holds that many rows.
	OutRows int `json:"out_rows"`
	// Repack lists the weight layouts the target's backend reads faster
	// than GGUF's ("q4_0x16", "q8_0x16", "q4_kx16", "q6_kx16": those types
	// in 16-row interleaved groups, for the CPU; "q4_0_planar": Q4_0's
	// quants and scales in two planes, for the GPU GEMVs): weights
	// of those types are repacked at load (a derived buffer) and read by
	// the layout's kernels.
	Repack []string `json:"repack"`
	// GEMVMinGroups: a large-K GEMV that would launch fewer threadgroups
	// than this takes fewer rows per threadgroup (halved, down to
	// GEMVMinRows or one) until it does not, so that a small N still fills
	// the GPU. 0: the dtype's rows.
	GEMVMinGroups int `json:"gemv_min_groups"`
	// GEMVMinRows: the halving GEMVMinGroups asks for stops at this many
	// rows per threadgroup (or the dtype's rows, if fewer). 0: down to one.
	GEMVMinRows int `json:"gemv_min_rows"`
	// Int8GEMV: the chip's GEMV kernels dot Q4_0, Q4_K and Q6_K weights
	// with 8-bit x (CUDA's dp4a, kernels/gpu/gemv_rows.h), where a row costs
	// less than a float dot, so those types take their 8-bit rows per SIMD
	// group (kernels/geometry.go: gemvShapes).
	Int8GEMV bool `json:"int8_gemv"`
	// SplitSiLU: the decode FFN's down projection reads silu(gate)·up from
	// a silu_gate command instead of computing it in every threadgroup of
	// a SiLU-fused GEMV. A compile-time choice only: the plan holds the
	// commands it led to, so it is not recorded in the plan's tuning.
	SplitSiLU bool `json:"split_silu"`
	// FoldNormsMaxDim: in decode, a residual norm of at most this many
	// elements between two planar GEMVs is no command of its own (the
	// norm_fold rule: gemv_*_res before it, gemv_*_norm after it); 0:
	// never. A compile-time choice, like SplitSiLU.
	FoldNormsMaxDim int `json:"fold_norms_max_dim"`
	// GEMVPreloadMaxK: a planar Q4_0 GEMV over rows of at most this many
	// elements, where a lane has one block a row, loads its blocks into
	// registers before waiting for the command before (the preload
	// constant); longer rows, and 0, prefetch them into L2 instead.
	GEMVPreloadMaxK int `json:"gemv_preload_max_k"`
	// RopeInAttention: in decode, the rotation of q and k and the KV write
	// run in the parallel decode attention (flash_attention_decode_rope_*),
	// so no rope_qkv_write command runs. A compile-time choice.
	RopeInAttention bool `json:"rope_in_attention"`
}

// GEMVVariant names the shape of a matrix-vector kernel; the kernel catalog
// turns it into a kernel name (gemv_<dtype>[_l|_wide]).
type GEMVVariant string

const (
	GEMVStandard GEMVVariant = "standard"
	GEMVLargeK   GEMVVariant = "large_k"
	GEMVWide     GEMVVariant = "wide"
)

// GEMV picks the variant for a weight of GGML type dtype ("q4_K", any case)
// with n output rows of k elements. Wide wins over large-K: the LM head's
// cost is its many rows, not their length.
func (t Tuning) GEMV(dtype string, n, k int) GEMVVariant {
	switch {
	case t.WideGEMVThreshold > 0 && n > t.WideGEMVThreshold:
		return GEMVWide
	case t.Q4LargeKThreshold > 0 && k >= t.Q4LargeKThreshold &&
		slices.ContainsFunc(t.LargeKTypes, func(s string) bool { return strings.EqualFold(s, dtype) }):
		return GEMVLargeK
	}
	return GEMVStandard
}

// AttnVariant names an attention kernel shape.
type AttnVariant string

const (
	AttnStandard AttnVariant = "standard" // decode: one threadgroup per head
	AttnFast     AttnVariant = "fast"     // decode: tiled over the KV range
	AttnParallel AttnVariant = "parallel" // decode: KV range split over threadgroups, then reduced
	AttnV1       AttnVariant = "v1"       // prefill: one query row per SIMD group
	AttnV2       AttnVariant = "v2"       // prefill: flash attention, tiled
)

// DecodeAttention picks the decode attention kernel for a KV length.
func (t Tuning) DecodeAttention(kvLen int) AttnVariant {
	switch {
	case t.AttnDecodeParallelKV > 0 && kvLen >= t.AttnDecodeParallelKV:
		return AttnParallel
	case t.AttnDecodeFastKV > 0 && kvLen >= t.AttnDecodeFastKV:
		return AttnFast
	}
	return AttnStandard
}

// PrefillAttention picks the prefill attention kernel for a batch size.
func (t Tuning) PrefillAttention(tokens int) AttnVariant {
	if t.AttnPrefillV2Tokens > 0 && tokens >= t.AttnPrefillV2Tokens {
		return AttnV2
	}
	return AttnV1
}

// q4Types are the 4-bit weight types with a large-K GEMV.
var q4Types = []string{"q4_0", "q4_1", "q4_K", "iq4_nl", "iq4_xs"}

// rules is THE table of tuning policy. For each field, the first rule whose
// condition holds sets it; each field ends with an "always" rule, and a rule
// after it would be dead (init refuses that). The engine's facts: fusion
// when SLC >= 16 MB; Q4 large-K threshold 2048/1024/512; wide GEMV above
// N = 32768; chain chunk 64/96/128; prefill chunk 4096; norm threadgroup
// 1024. Its three-way values follow the GPU size classes (largeGPU,
// mediumGPU). docs/adr/0003-chip-tuning.md says why each rule is what it is.
var rules = []Rule{
	rule("fuse_weights", isCPU, false,
		"ours: a fused copy breaks zero-copy mmap, and a CPU dispatch costs a goroutine barrier, not a GPU launch"),
	rule("fuse_weights", slcAtLeast(16*MiB), true,
		"engine's rule: one larger GEMV instead of three pays when the SLC is large"),
	rule("fuse_weights", always, false,
		"engine's rule: base chips (8 MB SLC) stay unfused"),

	rule("q4_large_k_threshold", isCPU, 0,
		"ours: the CPU backend splits rows across goroutines; splitting K adds a reduction for nothing"),
	rule("q4_large_k_threshold", largeGPU, 512,
		"engine's value for large GPUs (Max, Ultra): more cores to feed, so split long rows sooner"),
	rule("q4_large_k_threshold", mediumGPU, 1024,
		"engine's value for medium GPUs (Pro)"),
	rule("q4_large_k_threshold", always, 2048,
		"engine's value for small GPUs (base): one SIMD group per row keeps them busy"),

	rule("wide_gemv_threshold", isCPU, 0,
		"ours: rows are already spread over goroutines; no wide variant on CPU"),
	rule("wide_gemv_threshold", always, 32768,
		"engine's rule: LM heads of large vocabularies (N > 32768) take the wide GEMV"),

	rule("chain_chunk", isCPU, 16,
		"ours: no submission cost to amortize on a CPU; small chunks stream tokens sooner"),
	rule("chain_chunk", largeGPU, 128,
		"engine's value for large GPUs: they finish a token soonest, so per-submission cost weighs most"),
	rule("chain_chunk", mediumGPU, 96,
		"engine's value for medium GPUs"),
	rule("chain_chunk", always, 64,
		"engine's value for small GPUs"),

	rule("prefill_chunk", isCPU, 512,
		"ours: llama.cpp's default micro-batch; keeps CPU scratch small"),
	rule("prefill_chunk", always, 4096,
		"engine's value"),

	rule("norm_tg", always, 1024,
		"engine's value, the largest threadgroup on Apple GPUs and CUDA; the CPU backend reduces in the same order"),

	rule("large_k_types", isCPU, []string{},
		"ours: no large-K variant on CPU"),
	rule("large_k_types", isNVIDIA, append(slices.Clone(q4Types), "q6_K"),
		"measured on an H100 (docs/cuda.md): Q6_K's one SIMD group per row left each lane 16 chunks in a row, a memory round trip each, in the Q4_K_M mix's 8192-long FFN down rows (42 µs a GEMV); split across four SIMD groups as the 4-bit types are"),
	rule("large_k_types", always, q4Types,
		"engine's rule names Q4; ours: every 4-bit block type, whose rows are fewest bytes per element"),

	rule("attn_decode_fast_kv", isCPU, 0,
		"ours: one kernel shape on CPU"),
	rule("attn_decode_fast_kv", always, 256,
		"ours, unmeasured: the tiled kernel's setup pays from a few tiles of KV on"),

	rule("attn_decode_parallel_kv", isCPU, 0,
		"ours: heads already spread over goroutines"),
	rule("attn_decode_parallel_kv", isNVIDIA, 1,
		"measured on an H200 (docs/cuda.md): one threadgroup per head leaves most of 132 SMs idle; split-K took the Qwen3-0.6B shape's decode from 323 to 556 tok/s at a 4096 context, the reduce dispatch included"),
	rule("attn_decode_parallel_kv", largeGPU, 4096,
		"ours, unmeasured: split-K adds a reduce dispatch per layer, so it pays only for long caches; sooner with more cores to fill"),
	rule("attn_decode_parallel_kv", mediumGPU, 8192,
		"ours, unmeasured: medium GPUs keep the engine's one attention command per layer up to 8k contexts"),
	rule("attn_decode_parallel_kv", always, 16384,
		"ours, unmeasured: small GPUs"),

	rule("attn_prefill_v2_tokens", isCPU, 0,
		"ours: one kernel shape on CPU"),
	rule("attn_prefill_v2_tokens", always, 64,
		"ours, unmeasured: tiling over queries pays from a few 32-row tiles on"),

	rule("max_seqs", always, 64,
		"ours: a bound, not an allocation (the runtime sizes the KV cache for the slots it uses); llama-server's default is 4 slots, busy servers run dozens"),

	rule("repack", cpuFamily("x86-64-v4"), []string{"q4_0x16", "q8_0x16", "q4_kx16", "q6_kx16"},
		"ours: with AVX-512 VNNI, 16 rows' blocks in one register make a block's 32 products one lane's sum before a single conversion (llama.cpp repacks for the same reason); measured in docs/runtime.md"),
	rule("repack", isNVIDIA, []string{"q4_0_planar", "q6_k_planar"},
		"measured on an H100 (docs/cuda.md, ADR 0025): Q4_0's 18-byte blocks allow only 2-byte loads; split into a plane of 16-byte quants and one of scales, the GEMVs load a block in one instruction: the 8B shape's gate|up GEMV 33.3 -> 25.7 us and its down projection 22.7 -> 15.5 us on weights streamed from memory; Q6_K's 210-byte blocks the same way (its runs of 16 bytes in three aligned loads, not 24 two-byte ones): unmeasured"),
	rule("repack", always, []string{},
		"ours: other targets read GGUF's layout, mapped without a copy"),

	rule("gemv_min_groups", isNVIDIA, 1024,
		"measured on an H100 (docs/cuda.md): the Qwen3-0.6B shape's output and down projections (N = 1024) launched 256 threadgroups of 4 rows on 132 SMs; at 2 rows, 512, decode 1281 -> 1316 tok/s; with the 8-bit GEMVs, 1024 (and gemv_min_rows 2) gave the Llama-3.2-1B shape's QKV, output and down projections 2 rows: 1421 -> 1485 tok/s, the others unchanged (2048: every shape slower)"),
	rule("gemv_min_groups", always, 0,
		"ours: unmeasured on Apple GPUs, which keep the dtype's rows per threadgroup"),

	rule("gemv_min_rows", isNVIDIA, 2,
		"measured on an H100 (docs/cuda.md): one row per threadgroup made the Qwen3-0.6B shape's output and down projections slower than two (decode 1352 -> 1339 tok/s with gemv_min_groups 1024 and no floor)"),
	rule("gemv_min_rows", always, 0,
		"ours: no minimum where gemv_min_groups asks for no halving"),

	rule("int8_gemv", isNVIDIA, true,
		"measured on an H100 (docs/cuda.md): with Q6_K dotted on 8-bit x, the Llama-3.2-1B Q4_K_M mix decoded 1063 tok/s at the float path's rows (Q4_K 2, Q6_K 1 a SIMD group), 1080 with Q6_K at 2 and 1112 with Q4_K at 4 as well; with a lane a whole quant run (ADR 0026), Q6_K at 4 rows 1257–1261 → 1268–1271"),
	rule("int8_gemv", always, false,
		"ours: Apple GPUs have no 8-bit dot instruction, so their GEMVs stay in float (kernels/gpu/prelude_metal.h) with the float path's rows"),

	rule("split_silu", isNVIDIA, true,
		"measured on an H100 (docs/cuda.md): the fused down projection computed silu(gate)·up, two special-function instructions an element, and quantized it to 8 bits in each of its threadgroups (1024 on the 8B shape, each over all 14336 elements); one silu_gate command instead: decode 343.6 -> 356.1 tok/s on the 8B shape, the 1B Q4_K_M mix 994 -> 1009, the Q4_0 0.6B and 1B shapes within 0.5%"),
	rule("split_silu", always, false,
		"ours: one command fewer a layer; unmeasured on Apple GPUs, which quantize nothing in the GEMV"),

	rule("fold_norms_max_dim", isNVIDIA, 4096,
		"measured on an H100 (docs/cuda.md, ADR 0029), the partial-sum fold against the same plans with the norm commands: Qwen3-0.6B shape (1024) 1530/1542 -> 1573/1565 tok/s, Llama-3.2-1B shape (2048) 1817/1826 -> 1844/1852; Llama-3-8B shape (4096) 476.9 -> 416.1 while the folded GEMVs took 155-167 registers (three threadgroups an SM, ncu), and 507 -> 532 once held to four where they stream 8 rows a group (kernels/gpu/gemv.h) with the output projection at 8 rows; wider norms stay commands (unmeasured)"),
	rule("fold_norms_max_dim", always, 0,
		"ours: Apple GPUs and CPUs keep the norm commands (no planar GEMVs there)"),

	rule("gemv_preload_max_k", isNVIDIA, 3072,
		"measured on an H100 (docs/cuda.md), tg128 against the same plans prefetching into L2: with every planar GEMV preloading, Qwen3-0.6B shape (K 1024-3072) 1620-1627 -> 1721-1722 tok/s and Llama-3.2-1B shape (K 2048) 1884-1887 -> 1956-1961, but Llama-3-8B shape (K 4096) 488 -> 463 (unprofiled); so rows of 4096 and more keep the L2 prefetch"),
	rule("gemv_preload_max_k", always, 0,
		"ours: Apple GPUs wait for no command inside a kernel, so there is nothing to overlap; CPUs have no planar GEMVs"),

	rule("rope_in_attention", isNVIDIA, true,
		"ours: one command fewer a layer in decode; the attention's threadgroups rotate their q heads, and those holding the newest position rotate and write its k and v"),
	rule("rope_in_attention", always, false,
		"ours: Apple GPUs keep the rope command (unmeasured there)"),

	rule("out_rows", always, 32,
		"ours: a decode step of up to 32 sequences, or a verify pass of up to 31 drafts, in one replay; the logits buffer holds 32 rows (19 MB for a 151k vocabulary)"),
}

// Rule sets one Tuning field when its condition holds.
type Rule struct {
	Field string // the JSON name of the Tuning field
	When  Cond
	Value any    // the field's value: bool, int or []string
	Why   string // the reason, "engine: ..." when the akunu engine measured it
	Pos   string // rules.go:LINE, where the rule is written
}

// Cond is a condition on a profile, with its text for docs and --rules.
type Cond struct {
	Text  string
	Match func(p *Profile) bool
}

var (
	always   = Cond{"always", func(*Profile) bool { return true }}
	isCPU    = Cond{"kind = cpu", func(p *Profile) bool { return p.Kind == CPU }}
	isNVIDIA = Cond{"vendor = nvidia", func(p *Profile) bool { return p.Vendor == NVIDIA }}
)

// cpuFamily holds for CPU targets of one instruction-set level.
func cpuFamily(f string) Cond {
	return Cond{"kind = cpu, family " + f, func(p *Profile) bool { return p.Kind == CPU && p.Family == f }}
}

// The GPU size classes. The boundaries sit in the gaps between Apple's
// tiers (base 7-10 cores, Pro 14-20, Max 24-40, Ultra 48-80), so that every
// bin of a chip derives the same tuning and a plan diff across bins shows
// only facts; the engine's examples fix the classes of M1 (8: small), M3
// Pro (18: medium) and M4 Ultra (64: large).
var (
	largeGPU  = coresAtLeast(24)
	mediumGPU = coresAtLeast(12)
)

// coresAtLeast holds for GPUs with at least n cores. An NVIDIA SM counts as
// a core: both issue 128 FP32 lanes per clock, so the classes carry over.
func coresAtLeast(n int) Cond {
	return Cond{fmt.Sprintf("gpu_cores >= %d", n), func(p *Profile) bool { return p.GPUCores >= n }}
}

func slcAtLeast(b Bytes) Cond {
	return Cond{"slc >= " + b.String(), func(p *Profile) bool { return p.SLC >= b }}
}

func rule(field string, when Cond, value any, why string) Rule {
	_, file, line, _ := runtime.Caller(1)
	return Rule{Field: field, When: when, Value: value, Why: why, Pos: fmt.Sprintf("%s:%d", filepath.Base(file), line)}
}

// Rules returns the rule table, in order.
func Rules() []Rule { return slices.Clone(rules) }

// tuningFields maps a JSON name to its field index in Tuning.
var tuningFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[Tuning]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = i
	}
	return m
}()

// checkRules is the table's own test, run at init so that a malformed table
// cannot ship: every rule names a field and has a value of its type, every
// field ends with an "always" rule, and nothing follows it.
func checkRules(rs []Rule) error {
	t := reflect.TypeFor[Tuning]()
	closed := map[string]string{}
	for _, r := range rs {
		i, ok := tuningFields[r.Field]
		if !ok {
			return fmt.Errorf("%s: rule for unknown tuning field %q", r.Pos, r.Field)
		}
		if at, done := closed[r.Field]; done {
			return fmt.Errorf("%s: rule for %s can never fire: the always rule at %s shadows it", r.Pos, r.Field, at)
		}
		if got, want := reflect.TypeOf(r.Value), t.Field(i).Type; got != want {
			return fmt.Errorf("%s: rule for %s sets a %v, the field is a %v", r.Pos, r.Field, got, want)
		}
		if r.When.Text == always.Text {
			closed[r.Field] = r.Pos
		}
	}
	for name := range tuningFields {
		if _, ok := closed[name]; !ok {
			return fmt.Errorf("rules.go: tuning field %s has no always rule", name)
		}
	}
	return nil
}

func init() {
	if err := checkRules(rules); err != nil {
		panic("chips: " + err.Error())
	}
}

// Derive computes the tuning of p: for each field, the first rule that holds.
func Derive(p Profile) Tuning {
	t, _ := Explain(p)
	return t
}

// Explain returns the tuning of p and, per field (by JSON name), the rule
// that set it.
func Explain(p Profile) (Tuning, map[string]Rule) {
	var t Tuning
	v := reflect.ValueOf(&t).Elem()
	by := map[string]Rule{}
	for _, r := range rules {
		if _, done := by[r.Field]; done || !r.When.Match(&p) {
			continue
		}
		by[r.Field] = r
		f := v.Field(tuningFields[r.Field])
		if s, ok := r.Value.([]string); ok {
			f.Set(reflect.ValueOf(slices.Clone(s)))
		} else {
			f.Set(reflect.ValueOf(r.Value))
		}
	}
	return t, by
}

// WorkingSetShare is the share of unified memory Metal lets one process keep
// resident (MTLDevice.recommendedMaxWorkingSetSize), as macOS sets it by
// default: about 2/3 up to 32 GiB and 3/4 above. It is an estimate for
// planning on another machine; the Metal backend reads the real value.
func WorkingSetShare(memory Bytes) float64 {
	if memory > 32*GiB {
		return 0.75
	}
	return 2.0 / 3.0
}
