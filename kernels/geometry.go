package kernels

import (
	"fmt"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/specs/chips"
)

// Shape is what a geometry rule needs to know of one command. Each rule
// reads the fields its op uses and refuses a shape that lacks one; the rest
// are ignored.
type Shape struct {
	Tokens   int // rows of activations: 1 in decode, the bucket size in prefill; argmax, pool: output rows
	N        int // GEMV, GEMM: output features (rows of the weight); gemv_id: rows of one expert's matrix
	K        int // GEMV, GEMM, gemv_id: input features (elements of a weight row)
	Dim      int // norms, embedding, elementwise, pool, moe_sum: elements per row (per head for head_rmsnorm)
	Vocab    int // argmax, sampling: logits
	Heads    int // query heads
	KVHeads  int // key/value heads
	HeadDim  int // elements per q and k head
	HeadDimV int // elements per v head
	MaxCtx   int // positions the KV cache holds
	Pooling  int // pool: PoolMean, PoolCLS or PoolLast
	Experts  int // moe_route, gemv_id: the experts of a MoE layer (router logits per row, matrices of the weight)
	Slots    int // moe_route, gemv_id, moe_sum: the experts chosen per row (the route's k)

	// Options that select function constants (and so bindings).
	Bias      bool // GEMV, GEMM, layernorm: a bias is bound and added
	Factors   bool // RoPE: a frequency-factor tensor is bound
	Softcap   bool // attention: scores are soft-capped
	Window    bool // attention: a sliding window limits the keys
	LastRow   bool // copy: the last row of the input (the batch's last token) is copied to row 0
	VecX      bool // GEMV, gemv_id: x (gate, up) is bound 16-byte aligned and K is a multiple of 16 (gemv_id: its strides too); GEMM: X is bound 16-byte aligned and lda is a multiple of 8; argmax: the logits are bound 16-byte aligned
	Normalize bool // pool: the pooled vector is divided by its L2 norm
	Norm      bool // moe_route: a row's chosen weights are divided by their sum (llama.cpp's norm_w)
}

// Pooling modes of the pool kernels (the pooling constant, Shape.Pooling),
// numbered as llama.cpp's llama_pooling_type (GGUF {arch}.pooling_type).
const (
	PoolMean = 1 // the mean of the input's rows
	PoolCLS  = 2 // its first row
	PoolLast = 3 // its last row
)

// Launch is how one command runs: the grid in threadgroups (commands use
// dispatchThreadgroups; none relies on non-uniform threadgroups), the
// threads of one threadgroup, its threadgroup memory, and the values of the
// kernel's function constants, which name the pipeline with the kernel.
type Launch struct {
	Grid        [3]int       `json:"grid"`        // threadgroups in x, y, z
	Threadgroup [3]int       `json:"threadgroup"` // threads per threadgroup in x, y, z
	TGMem       int          `json:"tg_mem"`      // threadgroup memory, bytes, a multiple of 16
	Constants   []ConstValue `json:"constants"`   // one per constant of the kernel, in index order
}

// Threads is the number of threads of one threadgroup.
func (l Launch) Threads() int { return l.Threadgroup[0] * l.Threadgroup[1] * l.Threadgroup[2] }

// ConstValue is the value of one function constant in a pipeline.
type ConstValue struct {
	Index int       `json:"index"`
	Name  string    `json:"name"`
	Type  ConstType `json:"type"`
	Value uint32    `json:"value"` // bool: 0 or 1
}

// Limits every target shares: Apple GPUs from apple7 on and NVIDIA both run
// 1024 threads per threadgroup and 32 threads per SIMD group (warp); 32 KiB
// is Apple's threadgroup memory (CUDA's default shared memory is more).
const (
	SIMDWidth   = 32
	MaxThreads  = 1024
	MaxTGMemory = 32 << 10
)

// geometryRule computes a kernel's launch from a shape and the tuning.
type geometryRule func(k *Kernel, s Shape, t chips.Tuning) (Launch, error)

// need checks that the shape fields a rule reads are positive.
func need(k *Kernel, fields ...any) error {
	for i := 0; i < len(fields); i += 2 {
		if v := fields[i+1].(int); v <= 0 {
			return fmt.Errorf("kernels: %s: shape.%s must be positive, is %d", k.Name, fields[i], v)
		}
	}
	return nil
}

// needBlocks checks that n elements of the kernel's dtype are whole blocks.
func needBlocks(k *Kernel, what string, n int) error {
	if bs := k.DType.BlockSize(); bs > 1 && n%bs != 0 {
		return fmt.Errorf("kernels: %s: shape.%s = %d is not a multiple of the %v block size %d", k.Name, what, n, k.DType, bs)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// actBytes is the size of one activation element.
func actBytes(k *Kernel) int { return k.Act.BlockBytes() }

// launch1D builds a launch of grid × threads, with constants in index order.
func launch(grid [3]int, threads int, tgMem int, consts ...ConstValue) Launch {
	return Launch{Grid: grid, Threadgroup: [3]int{threads, 1, 1}, TGMem: roundUp(tgMem, 16), Constants: consts}
}

// values builds the constant values of k from name → value, in index order;
// a constant without a value is a bug in the rule.
func values(k *Kernel, vals map[string]uint32) []ConstValue {
	out := make([]ConstValue, len(k.Constants))
	for i, c := range k.Constants {
		v, ok := vals[c.Name]
		if !ok {
			panic("kernels: " + k.Name + ": geometry sets no value for constant " + c.Name)
		}
		out[i] = ConstValue{Index: c.Index, Name: c.Name, Type: c.Type, Value: v}
	}
	return out
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// gemvShape is the work split of a GEMV: NR rows of W per SIMD group, NSG
// SIMD groups per threadgroup; NR8, where not 0, the rows on a chip whose
// GEMVs dot the type with 8-bit x (the tuning's Int8GEMV).
type gemvShape struct{ NR, NSG, NR8 int }

// gemvShapes: the rows each SIMD group owns, by weight type. A SIMD group
// reads x once per block and applies it to all NR of its rows, so more rows
// per group means fewer reads of x and more registers per lane; the types
// whose blocks decode into many values per lane (the K-quants: a lane holds
// 16 or more dequantized weights per block) keep fewer rows to stay within
// registers. Two SIMD groups per threadgroup (64 threads) keeps threadgroups
// small enough that even a 2048-row projection fills a 40-core GPU.
// Ours, following the split llama.cpp's Metal GEMVs use; unmeasured on
// akunu's kernels.
//
// NR8: with 8-bit x (CUDA), a lane quantizes its part of x once for all
// its rows and a row's part is dp4a and no dequantized weights, so the
// K-quants take more rows: measured on an H100 (Llama-3.2-1B Q4_K_M mix,
// tg128, A/B in one run: docs/cuda.md). With a lane a 16-element chunk,
// Q6_K at 2 rows 1063 → 1080 tok/s, Q4_K at 4 as well 1112, Q6_K at 4
// slower than at 2 (1094–1096 against 1111). With a lane a Q4_K block's
// 16 quant bytes and a quarter of a Q6_K block (gemv_rows.h): Q4_K at 2
// rows 1175–1179, at 4 1257–1261, at 8 1261–1262 (kept at 4); Q6_K at 1
// 1204, at 2 1257–1261, at 4 1268–1271.
var gemvShapes = map[dtype.Type]gemvShape{
	dtype.F32: {4, 2, 0}, dtype.F16: {4, 2, 0}, dtype.BF16: {4, 2, 0},
	dtype.Q4_0: {4, 2, 0}, dtype.Q4_1: {4, 2, 0}, dtype.Q5_0: {4, 2, 0}, dtype.Q5_1: {4, 2, 0}, dtype.Q8_0: {4, 2, 0},
	dtype.Q4_K: {2, 2, 4}, dtype.Q5_K: {2, 2, 0}, dtype.Q6_K: {1, 2, 4},
	dtype.Q2_K: {2, 2, 0}, dtype.Q3_K: {2, 2, 0}, dtype.IQ4_NL: {4, 2, 0}, dtype.IQ4_XS: {2, 2, 0},
}

const (
	// gemvLargeKSG: the SIMD groups that share the rows of one large-K
	// threadgroup, each taking every 4th block of the row.
	gemvLargeKSG = 4
	// gemvWideSG: the SIMD groups of a wide threadgroup.
	gemvWideSG = 8
)

// gemvGeometry is the GEMV rule, for its three shapes.
//
// Standard: SIMD group g of threadgroup t owns rows [(t·NSG + g)·NR, +NR):
// its 32 lanes stride over the blocks of those rows, each lane accumulating
// a partial dot product for every row, and a simd_sum per row ends it. No
// threadgroup memory: rows never share a reduction.
// grid = ceil(N / (NR·NSG)). On a chip whose tuning has Int8GEMV, NR is
// the type's NR8 where it has one, in every shape.
//
// Large-K (_l): for long rows (K ≥ the tuning's Q4LargeKThreshold) one SIMD
// group per row leaves too few groups in flight to hide memory latency when
// N is small, so the 4 SIMD groups of a threadgroup share its NR rows, group
// g taking blocks g, g+4, g+8, ...; their partial sums meet in threadgroup
// memory (4 × NR floats) and SIMD group 0 writes the rows.
// grid = ceil(N / NR), 128 threads. Where that would be fewer threadgroups
// than the tuning's GEMVMinGroups, NR is halved (down to the tuning's
// GEMVMinRows, or 1) until it is not: a small N (the output and down
// projections of a small model) then still fills the GPU.
//
// Wide (gemv_wide_): for N > the tuning's WideGEMVThreshold (LM heads of
// 100k+ rows) the standard split launches hundreds of thousands of tiny
// threadgroups; the wide kernel puts 8 SIMD groups (256 threads) in one,
// each owning NR rows as in the standard shape. grid = ceil(N / (NR·8)).
//
// The constants nr and nsg carry the split to the kernel; has_bias binds the
// bias and adds it; vec_x, set where the compiler bound x (gate and up)
// 16-byte aligned and K is a multiple of 16, lets the GPU kernels load x in
// 16-byte vectors (measured on an H200: decode 10% faster on the Qwen3-0.6B
// shape, 19% on the Llama-3.2-1B shape, both Q4_0).
func gemvGeometry(k *Kernel, s Shape, t chips.Tuning) (Launch, error) {
	if err := need(k, "N", s.N, "K", s.K); err != nil {
		return Launch{}, err
	}
	if err := needBlocks(k, "K", s.K); err != nil {
		return Launch{}, err
	}
	if k.Variant&Planar != 0 && k.DType == dtype.Q4_0 { // Q6_K's planar GEMVs keep the shapes below
		nr, nsg := planarShape(s.N, s.K/int(k.DType.BlockSize()))
		tg := planarThreads / SIMDWidth * nr * 4 // the row groups' partial sums
		if k.Variant&Norm != 0 {                 // and each SIMD group's share of Σres²
			tg += planarThreads / SIMDWidth * 4
		}
		return launch([3]int{ceilDiv(s.N, nr*nsg), 1, 1}, planarThreads, tg,
			values(k, map[string]uint32{"nr": uint32(nr), "nsg": uint32(nsg), "has_bias": b2u(s.Bias), "vec_x": b2u(s.VecX && s.K%16 == 0),
				"preload": b2u(s.K <= t.GEMVPreloadMaxK)})...), nil
	}
	sh := gemvShapes[k.DType]
	if t.Int8GEMV && sh.NR8 > 0 {
		sh.NR = sh.NR8
	}
	nsg, rowsPerTG, tgMem := sh.NSG, sh.NR*sh.NSG, 0
	switch {
	case k.Variant&LargeK != 0:
		for sh.NR > max(1, t.GEMVMinRows) && ceilDiv(s.N, sh.NR) < t.GEMVMinGroups {
			sh.NR /= 2
		}
		nsg, rowsPerTG, tgMem = gemvLargeKSG, sh.NR, gemvLargeKSG*sh.NR*4
	case k.Variant&Wide != 0:
		nsg, rowsPerTG = gemvWideSG, sh.NR*gemvWideSG
	}
	return launch([3]int{ceilDiv(s.N, rowsPerTG), 1, 1}, nsg*SIMDWidth, tgMem,
		values(k, map[string]uint32{"nr": uint32(sh.NR), "nsg": uint32(nsg), "has_bias": b2u(s.Bias), "vec_x": b2u(s.VecX && s.K%16 == 0)})...), nil
}

// planarThreads: the threads of a planar GEMV's threadgroup.
const planarThreads = 128

// planarShape is the planar GEMV's split of an N×K matrix of nb blocks a
// row: nsg row groups of nr rows a threadgroup of 128 threads, a group's
// 128/nsg lanes striding over the row's blocks, one block (16 quant bytes,
// one 16-byte load a row) a lane at a time. As many lanes along K as the
// row has blocks for (128 from 96 blocks, 64 from 48, else 32: lanes
// without a block idle), and 8 rows a group for matrices of more than
// 2^24 weights, 4 below: ours, from a sweep on an H100 (Q4_0, weights streamed
// from memory, 2026-11-27: docs/cuda.md, ADR 0025), where this rule was
// within 4% of the fastest split on every matrix of 3 MB or more of the
// three bench models and reached 2.1–2.6 TB/s on the 8B shape's gate|up
// and down; on the smaller ones, at their 4–5 µs launch floor, within 14%
// (0.5 µs). Also 8 at exactly 2^24 weights with 4096 rows or more, from
// the 8B shape's output projection (4096 × 4096) in the decode: at 4 rows,
// 1024 threadgroups of 96 registers, 1.55 waves; at 8, 512 of 128
// registers, one wave; tg128 507 -> 513 tok/s, and with the norms folded
// 514 -> 532 (ADR 0029). The 1B shape's down projection (2048 × 8192, also
// 2^24) at 8 rows is 256 threadgroups, too few: that shape's decode fell
// 6% with it (and its bound), so it keeps 4.
func planarShape(n, nb int) (nr, nsg int) {
	lanes := 32
	switch {
	case nb >= 96:
		lanes = 128
	case nb >= 48:
		lanes = 64
	}
	nr = 4
	if w := n * nb * 32; w > 1<<24 || w == 1<<24 && n >= 4096 {
		nr = 8
	}
	return nr, planarThreads / lanes
}

// GEMM tiles: a threadgroup computes a 64 (tokens) × 64 (output features)
// tile of Y, stepping through K 64 elements at a time (gemm_id: 32 × 64
// tiles, K steps of 32).
const (
	gemmTM, gemmTN, gemmTK = 64, 64, 64
	// gemmTKP: the staged tiles' row stride in threadgroup memory, padded
	// so that the 8 rows a tile load reads fall in distinct banks;
	// gemm_id's tiles are 32 rows of X and K steps of 32.
	gemmTKP, gemmIDTM, gemmIDTKP = gemmTK + 8, 32, 32 + 8
	gemmSG                       = 4
	// gemmSmallCols: output features per SIMD group of the small GEMM.
	gemmSmallCols = 8
)

// gemmGeometry is the prefill GEMM rule.
//
// simd_gemm: threadgroup (x, y) owns the tile Y[64y : 64y+64, 64x : 64x+64].
// Each K step stages a 64×64 tile of X and a 64×64 tile of W (dequantized to
// the activation type) in threadgroup memory; each of the 4 SIMD groups
// (128 threads) owns a 64×16 column strip of the tile and multiplies with
// 8×8 simdgroup matrices, so every staged element is read by the four groups
// from threadgroup memory rather than four times from device memory, and
// every dequantized weight serves 64 tokens. grid = (ceil(N/64),
// ceil(M/64)); threadgroup memory = (64 + 64) rows of 72 (64 padded by 8)
// halves.
//
// simd_gemm_small_<dtype>_planar[_glu] (2–8 rows, NVIDIA plans): the
// planar GEMV (gemvGeometry) over each row of X, the decode program's
// planar buffer bound: grid = (M, the GEMV's threadgroups), M varying
// fastest so that one row group's threadgroups for every row run together
// and share their weight reads through L2.
//
// simd_gemm_small (2–8 rows): a 32-row tile would be mostly empty, so the
// small kernel is a GEMV over up to 8 vectors: SIMD group g owns cols
// output features and reads each weight block once for every row of X. 4
// SIMD groups per threadgroup: grid = ceil(N / (4·cols)), no threadgroup
// memory. cols is 8, halved while the grid would be fewer than
// tuning.gemv_min_groups threadgroups, down to gemv_min_rows (or 1): the
// GEMVs' rule for filling a GPU (NVIDIA sets 1024 and 2), where 8 left the
// 0.6B shape's down projection one SIMD group an SM; 0 (Apple) keeps 8.
func gemmGeometry(k *Kernel, s Shape, t chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "N", s.N, "K", s.K); err != nil {
		return Launch{}, err
	}
	if err := needBlocks(k, "K", s.K); err != nil {
		return Launch{}, err
	}
	cv := map[string]uint32{"has_bias": b2u(s.Bias), "vec_x": b2u(s.VecX && s.K%8 == 0)}
	if k.Variant&Planar != 0 { // the planar GEMV's shape and constants, a threadgroup for each row
		if s.Tokens > 8 {
			return Launch{}, fmt.Errorf("kernels: %s: %d rows; the small GEMM takes 2 to 8", k.Name, s.Tokens)
		}
		nr, nsg := planarShape(s.N, s.K/int(k.DType.BlockSize()))
		return launch([3]int{s.Tokens, ceilDiv(s.N, nr*nsg), 1}, planarThreads, planarThreads/SIMDWidth*nr*4,
			values(k, map[string]uint32{"nr": uint32(nr), "nsg": uint32(nsg), "has_bias": b2u(s.Bias), "vec_x": b2u(s.VecX && s.K%16 == 0),
				"preload": b2u(s.K <= t.GEMVPreloadMaxK)})...), nil
	}
	if k.Variant&Small != 0 {
		if s.Tokens > 8 {
			return Launch{}, fmt.Errorf("kernels: %s: %d rows; the small GEMM takes 2 to 8", k.Name, s.Tokens)
		}
		cols := gemmSmallCols
		if k.Act != dtype.F32 { // the CPU's forms have no GPU body and no cols
			for cols > max(1, t.GEMVMinRows) && ceilDiv(s.N, gemmSG*cols) < t.GEMVMinGroups {
				cols /= 2
			}
			cv["cols"] = uint32(cols)
		}
		return launch([3]int{ceilDiv(s.N, gemmSG*cols), 1, 1}, gemmSG*SIMDWidth, 0, values(k, cv)...), nil
	}
	consts := values(k, cv)
	if k.Act == dtype.F32 {
		// No GPU body has F32 activations: these are the CPU backend's,
		// whose launch is checked but never run, so it stays what plans
		// compiled before the GPU tiles grew carry (legacyGEMMLaunch).
		return legacyGEMMLaunch(s, 0, consts), nil
	}
	return launch([3]int{ceilDiv(s.N, gemmTN), ceilDiv(s.Tokens, gemmTM), 1}, gemmSG*SIMDWidth,
		(gemmTM+gemmTN)*gemmTKP*actBytes(k), consts...), nil
}

// legacyGEMMLaunch is the launch the GEMM rule gave before its GPU tiles
// grew to 64 rows and K steps of 64 (32 × 64 tiles, K steps of 32,
// unpadded F32 tiles) plus extra bytes of threadgroup memory: the CPU
// backend's F32-activation GEMMs keep it, so that their plans still load.
func legacyGEMMLaunch(s Shape, extra int, consts []ConstValue) Launch {
	return launch([3]int{ceilDiv(s.N, gemmTN), ceilDiv(s.Tokens, 32), 1}, gemmSG*SIMDWidth, (32+gemmTN)*32*4+extra, consts...)
}

// embeddingGeometry: one threadgroup per token, 256 threads; thread i
// dequantizes blocks i, i+256, ... of the token's row (32-element chunks
// for the unquantized types), so a row is read once, in order, by one
// threadgroup. grid = Tokens.
func embeddingGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Dim", s.Dim); err != nil {
		return Launch{}, err
	}
	if err := needBlocks(k, "Dim", s.Dim); err != nil {
		return Launch{}, err
	}
	return launch([3]int{s.Tokens, 1, 1}, 256, 0), nil
}

// normGeometry (rmsnorm, layernorm and their residual forms): one
// threadgroup per row, of the tuning's NormTG threads, or fewer for a short
// row (the row length rounded up to a SIMD group): thread i sums elements
// i, i+T, ...; simd_sum, then the SIMD groups' partials meet in threadgroup
// memory (one float per group; two for layernorm, which also sums for the
// mean). A fixed thread count and order makes the reduction deterministic,
// and the CPU backend reduces in the same order. grid = Tokens.
func normGeometry(k *Kernel, s Shape, t chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Dim", s.Dim, "tuning.NormTG", t.NormTG); err != nil {
		return Launch{}, err
	}
	threads := min(t.NormTG, roundUp(s.Dim, SIMDWidth), MaxThreads)
	perGroup := 4
	if k.Op == OpLayerNorm {
		perGroup = 8
	}
	return launch([3]int{s.Tokens, 1, 1}, threads, threads/SIMDWidth*perGroup,
		values(k, map[string]uint32{"has_bias": b2u(s.Bias)})...), nil
}

// headNormGeometry (head_rmsnorm): a head is short (64 to 256 elements), so
// one SIMD group normalizes one head, lane i taking elements i, i+32, ...,
// and a simd_sum needs no threadgroup memory. 8 SIMD groups (256 threads)
// per threadgroup, one head each: grid = ceil(Tokens·Heads / 8).
func headNormGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Heads", s.Heads, "Dim", s.Dim); err != nil {
		return Launch{}, err
	}
	return launch([3]int{ceilDiv(s.Tokens*s.Heads, 8), 1, 1}, 8*SIMDWidth, 0), nil
}

// ropeGeometry (stand-alone rope): threadgroup (h, t) rotates head h of
// token t; thread i owns pair i (its two elements and its angle), threads
// beyond rope_dim/2 leave the tail as it is. threads = head_dim/2 rounded
// up to a SIMD group. grid = (Heads, Tokens).
func ropeGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Heads", s.Heads, "HeadDim", s.HeadDim); err != nil {
		return Launch{}, err
	}
	if s.HeadDim%2 != 0 {
		return Launch{}, fmt.Errorf("kernels: %s: odd head_dim %d", k.Name, s.HeadDim)
	}
	return launch([3]int{s.Heads, s.Tokens, 1}, roundUp(s.HeadDim/2, SIMDWidth), 0,
		values(k, map[string]uint32{"head_dim": uint32(s.HeadDim), "has_factors": b2u(s.Factors)})...), nil
}

// ropeKVGeometry (rope_qkv_write, head_norm_rope_kv_write): threadgroup
// (h, t) handles head h of token t, where h < Heads are the query heads
// (rotated into q_out) and the KVHeads after them the key heads, which also
// own the value head of the same index: thread i rotates pair i of the head
// and writes it where it goes (q_out, or the K cache at the token's
// position), and a key head's threads copy v elements i, i+T, ... into the
// V cache. Fusing the three writes saves two dispatches and a re-read of k
// per layer. threads = max(head_dim/2, 32) rounded up to a SIMD group.
//
// The head-norm form first reduces the head's sum of squares: a simd_sum per
// SIMD group, then one float per group in threadgroup memory.
// grid = (Heads + KVHeads, Tokens).
func ropeKVGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Heads", s.Heads, "KVHeads", s.KVHeads, "HeadDim", s.HeadDim, "HeadDimV", s.HeadDimV); err != nil {
		return Launch{}, err
	}
	if s.HeadDim%2 != 0 {
		return Launch{}, fmt.Errorf("kernels: %s: odd head_dim %d", k.Name, s.HeadDim)
	}
	threads := roundUp(s.HeadDim/2, SIMDWidth)
	tgMem := 0
	if k.Op == OpHeadNormRoPEKVWrite {
		tgMem = threads / SIMDWidth * 4
	}
	return launch([3]int{s.Heads + s.KVHeads, s.Tokens, 1}, threads, tgMem,
		values(k, map[string]uint32{"head_dim": uint32(s.HeadDim), "has_factors": b2u(s.Factors)})...), nil
}

// Decode attention shapes.
const (
	attnDecodeSG     = 4 // standard and parallel: SIMD groups per threadgroup
	attnDecodeFastSG = 8 // fast: SIMD groups per threadgroup
	attnSplitKV      = 512
	attnMaxSplits    = 32
)

// attnSplits is the number of KV splits of the parallel decode kernel. The
// grid is fixed when the plan is compiled while kv_len grows per token, so
// the split count follows the cache size: one split per 512 positions,
// between 2 and 32, each split covering ceil(kv_len / splits) positions at
// run time. Ours, unmeasured.
func attnSplits(maxCtx int) int { return min(max(ceilDiv(maxCtx, attnSplitKV), 2), attnMaxSplits) }

// attnDecodeGeometry is the decode attention rule (one query per head).
//
// Standard: threadgroup h computes query head h; its 4 SIMD groups take the
// keys g, g+4, g+8, ... of the range, each keeping its own running max,
// sum and output accumulator (online softmax; lane i holds output elements
// i, i+32, ...), and the 4 partial states merge through threadgroup memory
// (4 × (head_dim_v + 2) floats). grid = Heads, 128 threads.
//
// Fast: the same ownership with 8 SIMD groups, each taking a tile of 32 keys
// at a time, one key per lane for q·k (q staged in threadgroup memory), so
// a tile costs one pass over its keys; pays once the range is a few tiles
// long. threadgroup memory = head_dim + 8 × (head_dim_v + 2) floats.
// grid = Heads, 256 threads.
//
// Parallel: with a long cache, one threadgroup per head leaves cores idle,
// so threadgroup (h, s) takes split s of the key range of head h and writes
// its partial state (max, sum, head_dim_v outputs) to the scratch buffer;
// flash_attention_decode_reduce_* merges the splits.
// grid = (Heads, splits), 128 threads; the split count is the n_splits
// constant (attnSplits).
func attnDecodeGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Heads", s.Heads, "KVHeads", s.KVHeads, "HeadDim", s.HeadDim, "HeadDimV", s.HeadDimV, "MaxCtx", s.MaxCtx); err != nil {
		return Launch{}, err
	}
	vals := map[string]uint32{
		"head_dim": uint32(s.HeadDim), "head_dim_v": uint32(s.HeadDimV),
		"has_softcap": b2u(s.Softcap), "has_window": b2u(s.Window),
	}
	grid := [3]int{s.Heads, 1, 1}
	sg, tgMem := attnDecodeSG, attnDecodeSG*(s.HeadDimV+2)*4
	switch {
	case k.Variant&Fast != 0:
		sg, tgMem = attnDecodeFastSG, (s.HeadDim+attnDecodeFastSG*(s.HeadDimV+2))*4
	case k.Variant&Parallel != 0:
		grid[1] = attnSplits(s.MaxCtx)
		vals["n_splits"] = uint32(grid[1])
	}
	return launch(grid, sg*SIMDWidth, tgMem, values(k, vals)...), nil
}

// attnDecodeRoPEGeometry is the parallel decode geometry (grid = (Heads,
// splits), 4 SIMD groups) for flash_attention_decode_rope_*: threadgroup
// memory holds the merge area, or, before it, the rotated q and k heads and
// the head norm's four partial sums, whichever is larger.
func attnDecodeRoPEGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Heads", s.Heads, "KVHeads", s.KVHeads, "HeadDim", s.HeadDim, "HeadDimV", s.HeadDimV, "MaxCtx", s.MaxCtx); err != nil {
		return Launch{}, err
	}
	if s.HeadDim%2 != 0 || s.HeadDim > 2*attnDecodeSG*SIMDWidth || s.HeadDimV > 256 {
		return Launch{}, fmt.Errorf("kernels: %s: head_dim %d (even, at most %d) or head_dim_v %d (at most 256)", k.Name, s.HeadDim, 2*attnDecodeSG*SIMDWidth, s.HeadDimV)
	}
	splits := attnSplits(s.MaxCtx)
	tgMem := max(attnDecodeSG*(s.HeadDimV+2), 2*s.HeadDim+attnDecodeSG) * 4
	return launch([3]int{s.Heads, splits, 1}, attnDecodeSG*SIMDWidth, tgMem,
		values(k, map[string]uint32{"head_dim": uint32(s.HeadDim), "head_dim_v": uint32(s.HeadDimV), "has_softcap": b2u(s.Softcap),
			"has_window": b2u(s.Window), "n_splits": uint32(splits), "has_factors": b2u(s.Factors)})...), nil
}

// attnReduceGeometry merges the parallel decode kernel's splits: threadgroup
// h owns head h, thread i output element i: it rescales split s's partial
// output by exp(max_s - max) and divides by the total sum. threads =
// head_dim_v rounded up to a SIMD group. grid = Heads.
func attnReduceGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Heads", s.Heads, "HeadDimV", s.HeadDimV, "MaxCtx", s.MaxCtx); err != nil {
		return Launch{}, err
	}
	if s.HeadDimV > MaxThreads {
		return Launch{}, fmt.Errorf("kernels: %s: head_dim_v %d > %d threads", k.Name, s.HeadDimV, MaxThreads)
	}
	return launch([3]int{s.Heads, 1, 1}, roundUp(s.HeadDimV, SIMDWidth), 0,
		values(k, map[string]uint32{"head_dim_v": uint32(s.HeadDimV), "n_splits": uint32(attnSplits(s.MaxCtx))})...), nil
}

// Prefill attention shapes.
const (
	attnPrefillRows = 32 // v2: query rows per threadgroup
	attnPrefillSG   = 4  // SIMD groups per threadgroup
)

// attnPrefillGeometry is the prefill attention rule (a batch of queries at
// positions position .. position+n_tokens-1, causal).
//
// v1: one query row per SIMD group, 4 per threadgroup: threadgroup (r, h)
// owns rows 4r .. 4r+3 of query head h, each SIMD group streaming the keys
// up to its row's position with an online softmax, lanes splitting the head
// dimensions. No threadgroup memory. grid = (ceil(Tokens/4), Heads).
//
// v2: flash attention tiled over queries and keys: threadgroup (r, h) owns
// 32 query rows of head h (8 per SIMD group) and walks the keys 32 at a
// time, staging the query rows (read once into registers) and the K and V
// tiles (F16, rows padded by 8), the 32 × 32 scores (F32) and weights (F16)
// in the query rows' memory, and an 8 × 8 block a SIMD group (F32) in
// threadgroup memory (26.5 KiB at head dims of 128), so each key is read
// once per 32 queries instead of once per query and both products run on
// the matrix units. Head dims above 128 (or not multiples of 8) run each
// row alone; the memory stays reserved as before, at 16 keys a tile (the
// kv_tile constant). grid = (ceil(Tokens/32), Heads).
func attnPrefillGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Heads", s.Heads, "KVHeads", s.KVHeads, "HeadDim", s.HeadDim, "HeadDimV", s.HeadDimV); err != nil {
		return Launch{}, err
	}
	vals := map[string]uint32{
		"head_dim": uint32(s.HeadDim), "head_dim_v": uint32(s.HeadDimV),
		"has_softcap": b2u(s.Softcap), "has_window": b2u(s.Window),
	}
	if k.Variant&V2 == 0 {
		return launch([3]int{ceilDiv(s.Tokens, attnPrefillSG), s.Heads, 1}, attnPrefillSG*SIMDWidth, 0, values(k, vals)...), nil
	}
	tile := 32
	tgMem := tile*(s.HeadDim+8+s.HeadDimV+8)*2 + // the key and value tiles, F16, rows padded by 8
		max(attnPrefillRows*(s.HeadDim+8)*2, // the query rows, F16, padded, whose memory then holds
			attnPrefillRows*tile*(4+2)) + // the scores (F32) and the weights (F16)
		attnPrefillSG*64*4 // a SIMD group's 8×8 block of output, F32
	if s.HeadDim > 128 || s.HeadDimV > 128 || s.HeadDim%8 != 0 || s.HeadDimV%8 != 0 {
		// The kernel runs each row alone (the staged tiles would not fit
		// 32 KiB); the staged form's memory stays reserved at 16 keys.
		tile = 16
		tgMem = tile*(s.HeadDim+s.HeadDimV)*2 + attnPrefillRows*tile*4
	}
	vals["kv_tile"] = uint32(tile)
	return launch([3]int{ceilDiv(s.Tokens, attnPrefillRows), s.Heads, 1}, attnPrefillSG*SIMDWidth, tgMem, values(k, vals)...), nil
}

// elementwiseGeometry: thread i of threadgroup (x, t) owns element
// 256x + i of row t: no element is shared, so no synchronization.
// grid = (ceil(Dim/256), Tokens); with LastRow (copy of a batch's last
// token) the one row. 256 threads.
func elementwiseGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Dim", s.Dim); err != nil {
		return Launch{}, err
	}
	rows := s.Tokens
	vals := map[string]uint32{}
	if k.Op == OpCopy {
		vals["last_row"] = b2u(s.LastRow)
		if s.LastRow {
			rows = 1
		}
	}
	return launch([3]int{ceilDiv(s.Dim, 256), rows, 1}, 256, 0, values(k, vals)...), nil
}

// vocabGeometry (argmax, gumbel_topk): one threadgroup of 1024 threads over
// the vocabulary: thread i scans logits i, i+1024, ..., a simd reduction
// per SIMD group, then the 32 groups' results meet in threadgroup memory
// (argmax: value and index, 8 bytes per group; gumbel_topk: per-group
// counts for each bisection step of the top-k/top-p threshold, 8 bytes per
// group). One threadgroup, because the result is one token and a second
// dispatch to merge partial results costs more than the scan.
// argmaxGeometry is vocabGeometry with a threadgroup per row of logits
// (Tokens: the output rows; 0 counts as one).
func argmaxGeometry(k *Kernel, s Shape, t chips.Tuning) (Launch, error) {
	l, err := vocabGeometry(k, s, t)
	l.Grid[0] = max(s.Tokens, 1)
	l.Constants = values(k, map[string]uint32{"vec_x": b2u(s.VecX && s.Vocab%8 == 0)})
	return l, err
}

func vocabGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Vocab", s.Vocab); err != nil {
		return Launch{}, err
	}
	return launch([3]int{1, 1, 1}, MaxThreads, MaxThreads/SIMDWidth*8), nil
}

// poolThreads are the threads of a pool threadgroup.
const poolThreads = 256

// poolGeometry (pool): threadgroup j owns output j, the pooled vector of
// input j; thread i takes columns i, i+256, ...: for the mean it sums each
// of its columns over the input's rows in row order (the order the CPU
// twin sums in), and it writes its pooled columns to out. With l2_normalize,
// its squares go through a simd_sum and one float per SIMD group in
// threadgroup memory, and it rescales its own columns of out, which no
// other thread touches. One threadgroup per input because an input is a
// few to a few hundred rows: the work is one pass over them, the
// reduction one per vector. grid = Tokens (the outputs, n_rows).
func poolGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Dim", s.Dim, "Pooling", s.Pooling); err != nil {
		return Launch{}, err
	}
	if s.Pooling > PoolLast {
		return Launch{}, fmt.Errorf("kernels: %s: pooling %d; the modes are %d (mean), %d (cls) and %d (last)", k.Name, s.Pooling, PoolMean, PoolCLS, PoolLast)
	}
	return launch([3]int{s.Tokens, 1, 1}, poolThreads, poolThreads/SIMDWidth*4,
		values(k, map[string]uint32{"pooling": uint32(s.Pooling), "l2_normalize": b2u(s.Normalize)})...), nil
}

// Limits of moe_route: a row's probabilities sit in threadgroup memory
// (4 bytes an expert: 4 KiB at 1024, past every MoE model's 8 to 512
// experts), and lane j of the row's one SIMD group keeps slot j.
const (
	MoEMaxExperts = 1024
	MoEMaxSlots   = SIMDWidth
)

// moeRouteGeometry (moe_route): one SIMD group (32 threads) per row: lane
// l takes experts l, l+32, ...: it widens their logits into threadgroup
// memory, the row's max and sum meet by simd_max and simd_sum, and each
// lane turns its own experts into probabilities in place. Then k rounds
// of argmax: each lane's largest untaken probability (the lower expert
// among equals) meets the others' by simd_max and, among the lanes that
// hold it, simd_min of the expert; the lane that owns the winner marks it
// taken and lane j keeps round j's expert. No lane reads another's
// threadgroup memory, so nothing synchronizes. A row is a few hundred
// logits at most: a threadgroup per row keeps the selection in one SIMD
// group's registers. grid = Tokens; threadgroup memory = Experts floats.
func moeRouteGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Experts", s.Experts, "Slots", s.Slots); err != nil {
		return Launch{}, err
	}
	if s.Experts > MoEMaxExperts {
		return Launch{}, fmt.Errorf("kernels: %s: %d experts; it takes at most %d", k.Name, s.Experts, MoEMaxExperts)
	}
	if s.Slots > min(MoEMaxSlots, s.Experts) {
		return Launch{}, fmt.Errorf("kernels: %s: %d experts chosen of %d; at most min(%d, experts)", k.Name, s.Slots, s.Experts, MoEMaxSlots)
	}
	return launch([3]int{s.Tokens, 1, 1}, SIMDWidth, s.Experts*4, values(k, map[string]uint32{"norm_w": b2u(s.Norm)})...), nil
}

// gemvIDGeometry (gemv_id): the GEMV's standard shape, once per (slot,
// row): threadgroup (t, j, r) computes rows [t·nr·nsg, +nr·nsg) of slot j
// of row r, SIMD group g owning nr of them, with the expert ids[r, j]
// names and the slot's x; lanes stride over the row's 16-element chunks
// and a simd_sum per row ends each dot product, as in gemvGeometry (the
// same nr and nsg per weight type; not NR8, which was measured on the
// dense GEMVs only). In prefill an expert's matrix is read
// once per (row, slot) that chose it; gemm_id (gemmIDGeometry) is the
// batch form that groups the rows by expert. grid = (ceil(N / (nr·nsg)), Slots, Tokens).
func gemvIDGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "N", s.N, "K", s.K, "Slots", s.Slots); err != nil {
		return Launch{}, err
	}
	if err := needBlocks(k, "K", s.K); err != nil {
		return Launch{}, err
	}
	sh := gemvShapes[k.DType]
	return launch([3]int{ceilDiv(s.N, sh.NR*sh.NSG), s.Slots, s.Tokens}, sh.NSG*SIMDWidth, 0,
		values(k, map[string]uint32{"nr": uint32(sh.NR), "nsg": uint32(sh.NSG), "vec_x": b2u(s.VecX && s.K%16 == 0)})...), nil
}

// GEMMIDListCap is the (row, slot) pairs a gemm_id threadgroup lists in
// threadgroup memory (GID_CAP in kernels/gpu/gemm_id.h).
const GEMMIDListCap = 2048

// gemmIDGeometry (gemm_id): threadgroup (e, t) computes columns [64t,
// +64) of every (row, slot) pair that chose expert e. It scans the ids in
// windows of 512 and compacts its expert's pairs into a list in
// threadgroup memory; when the next window could overflow the list
// (GEMMIDListCap pairs) or the ids end, it runs the prefill GEMM's tile
// (simd_gemm's on 32×64 tiles of Y with K steps of 32, 4 SIMD groups, the
// same dequantization and 8×8 tile primitive) over the listed pairs 32 at
// a time, X's rows gathered from the pairs' x and Y's rows scattered to
// their y. So in prefill an expert's matrix is read once per 32 pairs
// that chose it, where gemv_id reads it once per pair; every threadgroup
// reads all the ids (4 bytes a pair, small beside the weights). Threadgroup
// (0, t) writes the zeros of pairs whose id is past the experts, which no
// list holds. The list is capped rather than sized for the batch: a
// 4096-row prefill chunk of 8 slots is 32768 pairs, too many for
// threadgroup memory, so a skewed batch (an expert chosen by more than
// 1536 rows) runs several passes of its tiles, each ending a tile early at
// most. grid = (Experts, ceil(N/64)); threadgroup memory = simd_gemm's
// tiles, 4 counts and the list of uint32 pairs.
func gemmIDGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "N", s.N, "K", s.K, "Experts", s.Experts, "Slots", s.Slots); err != nil {
		return Launch{}, err
	}
	if err := needBlocks(k, "K", s.K); err != nil {
		return Launch{}, err
	}
	if k.Act == dtype.F32 { // the CPU's, as in gemmGeometry
		l := legacyGEMMLaunch(s, 4*4+4*GEMMIDListCap, nil)
		l.Grid = [3]int{s.Experts, ceilDiv(s.N, gemmTN), 1}
		return l, nil
	}
	return launch([3]int{s.Experts, ceilDiv(s.N, gemmTN), 1}, gemmSG*SIMDWidth,
		(gemmIDTM+gemmTN)*gemmIDTKP*actBytes(k)+4*4+4*GEMMIDListCap), nil
}

// moeSumGeometry (moe_sum): thread i of threadgroup (x, r) owns element
// 256x + i of row r and sums it over the slots in slot order, as the CPU
// twin does: no element is shared. grid = (ceil(Dim/256), Tokens).
func moeSumGeometry(k *Kernel, s Shape, _ chips.Tuning) (Launch, error) {
	if err := need(k, "Tokens", s.Tokens, "Dim", s.Dim); err != nil {
		return Launch{}, err
	}
	return launch([3]int{ceilDiv(s.Dim, 256), s.Tokens, 1}, 256, 0), nil
}
