package plans

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Validate checks that the plan is safe to bind and replay: every index in
// range, every binding and patch inside what it addresses, every count
// within the limits (limits.go), every weight inside the model file. A
// runtime that validated a plan needs no checks in its replay loop.
//
// It reports every problem it finds (up to a point) in a *ValidationError
// that wraps ErrInvalid, one line per problem, each starting with where it
// is: "decode[57] L6.attn.flash: binding slot 2: ...", `buffer 3 "kv.L0.k":
// ...`, "hparams.heads: ...".
func (p *Plan) Validate() error {
	v := &validator{p: p}
	v.header()
	v.hparams()
	v.tokenizer()
	v.buffers()
	v.pipelines()
	v.programs()
	return v.ps.err()
}

type validator struct {
	p  *Plan
	ps problems
}

func (v *validator) add(format string, args ...any) { v.ps.add(format, args...) }

// name checks a required short string.
func (v *validator) name(where, s string) {
	switch {
	case s == "":
		v.add("%s: empty", where)
	case len(s) > MaxNameBytes:
		v.add("%s: %d bytes, more than %d", where, len(s), MaxNameBytes)
	}
}

func (v *validator) inRange(where string, x, lo, hi uint64) {
	if x < lo || x > hi {
		v.add("%s: %d is outside [%d, %d]", where, x, lo, hi)
	}
}

// finite checks a float that must be a finite number ≥ 0.
func (v *validator) finite(where string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		v.add("%s: %v is not a finite non-negative number", where, x)
	}
}

func (v *validator) header() {
	h := &v.p.Header
	v.name("header.compiler", h.Compiler)
	t := &h.Target
	v.name("header.target.chip", t.Chip)
	if t.Kind != "gpu" && t.Kind != "cpu" {
		v.add("header.target.kind: %q is neither gpu nor cpu", t.Kind)
	}
	v.finite("header.target.bandwidth_gbs", t.BandwidthGBs)
	tu := &t.Tuning
	v.inRange("header.target.tuning.chain_chunk", uint64(tu.ChainChunk), 1, MaxChainChunk)
	v.inRange("header.target.tuning.prefill_chunk", uint64(tu.PrefillChunk), 1, MaxBatch)
	v.inRange("header.target.tuning.norm_tg", uint64(tu.NormTG), 1, MaxThreadsPerGroup)
	v.inRange("header.target.tuning.max_seqs", uint64(tu.MaxSeqs), 0, MaxSeqs)
	v.inRange("header.target.tuning.out_rows", uint64(tu.OutRows), 0, MaxBatch)
	v.inRange("header.target.tuning.gemv_min_groups", uint64(tu.GEMVMinGroups), 0, 1<<20)
	v.inRange("header.target.tuning.gemv_min_rows", uint64(tu.GEMVMinRows), 0, 64)
	for k, x := range tu.Extra {
		v.name("header.target.tuning.extra key", k)
		if len(x) > MaxTokenBytes {
			v.add("header.target.tuning.extra.%s: %d bytes, more than %d", k, len(x), MaxTokenBytes)
		}
	}
	m := &h.Model
	v.name("header.model.file", m.File)
	if m.Size == 0 {
		v.add("header.model.size: 0")
	}
	if m.DataOffset > m.Size {
		v.add("header.model.data_offset: %d is past the end of the file (%d bytes)", m.DataOffset, m.Size)
	}
}

func (v *validator) hparams() {
	h := &v.p.Model.HParams
	v.name("hparams.arch", h.Arch)
	v.inRange("hparams.dim", uint64(h.Dim), 1, MaxDim)
	v.inRange("hparams.layers", uint64(h.Layers), 1, MaxLayers)
	v.inRange("hparams.heads", uint64(h.Heads), 1, MaxHeads)
	v.inRange("hparams.kv_heads", uint64(h.KVHeads), 1, MaxHeads)
	if h.KVHeads > 0 && h.Heads%h.KVHeads != 0 {
		v.add("hparams.kv_heads: %d does not divide heads (%d)", h.KVHeads, h.Heads)
	}
	v.inRange("hparams.head_dim", uint64(h.HeadDim), 1, MaxHeads)
	v.inRange("hparams.ffn", uint64(h.FFN), 0, MaxDim)
	v.inRange("hparams.vocab", uint64(h.Vocab), 1, MaxVocab)
	v.inRange("hparams.ctx", uint64(h.Ctx), 1, MaxCtx)
	v.inRange("hparams.rope_dim", uint64(h.RopeDim), 0, uint64(h.HeadDim))
	for _, f := range []struct {
		name string
		x    float32
	}{
		{"norm_eps", h.NormEps}, {"rope_base", h.RopeBase}, {"rope_scale", h.RopeScale},
		{"rope_base_local", h.RopeBaseLocal}, {"attn_softcap", h.AttnSoftcap},
		{"final_softcap", h.FinalSoftcap}, {"embed_scale", h.EmbedScale},
	} {
		v.finite("hparams."+f.name, float64(f.x))
	}
	if n := len(h.SlidingLayers); n != 0 && n != int(h.Layers) {
		v.add("hparams.sliding_layers: %d entries for %d layers", n, h.Layers)
	}
}

func (v *validator) tokenizer() {
	t := &v.p.Model.Tokenizer
	n := len(t.Tokens)
	if n > int(v.p.Model.HParams.Vocab) {
		v.add("tokenizer.tokens: %d tokens, more than the vocabulary's %d rows", n, v.p.Model.HParams.Vocab)
	}
	for i, s := range t.Tokens {
		if len(s) > MaxTokenBytes {
			v.add("tokenizer.tokens[%d]: %d bytes, more than %d", i, len(s), MaxTokenBytes)
		}
	}
	if len(t.Scores) != 0 && len(t.Scores) != n {
		v.add("tokenizer.scores: %d scores for %d tokens", len(t.Scores), n)
	}
	if len(t.Types) != 0 && len(t.Types) != n {
		v.add("tokenizer.types: %d types for %d tokens", len(t.Types), n)
	}
	if len(t.Merges) > MaxMerges {
		v.add("tokenizer.merges: %d, more than %d", len(t.Merges), MaxMerges)
	}
	id := func(where string, x int32) {
		if x < -1 || x >= int32(n) {
			v.add("tokenizer.%s: id %d is outside the vocabulary (%d tokens)", where, x, n)
		}
	}
	id("bos", t.BOS)
	id("eos", t.EOS)
	id("eot", t.EOT)
	id("unk", t.UNK)
	id("pad", t.PAD)
	if len(t.EOG) > MaxEOG {
		v.add("tokenizer.eog: %d ids, more than %d", len(t.EOG), MaxEOG)
	} else {
		for i, x := range t.EOG {
			id(fmt.Sprintf("eog[%d]", i), x)
		}
	}
	if len(t.ChatTemplate) > MaxTemplateBytes {
		v.add("tokenizer.chat_template: %d bytes, more than %d", len(t.ChatTemplate), MaxTemplateBytes)
	}
}

// elemSize is the byte size of the plain (unblocked) types, so that a
// buffer's size can be checked against its shape without the dtype
// registry; quantized types are checked by the compiler that knows them.
var elemSize = map[string]uint64{"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u32": 4}

// product multiplies the dimensions; ok is false on overflow.
func product(shape []uint64) (n uint64, ok bool) {
	n = 1
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

func (v *validator) buffers() {
	p := v.p
	if len(p.Buffers) > MaxBuffers {
		v.add("buffers: %d, more than %d", len(p.Buffers), MaxBuffers)
		return
	}
	seen := make(map[string]int, len(p.Buffers))
	type kvKey struct {
		layer uint32
		half  KVHalf
	}
	kvSeen := map[kvKey]int{}
	for i := range p.Buffers {
		b := &p.Buffers[i]
		where := fmt.Sprintf("buffer %d %q", i, b.Name)
		v.name(where+": name", b.Name)
		if j, dup := seen[b.Name]; dup && b.Name != "" {
			v.add("%s: name used by buffer %d too", where, j)
		}
		seen[b.Name] = i
		if b.Kind == 0 || b.Kind >= bufKindEnd {
			v.add("%s: unknown kind %d", where, b.Kind)
			continue
		}
		v.inRange(where+": size", b.Size, 1, MaxBufferBytes)
		if len(b.DType) > MaxNameBytes {
			v.add("%s: dtype of %d bytes", where, len(b.DType))
		}
		v.shape(where, b)
		v.kindFields(where, b)
		switch b.Kind {
		case BufWeight:
			v.weight(where, b)
		case BufDerived:
			v.derived(where, i, b)
		case BufConstant:
			if uint64(len(b.Data)) != b.Size {
				v.add("%s: %d bytes of data for a size of %d", where, len(b.Data), b.Size)
			}
		case BufKV:
			v.kv(where, b)
			k := kvKey{b.Layer, b.Half}
			if j, dup := kvSeen[k]; dup {
				v.add("%s: layer %d %s is buffer %d too", where, b.Layer, b.Half, j)
			}
			kvSeen[k] = i
		case BufIO:
			v.name(where+": role", b.Role)
		}
	}
	v.allocation()
}

// allocation caps what the plan makes a runtime allocate (limits.go), so
// that no damaged size reaches an allocator.
func (v *validator) allocation() {
	p := v.p
	var kv, work uint64
	for i := range p.Buffers {
		b := &p.Buffers[i]
		size := min(b.Size, MaxBufferBytes) // larger sizes are reported with the buffer
		switch b.Kind {
		case BufWeight:
		case BufKV:
			kv += size
		default:
			work += size
		}
	}
	if seqs := uint64(p.Header.Target.Tuning.Seqs()); kv > MaxKVBytes/seqs {
		v.add("buffers: a KV cache of %d bytes a sequence slot, times max_seqs %d, is more than the %d a plan may ask for", kv, seqs, uint64(MaxKVBytes))
	}
	limit := max(uint64(MinWorkBytes), min(p.Header.Model.Size, MaxWorkBytes)*MaxWorkFactor)
	limit = min(limit, MaxWorkBytes)
	if work > limit {
		v.add("buffers: %d bytes of scratch, io, constant and derived buffers, more than the %d a plan over a %d-byte model may ask for", work, limit, p.Header.Model.Size)
	}
}

func (v *validator) shape(where string, b *Buffer) {
	if len(b.Shape) > MaxDims {
		v.add("%s: %d dimensions, more than %d", where, len(b.Shape), MaxDims)
		return
	}
	for j, d := range b.Shape {
		if d == 0 {
			v.add("%s: shape[%d] is 0", where, j)
			return
		}
	}
	es, plain := elemSize[strings.ToLower(b.DType)]
	if !plain || len(b.Shape) == 0 || b.Kind == BufDerived && b.Recipe != RecipeConcatRows {
		return
	}
	n, ok := product(b.Shape)
	hi, want := bits.Mul64(n, es)
	if !ok || hi != 0 || want != b.Size {
		v.add("%s: size %d does not match %s%v (%d bytes)", where, b.Size, b.DType, b.Shape, want)
	}
}

// kindFields holds each kind-specific field to the kinds it applies to, so
// that a plan means one thing.
func (v *validator) kindFields(where string, b *Buffer) {
	bad := func(field string, set bool, kinds ...BufferKind) {
		if !set {
			return
		}
		for _, k := range kinds {
			if b.Kind == k {
				return
			}
		}
		v.add("%s: %s is set, but a %s buffer has none", where, field, b.Kind)
	}
	bad("tensor", b.Tensor != "", BufWeight)
	bad("offset", b.Offset != 0, BufWeight)
	bad("recipe", b.Recipe != "", BufDerived)
	bad("sources", len(b.Sources) != 0, BufDerived)
	bad("data", len(b.Data) != 0, BufConstant)
	bad("layer", b.Layer != 0, BufKV)
	bad("half", b.Half != 0, BufKV)
	bad("role", b.Role != "", BufIO)
}

func (v *validator) weight(where string, b *Buffer) {
	m := v.p.Header.Model
	v.name(where+": tensor", b.Tensor)
	switch {
	case b.Offset < m.DataOffset:
		v.add("%s: offset %d lies before the data section (%d)", where, b.Offset, m.DataOffset)
	case b.Size > m.Size || b.Offset > m.Size-b.Size:
		v.add("%s: [%d, %d) lies outside the model file (%d bytes)", where, b.Offset, b.Offset+b.Size, m.Size)
	}
}

func (v *validator) derived(where string, self int, b *Buffer) {
	concat := b.Recipe == RecipeConcatRows
	if !concat && (!strings.HasPrefix(b.Recipe, RecipeRepackPrefix) || len(b.Recipe) == len(RecipeRepackPrefix)) {
		v.add("%s: recipe %q is neither %q nor %q<layout>", where, b.Recipe, RecipeConcatRows, RecipeRepackPrefix)
	}
	if len(b.Sources) == 0 {
		v.add("%s: no sources", where)
		return
	}
	var sum uint64
	for _, s := range b.Sources {
		if int(s) >= len(v.p.Buffers) || int(s) == self {
			v.add("%s: source %d is not another buffer (%d buffers)", where, s, len(v.p.Buffers))
			return
		}
		src := &v.p.Buffers[s]
		if src.Kind != BufWeight {
			v.add("%s: source %d %q is a %s buffer, not a weight", where, s, src.Name, src.Kind)
			return
		}
		if concat && src.DType != b.DType {
			v.add("%s: source %d %q is %s, the buffer %s", where, s, src.Name, src.DType, b.DType)
		}
		var carry uint64
		sum, carry = bits.Add64(sum, src.Size, 0)
		if carry != 0 {
			v.add("%s: its sources' sizes overflow", where)
			return
		}
	}
	if concat && sum != b.Size {
		v.add("%s: size %d, but its sources' rows add up to %d bytes", where, b.Size, sum)
	}
	if !concat && b.Size > sum {
		// A repack reorders its sources' blocks; it adds none.
		v.add("%s: size %d, more than its sources' %d bytes", where, b.Size, sum)
	}
}

func (v *validator) kv(where string, b *Buffer) {
	hp := &v.p.Model.HParams
	elem, ok := kvTypes[strings.ToLower(b.DType)]
	if !ok {
		v.add("%s: dtype %q; a KV cache is f16, q8_0 or f32", where, b.DType)
	}
	if b.Layer >= hp.Layers {
		v.add("%s: layer %d of %d", where, b.Layer, hp.Layers)
	}
	if b.Half != KVKey && b.Half != KVValue {
		v.add("%s: half %d is neither K nor V", where, b.Half)
	}
	if len(b.Shape) != 3 {
		v.add("%s: shape %v is not [head_dim, ctx, kv_heads]", where, b.Shape)
		return
	}
	if b.Shape[1] > uint64(hp.Ctx) {
		v.add("%s: %d positions, more than the plan's context (%d)", where, b.Shape[1], hp.Ctx)
	}
	if b.Shape[2] != uint64(hp.KVHeads) {
		v.add("%s: %d heads, the model has %d KV heads", where, b.Shape[2], hp.KVHeads)
	}
	// The kernels bound their reads by the size: it must be the shape's
	// (shape checks the plain types').
	if !ok || elem.block == 1 {
		return
	}
	if b.Shape[0]%elem.block != 0 {
		v.add("%s: %d elements a row are not whole %s blocks", where, b.Shape[0], b.DType)
		return
	}
	n, fits := product([]uint64{b.Shape[0] / elem.block, b.Shape[1], b.Shape[2]})
	if hi, want := bits.Mul64(n, elem.bytes); !fits || hi != 0 || want != b.Size {
		v.add("%s: size %d does not match %s%v (%d bytes)", where, b.Size, b.DType, b.Shape, want)
	}
}

// kvTypes are the element types a KV cache may hold: elements per block
// and bytes per block. A cache that is not f16 needs runtime 5.
var kvTypes = map[string]struct{ block, bytes uint64 }{"f16": {1, 2}, "q8_0": {32, 34}, "f32": {1, 4}}

func (v *validator) pipelines() {
	p := v.p
	if len(p.Pipelines) > MaxPipelines {
		v.add("pipelines: %d, more than %d", len(p.Pipelines), MaxPipelines)
		return
	}
	keys := make(map[string]int, len(p.Pipelines))
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		where := fmt.Sprintf("pipeline %d %q", i, pl.Kernel)
		v.name(where+": kernel", pl.Kernel)
		if len(pl.Constants) > MaxConstants {
			v.add("%s: %d constants, more than %d", where, len(pl.Constants), MaxConstants)
			continue
		}
		for j, c := range pl.Constants {
			if j > 0 && c.Index <= pl.Constants[j-1].Index {
				v.add("%s: constant %d follows constant %d: indices must ascend", where, c.Index, pl.Constants[j-1].Index)
			}
			switch {
			case c.Type == 0 || c.Type >= constTypeEnd:
				v.add("%s: constant %d: unknown type %d", where, c.Index, c.Type)
			case c.Type == ConstBool && c.Value > 1:
				v.add("%s: constant %d: bool value %d", where, c.Index, c.Value)
			}
		}
		if want := CacheKey(pl.Kernel, pl.Constants); pl.Key != want {
			v.add("%s: key %q, its kernel and constants make %q", where, pl.Key, want)
		}
		if j, dup := keys[pl.Key]; dup {
			v.add("%s: same kernel and constants as pipeline %d", where, j)
		}
		keys[pl.Key] = i
	}
}
