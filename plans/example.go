package plans

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// Example returns a small, valid, hand-built plan: a two-layer llama-like
// model (dim 64, 4 heads over 2 KV heads, q8_0 weights with fused QKV and
// gate|up) with decode, sampled and batch.8 programs that use the patch
// kinds of format 2 (every kind but format 1's prefill ones). Each call returns a fresh plan, so tests may break it at will; other
// packages' tests use it as a plan to bind, replay, render or diff.
//
// The kernels and parameter layouts are illustrative: they name no catalog
// entry, and no backend is expected to run them.
func Example() *Plan {
	const (
		dim, layers, heads, kvHeads, headDim, ffn, vocab, ctx = 64, 2, 4, 2, 16, 128, 32, 128
		chain, prefill, seqs, outRows                         = 4, 8, 4, 4
		dataOffset                                            = 4096
	)
	p := &Plan{}
	p.Header = Header{
		Format: FormatVersion, MinRuntime: 2,
		Compiler:   "akunuc example",
		SpecDigest: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("example specs"))),
		Target: Target{
			Chip: "example-gpu-8", Kind: "gpu", Vendor: "apple", Family: "apple7",
			BandwidthGBs: 68.25, GPUCores: 8, CPUCores: 8, SLCBytes: 8 << 20,
			Tuning: Tuning{
				FuseWeights: true, Q4LargeKThreshold: 2048, WideGEMVThreshold: 32768,
				ChainChunk: chain, PrefillChunk: prefill, NormTG: 64,
				LargeKTypes:      []string{"q4_0", "q4_K"},
				AttnDecodeFastKV: 256, AttnDecodeParallelKV: 4096, AttnPrefillV2Tokens: 64,
				Extra:   map[string]string{"example.note": "hand-built"},
				MaxSeqs: seqs, OutRows: outRows,
			},
		},
		Model: ModelFile{File: "example.gguf", HeaderSHA256: sha256.Sum256([]byte("example.gguf header")), DataOffset: dataOffset},
	}
	p.Model.HParams = HParams{
		Arch: "llama", Dim: dim, Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: headDim, // akunu:not-arch: example data, not a branch
		FFN: ffn, Vocab: vocab, Ctx: ctx, NormEps: 1e-5,
		RopeStyle: "norm", RopeBase: 10000, RopeDim: headDim, RopeScaling: "none",
		TiedOutput: true,
	}
	tok := &p.Model.Tokenizer
	*tok = Tokenizer{Model: "llama", Pre: "default", BOS: 1, EOS: 2, EOT: -1, UNK: 0, PAD: -1, // akunu:not-arch: the SentencePiece tokenizer model
		AddBOS: true, AddSpacePrefix: true,
		ChatTemplate: "{% for m in messages %}{{ m.content }}{% endfor %}"}
	for i := range vocab {
		s, ty := fmt.Sprintf("▁w%d", i), int32(1)
		switch i {
		case 0, 1, 2:
			s, ty = []string{"<unk>", "<s>", "</s>"}[i], int32(3)
		}
		tok.Tokens = append(tok.Tokens, s)
		tok.Scores = append(tok.Scores, -float32(i))
		tok.Types = append(tok.Types, ty)
	}

	// Weights, laid out in the file as a GGUF writer would (32-byte aligned).
	next := uint64(dataOffset)
	q8 := func(k, n uint64) uint64 { return n * k / 32 * 34 } // q8_0: 34 bytes per 32 weights
	weight := func(tensor, dtype string, size uint64, shape ...uint64) uint32 {
		i := p.AddBuffer(Buffer{Name: tensor, Kind: BufWeight, Size: size, DType: dtype, Shape: shape, Tensor: tensor, Offset: next})
		next += (size + 31) &^ 31
		return i
	}
	f32 := func(name string, n uint64, kind BufferKind, role string) uint32 {
		return p.AddBuffer(Buffer{Name: name, Kind: kind, Size: 4 * n, DType: "f32", Shape: []uint64{n}, Role: role})
	}
	embd := weight("token_embd.weight", "q8_0", q8(dim, vocab), dim, vocab)
	L := make([]exampleLayer, layers)
	for l := range layers {
		b := &L[l]
		blk := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", l, s) }
		b.attnNorm = weight(blk("attn_norm"), "f32", 4*dim, dim)
		q := weight(blk("attn_q"), "q8_0", q8(dim, dim), dim, dim)
		k := weight(blk("attn_k"), "q8_0", q8(dim, kvHeads*headDim), dim, kvHeads*headDim)
		v := weight(blk("attn_v"), "q8_0", q8(dim, kvHeads*headDim), dim, kvHeads*headDim)
		b.wo = weight(blk("attn_output"), "q8_0", q8(dim, dim), dim, dim)
		b.ffnNorm = weight(blk("ffn_norm"), "f32", 4*dim, dim)
		g := weight(blk("ffn_gate"), "q8_0", q8(dim, ffn), dim, ffn)
		u := weight(blk("ffn_up"), "q8_0", q8(dim, ffn), dim, ffn)
		b.down = weight(blk("ffn_down"), "q8_0", q8(ffn, dim), ffn, dim)
		qkvRows := uint64(dim + 2*kvHeads*headDim)
		b.qkv = p.AddBuffer(Buffer{Name: fmt.Sprintf("L%d.qkv", l), Kind: BufDerived, DType: "q8_0",
			Size: q8(dim, qkvRows), Shape: []uint64{dim, qkvRows}, Recipe: RecipeConcatRows, Sources: []uint32{q, k, v}})
		b.gateUp = p.AddBuffer(Buffer{Name: fmt.Sprintf("L%d.gate_up", l), Kind: BufDerived, DType: "q8_0",
			Size: q8(dim, 2*ffn), Shape: []uint64{dim, 2 * ffn}, Recipe: RecipeConcatRows, Sources: []uint32{g, u}})
	}
	outNorm := weight("output_norm.weight", "f32", 4*dim, dim)
	p.Header.Model.Size = next
	p.Header.Model.Path = "/models/example.gguf"
	p.Header.Model.Weights = Weights{Scheme: "example sums", Full: true}
	for _, b := range p.Buffers {
		if b.Kind == BufWeight {
			p.Header.Model.Weights.Tensors = append(p.Header.Model.Weights.Tensors, TensorSum{Name: b.Tensor,
				Sampled: sha256.Sum256([]byte("sampled " + b.Tensor)), Full: sha256.Sum256([]byte("full " + b.Tensor))})
		}
	}

	freqs := make([]byte, 4*headDim/2)
	for i := range headDim / 2 {
		binary.LittleEndian.PutUint32(freqs[4*i:], math.Float32bits(float32(math.Pow(10000, -2*float64(i)/headDim))))
	}
	rope := p.AddBuffer(Buffer{Name: "rope.freqs", Kind: BufConstant, Size: uint64(len(freqs)), DType: "f32",
		Shape: []uint64{headDim / 2}, Data: freqs})
	// Scratch holds a prefill batch; decode uses its first row.
	x := f32("act.x", prefill*dim, BufScratch, "")
	h := f32("act.h", prefill*dim, BufScratch, "")
	qkv := f32("act.qkv", prefill*(dim+2*kvHeads*headDim), BufScratch, "")
	att := f32("act.attn", prefill*dim, BufScratch, "")
	gu := f32("act.gate_up", prefill*2*ffn, BufScratch, "")
	ff := f32("act.ffn", prefill*ffn, BufScratch, "")
	for l := range layers {
		for _, half := range []KVHalf{KVKey, KVValue} {
			i := p.AddBuffer(Buffer{Name: fmt.Sprintf("kv.L%d.%s", l, map[KVHalf]string{KVKey: "k", KVValue: "v"}[half]),
				Kind: BufKV, DType: "f16", Size: 2 * headDim * ctx * kvHeads, Shape: []uint64{headDim, ctx, kvHeads},
				Layer: uint32(l), Half: half})
			if half == KVKey {
				L[l].k = i
			} else {
				L[l].v = i
			}
		}
	}
	u32 := func(name string, n uint64, role string) uint32 {
		return p.AddBuffer(Buffer{Name: name, Kind: BufIO, Size: 4 * n, DType: "u32", Shape: []uint64{n}, Role: role})
	}
	tokens := u32("io.tokens", prefill, "tokens")
	pos := u32("io.positions", prefill, "positions")
	seq := u32("io.seqs", prefill, "seqs")
	rows := u32("io.out_rows", outRows, "out_rows")
	logits := f32("io.logits", outRows*vocab, BufIO, "logits")
	sparams := f32("io.sample", 4, BufIO, "sample.params")

	e := &exampleBufs{embd, outNorm, rope, x, h, qkv, att, gu, ff, tokens, pos, seq, rows, logits, sparams, L}
	p.Programs = []Program{
		{Name: ProgDecode, Kind: KindDecode, Batch: 1, OutRows: 1, Commands: e.program(p, 1, false)},
		{Name: ProgSampled, Kind: KindSampled, Batch: 1, OutRows: 1, Commands: e.program(p, 1, true)},
		{Name: BatchName(prefill), Kind: KindBatch, Batch: prefill, OutRows: outRows, Commands: e.program(p, prefill, false)},
	}
	return p
}

// exampleLayer and exampleBufs hold Example's buffer indices.
type exampleLayer struct{ attnNorm, qkv, wo, ffnNorm, gateUp, down, k, v uint32 }

type exampleBufs struct {
	embd, outNorm, rope, x, h, qkv, att, gu, ff, tokens, pos, seq, rows, logits, sparams uint32
	layers                                                                               []exampleLayer
}

// u32s packs parameter fields little-endian, as the kernels' structs are.
func u32s(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// program emits the commands of Example's programs: one token when batch
// is 1 (with Gumbel-max sampling when sampled), a batch of rows otherwise.
// Parameter structs put a count at byte 0 and the batch length at byte 4;
// attention's are {position, kv length, batch, ctx}. A decode step's KV
// bindings move to its sequence slot (seq patches); a batch reads each
// row's position and slot from io.positions and io.seqs.
func (e *exampleBufs) program(p *Plan, batch uint32, sampled bool) []Command {
	hp := p.Model.HParams
	dim, ffn := hp.Dim, hp.FFN
	eps := math.Float32bits(hp.NormEps)
	pre := batch > 1
	size := func(i uint32) uint64 { return p.Buffers[i].Size }
	bind := func(slot, buf uint32) Binding { return Binding{Slot: slot, Buffer: buf} }
	var out []Command
	// emit adds the batch-length patch at param byte batchAt in prefill.
	emit := func(c Command, batchAt uint32) {
		if pre {
			c.Patches = append(c.Patches, Patch{Kind: PatchBatchLength, Target: PatchParam, At: batchAt, Width: 4, Stride: 1})
		}
		out = append(out, c)
	}
	gemv := func(label, rule string, w, in, o uint32, k, n uint32) {
		kernel, tg := "gemv_q8_0", [3]uint32{32, 2, 1}
		grid := [3]uint32{(n + 1) / 2, 1, 1}
		if pre {
			kernel, tg, grid = "gemm_q8_0", [3]uint32{128, 1, 1}, [3]uint32{(n + 31) / 32, (batch + 7) / 8, 1}
		}
		emit(Command{Label: label, Rule: rule, Pipeline: p.AddPipeline(kernel, U32(0, k)),
			Bindings: []Binding{bind(0, w), bind(1, in), bind(2, o)}, Params: u32s(n, 1), ParamsSlot: 3,
			Grid: grid, Threadgroup: tg, BytesRead: size(w) + uint64(4*k*batch)}, 4)
	}
	norm := func(label string, w, in, o uint32) {
		emit(Command{Label: label, Pipeline: p.AddPipeline("rmsnorm_f32"),
			Bindings: []Binding{bind(0, in), bind(1, w), bind(2, o)}, Params: u32s(dim, 1, eps), ParamsSlot: 3,
			Grid: [3]uint32{batch, 1, 1}, Threadgroup: [3]uint32{p.Header.Target.Tuning.NormTG, 1, 1},
			ThreadgroupMemory: 32 * 4, BytesRead: size(w) + uint64(4*dim*batch)}, 4)
	}

	// The embedding reads token slot i (decode) or the whole batch.
	emb := Command{Label: "embed", Pipeline: p.AddPipeline("embed_q8_0"),
		Bindings: []Binding{{Slot: 0, Buffer: e.tokens, Length: 4}, bind(1, e.embd), bind(2, e.x)},
		Params:   u32s(dim, 1), ParamsSlot: 3, Grid: [3]uint32{dim / 32, batch, 1}, Threadgroup: [3]uint32{32, 1, 1},
		BytesRead: uint64(batch) * (4 + uint64(dim)/32*34)}
	if pre {
		emb.Bindings[0].Length = size(e.tokens)
	} else {
		emb.Patches = []Patch{{Kind: PatchToken, Target: PatchBinding, At: 0, Stride: 4}}
	}
	emit(emb, 4)
	for l, lb := range e.layers {
		lab := func(s string) string { return fmt.Sprintf("L%d.%s", l, s) }
		norm(lab("attn_norm"), lb.attnNorm, e.x, e.h)
		gemv(lab("attn.qkv"), "fusion.rules:12 qkv_concat", lb.qkv, e.h, e.qkv, dim, dim+2*hp.KVHeads*hp.HeadDim)
		kvSeq := func(at uint32) []Patch { // the decode step's sequence slot
			return []Patch{{Kind: PatchSeq, Target: PatchBinding, At: at, Stride: size(lb.k)},
				{Kind: PatchSeq, Target: PatchBinding, At: at + 1, Stride: size(lb.v)}}
		}
		rk := Command{Label: lab("attn.rope_kv"), Rule: "fusion.rules:20 rope_kv_store",
			Pipeline: p.AddPipeline("rope_kv_store_f16", Bool(0, true)),
			Bindings: []Binding{bind(0, e.qkv), bind(1, e.rope), bind(2, lb.k), bind(3, lb.v)},
			Params:   u32s(0, 1, hp.HeadDim, hp.Ctx), ParamsSlot: 4,
			Patches: append([]Patch{{Kind: PatchPosition, Target: PatchParam, At: 0, Width: 4, Stride: 1}}, kvSeq(2)...),
			Grid:    [3]uint32{hp.Heads + hp.KVHeads, batch, 1}, Threadgroup: [3]uint32{hp.HeadDim / 2, 1, 1}, DispatchThreads: true,
			BytesRead: uint64(4 * (dim + 2*hp.KVHeads*hp.HeadDim) * batch)}
		att := Command{Label: lab("attn.flash"), Pipeline: p.AddPipeline("attention_decode_f16", U32(0, hp.HeadDim)),
			Bindings: []Binding{bind(0, e.qkv), bind(1, lb.k), bind(2, lb.v), bind(3, e.att)},
			Params:   u32s(0, 0, 1, hp.Ctx), ParamsSlot: 4,
			Patches: append([]Patch{{Kind: PatchKVLength, Target: PatchParam, At: 4, Width: 4, Stride: 1}}, kvSeq(1)...),
			Grid:    [3]uint32{hp.Heads, 1, 1}, Threadgroup: [3]uint32{128, 1, 1}, ThreadgroupMemory: 4096,
			BytesRead: size(lb.k) + size(lb.v)}
		if pre {
			rk.Pipeline = p.AddPipeline("rope_kv_store_rows_f16", Bool(0, true))
			rk.Bindings = append(rk.Bindings, bind(5, e.pos), bind(6, e.seq))
			rk.Patches = nil
			att.Pipeline = p.AddPipeline("attention_rows_f16", U32(0, hp.HeadDim))
			att.Bindings = append(att.Bindings, bind(5, e.pos), bind(6, e.seq))
			att.Grid[1] = batch
			att.Patches = nil
		}
		emit(rk, 4)
		emit(att, 8)
		gemv(lab("attn.out"), "", lb.wo, e.att, e.x, dim, dim)
		norm(lab("ffn_norm"), lb.ffnNorm, e.x, e.h)
		gemv(lab("ffn.gate_up"), "fusion.rules:31 gate_up_concat", lb.gateUp, e.h, e.gu, dim, 2*ffn)
		emit(Command{Label: lab("ffn.act"), Pipeline: p.AddPipeline("silu_mul_f32"),
			Bindings: []Binding{bind(0, e.gu), bind(1, e.ff)}, Params: u32s(ffn, 1), ParamsSlot: 2,
			Grid: [3]uint32{ffn * batch, 1, 1}, Threadgroup: [3]uint32{64, 1, 1}, DispatchThreads: true,
			BytesRead: uint64(8 * ffn * batch)}, 4)
		gemv(lab("ffn.down"), "", lb.down, e.ff, e.x, ffn, dim)
	}
	norm("output_norm", e.outNorm, e.x, e.h)
	if pre {
		// A batch computes the logits of the rows io.out_rows lists only:
		// they are gathered first, and the rest runs over out rows.
		out = append(out, Command{Label: "gather", Pipeline: p.AddPipeline("gather_rows_f32"),
			Bindings: []Binding{bind(0, e.h), bind(1, e.rows), bind(2, e.x)}, Params: u32s(dim, 1), ParamsSlot: 3,
			Grid: [3]uint32{dim / 32, p.Header.Target.Tuning.OutRows, 1}, Threadgroup: [3]uint32{32, 1, 1},
			Patches:   []Patch{{Kind: PatchOutCount, Target: PatchParam, At: 4, Width: 4, Stride: 1}},
			BytesRead: uint64(4 * dim * p.Header.Target.Tuning.OutRows)})
		out = append(out, Command{Label: "output", Pipeline: p.AddPipeline("gemm_q8_0", U32(0, dim)),
			Bindings: []Binding{bind(0, e.embd), bind(1, e.x), bind(2, e.logits)}, Params: u32s(hp.Vocab, 1), ParamsSlot: 3,
			Grid: [3]uint32{(hp.Vocab + 31) / 32, 1, 1}, Threadgroup: [3]uint32{128, 1, 1},
			Patches:   []Patch{{Kind: PatchOutCount, Target: PatchParam, At: 4, Width: 4, Stride: 1}},
			BytesRead: size(e.embd) + uint64(4*dim*p.Header.Target.Tuning.OutRows)})
		return out
	}
	// The LM head reads the tied embedding.
	out = append(out, Command{Label: "output", Pipeline: p.AddPipeline("gemv_q8_0", U32(0, dim)),
		Bindings: []Binding{bind(0, e.embd), bind(1, e.h), bind(2, e.logits)}, Params: u32s(hp.Vocab, 1), ParamsSlot: 3,
		Grid: [3]uint32{hp.Vocab / 2, 1, 1}, Threadgroup: [3]uint32{32, 2, 1}, BytesRead: size(e.embd) + uint64(4*dim)})
	if sampled {
		out = append(out, Command{Label: "sample", Pipeline: p.AddPipeline("gumbel_f32"),
			Bindings: []Binding{bind(0, e.logits), bind(1, e.sparams)}, Params: u32s(hp.Vocab, 0), ParamsSlot: 2,
			Patches: []Patch{{Kind: PatchPosition, Target: PatchParam, At: 4, Width: 4, Stride: 1}},
			Grid:    [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{256, 1, 1}, BytesRead: size(e.logits) + size(e.sparams)})
	}
	// argmax writes the next token into slot i+1, which the next replay's
	// embedding reads.
	out = append(out, Command{Label: "argmax", Pipeline: p.AddPipeline("argmax_f32"),
		Bindings: []Binding{bind(0, e.logits), {Slot: 1, Buffer: e.tokens, Offset: 4, Length: 4}}, Params: u32s(hp.Vocab), ParamsSlot: 2,
		Patches: []Patch{{Kind: PatchArgmaxSlot, Target: PatchBinding, At: 1, Stride: 4}},
		Grid:    [3]uint32{1, 1, 1}, Threadgroup: [3]uint32{256, 1, 1}, ThreadgroupMemory: 256 * 8, BytesRead: size(e.logits)})
	return out
}
