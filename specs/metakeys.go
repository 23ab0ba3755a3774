package specs

import "sort"

// KeyInfo describes one GGUF metadata key that llama.cpp knows.
type KeyInfo struct {
	// Key is the key without the architecture prefix when Relative
	// ("attention.head_count" stands for "<arch>.attention.head_count"), the
	// whole key otherwise ("tokenizer.ggml.tokens").
	Key      string
	Relative bool
	Type     Type
	// Alt is a second type some files use (the sliding-window pattern is a
	// period or a per-layer bool array); the zero Type when there is none.
	Alt Type
	// PerLayer keys may hold one value per layer as an array instead of a
	// scalar (llama.cpp reads them with get_key_or_arr).
	PerLayer bool
}

// FullKey returns the key as stored in a file of the given architecture.
func (k KeyInfo) FullKey(arch string) string {
	if k.Relative {
		return arch + "." + k.Key
	}
	return k.Key
}

type keyEntry struct {
	key      string
	rel      bool
	typ      Type
	alt      Type
	perLayer bool
}

// metadataKeys is the registry of the metadata keys llama.cpp reads or
// writes: the LLM_KV table of src/llama-arch.cpp (relative keys are the ones
// it writes with a "%s." architecture prefix), typed after the writer
// functions of gguf-py (uint32/int32/uint64 are int, float32 is float). The
// general.* keys that only gguf-py writes are included, since synthesized
// files carry them. Facts as of llama.cpp de3ff815 (2026-09).
var metadataKeys = []keyEntry{
	{key: "general.type", typ: tString},
	{key: "general.architecture", typ: tString},
	{key: "general.quantization_version", typ: tInt},
	{key: "general.alignment", typ: tInt},
	{key: "general.file_type", typ: tInt},
	{key: "general.sampling.sequence", typ: tString},
	{key: "general.sampling.top_k", typ: tInt},
	{key: "general.sampling.top_p", typ: tFloat},
	{key: "general.sampling.min_p", typ: tFloat},
	{key: "general.sampling.xtc_probability", typ: tFloat},
	{key: "general.sampling.xtc_threshold", typ: tFloat},
	{key: "general.sampling.temp", typ: tFloat},
	{key: "general.sampling.penalty_last_n", typ: tInt},
	{key: "general.sampling.penalty_repeat", typ: tFloat},
	{key: "general.sampling.mirostat", typ: tInt},
	{key: "general.sampling.mirostat_tau", typ: tFloat},
	{key: "general.sampling.mirostat_eta", typ: tFloat},
	{key: "general.name", typ: tString},
	{key: "general.author", typ: tString},
	{key: "general.version", typ: tString},
	{key: "general.url", typ: tString},
	{key: "general.description", typ: tString},
	{key: "general.license", typ: tString},
	{key: "general.source.url", typ: tString},
	{key: "general.source.huggingface.repository", typ: tString},
	{key: "vocab_size", rel: true, typ: tInt},
	{key: "context_length", rel: true, typ: tInt},
	{key: "embedding_length", rel: true, typ: tInt},
	{key: "embedding_length_out", rel: true, typ: tInt},
	{key: "embedding_length_per_layer_input", rel: true, typ: tInt},
	{key: "features_length", rel: true, typ: tInt},
	{key: "block_count", rel: true, typ: tInt},
	{key: "leading_dense_block_count", rel: true, typ: tInt},
	{key: "attn_res.block_size", rel: true, typ: tInt},
	{key: "activation.situ_beta", rel: true, typ: tFloat},
	{key: "activation.situ_linear_beta", rel: true, typ: tFloat},
	{key: "feed_forward_length", rel: true, typ: tInt, perLayer: true},
	{key: "expert_feed_forward_length", rel: true, typ: tInt, perLayer: true},
	{key: "expert_shared_feed_forward_length", rel: true, typ: tInt},
	{key: "expert_chunk_feed_forward_length", rel: true, typ: tInt},
	{key: "swiglu_clamp_exp", rel: true, typ: arrayOf(KindFloat)},
	{key: "swiglu_clamp_shexp", rel: true, typ: arrayOf(KindFloat)},
	{key: "use_parallel_residual", rel: true, typ: tBool},
	{key: "tensor_data_layout", rel: true, typ: tString},
	{key: "expert_count", rel: true, typ: tInt},
	{key: "expert_used_count", rel: true, typ: tInt, perLayer: true},
	{key: "expert_shared_count", rel: true, typ: tInt},
	{key: "expert_group_count", rel: true, typ: tInt},
	{key: "expert_group_used_count", rel: true, typ: tInt},
	{key: "expert_weights_scale", rel: true, typ: tFloat},
	{key: "expert_weights_norm", rel: true, typ: tBool},
	{key: "expert_latent_length", rel: true, typ: tInt},
	{key: "expert_gating_func", rel: true, typ: tInt},
	{key: "expert_group_scale", rel: true, typ: tFloat},
	{key: "experts_per_group", rel: true, typ: tInt},
	{key: "moe_every_n_layers", rel: true, typ: tInt},
	{key: "moe_latent_size", rel: true, typ: tInt},
	{key: "nextn_predict_layers", rel: true, typ: tInt},
	{key: "n_deepstack_layers", rel: true, typ: tInt},
	{key: "deepstack_mapping", rel: true, typ: arrayOf(KindInt)},
	{key: "hidden_activation", rel: true, typ: tString},
	{key: "pooling_type", rel: true, typ: tInt},
	{key: "logit_scale", rel: true, typ: tFloat},
	{key: "decoder_start_token_id", rel: true, typ: tInt},
	{key: "decoder_block_count", rel: true, typ: tInt},
	{key: "attn_logit_softcapping", rel: true, typ: tFloat},
	{key: "router_logit_softcapping", rel: true, typ: tFloat},
	{key: "final_logit_softcapping", rel: true, typ: tFloat},
	{key: "swin_norm", rel: true, typ: tBool},
	{key: "rescale_every_n_layers", rel: true, typ: tInt},
	{key: "time_mix_extra_dim", rel: true, typ: tInt},
	{key: "time_decay_extra_dim", rel: true, typ: tInt},
	{key: "residual_scale", rel: true, typ: tFloat},
	{key: "embedding_scale", rel: true, typ: tFloat},
	{key: "adapters.count", rel: true, typ: tInt},
	{key: "adapters.token_ids_activate", rel: true, typ: arrayOf(KindInt)},
	{key: "adapters.token_ids_substitute", rel: true, typ: arrayOf(KindInt)},
	{key: "adapters.lora_rank", rel: true, typ: tInt},
	{key: "adapters.router_gain", rel: true, typ: tFloat},
	{key: "token_shift_count", rel: true, typ: tInt},
	{key: "interleave_moe_layer_step", rel: true, typ: tInt},
	{key: "full_attention_interval", rel: true, typ: tInt},
	{key: "num_loops", rel: true, typ: tInt},
	{key: "skip_loop_final_norm", rel: true, typ: tBool},
	{key: "hrm.layers_per_stack", rel: true, typ: tInt},
	{key: "hrm.h_cycles", rel: true, typ: tInt},
	{key: "hrm.l_cycles", rel: true, typ: tInt},
	{key: "hrm.prefix_lm", rel: true, typ: tBool},
	{key: "attention.head_count", rel: true, typ: tInt, perLayer: true},
	{key: "attention.head_count_kv", rel: true, typ: tInt, perLayer: true},
	{key: "attention.max_alibi_bias", rel: true, typ: tFloat},
	{key: "attention.clamp_kqv", rel: true, typ: tFloat},
	{key: "attention.key_length", rel: true, typ: tInt},
	{key: "attention.value_length", rel: true, typ: tInt},
	{key: "attention.layer_norm_epsilon", rel: true, typ: tFloat},
	{key: "attention.layer_norm_rms_epsilon", rel: true, typ: tFloat},
	{key: "attention.group_norm_epsilon", rel: true, typ: tFloat},
	{key: "attention.group_norm_groups", rel: true, typ: tInt},
	{key: "attention.causal", rel: true, typ: tBool},
	{key: "attention.q_lora_rank", rel: true, typ: tInt},
	{key: "attention.kv_lora_rank", rel: true, typ: tInt},
	{key: "attention.decay_lora_rank", rel: true, typ: tInt},
	{key: "attention.iclr_lora_rank", rel: true, typ: tInt},
	{key: "attention.value_residual_mix_lora_rank", rel: true, typ: tInt},
	{key: "attention.gate_lora_rank", rel: true, typ: tInt},
	{key: "attention.relative_buckets_count", rel: true, typ: tInt},
	{key: "attention.sliding_window", rel: true, typ: tInt},
	{key: "attention.sliding_window_pattern", rel: true, typ: tInt, alt: arrayOf(KindBool)},
	{key: "attention.rope_pattern", rel: true, typ: arrayOf(KindInt)},
	{key: "attention.scale", rel: true, typ: tFloat},
	{key: "attention.output_scale", rel: true, typ: tFloat},
	{key: "attention.value_scale", rel: true, typ: tFloat},
	{key: "attention.temperature_length", rel: true, typ: tInt},
	{key: "attention.temperature_scale", rel: true, typ: tFloat},
	{key: "attention.key_length_mla", rel: true, typ: tInt},
	{key: "attention.value_length_mla", rel: true, typ: tInt},
	{key: "attention.key_length_swa", rel: true, typ: tInt},
	{key: "attention.value_length_swa", rel: true, typ: tInt},
	{key: "attention.key_length_mla_swa", rel: true, typ: tInt},
	{key: "attention.value_length_mla_swa", rel: true, typ: tInt},
	{key: "attention.kv_lora_rank_swa", rel: true, typ: tInt},
	{key: "attention.indexer.head_count", rel: true, typ: tInt},
	{key: "attention.indexer.key_length", rel: true, typ: tInt},
	{key: "attention.indexer.top_k", rel: true, typ: tInt},
	{key: "attention.indexer.block_size", rel: true, typ: tInt},
	{key: "attention.indexer.local_blocks", rel: true, typ: tInt},
	{key: "attention.indexer.types", rel: true, typ: arrayOf(KindInt)},
	{key: "attention.output_group_count", rel: true, typ: tInt},
	{key: "attention.output_lora_rank", rel: true, typ: tInt},
	{key: "attention.compress_rope_freq_base", rel: true, typ: tFloat},
	{key: "attention.compress_ratios", rel: true, typ: arrayOf(KindInt)},
	{key: "attention.shared_kv_layers", rel: true, typ: tInt},
	{key: "attention.recurrent_layers", rel: true, typ: arrayOf(KindBool)},
	{key: "hyper_connection.count", rel: true, typ: tInt},
	{key: "hyper_connection.sinkhorn_iterations", rel: true, typ: tInt},
	{key: "hyper_connection.epsilon", rel: true, typ: tFloat},
	{key: "hyper_connection.magnitude", rel: true, typ: tFloat},
	{key: "hyper_connection.low_rank", rel: true, typ: tInt},
	{key: "ple.layers", rel: true, typ: arrayOf(KindInt)},
	{key: "ple.ngram_size", rel: true, typ: tInt},
	{key: "ple.heads_per_ngram", rel: true, typ: tInt},
	{key: "ple.conv_kernel", rel: true, typ: tInt},
	{key: "ple.layer_multipliers", rel: true, typ: arrayOf(KindFloat)},
	{key: "ple.head_offsets", rel: true, typ: arrayOf(KindInt)},
	{key: "ple.head_vocab_sizes", rel: true, typ: arrayOf(KindInt)},
	{key: "ple.eos_token_id", rel: true, typ: tInt},
	{key: "ple.image_token_id", rel: true, typ: tInt},
	{key: "hash_layer_count", rel: true, typ: tInt},
	{key: "rope.dimension_count", rel: true, typ: tInt},
	{key: "rope.dimension_count_swa", rel: true, typ: tInt},
	{key: "rope.dimension_sections", rel: true, typ: arrayOf(KindInt)},
	{key: "rope.freq_base", rel: true, typ: tFloat},
	{key: "rope.freq_base_swa", rel: true, typ: tFloat},
	{key: "rope.scale_linear", rel: true, typ: tFloat},
	{key: "rope.scaling.type", rel: true, typ: tString},
	{key: "rope.scaling.factor", rel: true, typ: tFloat},
	{key: "rope.scaling.alpha", rel: true, typ: tFloat},
	{key: "rope.scaling.attn_factor", rel: true, typ: tFloat},
	{key: "rope.scaling.original_context_length", rel: true, typ: tInt},
	{key: "rope.scaling.finetuned", rel: true, typ: tBool},
	{key: "rope.scaling.yarn_log_multiplier", rel: true, typ: tFloat},
	{key: "rope.scaling.yarn_ext_factor", rel: true, typ: tFloat},
	{key: "rope.scaling.yarn_attn_factor", rel: true, typ: tFloat},
	{key: "rope.scaling.yarn_beta_fast", rel: true, typ: tFloat},
	{key: "rope.scaling.yarn_beta_slow", rel: true, typ: tFloat},
	{key: "split.no", typ: tInt},
	{key: "split.count", typ: tInt},
	{key: "split.tensors.count", typ: tInt},
	{key: "ssm.conv_kernel", rel: true, typ: tInt},
	{key: "ssm.inner_size", rel: true, typ: tInt},
	{key: "ssm.state_size", rel: true, typ: tInt},
	{key: "ssm.time_step_rank", rel: true, typ: tInt},
	{key: "ssm.group_count", rel: true, typ: tInt},
	{key: "ssm.dt_b_c_rms", rel: true, typ: tBool},
	{key: "kda.head_dim", rel: true, typ: tInt},
	{key: "kda.safe_gate", rel: true, typ: tBool},
	{key: "kda.gate_lower_bound", rel: true, typ: tFloat},
	{key: "wkv.head_size", rel: true, typ: tInt},
	{key: "posnet.embedding_length", rel: true, typ: tInt},
	{key: "posnet.block_count", rel: true, typ: tInt},
	{key: "convnext.embedding_length", rel: true, typ: tInt},
	{key: "convnext.block_count", rel: true, typ: tInt},
	{key: "classifier.output_labels", rel: true, typ: arrayOf(KindString)},
	{key: "target_layers", rel: true, typ: arrayOf(KindInt)},
	{key: "target_hidden_size", rel: true, typ: tInt},
	{key: "norm_before_residual", rel: true, typ: tBool},
	{key: "norm_before_fc", rel: true, typ: tBool},
	{key: "block_size", rel: true, typ: tInt},
	{key: "conv_kernel_size", rel: true, typ: tInt},
	{key: "conv_group_size", rel: true, typ: tInt},
	{key: "selector_rank", rel: true, typ: tInt},
	{key: "selector_top_k", rel: true, typ: tInt},
	{key: "shortconv.l_cache", rel: true, typ: tInt},
	{key: "dense_2_feat_in", rel: true, typ: tInt},
	{key: "dense_2_feat_out", rel: true, typ: tInt},
	{key: "dense_3_feat_in", rel: true, typ: tInt},
	{key: "dense_3_feat_out", rel: true, typ: tInt},
	{key: "tokenizer.ggml.model", typ: tString},
	{key: "tokenizer.ggml.pre", typ: tString},
	{key: "tokenizer.ggml.tokens", typ: arrayOf(KindString)},
	{key: "tokenizer.ggml.token_type", typ: arrayOf(KindInt)},
	{key: "tokenizer.ggml.token_type_count", typ: tInt},
	{key: "tokenizer.ggml.scores", typ: arrayOf(KindFloat)},
	{key: "tokenizer.ggml.merges", typ: arrayOf(KindString)},
	{key: "tokenizer.ggml.bos_token_id", typ: tInt},
	{key: "tokenizer.ggml.eos_token_id", typ: tInt},
	{key: "tokenizer.ggml.eot_token_id", typ: tInt},
	{key: "tokenizer.ggml.eom_token_id", typ: tInt},
	{key: "tokenizer.ggml.unknown_token_id", typ: tInt},
	{key: "tokenizer.ggml.seperator_token_id", typ: tInt},
	{key: "tokenizer.ggml.padding_token_id", typ: tInt},
	{key: "tokenizer.ggml.cls_token_id", typ: tInt},
	{key: "tokenizer.ggml.mask_token_id", typ: tInt},
	{key: "tokenizer.ggml.add_bos_token", typ: tBool},
	{key: "tokenizer.ggml.add_eos_token", typ: tBool},
	{key: "tokenizer.ggml.add_sep_token", typ: tBool},
	{key: "tokenizer.ggml.add_space_prefix", typ: tBool},
	{key: "tokenizer.ggml.remove_extra_whitespaces", typ: tBool},
	{key: "tokenizer.ggml.precompiled_charsmap", typ: arrayOf(KindInt)},
	{key: "tokenizer.huggingface.json", typ: tString},
	{key: "tokenizer.rwkv.world", typ: tString},
	{key: "tokenizer.chat_template", typ: tString},
	{key: "tokenizer.ggml.normalizer.lowercase", typ: tBool},
	{key: "tokenizer.ggml.normalizer.strip_accents", typ: tBool},
	{key: "tokenizer.ggml.fim_pre_token_id", typ: tInt},
	{key: "tokenizer.ggml.fim_suf_token_id", typ: tInt},
	{key: "tokenizer.ggml.fim_mid_token_id", typ: tInt},
	{key: "tokenizer.ggml.fim_pad_token_id", typ: tInt},
	{key: "tokenizer.ggml.fim_rep_token_id", typ: tInt},
	{key: "tokenizer.ggml.fim_sep_token_id", typ: tInt},
	{key: "tokenizer.ggml.suppress_tokens", typ: arrayOf(KindInt)},
	{key: "adapter.type", typ: tString},
	{key: "adapter.lora.alpha", typ: tFloat},
	{key: "adapter.lora.task_name", typ: tString},
	{key: "adapter.lora.prompt_prefix", typ: tString},
	{key: "adapter.alora.invocation_tokens", typ: arrayOf(KindInt)},
	{key: "xielu.alpha_n", typ: arrayOf(KindFloat)},
	{key: "xielu.alpha_p", typ: arrayOf(KindFloat)},
	{key: "xielu.beta", typ: arrayOf(KindFloat)},
	{key: "xielu.eps", typ: arrayOf(KindFloat)},
	{key: "tokenizer.ggml.prefix_token_id", typ: tInt},
	{key: "tokenizer.ggml.suffix_token_id", typ: tInt},
	{key: "tokenizer.ggml.middle_token_id", typ: tInt},
	// gguf-py only.
	{key: "general.organization", typ: tString},
	{key: "general.finetune", typ: tString},
	{key: "general.basename", typ: tString},
	{key: "general.quantized_by", typ: tString},
	{key: "general.size_label", typ: tString},
	{key: "general.license.name", typ: tString},
	{key: "general.license.link", typ: tString},
	{key: "general.doi", typ: tString},
	{key: "general.uuid", typ: tString},
	{key: "general.repo_url", typ: tString},
	{key: "general.source.doi", typ: tString},
	{key: "general.source.uuid", typ: tString},
	{key: "general.source.repo_url", typ: tString},
	{key: "general.base_model.count", typ: tInt},
	{key: "general.dataset.count", typ: tInt},
	{key: "general.tags", typ: arrayOf(KindString)},
	{key: "general.languages", typ: arrayOf(KindString)},
}

var relKeys, absKeys = indexKeys()

func indexKeys() (rel, abs map[string]KeyInfo) {
	rel, abs = map[string]KeyInfo{}, map[string]KeyInfo{}
	for _, e := range metadataKeys {
		ki := KeyInfo{Key: e.key, Relative: e.rel, Type: e.typ, Alt: e.alt, PerLayer: e.perLayer}
		if e.rel {
			rel[e.key] = ki
		} else {
			abs[e.key] = ki
		}
	}
	return rel, abs
}

// LookupKey returns what the registry knows of a key, relative (to the
// architecture prefix) or absolute.
func LookupKey(key string, relative bool) (KeyInfo, bool) {
	if relative {
		k, ok := relKeys[key]
		return k, ok
	}
	k, ok := absKeys[key]
	return k, ok
}

// MetadataKeys lists the registry, relative keys first, each group sorted.
func MetadataKeys() []KeyInfo {
	out := make([]KeyInfo, 0, len(metadataKeys))
	for _, m := range []map[string]KeyInfo{relKeys, absKeys} {
		start := len(out)
		for _, k := range m {
			out = append(out, k)
		}
		sort.Slice(out[start:], func(i, j int) bool { return out[start+i].Key < out[start+j].Key })
	}
	return out
}

// keyNames lists the names a misspelt key is compared with.
func keyNames(relative bool) []string {
	m := absKeys
	if relative {
		m = relKeys
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
