package plans

// The wire schema: for each record, its fields in wire order. This file is
// the format. The rules (FORMAT.md, "Evolution"):
//
//   - A field's position is its identity. Append new fields at the end of
//     their record with since = the new FormatVersion; never reorder,
//     remove, retype or reuse one. A field that is no longer written keeps
//     its place and is written as its zero value.
//   - testdata/schema.golden lists every record's fields; the schema test
//     refuses any change to it but an append, even under UPDATE_GOLDEN.
//
// Header.Format and Header.MinRuntime are not here: they live in the
// preamble, where a reader finds them before it decodes anything.

func (p *Plan) fields() []field {
	return []field{
		{"header", 1, &p.Header},
		{"model", 1, &p.Model},
		{"buffers", 1, list(&p.Buffers, MaxBuffers)},
		{"pipelines", 1, list(&p.Pipelines, MaxPipelines)},
		{"programs", 1, list(&p.Programs, MaxPrograms)},
	}
}

func (h *Header) fields() []field {
	return []field{
		{"compiler", 1, &h.Compiler},
		{"spec_digest", 1, &h.SpecDigest},
		{"target", 1, &h.Target},
		{"model", 1, &h.Model},
	}
}

func (t *Target) fields() []field {
	return []field{
		{"chip", 1, &t.Chip},
		{"kind", 1, &t.Kind},
		{"vendor", 1, &t.Vendor},
		{"family", 1, &t.Family},
		{"bandwidth_gbs", 1, &t.BandwidthGBs},
		{"gpu_cores", 1, &t.GPUCores},
		{"cpu_cores", 1, &t.CPUCores},
		{"slc_bytes", 1, &t.SLCBytes},
		{"tuning", 1, &t.Tuning},
	}
}

func (t *Tuning) fields() []field {
	return []field{
		{"fuse_weights", 1, &t.FuseWeights},
		{"q4_large_k_threshold", 1, &t.Q4LargeKThreshold},
		{"wide_gemv_threshold", 1, &t.WideGEMVThreshold},
		{"chain_chunk", 1, &t.ChainChunk},
		{"prefill_chunk", 1, &t.PrefillChunk},
		{"norm_tg", 1, &t.NormTG},
		{"large_k_types", 1, &t.LargeKTypes},
		{"attn_decode_fast_kv", 1, &t.AttnDecodeFastKV},
		{"attn_decode_parallel_kv", 1, &t.AttnDecodeParallelKV},
		{"attn_prefill_v2_tokens", 1, &t.AttnPrefillV2Tokens},
		{"extra", 1, &t.Extra},
		{"max_seqs", 2, &t.MaxSeqs},
		{"out_rows", 2, &t.OutRows},
		{"repack", 2, &t.Repack},
		{"gemv_min_groups", 7, &t.GEMVMinGroups},
		{"gemv_min_rows", 8, &t.GEMVMinRows},
		{"int8_gemv", 9, &t.Int8GEMV},
		{"gemv_preload_max_k", 11, &t.GEMVPreloadMaxK},
	}
}

func (m *ModelFile) fields() []field {
	return []field{
		{"file", 1, &m.File},
		{"size", 1, &m.Size},
		{"header_sha256", 1, &m.HeaderSHA256},
		{"data_offset", 1, &m.DataOffset},
		{"path", 3, &m.Path},
		{"weights", 3, &m.Weights},
	}
}

func (w *Weights) fields() []field {
	return []field{
		{"scheme", 3, &w.Scheme},
		{"full", 3, &w.Full},
		{"tensors", 3, list(&w.Tensors, MaxTensorSums)},
	}
}

func (t *TensorSum) fields() []field {
	return []field{
		{"name", 3, &t.Name},
		{"sampled", 3, &t.Sampled},
		{"full", 3, &t.Full},
	}
}

func (m *Model) fields() []field {
	return []field{
		{"hparams", 1, &m.HParams},
		{"tokenizer", 1, &m.Tokenizer},
	}
}

func (h *HParams) fields() []field {
	return []field{
		{"arch", 1, &h.Arch},
		{"dim", 1, &h.Dim},
		{"layers", 1, &h.Layers},
		{"heads", 1, &h.Heads},
		{"kv_heads", 1, &h.KVHeads},
		{"head_dim", 1, &h.HeadDim},
		{"ffn", 1, &h.FFN},
		{"vocab", 1, &h.Vocab},
		{"ctx", 1, &h.Ctx},
		{"norm_eps", 1, &h.NormEps},
		{"rope_style", 1, &h.RopeStyle},
		{"rope_base", 1, &h.RopeBase},
		{"rope_dim", 1, &h.RopeDim},
		{"rope_scaling", 1, &h.RopeScaling},
		{"rope_scale", 1, &h.RopeScale},
		{"rope_orig_ctx", 1, &h.RopeOrigCtx},
		{"rope_base_local", 1, &h.RopeBaseLocal},
		{"sliding_window", 1, &h.SlidingWindow},
		{"sliding_layers", 1, &h.SlidingLayers},
		{"attn_softcap", 1, &h.AttnSoftcap},
		{"final_softcap", 1, &h.FinalSoftcap},
		{"embed_scale", 1, &h.EmbedScale},
		{"tied_output", 1, &h.TiedOutput},
	}
}

func (t *Tokenizer) fields() []field {
	return []field{
		{"model", 1, &t.Model},
		{"pre", 1, &t.Pre},
		{"tokens", 1, &t.Tokens},
		{"scores", 1, &t.Scores},
		{"types", 1, &t.Types},
		{"merges", 1, &t.Merges},
		{"bos", 1, &t.BOS},
		{"eos", 1, &t.EOS},
		{"eot", 1, &t.EOT},
		{"unk", 1, &t.UNK},
		{"pad", 1, &t.PAD},
		{"eog", 1, &t.EOG},
		{"add_bos", 1, &t.AddBOS},
		{"add_eos", 1, &t.AddEOS},
		{"add_space_prefix", 1, &t.AddSpacePrefix},
		{"chat_template", 1, &t.ChatTemplate},
	}
}

func (b *Buffer) fields() []field {
	return []field{
		{"name", 1, &b.Name},
		{"kind", 1, &b.Kind},
		{"size", 1, &b.Size},
		{"dtype", 1, &b.DType},
		{"shape", 1, &b.Shape},
		{"tensor", 1, &b.Tensor},
		{"offset", 1, &b.Offset},
		{"recipe", 1, &b.Recipe},
		{"sources", 1, &b.Sources},
		{"data", 1, &b.Data},
		{"layer", 1, &b.Layer},
		{"half", 1, &b.Half},
		{"role", 1, &b.Role},
	}
}

func (p *Pipeline) fields() []field {
	return []field{
		{"kernel", 1, &p.Kernel},
		{"constants", 1, list(&p.Constants, MaxConstants)},
		{"key", 1, &p.Key},
	}
}

func (c *Constant) fields() []field {
	return []field{
		{"index", 1, &c.Index},
		{"type", 1, &c.Type},
		{"value", 1, &c.Value},
	}
}

func (p *Program) fields() []field {
	return []field{
		{"name", 1, &p.Name},
		{"batch", 1, &p.Batch},
		{"commands", 1, list(&p.Commands, MaxCommands)},
		{"kind", 2, &p.Kind},
		{"out_rows", 2, &p.OutRows},
	}
}

func (c *Command) fields() []field {
	return []field{
		{"label", 1, &c.Label},
		{"rule", 1, &c.Rule},
		{"pipeline", 1, &c.Pipeline},
		{"bindings", 1, list(&c.Bindings, MaxBindings)},
		{"params", 1, &c.Params},
		{"params_slot", 1, &c.ParamsSlot},
		{"threadgroup_memory", 1, &c.ThreadgroupMemory},
		{"grid", 1, &c.Grid},
		{"threadgroup", 1, &c.Threadgroup},
		{"dispatch_threads", 1, &c.DispatchThreads},
		{"patches", 1, list(&c.Patches, MaxPatches)},
		{"bytes_read", 1, &c.BytesRead},
	}
}

func (b *Binding) fields() []field {
	return []field{
		{"slot", 1, &b.Slot},
		{"buffer", 1, &b.Buffer},
		{"offset", 1, &b.Offset},
		{"length", 1, &b.Length},
	}
}

func (p *Patch) fields() []field {
	return []field{
		{"kind", 1, &p.Kind},
		{"target", 1, &p.Target},
		{"at", 1, &p.At},
		{"width", 1, &p.Width},
		{"base", 1, &p.Base},
		{"stride", 1, &p.Stride},
	}
}

// The enums, written as unsigned integers.

func (k *BufferKind) get() uint8   { return uint8(*k) }
func (k *BufferKind) set(v uint8)  { *k = BufferKind(v) }
func (h *KVHalf) get() uint8       { return uint8(*h) }
func (h *KVHalf) set(v uint8)      { *h = KVHalf(v) }
func (t *ConstType) get() uint8    { return uint8(*t) }
func (t *ConstType) set(v uint8)   { *t = ConstType(v) }
func (k *PatchKind) get() uint8    { return uint8(*k) }
func (k *PatchKind) set(v uint8)   { *k = PatchKind(v) }
func (k *ProgramKind) get() uint8  { return uint8(*k) }
func (k *ProgramKind) set(v uint8) { *k = ProgramKind(v) }
func (t *PatchTarget) get() uint8  { return uint8(*t) }
func (t *PatchTarget) set(v uint8) {
	*t = PatchTarget(v)
}

// schemaRecords lists one value of every record type, for the schema
// listing and its test.
func schemaRecords() []record {
	return []record{
		&Plan{}, &Header{}, &Target{}, &Tuning{}, &ModelFile{}, &Weights{}, &TensorSum{}, &Model{}, &HParams{},
		&Tokenizer{}, &Buffer{}, &Pipeline{}, &Constant{}, &Program{}, &Command{},
		&Binding{}, &Patch{},
	}
}
