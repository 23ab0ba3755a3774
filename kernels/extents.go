package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Extents are what a command gives its kernel's extent rule (CheckExtents):
// its parameters at their worst, the bytes each binding holds, and the
// bounds of the steps it runs in.
type Extents struct {
	// Params are the parameter bytes, each field a patch writes at the
	// larger of its value in the plan and the largest the patch writes.
	Params []byte
	// Patched reports whether a patch writes the field at byte offset off.
	Patched func(off int) bool
	// Avail is, by binding slot, the bytes from the binding's offset to the
	// end of its buffer (from its largest offset, when a patch moves it); 0
	// when nothing is bound there.
	Avail []uint64
	// Constants are the pipeline's constant values by index, Set whether
	// the pipeline sets each.
	Constants []uint32
	Set       []bool
	// Ctx is the plan's context: a patched position plus the rows of its
	// batch stays at or below it (the runtime refuses what does not fit).
	Ctx uint64
	// Seqs is the number of sequence slots of the KV cache: a Rows kernel
	// reads each row's slot from an io buffer.
	Seqs uint64
	// Batch is the most rows of the command's program.
	Batch uint64
	// Vocab is the model's vocabulary: a runtime rewrites a sampling
	// command's knobs with it (0: unknown, not checked).
	Vocab uint64
}

// ErrExtent is wrapped by CheckExtents's errors.
var ErrExtent = errors.New("parameters do not fit the bindings")

// CheckExtents checks that a command of kernel k stays inside what it is
// bound to: every element its parameters make it read or write lies inside
// its binding, every size it is prepared with follows from its bindings'
// sizes, and no count it divides by is zero. The rules are the catalog's
// binding docs ("x [n_rows, a_stride]") as arithmetic; a backend that
// follows the docs indexes nothing outside a command that passes. Errors
// name the field or the binding.
func (k *Kernel) CheckExtents(x *Extents) error {
	r := &rule{k: k, x: x}
	if len(x.Params) != k.Params.Size {
		return fmt.Errorf("%d parameter bytes, %s takes %d: %w", len(x.Params), k.Name, k.Params.Size, ErrExtent)
	}
	extentRule(r)
	return r.err
}

// rule evaluates one kernel's extent rule, keeping the first problem.
type rule struct {
	k   *Kernel
	x   *Extents
	err error
}

func (r *rule) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s: %w", r.k.Name, fmt.Sprintf(format, args...), ErrExtent)
	}
}

// u is the worst-case value of parameter field name.
func (r *rule) u(name string) uint64 {
	f, ok := r.k.Params.Field(name)
	if !ok || f.Offset+4 > len(r.x.Params) {
		r.fail("no parameter %s", name)
		return 0
	}
	return uint64(binary.LittleEndian.Uint32(r.x.Params[f.Offset:]))
}

// patched reports whether a patch writes field name.
func (r *rule) patched(name string) bool {
	f, ok := r.k.Params.Field(name)
	return ok && r.x.Patched != nil && r.x.Patched(f.Offset)
}

// pos1 is the worst-case value of field name, at least 1 (a count the
// kernel divides by or loops over must not be zero).
func (r *rule) pos1(name string) uint64 {
	v := r.u(name)
	if v == 0 {
		r.fail("%s is 0", name)
		return 1
	}
	return v
}

// constant is the value of constant name, and whether the pipeline sets it.
func (r *rule) constant(name string) (uint64, bool) {
	for i, c := range r.k.Constants {
		if c.Name == name && i < len(r.x.Set) && r.x.Set[i] {
			return uint64(r.x.Constants[i]), true
		}
	}
	return 0, false
}

// on reports whether bool constant name is set and true.
func (r *rule) on(name string) bool { v, _ := r.constant(name); return v != 0 }

// slot is the binding slot of binding name, -1 if the kernel has none.
func (r *rule) slot(name string) int {
	for _, b := range r.k.Bindings {
		if b.Name == name {
			return b.Slot
		}
	}
	return -1
}

// need checks that binding name holds n bytes from its offset; a binding
// that is conditional and not bound needs nothing.
func (r *rule) need(name string, n uint64, what string) {
	s := r.slot(name)
	if s < 0 {
		return
	}
	b := r.k.Bindings[s]
	if b.When != "" && !r.on(b.When) {
		return
	}
	avail := uint64(0)
	if s < len(r.x.Avail) {
		avail = r.x.Avail[s]
	}
	if n > avail {
		r.fail("binding %s (slot %d): %s need %d bytes, it holds %d", name, s, what, n, avail)
	}
}

// mul multiplies, saturating at 2^64-1: a product that large exceeds
// every binding anyway.
func mul(xs ...uint64) uint64 {
	n := uint64(1)
	for _, x := range xs {
		hi, lo := bits.Mul64(n, x)
		if hi != 0 {
			return 1<<64 - 1
		}
		n = lo
	}
	return n
}

func add(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return 1<<64 - 1
	}
	return s
}

// matrix is the bytes of rows rows of cols elements of es bytes, stride
// elements apart: the last row needs only its cols. 0 rows need nothing.
func matrix(rows, stride, cols, es uint64) uint64 {
	if rows == 0 {
		return 0
	}
	return mul(add(mul(rows-1, stride), cols), es)
}

// actSize is the bytes of one activation element.
func (r *rule) actSize() uint64 {
	if r.k.Act == dtype.F16 {
		return 2
	}
	return 4
}

// weightRows is the bytes of n rows of k elements of the kernel's weight
// dtype; k must be a whole number of blocks.
func (r *rule) weightRows(field string, n, k uint64) uint64 {
	bs, bb := uint64(r.k.DType.BlockSize()), uint64(r.k.DType.BlockBytes())
	if bs == 0 || bb == 0 {
		r.fail("weight dtype %v has no block size", r.k.DType)
		return 0
	}
	if k%bs != 0 {
		r.fail("%s %d is not a multiple of %v's block of %d", field, k, r.k.DType, bs)
	}
	return mul(n, k/bs, bb)
}

// atMost checks a ≤ b.
func (r *rule) atMost(a string, av uint64, b string, bv uint64) {
	if av > bv {
		r.fail("%s %d exceeds %s %d", a, av, b, bv)
	}
}

// extentRule dispatches on the kernel's op: the one table of extent rules.
func extentRule(r *rule) {
	switch r.k.Op {
	case OpGEMV:
		gemvRule(r)
	case OpGEMM:
		gemmRule(r)
	case OpEmbedding:
		embeddingRule(r)
	case OpRMSNorm, OpLayerNorm, OpHeadRMSNorm:
		normRule(r)
	case OpRoPE:
		ropeRule(r)
	case OpRoPEQKVWrite, OpHeadNormRoPEKVWrite:
		ropeKVRule(r)
	case OpAttentionDecode, OpAttentionPrefill:
		attentionRule(r)
	case OpAttentionDecodeReduce:
		attnReduceRule(r)
	case OpAttentionDecodeRoPE:
		attnRoPERule(r)
	case OpArgmax:
		argmaxRule(r)
	case OpGumbelTopK:
		es := r.actSize()
		v := r.pos1("vocab")
		if r.x.Vocab != 0 && v != r.x.Vocab {
			// The sampler is prepared for this vocab; a generation
			// rewrites it with the model's.
			r.fail("vocab %d, the model's vocabulary is %d", v, r.x.Vocab)
		}
		r.need("logits", mul(v, es), "vocab logits")
	case OpBiasAdd, OpAdd, OpMul, OpScale, OpSoftcap, OpSiLU, OpGELU, OpSiLUGate, OpGELUGate, OpCopy, OpConvert, OpGatherRows:
		elementwiseRule(r)
	case OpPool:
		poolRule(r)
	case OpMoERoute:
		moeRouteRule(r)
	case OpGEMVID, OpGEMMID:
		gemvIDRule(r)
	case OpMoESum:
		moeSumRule(r)
	default:
		r.fail("no extent rule for op %v", r.k.Op)
	}
}

// GEMVMaxNR is the most rows of W a GEMV's SIMD group takes: the GPU
// bodies' accumulators are that wide (GEMV_MAX_NR, kernels/gpu/gemv_rows.h).
const GEMVMaxNR = 8

// gemvCounts bounds the GEMV constants that size a thread's arrays and a
// threadgroup: nr rows a SIMD group (1 to GEMVMaxNR) and nsg SIMD groups
// (1 to 32, 1024 threads). The launch check compares grids, not these, so
// a plan could otherwise set them past what the bodies hold.
func gemvCounts(r *rule) {
	if v, ok := r.constant("nr"); ok && (v < 1 || v > GEMVMaxNR) {
		r.fail("constant nr %d: a GEMV takes 1 to %d rows a SIMD group", v, GEMVMaxNR)
	}
	if v, ok := r.constant("nsg"); ok && (v < 1 || v > 32) {
		r.fail("constant nsg %d: a threadgroup holds 1 to 32 SIMD groups", v)
	}
}

func gemvRule(r *rule) {
	gemvCounts(r)
	n, k := r.pos1("n"), r.pos1("k")
	if r.k.Variant&X16 != 0 && n%16 != 0 {
		r.fail("n %d is not a multiple of 16 (repacked rows)", n)
	}
	es := r.actSize()
	r.need("w", r.weightRows("k", n, k), "n×k weights")
	r.need("x", mul(k, es), "k elements")
	r.need("gate", mul(k, es), "k elements")
	r.need("up", mul(k, es), "k elements")
	if r.k.Variant&GLU != 0 { // y is the gate of each pair of rows
		if n%2 != 0 {
			r.fail("n %d is not pairs of gate and up rows", n)
		}
		r.need("y", mul(n/2, es), "n/2 elements")
	} else {
		r.need("y", mul(n, es), "n elements")
	}
	r.need("bias", mul(n, 4), "n biases")
	// the norm_fold forms: res and norm_w by row, partials by threadgroup
	r.need("res", mul(n, es), "n elements")
	r.need("norm_w", mul(n, 4), "n weights")
	if r.k.Variant&(Norm|Residual) != 0 {
		r.need("partials", mul(r.pos1("parts"), 4), "parts sums")
	}
}

func gemmRule(r *rule) {
	m, n, k := r.u("m"), r.pos1("n"), r.pos1("k")
	lda, ldc := r.u("lda"), r.u("ldc")
	r.atMost("k", k, "lda", lda)
	r.atMost("n", n, "ldc", ldc)
	if r.k.Variant&X16 != 0 && n%16 != 0 {
		r.fail("n %d is not a multiple of 16 (repacked rows)", n)
	}
	// The small GEMM's outputs a SIMD group size its accumulators (8 at
	// most); a plan compiled before the constant sets none.
	if c, ok := r.constant("cols"); ok && (c < 1 || c > 8) {
		r.fail("constant cols %d: the small GEMM takes 1 to 8 outputs a SIMD group", c)
	}
	gemvCounts(r) // the planar form's nr and nsg: the planar GEMV's body
	if r.k.Variant&GLU != 0 && n%2 != 0 {
		r.fail("n %d is not pairs of gate and up rows", n)
	}
	es := r.actSize()
	// With vec_x the GPU kernels load X's rows in 16-byte vectors.
	if r.on("vec_x") && (mul(lda, es)%16 != 0 || k%8 != 0) {
		r.fail("vec_x with lda %d and k %d: X's rows would not be whole 16-byte vectors", lda, k)
	}
	r.need("w", r.weightRows("k", n, k), "n×k weights")
	r.need("x", matrix(m, lda, k, es), "m rows of lda, k each")
	r.need("y", matrix(m, ldc, n, es), "m rows of ldc, n each")
	r.need("bias", mul(n, 4), "n biases")
}

func embeddingRule(r *rule) {
	dim, vocab := r.pos1("dim"), r.pos1("vocab")
	nt, slot, stride := r.u("n_tokens"), r.u("token_slot"), r.u("out_stride")
	r.atMost("dim", dim, "out_stride", max(stride, boolTo(nt <= 1, dim)))
	r.need("table", r.weightRows("dim", vocab, dim), "vocab rows of dim")
	r.need("ids", mul(add(slot, nt), 4), "token_slot + n_tokens ids")
	r.need("out", matrix(nt, stride, dim, r.actSize()), "n_tokens rows of out_stride, dim each")
}

// boolTo is v when b, else 0.
func boolTo(b bool, v uint64) uint64 {
	if b {
		return v
	}
	return 0
}

func normRule(r *rule) {
	dim, rows, stride := r.pos1("dim"), r.u("n_rows"), r.u("stride")
	heads := max(r.u("n_heads"), 1)
	if r.k.Op != OpHeadRMSNorm {
		heads = 1
	}
	cols := mul(heads, dim)
	r.atMost("n_heads×dim", cols, "stride", max(stride, boolTo(rows <= 1, cols)))
	es := r.actSize()
	span := matrix(rows, stride, cols, es)
	what := "n_rows rows of stride, n_heads×dim each"
	r.need("x", span, what)
	r.need("residual", span, what)
	r.need("out", span, what)
	r.need("weight", mul(dim, 4), "dim weights")
	r.need("bias", mul(dim, 4), "dim biases")
}

// ropeDims checks rope_dim against head_dim and the factors binding.
func ropeDims(r *rule, hd uint64) {
	rd := r.u("rope_dim")
	if rd > hd || rd%2 != 0 {
		r.fail("rope_dim %d is not even and at most head_dim %d", rd, hd)
	}
	r.need("factors", mul(rd/2, 4), "rope_dim/2 factors")
}

// rows checks a Rows kernel's position and slot bindings: one u32 a row.
func rowsRule(r *rule, nt uint64) {
	if r.k.Variant&Rows != 0 {
		r.need("pos", mul(nt, 4), "n_tokens positions")
		r.need("seq", mul(nt, 4), "n_tokens sequence slots")
	}
}

func ropeRule(r *rule) {
	nt, nh, hd, stride := r.u("n_tokens"), r.pos1("n_heads"), r.pos1("head_dim"), r.u("stride")
	cols := mul(nh, hd)
	r.atMost("n_heads×head_dim", cols, "stride", max(stride, boolTo(nt <= 1, cols)))
	ropeDims(r, hd)
	r.need("x", matrix(nt, stride, cols, r.actSize()), "n_tokens rows of stride, n_heads×head_dim each")
	rowsRule(r, nt)
}

// ctxEnd checks that the positions a command writes or reads stay below
// max_ctx: position + n_tokens when neither is patched; the plan's context
// when the position is patched or comes from an io buffer (the runtime
// keeps position + rows within it).
func ctxEnd(r *rule, maxCtx uint64) {
	end := add(r.u("position"), r.u("n_tokens"))
	switch {
	case r.k.Variant&Rows != 0:
		end = r.x.Ctx
	case r.patched("position"):
		end = max(r.x.Ctx, add(r.u("position"), 1))
	}
	r.atMost("the last position + 1", end, "max_ctx", maxCtx)
}

// kvBytes is what a layer's cache of heads × maxCtx rows of hd elements
// takes (F16; Q8_0 blocks or F32 with the KV variants): one sequence slot,
// or all of them for a Rows kernel, which reads each row's slot from an
// io buffer.
func kvBytes(r *rule, heads, maxCtx, hd uint64) uint64 {
	var n uint64
	switch {
	case r.k.Variant&KVQ8 != 0:
		if hd%32 != 0 {
			r.fail("head size %d is not whole Q8_0 blocks of 32", hd)
		}
		n = mul(heads, maxCtx, hd/32, 34)
	case r.k.Variant&KVF32 != 0:
		n = mul(heads, maxCtx, hd, 4)
	default:
		n = mul(heads, maxCtx, hd, 2)
	}
	if r.k.Variant&Rows != 0 {
		n = mul(n, max(r.x.Seqs, 1))
	}
	return n
}

// kvElem names a cache's element type in a message.
func kvElem(s Spec) string {
	switch {
	case s.Variant&KVQ8 != 0:
		return "Q8_0"
	case s.Variant&KVF32 != 0:
		return "F32"
	}
	return "F16"
}

// heads checks n_kv_heads against n_heads: ≥ 1 and a divisor.
func heads(r *rule) (nh, nkv uint64) {
	nh, nkv = r.pos1("n_heads"), r.pos1("n_kv_heads")
	if nh%nkv != 0 {
		r.fail("n_kv_heads %d does not divide n_heads %d", nkv, nh)
	}
	return nh, nkv
}

// constEq checks that a constant the pipeline sets agrees with field name.
func constEq(r *rule, name string, v uint64) {
	if c, ok := r.constant(name); ok && c != v {
		r.fail("constant %s %d, parameter %d", name, c, v)
	}
}

func ropeKVRule(r *rule) {
	nh, nkv := heads(r)
	nt, hd, hdv, maxCtx := r.u("n_tokens"), r.pos1("head_dim"), r.pos1("head_dim_v"), r.pos1("max_ctx")
	qs, kvs := r.u("q_stride"), r.u("kv_stride")
	one := nt <= 1
	r.atMost("n_heads×head_dim", mul(nh, hd), "q_stride", max(qs, boolTo(one, mul(nh, hd))))
	r.atMost("n_kv_heads×head_dim", mul(nkv, max(hd, hdv)), "kv_stride", max(kvs, boolTo(one, mul(nkv, max(hd, hdv)))))
	ropeDims(r, hd)
	ctxEnd(r, maxCtx)
	es := r.actSize()
	q := matrix(nt, qs, mul(nh, hd), es)
	r.need("q", q, "n_tokens rows of q_stride, n_heads×head_dim each")
	r.need("q_out", q, "n_tokens rows of q_stride, n_heads×head_dim each")
	r.need("k", matrix(nt, kvs, mul(nkv, hd), es), "n_tokens rows of kv_stride, n_kv_heads×head_dim each")
	r.need("v", matrix(nt, kvs, mul(nkv, hdv), es), "n_tokens rows of kv_stride, n_kv_heads×head_dim_v each")
	r.need("q_norm", mul(hd, 4), "head_dim weights")
	r.need("k_norm", mul(hd, 4), "head_dim weights")
	r.need("k_cache", kvBytes(r, nkv, maxCtx, hd), "n_kv_heads×max_ctx×head_dim "+kvElem(r.k.Spec))
	r.need("v_cache", kvBytes(r, nkv, maxCtx, hdv), "n_kv_heads×max_ctx×head_dim_v "+kvElem(r.k.Spec))
	rowsRule(r, nt)
}

// attnRoPERule: the decode attention that rotates its own q and k (one
// token, q, k and v one row each) and writes k and v at position.
func attnRoPERule(r *rule) {
	nh, nkv, hd, hdv, maxCtx := attnShape(r)
	ropeDims(r, hd)
	if hd > 256 || hdv > 256 {
		r.fail("head_dim %d or head_dim_v %d past 256", hd, hdv)
	}
	end := add(r.u("position"), 1)
	if r.patched("position") {
		end = max(r.x.Ctx, end)
	}
	r.atMost("the position + 1", end, "max_ctx", maxCtx)
	es := r.actSize()
	r.need("q", mul(nh, hd, es), "n_heads×head_dim")
	r.need("k", mul(nkv, hd, es), "n_kv_heads×head_dim")
	r.need("v", mul(nkv, hdv, es), "n_kv_heads×head_dim_v")
	r.need("q_norm", mul(hd, 4), "head_dim weights")
	r.need("k_norm", mul(hd, 4), "head_dim weights")
	r.need("k_cache", kvBytes(r, nkv, maxCtx, hd), "n_kv_heads×max_ctx×head_dim "+kvElem(r.k.Spec))
	r.need("v_cache", kvBytes(r, nkv, maxCtx, hdv), "n_kv_heads×max_ctx×head_dim_v "+kvElem(r.k.Spec))
	splits, _ := r.constant("n_splits")
	if splits == 0 {
		r.fail("constant n_splits is 0")
	}
	r.need("partials", mul(nh, splits, hdv+2, 4), "n_heads×n_splits×(head_dim_v+2) floats")
}

// attnShape reads the attention kernels' heads, head dims and cache
// length, each held to its constant, and kv_len to max_ctx.
func attnShape(r *rule) (nh, nkv, hd, hdv, maxCtx uint64) {
	nh, nkv = heads(r)
	hd, hdv, maxCtx = r.pos1("head_dim"), r.pos1("head_dim_v"), r.pos1("max_ctx")
	constEq(r, "head_dim", hd)
	constEq(r, "head_dim_v", hdv)
	r.atMost("kv_len", r.u("kv_len"), "max_ctx", maxCtx)
	return nh, nkv, hd, hdv, maxCtx
}

func attentionRule(r *rule) {
	nh, nkv, hd, hdv, maxCtx := attnShape(r)
	es := r.actSize()
	r.need("k_cache", kvBytes(r, nkv, maxCtx, hd), "n_kv_heads×max_ctx×head_dim "+kvElem(r.k.Spec))
	r.need("v_cache", kvBytes(r, nkv, maxCtx, hdv), "n_kv_heads×max_ctx×head_dim_v "+kvElem(r.k.Spec))
	if r.k.Op == OpAttentionDecode {
		if nt := r.u("n_tokens"); nt > 1 {
			r.fail("n_tokens %d; decode attention takes one query", nt)
		}
		r.need("q", mul(nh, hd, es), "n_heads×head_dim")
		r.need("out", mul(nh, hdv, es), "n_heads×head_dim_v")
		if r.k.Variant&Parallel != 0 {
			splits, _ := r.constant("n_splits")
			if splits == 0 {
				r.fail("constant n_splits is 0")
			}
			r.need("partials", mul(nh, splits, hdv+2, 4), "n_heads×n_splits×(head_dim_v+2) floats")
		}
		return
	}
	nt, qs, os := r.u("n_tokens"), r.u("q_stride"), r.u("o_stride")
	ctxEnd(r, maxCtx)
	one := nt <= 1
	r.atMost("n_heads×head_dim", mul(nh, hd), "q_stride", max(qs, boolTo(one, mul(nh, hd))))
	r.atMost("n_heads×head_dim_v", mul(nh, hdv), "o_stride", max(os, boolTo(one, mul(nh, hdv))))
	r.need("q", matrix(nt, qs, mul(nh, hd), es), "n_tokens rows of q_stride, n_heads×head_dim each")
	r.need("out", matrix(nt, os, mul(nh, hdv), es), "n_tokens rows of o_stride, n_heads×head_dim_v each")
	rowsRule(r, nt)
}

func attnReduceRule(r *rule) {
	nh, hdv := r.pos1("n_heads"), r.pos1("head_dim_v")
	constEq(r, "head_dim_v", hdv)
	splits, _ := r.constant("n_splits")
	if splits == 0 {
		r.fail("constant n_splits is 0")
	}
	r.need("partials", mul(nh, splits, hdv+2, 4), "n_heads×n_splits×(head_dim_v+2) floats")
	r.need("out", mul(nh, hdv, r.actSize()), "n_heads×head_dim_v")
}

func argmaxRule(r *rule) {
	n, rows, slot := r.pos1("n"), max(r.u("n_rows"), 1), r.u("out_slot")
	r.need("logits", mul(rows, n, r.actSize()), "n_rows×n logits")
	r.need("ids", mul(add(slot, rows), 4), "out_slot + n_rows ids")
}

func elementwiseRule(r *rule) {
	rows, cols := r.u("n_rows"), r.pos1("n_cols")
	as, bs, os := r.u("a_stride"), r.u("b_stride"), r.u("out_stride")
	es := r.actSize()
	outES := es
	if r.k.Op == OpConvert {
		outES = uint64(r.k.DType.BlockBytes())
		if r.k.DType.BlockSize() != 1 || outES == 0 {
			r.fail("conversion to %v, not a plain type", r.k.DType)
		}
	}
	outRows := rows
	if r.k.Op == OpCopy && r.on("last_row") {
		outRows = min(rows, 1)
	}
	r.atMost("n_cols", cols, "out_stride", max(os, boolTo(outRows <= 1, cols)))
	a := matrix(rows, as, cols, es)
	switch r.k.Op {
	case OpGatherRows:
		// Row indices come from an io buffer, each below the batch's rows.
		r.need("x", matrix(max(r.x.Batch, 1), as, cols, es), "the batch's rows of a_stride, n_cols each")
		r.need("rows", mul(rows, 4), "n_rows row indices")
	case OpBiasAdd:
		r.need("x", a, "n_rows rows of a_stride, n_cols each")
		r.need("bias", mul(cols, 4), "n_cols biases")
		return
	case OpAdd, OpMul:
		r.need("a", a, "n_rows rows of a_stride, n_cols each")
		r.need("b", matrix(rows, bs, cols, es), "n_rows rows of b_stride, n_cols each")
	case OpSiLUGate, OpGELUGate:
		r.need("gate", a, "n_rows rows of a_stride, n_cols each")
		r.need("up", matrix(rows, bs, cols, es), "n_rows rows of b_stride, n_cols each")
	default:
		r.need("x", a, "n_rows rows of a_stride, n_cols each")
	}
	r.need("out", matrix(outRows, os, cols, outES), "n_rows rows of out_stride, n_cols each")
}

// poolRule: the ranges come from an io buffer, so x is the batch's rows
// (each range's end is checked against x's bound length by the kernel, as
// gather_rows checks its rows); the pooling mode is a constant the kernel
// branches on, so it must be one of the three.
func poolRule(r *rule) {
	dim, rows, as := r.pos1("dim"), r.u("n_rows"), r.u("a_stride")
	batch := max(r.x.Batch, 1)
	r.atMost("dim", dim, "a_stride", max(as, boolTo(batch <= 1, dim)))
	switch m, ok := r.constant("pooling"); {
	case !ok:
		r.fail("constant pooling is not set")
	case m < PoolMean || m > PoolLast:
		r.fail("constant pooling %d; the modes are %d (mean), %d (cls) and %d (last)", m, PoolMean, PoolCLS, PoolLast)
	}
	r.need("x", matrix(batch, as, dim, r.actSize()), "the batch's rows of a_stride, dim each")
	r.need("ranges", mul(rows, 2, 4), "n_rows ranges of two uint32")
	r.need("out", mul(rows, dim, 4), "n_rows×dim floats")
}

// moeRouteRule: the logits of n_rows rows, k ids and k weights a row; the
// limits are the kernel's (moeRouteGeometry): its threadgroup memory holds
// a row, lane j keeps slot j.
func moeRouteRule(r *rule) {
	ne, kk, rows, as := r.pos1("n_expert"), r.pos1("k"), r.u("n_rows"), r.u("a_stride")
	r.atMost("n_expert", ne, "moe_route's limit", MoEMaxExperts)
	r.atMost("k", kk, "min(32, n_expert)", min(MoEMaxSlots, ne))
	r.atMost("n_expert", ne, "a_stride", max(as, boolTo(rows <= 1, ne)))
	r.need("logits", matrix(rows, as, ne, r.actSize()), "n_rows rows of a_stride, n_expert each")
	r.need("ids", mul(rows, kk, 4), "n_rows×k uint32 ids")
	r.need("weights", mul(rows, kk, 4), "n_rows×k floats")
}

// gemvIDRule: W holds n_expert matrices (an id at or past n_expert reads
// none: the kernels give zeros for it), x the slots' vectors, y the rows
// of n_slots outputs that do not overlap. With vec_x the GPU kernels load
// x in 16-byte vectors, so its strides keep a slot's start aligned.
func gemvIDRule(r *rule) {
	gemvCounts(r)
	n, k, ns, ne := r.pos1("n"), r.pos1("k"), r.pos1("n_slots"), r.pos1("n_expert")
	rows, xs, xsl, ys := r.u("n_rows"), r.u("x_stride"), r.u("x_slot"), r.u("y_stride")
	es := r.actSize()
	r.atMost("n_slots×n", mul(ns, n), "y_stride", max(ys, boolTo(rows <= 1, mul(ns, n))))
	if r.on("vec_x") && (mul(xs, es)%16 != 0 || mul(xsl, es)%16 != 0) {
		r.fail("vec_x with x_stride %d and x_slot %d: a slot's x would not start 16-byte aligned", xs, xsl)
	}
	r.need("w", r.weightRows("k", mul(ne, n), k), "n_expert×n×k weights")
	if rows > 0 {
		last := add(add(mul(rows-1, xs), mul(ns-1, xsl)), k)
		r.need("x", mul(last, es), "n_rows rows of x_stride, n_slots slots of x_slot, k each")
	}
	r.need("ids", mul(rows, ns, 4), "n_rows×n_slots uint32 ids")
	r.need("y", matrix(rows, ys, mul(ns, n), es), "n_rows rows of y_stride, n_slots×n each")
}

func moeSumRule(r *rule) {
	n, ns, rows := r.pos1("n"), r.pos1("n_slots"), r.u("n_rows")
	ys, os := r.u("y_stride"), r.u("out_stride")
	one := rows <= 1
	r.atMost("n_slots×n", mul(ns, n), "y_stride", max(ys, boolTo(one, mul(ns, n))))
	r.atMost("n", n, "out_stride", max(os, boolTo(one, n)))
	es := r.actSize()
	r.need("y", matrix(rows, ys, mul(ns, n), es), "n_rows rows of y_stride, n_slots×n each")
	r.need("weights", mul(rows, ns, 4), "n_rows×n_slots floats")
	r.need("out", matrix(rows, os, n, es), "n_rows rows of out_stride, n each")
}
