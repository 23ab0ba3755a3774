package llamacpp

// ModelParams mirrors include/llama.h's struct llama_model_params field for
// field, padding included (80 bytes on 64-bit targets; TestStructLayouts
// holds the offsets to what a C compiler gives). Pointer fields are C
// pointers; leave them zero.
type ModelParams struct {
	Devices                  uintptr // ggml_backend_dev_t *, NULL-terminated
	TensorBuftOverrides      uintptr
	NGPULayers               int32 // negative: all layers
	SplitMode                int32 // enum llama_split_mode
	LoadMode                 int32 // enum llama_load_mode: -1 auto, 0 none, 1 mmap, 2 mlock, 3 mmap+mlock, 4 direct I/O
	LazyMode                 int32 // enum llama_lazy_mode
	MainGPU                  int32
	_                        [4]byte
	TensorSplit              uintptr // const float *
	ProgressCallback         uintptr
	ProgressCallbackUserData uintptr
	KVOverrides              uintptr
	VocabOnly                bool
	CheckTensors             bool
	UseExtraBufts            bool // allow repacked weight layouts (CPU interleaved Q4_0 etc.)
	NoHost                   bool
	NoAlloc                  bool
	LoadMTP                  bool
	_                        [2]byte
}

// Load modes (enum llama_load_mode).
const (
	LoadModeAuto = -1
	LoadModeNone = 0
	LoadModeMmap = 1
)

// ContextParams mirrors include/llama.h's struct llama_context_params (160
// bytes on 64-bit targets).
type ContextParams struct {
	NCtx              uint32
	NBatch            uint32
	NUbatch           uint32
	NSeqMax           uint32
	NRsSeq            uint32
	NOutputsMax       uint32
	NOutputsMaxPerSeq uint32
	NThreads          int32
	NThreadsBatch     int32
	CtxType           int32 // enum llama_context_type
	RopeScalingType   int32 // enum llama_rope_scaling_type
	PoolingType       int32 // enum llama_pooling_type
	AttentionType     int32 // enum llama_attention_type
	FlashAttnType     int32 // enum llama_flash_attn_type: -1 auto, 0 off, 1 on
	RopeFreqBase      float32
	RopeFreqScale     float32
	YarnExtFactor     float32
	YarnAttnFactor    float32
	YarnBetaFast      float32
	YarnBetaSlow      float32
	YarnOrigCtx       uint32
	DefragThold       float32
	CbEval            uintptr
	CbEvalUserData    uintptr
	TypeK             int32 // enum ggml_type of the K cache
	TypeV             int32 // enum ggml_type of the V cache
	AbortCallback     uintptr
	AbortCallbackData uintptr
	Embeddings        bool
	OffloadKQV        bool
	NoPerf            bool
	OpOffload         bool
	SwaFull           bool
	KVUnified         bool
	_                 [2]byte
	Samplers          uintptr
	NSamplers         uintptr // size_t
	CtxOther          uintptr
}

// Flash-attention settings (enum llama_flash_attn_type).
const (
	FlashAttnAuto     = -1
	FlashAttnDisabled = 0
	FlashAttnEnabled  = 1
)

// batch mirrors struct llama_batch (56 bytes). Its arrays live in C memory
// allocated by llama_batch_init.
type batch struct {
	NTokens int32
	_       [4]byte
	Token   *int32   // llama_token *
	Embd    *float32 // float *
	Pos     *int32   // llama_pos *
	NSeqID  *int32   // int32_t *
	SeqID   **int32  // llama_seq_id **
	Logits  *int8    // int8_t *: nonzero = produce this token's output
}

// Rope types (enum llama_rope_type).
const (
	RopeTypeNone   = -1
	RopeTypeNorm   = 0
	RopeTypeNeoX   = 2
	RopeTypeMRope  = 8
	RopeTypeIMRope = 40
	RopeTypeVision = 24
)
