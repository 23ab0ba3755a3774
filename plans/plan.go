package plans

// Magic opens every plan file; FormatVersion is the newest body layout this
// package writes and reads (FORMAT.md says what changes it).
const (
	Magic         = "AKUNUPLN"
	FormatVersion = 12
)

// Plan is one compiled model for one target: everything the runtime needs
// except the weight bytes, which it maps from the GGUF file the header names.
//
// Every reference inside a plan is an index into one of its slices (a
// command's pipeline into Pipelines, a binding's buffer into Buffers), so a
// runtime resolves each to a handle once, at load, and the replay loop does
// no lookups.
type Plan struct {
	Header    Header
	Model     Model
	Buffers   []Buffer
	Pipelines []Pipeline
	Programs  []Program

	// name is the file the plan was read from, for messages only; it is not
	// part of the encoding.
	name string
}

// Header says who wrote the plan, for which target and over which model file.
type Header struct {
	// Format and MinRuntime are the preamble's two versions. Decode fills them
	// in; Encode ignores them and writes FormatVersion and
	// RequiredRuntime(), so they always describe the bytes on disk.
	Format     uint32
	MinRuntime uint32

	// Compiler names the compiler and its version ("akunuc 0.3.0 (abc1234)").
	Compiler string
	// SpecDigest is a digest of every spec the compiler read (the
	// architecture YAML, the fusion rules, the catalog): two plans with equal
	// digests, target and model were compiled from the same inputs.
	SpecDigest string
	Target     Target
	Model      ModelFile
}

// Target is the chip profile the plan was tuned for, with every tuning value
// the compiler derived from it, so a plan says why its commands look the way
// they do without the profile catalog at hand.
type Target struct {
	// Chip is the profile name as specs/chips resolves it ("m4-pro-20",
	// "cpu-avx2:16", "h100-sxm").
	Chip string
	// Kind is "gpu" or "cpu".
	Kind string
	// Vendor is "apple", "nvidia", or the CPU vendor family ("x86", "arm").
	Vendor string
	// Family is the GPU family ("apple9", "sm90") or the CPU's instruction
	// set level ("x86-64-v3").
	Family       string
	BandwidthGBs float64
	GPUCores     uint32
	CPUCores     uint32
	// SLCBytes is the last shared cache level (Apple SLC, NVIDIA L2).
	SLCBytes uint64
	Tuning   Tuning
}

// Tuning mirrors the derived values of specs/chips (ADR 0003). It is copied,
// not imported, because the plan is a file format: a field here is a promise
// about bytes on disk, and the rule table is free to change its Go types.
type Tuning struct {
	FuseWeights          bool
	Q4LargeKThreshold    uint32
	WideGEMVThreshold    uint32
	ChainChunk           uint32 // decode tokens per submission; bounds the decode token slot
	PrefillChunk         uint32
	NormTG               uint32
	LargeKTypes          []string
	AttnDecodeFastKV     uint32
	AttnDecodeParallelKV uint32
	AttnPrefillV2Tokens  uint32
	// Extra holds tuning values that have no field yet, by name. It is a
	// stop-gap for experiments: a value the runtime must act on gets a field
	// (FORMAT.md). Keys are written in sorted order.
	Extra map[string]string
	// MaxSeqs (format 2) is the most sequence slots a runtime may give the
	// KV cache; it allocates between 1 and MaxSeqs. 0 (a format-1 plan)
	// means 1.
	MaxSeqs uint32
	// OutRows (format 2) is the most rows of one batch replay that produce
	// logits: the io logits buffer holds OutRows rows.
	OutRows uint32
	// Repack (format 2) lists the weight layouts the compiler repacked
	// weights into for the target's backend ("q4_0x16", "q8_0x16", "q4_kx16", "q6_kx16").
	Repack []string
	// GEMVMinGroups (format 7): a large-K GEMV that would launch fewer
	// threadgroups than this halves its rows per threadgroup until it does
	// not (kernels/geometry.go: gemvGeometry). 0: the dtype's rows.
	GEMVMinGroups uint32
	// GEMVMinRows (format 8): that halving stops at this many rows per
	// threadgroup. 0: down to one.
	GEMVMinRows uint32
	// Int8GEMV (format 9): the target's GEMVs dot 8-bit x, and the types
	// they do it for take their 8-bit rows per SIMD group
	// (kernels/geometry.go: gemvShapes).
	Int8GEMV bool
	// GEMVPreloadMaxK (format 11): a planar Q4_0 GEMV over rows of at
	// most this many elements preloads its lanes' one block a row before
	// waiting for the command before (the kernel's preload constant). 0:
	// none does.
	GEMVPreloadMaxK uint32
}

// Seqs is the most sequence slots the plan's KV cache may have: MaxSeqs,
// or 1 for a plan that predates it.
func (t *Tuning) Seqs() uint32 { return max(t.MaxSeqs, 1) }

// ModelFile identifies the GGUF file the plan was compiled from. The runtime
// compares it with the file it maps (CheckModel) before trusting any weight
// offset in the plan.
type ModelFile struct {
	// File is the GGUF file's base name, for messages ("model.gguf").
	File string
	Size uint64
	// HeaderSHA256 is the SHA-256 of the GGUF header and tensor table (the
	// bytes before the data section): it changes when a tensor moves or
	// changes type, and it is cheap to compute at load.
	HeaderSHA256 [32]byte
	// DataOffset is where the tensor data section starts.
	DataOffset uint64
	// Path (format 3) is the file's absolute path when it was compiled: a
	// hint where to look for it (ModelPathFor), never trusted as identity.
	Path string
	// Weights (format 3) are sums of the tensor data, so a load can tell
	// these weights from others behind the same header (weights.go). A
	// plan of format 1 or 2 has none, and its weights are not checked.
	Weights Weights
}

// Model is what the runtime needs to know about the model beyond its
// commands, so it never parses GGUF metadata.
type Model struct {
	HParams   HParams
	Tokenizer Tokenizer
}

// HParams are the model's hyperparameters as the spec resolved them. The
// commands already encode them; the runtime reads them for what is outside
// the commands (context bookkeeping, sampling, messages).
type HParams struct {
	Arch    string // GGUF general.architecture ("llama", "qwen3")
	Dim     uint32 // embedding length
	Layers  uint32
	Heads   uint32
	KVHeads uint32
	HeadDim uint32
	FFN     uint32 // feed-forward hidden length
	Vocab   uint32 // rows of the embedding and of the logits
	// Ctx is the plan's maximum context: the KV cache holds this many
	// positions and no position patch goes past it.
	Ctx     uint32
	NormEps float32

	// RopeStyle is "norm" (adjacent pairs), "neox" (halves) or "none".
	RopeStyle string
	RopeBase  float32
	RopeDim   uint32 // rotated dimensions per head
	// RopeScaling is "none", "linear" or "yarn"; RopeScale its factor and
	// RopeOrigCtx the training context it scales from.
	RopeScaling string
	RopeScale   float32
	RopeOrigCtx uint32
	// RopeBaseLocal is the base of sliding-window layers when it differs
	// (gemma3); 0 when all layers share RopeBase.
	RopeBaseLocal float32

	// SlidingWindow is the window of local layers; SlidingLayers says, per
	// layer, whether it is one (empty: none is).
	SlidingWindow uint32
	SlidingLayers []bool

	AttnSoftcap  float32 // 0: none
	FinalSoftcap float32 // 0: none
	EmbedScale   float32 // 0: none (gemma multiplies by sqrt(dim))
	TiedOutput   bool    // the LM head reads the token embedding
}

// Tokenizer is the vocabulary and its rules, as the GGUF metadata gave them.
type Tokenizer struct {
	Model  string // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE), ...
	Pre    string // tokenizer.ggml.pre: the pre-tokenizer ("llama3", "qwen2")
	Tokens []string
	Scores []float32 // empty, or one per token
	Types  []int32   // empty, or one per token (GGUF token types)
	Merges []string  // BPE merges, "a b"

	// Special token ids; -1 means the model has none.
	BOS, EOS, EOT, UNK, PAD int32
	// EOG lists further end-of-generation ids beyond EOS and EOT.
	EOG []int32

	AddBOS         bool
	AddEOS         bool
	AddSpacePrefix bool
	ChatTemplate   string
}
