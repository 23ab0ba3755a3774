package llamacpp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Pooling types (enum llama_pooling_type): how llama.cpp reduces a
// sequence's rows of the final hidden state (the output norm's result, not
// the logits) to one vector.
const (
	PoolingUnspecified = -1 // the GGUF's {arch}.pooling_type, NONE when absent
	PoolingNone        = 0  // no pooling: one vector a token (Embedding)
	PoolingMean        = 1  // the mean of the sequence's rows
	PoolingCLS         = 2  // the row at the sequence's smallest position
	PoolingLast        = 3  // the row at the sequence's largest position
	PoolingRank        = 4  // a reranker's classifier head: n_cls_out scores
)

// Attention types (enum llama_attention_type).
const (
	AttentionUnspecified = -1 // the model's own (causal for decoders)
	AttentionCausal      = 0
	AttentionNonCausal   = 1
)

// ErrPoolingNone is wrapped by Embed's error when the context pools nothing
// (PoolingNone, or embeddings switched off), so there is no vector a
// sequence to return.
var ErrPoolingNone = errors.New("no pooled embeddings (pooling type NONE or embeddings off)")

// EmbedOptions opens a context that returns embeddings (NewEmbedContext).
// Pooling and Attention are llama.h's enums, so their zero values mean NONE
// and CAUSAL; pass PoolingUnspecified and AttentionUnspecified to let the
// model decide.
type EmbedOptions struct {
	Pooling   int
	Attention int
	// NCtx is the tokens of one llama_decode, all its inputs together; it
	// is also n_batch and n_ubatch, because a pooled sequence must sit in
	// one ubatch (llama.cpp pools a ubatch at a time, and non-causal
	// attention asserts n_ubatch >= the batch's tokens). It is rounded up
	// to a multiple of NSeqMax (see NewEmbedContext).
	NCtx int
	// NSeqMax is how many inputs one llama_decode may hold (0: 1).
	NSeqMax  int
	NThreads int // 0: llama.cpp's default
	// FlashAttn is llama.cpp's flash-attention switch (FlashAttnAuto,
	// ...); the zero value is FlashAttnDisabled, the non-flash path the
	// parity tests hold our CPU attention to.
	FlashAttn int
}

// NewEmbedContext makes a context with embeddings on. Its KV cache is
// unified (one stream of NCtx cells shared by the sequences), so a group of
// inputs is bounded by its total tokens, not by NCtx/NSeqMax each.
func (m *Model) NewEmbedContext(o EmbedOptions) (*Context, error) {
	if o.NCtx <= 0 {
		return nil, fmt.Errorf("llamacpp: embedding context of %d tokens", o.NCtx)
	}
	if o.NSeqMax <= 0 {
		o.NSeqMax = 1
	}
	// llama.cpp reserves its worst-case graph at n_ubatch tokens over
	// n_seq_max sequences, rounding the tokens up to a multiple of the
	// sequences but not the outputs; MEAN pooling's matrix then has more
	// columns than there are output rows, and ggml_mul_mat aborts the
	// process (llama_context::graph_reserve, build_inp_mean).
	if r := o.NCtx % o.NSeqMax; r != 0 {
		o.NCtx += o.NSeqMax - r
	}
	p := m.lib.DefaultContextParams()
	p.NCtx = uint32(o.NCtx)
	p.NBatch = uint32(o.NCtx)
	p.NUbatch = uint32(o.NCtx)
	p.NSeqMax = uint32(o.NSeqMax)
	p.KVUnified = true
	p.Embeddings = true
	p.PoolingType = int32(o.Pooling)
	p.AttentionType = int32(o.Attention)
	if o.NThreads > 0 {
		p.NThreads = int32(o.NThreads)
		p.NThreadsBatch = int32(o.NThreads)
	}
	p.NoPerf = true
	p.FlashAttnType = int32(o.FlashAttn)
	return m.NewContextWith(p)
}

// NEmbdOut is the width of the model's output embeddings (llama.cpp sizes
// pooled vectors by it; it equals NEmbd except for deepstack models).
func (m *Model) NEmbdOut() int { return int(m.lib.ll.modelNEmbdOut(m.ptr)) }

// PoolingType is the pooling in effect (PoolingNone, ...): the context
// option, or the model's when that was PoolingUnspecified.
func (c *Context) PoolingType() int { return int(c.m.lib.ll.poolingType(c.ptr)) }

// SetEmbeddings switches embedding output on or off (llama_set_embeddings).
func (c *Context) SetEmbeddings(on bool) {
	c.m.lib.ll.setEmbeddings(c.ptr, on)
	c.embeddings = on
}

// NBatch, NUbatch and NSeqMax are the limits llama.cpp settled on, which
// may be below those asked for (a causal context clamps n_batch to n_ctx).
func (c *Context) NBatch() int  { return int(c.m.lib.ll.nBatchOf(c.ptr)) }
func (c *Context) NUbatch() int { return int(c.m.lib.ll.nUbatchOf(c.ptr)) }
func (c *Context) NSeqMax() int { return int(c.m.lib.ll.nSeqMaxOf(c.ptr)) }

// Embedding returns a copy of token i's embedding from the last Decode of a
// context with embeddings on and PoolingNone (llama_get_embeddings_ith), or
// nil when there is none. With pooling, llama.cpp fills no per-token rows.
func (c *Context) Embedding(i int) []float32 {
	if !c.embeddings || i < 0 || i >= c.nOut || c.PoolingType() != PoolingNone {
		return nil
	}
	p := c.m.lib.ll.getEmbeddingsIth(c.ptr, int32(i))
	if p == nil {
		return nil
	}
	n := c.m.NEmbdOut()
	out := make([]float32, n)
	copy(out, unsafe.Slice(p, n))
	runtime.KeepAlive(c)
	return out
}

// Embed returns the pooled embedding of each input, as llama.cpp's
// examples/embedding builds them but without normalizing: input i of a
// group is sequence i at positions 0.., every row asks for output, one
// llama_decode a group, then llama_get_embeddings_seq. Inputs go in groups
// of at most NSeqMax inputs and NUbatch tokens; the memory is cleared
// before each group, so no input sees another's cache. Vectors are
// NEmbdOut long (n_cls_out for PoolingRank). It clobbers the KV cache and
// the logits of the last Decode.
func (c *Context) Embed(inputs [][]int32) ([][]float32, error) {
	pooling := c.PoolingType()
	if !c.embeddings || pooling == PoolingNone {
		return nil, fmt.Errorf("llamacpp: Embed: %w; open the context with NewEmbedContext and a pooling type", ErrPoolingNone)
	}
	width := c.m.NEmbdOut()
	if pooling == PoolingRank {
		width = int(c.m.lib.ll.modelNClsOut(c.m.ptr))
	}
	limit := min(c.nBatch, c.NUbatch())
	nSeq := c.NSeqMax()
	for i, in := range inputs {
		if len(in) == 0 || len(in) > limit {
			return nil, fmt.Errorf("llamacpp: Embed: input %d has %d tokens (a ubatch holds 1..%d)", i, len(in), limit)
		}
	}
	c.nOut = 0
	out := make([][]float32, len(inputs))
	for start := 0; start < len(inputs); {
		end, total := start, 0
		for end < len(inputs) && end-start < nSeq && total+len(inputs[end]) <= limit {
			total += len(inputs[end])
			end++
		}
		if err := c.embedGroup(inputs[start:end], out[start:end], start, width); err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

// embedGroup decodes inputs as sequences 0..len-1 of one batch and copies
// each sequence's pooled vector into out; first is the index of inputs[0]
// among Embed's inputs, for errors.
func (c *Context) embedGroup(inputs [][]int32, out [][]float32, first, width int) error {
	ll := &c.m.lib.ll
	ll.memoryClear(ll.getMemory(c.ptr), true)
	tok := unsafe.Slice(c.b.Token, c.nBatch)
	pos := unsafe.Slice(c.b.Pos, c.nBatch)
	nseq := unsafe.Slice(c.b.NSeqID, c.nBatch)
	seq := unsafe.Slice(c.b.SeqID, c.nBatch)
	outp := unsafe.Slice(c.b.Logits, c.nBatch)
	n := 0
	for s, in := range inputs {
		for i, t := range in {
			tok[n] = t
			pos[n] = int32(i)
			nseq[n] = 1
			*seq[n] = int32(s)
			// Every row an output, as examples/embedding asks; with
			// embeddings on llama.cpp forces this anyway, with a
			// warning (llama_batch_allocr::init, output_all).
			outp[n] = 1
			n++
		}
	}
	b := c.b
	b.NTokens = int32(n)
	if rc := ll.decode(c.ptr, b); rc != 0 {
		return fmt.Errorf("llamacpp: Embed: llama_decode of inputs %d..%d (%d tokens) returned %d (AKUNU_LLAMA_LOG=1 shows why)",
			first, first+len(inputs)-1, n, rc)
	}
	for s := range inputs {
		p := ll.getEmbeddingsSeq(c.ptr, int32(s))
		if p == nil {
			return fmt.Errorf("llamacpp: Embed: input %d: llama_get_embeddings_seq returned NULL: %w", first+s, ErrPoolingNone)
		}
		v := make([]float32, width)
		copy(v, unsafe.Slice(p, width))
		out[s] = v
	}
	runtime.KeepAlive(c)
	return nil
}
