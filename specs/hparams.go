package specs

// RopeStyle is how RoPE pairs the values of a head.
type RopeStyle string

const (
	RopeNone        RopeStyle = "none"
	RopeInterleaved RopeStyle = "norm" // pairs (2i, 2i+1); llama.cpp's LLAMA_ROPE_TYPE_NORM
	RopeNeox        RopeStyle = "neox" // pairs (i, i + dim/2)
)

// RopeScalingType is how positions beyond the training context are handled.
type RopeScalingType string

const (
	ScalingNone     RopeScalingType = "none"
	ScalingLinear   RopeScalingType = "linear"
	ScalingYarn     RopeScalingType = "yarn"
	ScalingLongRope RopeScalingType = "longrope"
	// ScalingLlama3 is Llama 3.1's frequency-dependent scaling. GGUF files do
	// not describe it in metadata: converters bake it into the rope_freqs
	// tensor, and a spec reports llama3 when that tensor is present.
	ScalingLlama3 RopeScalingType = "llama3"
)

// RopeScaling is the resolved rope scaling of a model.
type RopeScaling struct {
	Type       RopeScalingType
	Factor     float64 // context extension factor (1 when none)
	OrigCtx    int     // the context the model was trained with before extension
	AttnFactor float64
	Finetuned  bool
	// YaRN parameters (zero when the metadata does not give them: the
	// runtime then uses YaRN's defaults).
	YarnExtFactor  float64
	YarnAttnFactor float64
	YarnBetaFast   float64
	YarnBetaSlow   float64
	YarnLogMul     float64
	// Llama 3 parameters. No GGUF key carries them (see ScalingLlama3); a
	// spec may still declare rope_low_freq_factor / rope_high_freq_factor.
	LowFreqFactor  float64
	HighFreqFactor float64
}

// NormKind is the normalization a model uses.
type NormKind string

const (
	NormRMS   NormKind = "rms"
	NormLayer NormKind = "layer"
)

// HParams are a model's resolved hyperparameters: the standard values the
// compiler needs as typed fields, and every named value of the spec.
type HParams struct {
	Arch string // general.architecture of the model
	Spec string // the spec that resolved it

	Dim      int
	Layers   int
	Heads    int
	KVHeads  int
	HeadDim  int // of keys (and queries)
	HeadDimV int // of values
	FFN      int
	Vocab    int
	CtxTrain int

	NormEps  float64
	NormKind NormKind // of the layer program's first norm

	RopeStyle   RopeStyle
	RopeBase    float64
	RopeBaseSWA float64 // for sliding-window layers; 0 when the model has none
	RopeDim     int
	RopeScaling RopeScaling

	SlidingWindow int    // window of sliding layers; 0 when none
	SlidingLayers []bool // per layer: does it use the sliding window

	AttnSoftcap  float64 // 0 = none
	FinalSoftcap float64 // 0 = none
	EmbedScale   float64 // 1 = none
	AttnScale    float64 // multiplies q·k before softmax (0 = 1/sqrt(HeadDim))

	// Pooling is how an embedding program pools an input's rows, as
	// llama.cpp's llama_pooling_type numbers it: 0 none (the model makes
	// no embedding program unless its spec's output is embedding), 1 mean,
	// 2 CLS (the first token), 3 last, 4 rank (unsupported).
	Pooling int

	// TiedOutput is true when the logits are computed with the token
	// embedding table (no separate output matrix in the file).
	TiedOutput bool

	// Values holds every named value that does not depend on the layer;
	// LayerValues every one that does, indexed by layer.
	Values      map[string]Value
	LayerValues map[string][]Value

	present map[string]bool // optional tensors the model has, by file name
}

// Has reports whether the model has the optional tensor (by its name in the
// file). Required tensors are not recorded: they always exist.
func (h *HParams) Has(tensor string) bool { return h.present[tensor] }

// Value returns a named value, for layer (ignored when the value does not
// depend on the layer).
func (h *HParams) Value(name string, layer int) (Value, bool) {
	if v, ok := h.Values[name]; ok {
		return v, true
	}
	if vs, ok := h.LayerValues[name]; ok && layer >= 0 && layer < len(vs) {
		return vs[layer], true
	}
	return Value{}, false
}

// stdHParam is one of the names a spec uses for the values HParams has
// fields for. The Go code knows these names, never an architecture's.
type stdHParam struct {
	name     string
	typ      Type
	required bool
	perLayer bool // must depend on the layer (or be constant)
	set      func(h *HParams, v Value)
}

func asInt(v Value) int { return int(v.Int) }

var stdHParams = []stdHParam{
	{name: "dim", typ: tInt, required: true, set: func(h *HParams, v Value) { h.Dim = asInt(v) }},
	{name: "layers", typ: tInt, required: true, set: func(h *HParams, v Value) { h.Layers = asInt(v) }},
	{name: "heads", typ: tInt, required: true, set: func(h *HParams, v Value) { h.Heads = asInt(v) }},
	{name: "kv_heads", typ: tInt, required: true, set: func(h *HParams, v Value) { h.KVHeads = asInt(v) }},
	{name: "head_dim", typ: tInt, required: true, set: func(h *HParams, v Value) { h.HeadDim = asInt(v) }},
	{name: "head_dim_v", typ: tInt, set: func(h *HParams, v Value) { h.HeadDimV = asInt(v) }},
	{name: "ffn", typ: tInt, required: true, set: func(h *HParams, v Value) { h.FFN = asInt(v) }},
	{name: "vocab", typ: tInt, required: true, set: func(h *HParams, v Value) { h.Vocab = asInt(v) }},
	{name: "ctx_train", typ: tInt, set: func(h *HParams, v Value) { h.CtxTrain = asInt(v) }},
	{name: "norm_eps", typ: tFloat, required: true, set: func(h *HParams, v Value) { h.NormEps = v.AsFloat() }},
	{name: "rope_base", typ: tFloat, set: func(h *HParams, v Value) { h.RopeBase = v.AsFloat() }},
	{name: "rope_base_swa", typ: tFloat, set: func(h *HParams, v Value) { h.RopeBaseSWA = v.AsFloat() }},
	{name: "rope_dim", typ: tInt, set: func(h *HParams, v Value) { h.RopeDim = asInt(v) }},
	{name: "rope_freq_scale", typ: tFloat},
	{name: "rope_scaling", typ: tString, set: func(h *HParams, v Value) { h.RopeScaling.Type = RopeScalingType(v.Str) }},
	{name: "rope_scaling_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.Factor = v.AsFloat() }},
	{name: "rope_orig_ctx", typ: tInt, set: func(h *HParams, v Value) { h.RopeScaling.OrigCtx = asInt(v) }},
	{name: "rope_attn_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.AttnFactor = v.AsFloat() }},
	{name: "rope_finetuned", typ: tBool, set: func(h *HParams, v Value) { h.RopeScaling.Finetuned = v.Bool }},
	{name: "yarn_ext_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.YarnExtFactor = v.AsFloat() }},
	{name: "yarn_attn_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.YarnAttnFactor = v.AsFloat() }},
	{name: "yarn_beta_fast", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.YarnBetaFast = v.AsFloat() }},
	{name: "yarn_beta_slow", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.YarnBetaSlow = v.AsFloat() }},
	{name: "yarn_log_mul", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.YarnLogMul = v.AsFloat() }},
	{name: "rope_low_freq_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.LowFreqFactor = v.AsFloat() }},
	{name: "rope_high_freq_factor", typ: tFloat, set: func(h *HParams, v Value) { h.RopeScaling.HighFreqFactor = v.AsFloat() }},
	{name: "swa_window", typ: tInt, set: func(h *HParams, v Value) { h.SlidingWindow = asInt(v) }},
	{name: "sliding", typ: tBool, perLayer: true},
	{name: "attn_softcap", typ: tFloat, set: func(h *HParams, v Value) { h.AttnSoftcap = v.AsFloat() }},
	{name: "final_softcap", typ: tFloat, set: func(h *HParams, v Value) { h.FinalSoftcap = v.AsFloat() }},
	{name: "embed_scale", typ: tFloat, set: func(h *HParams, v Value) { h.EmbedScale = v.AsFloat() }},
	{name: "attn_scale", typ: tFloat, set: func(h *HParams, v Value) { h.AttnScale = v.AsFloat() }},
	{name: "pooling", typ: tInt, set: func(h *HParams, v Value) { h.Pooling = asInt(v) }},
}

func stdHParamByName(name string) (*stdHParam, bool) {
	for i := range stdHParams {
		if stdHParams[i].name == name {
			return &stdHParams[i], true
		}
	}
	return nil, false
}
