package plans

// Limits. Each is far above what a real model needs (the numbers in
// parentheses are a large model's), so that only a broken or hostile plan
// reaches one. Decode checks the counts before it allocates; Validate checks
// them again for plans built in memory. Raising one is a code change, not a
// format change: a plan that needs more is refused by older runtimes with a
// message naming the limit.
const (
	// MaxPlanBytes bounds the file (a 150k-token vocabulary with merges and
	// a 128-layer model's programs take well under 64 MiB).
	MaxPlanBytes = 1 << 30

	MaxBuffers   = 1 << 16 // (an 80-layer model: ~1000 weights + 160 KV + scratch)
	MaxPipelines = 1 << 14 // (a few dozen kernel variants)
	MaxPrograms  = 256     // (decode, sampled, a dozen prefill buckets)
	MaxCommands  = 1 << 20 // per program (80 layers × ~20 commands)
	MaxBindings  = 64      // per command (Metal has 31 buffer slots)
	MaxSlot      = 63      // the highest binding or parameter slot
	MaxPatches   = 16      // per command
	MaxConstants = 64      // per pipeline
	MaxDims      = 4       // dimensions of a shape (GGML's limit)

	// MaxParamBytes bounds a command's inline parameters; Metal's setBytes
	// takes at most 4 KiB.
	MaxParamBytes = 4096
	// MaxThreadgroupMemory bounds dynamic threadgroup memory (Apple GPUs
	// have 32 KiB, an H100 SM 228 KiB).
	MaxThreadgroupMemory = 256 << 10
	// MaxThreadsPerGroup bounds the threadgroup size, the product of its
	// three dimensions (Metal and CUDA allow 1024).
	MaxThreadsPerGroup = 1024
	MaxBatch           = 1 << 16 // tokens of one prefill bucket
	MaxChainChunk      = 1 << 12 // decode tokens of one submission
	MaxSeqs            = 1 << 12 // sequence slots of a KV cache

	MaxLayers = 1 << 12
	MaxHeads  = 1 << 16 // and head dim, kv heads
	MaxDim    = 1 << 24 // dim, ffn
	MaxCtx    = 1 << 24 // positions (16M)
	MaxVocab  = 1 << 22 // tokens, logits rows (Gemma: 262k)
	MaxMerges = 1 << 22
	MaxEOG    = 256

	// MaxNameBytes bounds names, labels, kernels, roles, dtypes and rules.
	MaxNameBytes = 256
	// MaxTokenBytes bounds one token's text.
	MaxTokenBytes = 1 << 12
	// MaxTemplateBytes bounds the chat template.
	MaxTemplateBytes = 1 << 20
	// MaxBufferBytes bounds one buffer (a 1 TiB KV cache would not fit any
	// machine we target).
	MaxBufferBytes = 1 << 40

	// The memory a plan makes a runtime allocate, beyond the weights it
	// maps: its KV cache (every KV buffer, times max_seqs sequence slots)
	// at most MaxKVBytes; its scratch, io, constant, parameter and derived
	// buffers together at most MaxWorkFactor times the model file or
	// MinWorkBytes, whichever is more, and never more than MaxWorkBytes.
	// A real plan's work buffers are a fraction of its model (a batch's
	// activations and logits; derived weights are copies of weights); a
	// damaged one that asks for more is refused before anything is
	// allocated.
	MaxKVBytes    = 1 << 38 // 256 GiB (a 70B model's 128k context: 40 GiB a slot)
	MaxWorkFactor = 4
	MinWorkBytes  = 4 << 30
	MaxWorkBytes  = 64 << 30

	// maxDepth bounds the nesting of msgpack containers the decoder will
	// skip (a newer writer's unknown fields); our own schema nests 6 deep.
	maxDepth = 32
)
