package llamacpp

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"
)

type llamaFuncs struct {
	handle             uintptr
	logSet             func(cb, userData uintptr)
	backendInit        func()
	modelDefaultParams func() ModelParams
	ctxDefaultParams   func() ContextParams
	modelLoad          func(path string, p ModelParams) uintptr
	modelFree          func(m uintptr)
	initFromModel      func(m uintptr, p ContextParams) uintptr
	free               func(ctx uintptr)

	modelNEmbd         func(m uintptr) int32
	modelNLayer        func(m uintptr) int32
	modelNHead         func(m uintptr) int32
	modelNHeadKV       func(m uintptr) int32
	modelNCtxTrain     func(m uintptr) int32
	modelRopeType      func(m uintptr) int32
	modelRopeFreqScale func(m uintptr) float32
	modelMetaValStr    func(m uintptr, key string, buf *byte, size uintptr) int32
	modelDesc          func(m uintptr, buf *byte, size uintptr) int32
	modelNParams       func(m uintptr) uint64
	modelGetVocab      func(m uintptr) uintptr
	vocabNTokens       func(v uintptr) int32
	vocabType          func(v uintptr) int32
	vocabBOS           func(v uintptr) int32
	vocabEOS           func(v uintptr) int32
	vocabEOT           func(v uintptr) int32
	vocabNL            func(v uintptr) int32
	vocabGetAddBOS     func(v uintptr) bool
	vocabGetAddEOS     func(v uintptr) bool
	vocabIsEOG         func(v uintptr, tok int32) bool
	vocabIsControl     func(v uintptr, tok int32) bool
	vocabGetText       func(v uintptr, tok int32) string
	vocabGetScore      func(v uintptr, tok int32) float32
	vocabGetAttr       func(v uintptr, tok int32) int32
	tokenize           func(v uintptr, text *byte, textLen int32, toks *int32, nMax int32, addSpecial, parseSpecial bool) int32
	tokenToPiece       func(v uintptr, tok int32, buf *byte, length int32, lstrip int32, special bool) int32
	detokenize         func(v uintptr, toks *int32, n int32, text *byte, maxLen int32, removeSpecial, unparseSpecial bool) int32
	batchInit          func(nTokens, embd, nSeqMax int32) batch
	batchFree          func(b batch)
	decode             func(ctx uintptr, b batch) int32
	getLogitsIth       func(ctx uintptr, i int32) *float32
	getMemory          func(ctx uintptr) uintptr
	memoryClear        func(mem uintptr, data bool)
	nCtx               func(ctx uintptr) uint32

	// Embeddings (embed.go).
	modelNEmbdOut    func(m uintptr) int32
	modelNClsOut     func(m uintptr) uint32
	nBatchOf         func(ctx uintptr) uint32
	nUbatchOf        func(ctx uintptr) uint32
	nSeqMaxOf        func(ctx uintptr) uint32
	poolingType      func(ctx uintptr) int32
	setEmbeddings    func(ctx uintptr, on bool)
	getEmbeddingsIth func(ctx uintptr, i int32) *float32
	getEmbeddingsSeq func(ctx uintptr, seq int32) *float32
}

func (f *llamaFuncs) bind(h uintptr) error {
	var b binder
	f.handle = h
	b.fn(h, "llama_log_set", &f.logSet)
	b.fn(h, "llama_backend_init", &f.backendInit)
	b.fn(h, "llama_model_default_params", &f.modelDefaultParams)
	b.fn(h, "llama_context_default_params", &f.ctxDefaultParams)
	b.fn(h, "llama_model_load_from_file", &f.modelLoad)
	b.fn(h, "llama_model_free", &f.modelFree)
	b.fn(h, "llama_init_from_model", &f.initFromModel)
	b.fn(h, "llama_free", &f.free)
	b.fn(h, "llama_model_n_embd", &f.modelNEmbd)
	b.fn(h, "llama_model_n_layer", &f.modelNLayer)
	b.fn(h, "llama_model_n_head", &f.modelNHead)
	b.fn(h, "llama_model_n_head_kv", &f.modelNHeadKV)
	b.fn(h, "llama_model_n_ctx_train", &f.modelNCtxTrain)
	b.fn(h, "llama_model_rope_type", &f.modelRopeType)
	b.fn(h, "llama_model_rope_freq_scale_train", &f.modelRopeFreqScale)
	b.fn(h, "llama_model_meta_val_str", &f.modelMetaValStr)
	b.fn(h, "llama_model_desc", &f.modelDesc)
	b.fn(h, "llama_model_n_params", &f.modelNParams)
	b.fn(h, "llama_model_get_vocab", &f.modelGetVocab)
	b.fn(h, "llama_vocab_n_tokens", &f.vocabNTokens)
	b.fn(h, "llama_vocab_type", &f.vocabType)
	b.fn(h, "llama_vocab_bos", &f.vocabBOS)
	b.fn(h, "llama_vocab_eos", &f.vocabEOS)
	b.fn(h, "llama_vocab_eot", &f.vocabEOT)
	b.fn(h, "llama_vocab_nl", &f.vocabNL)
	b.fn(h, "llama_vocab_get_add_bos", &f.vocabGetAddBOS)
	b.fn(h, "llama_vocab_get_add_eos", &f.vocabGetAddEOS)
	b.fn(h, "llama_vocab_is_eog", &f.vocabIsEOG)
	b.fn(h, "llama_vocab_is_control", &f.vocabIsControl)
	b.fn(h, "llama_vocab_get_text", &f.vocabGetText)
	b.fn(h, "llama_vocab_get_score", &f.vocabGetScore)
	b.fn(h, "llama_vocab_get_attr", &f.vocabGetAttr)
	b.fn(h, "llama_tokenize", &f.tokenize)
	b.fn(h, "llama_token_to_piece", &f.tokenToPiece)
	b.fn(h, "llama_detokenize", &f.detokenize)
	b.fn(h, "llama_batch_init", &f.batchInit)
	b.fn(h, "llama_batch_free", &f.batchFree)
	b.fn(h, "llama_decode", &f.decode)
	b.fn(h, "llama_get_logits_ith", &f.getLogitsIth)
	b.fn(h, "llama_get_memory", &f.getMemory)
	b.fn(h, "llama_memory_clear", &f.memoryClear)
	b.fn(h, "llama_n_ctx", &f.nCtx)
	b.fn(h, "llama_model_n_embd_out", &f.modelNEmbdOut)
	b.fn(h, "llama_model_n_cls_out", &f.modelNClsOut)
	b.fn(h, "llama_n_batch", &f.nBatchOf)
	b.fn(h, "llama_n_ubatch", &f.nUbatchOf)
	b.fn(h, "llama_n_seq_max", &f.nSeqMaxOf)
	b.fn(h, "llama_pooling_type", &f.poolingType)
	b.fn(h, "llama_set_embeddings", &f.setEmbeddings)
	b.fn(h, "llama_get_embeddings_ith", &f.getEmbeddingsIth)
	b.fn(h, "llama_get_embeddings_seq", &f.getEmbeddingsSeq)
	return b.err
}

// DefaultModelParams is llama_model_default_params with the model kept on
// the CPU (no layers offloaded).
func (l *Lib) DefaultModelParams() ModelParams {
	p := l.ll.modelDefaultParams()
	p.NGPULayers = 0
	return p
}

// DefaultContextParams is llama_context_default_params.
func (l *Lib) DefaultContextParams() ContextParams { return l.ll.ctxDefaultParams() }

// Model is a loaded llama_model.
type Model struct {
	lib   *Lib
	ptr   uintptr
	vocab uintptr
}

// LoadModel loads a GGUF file on the CPU, memory-mapped.
func (l *Lib) LoadModel(path string) (*Model, error) {
	p := l.DefaultModelParams()
	p.LoadMode = LoadModeMmap
	return l.LoadModelWith(path, p)
}

// LoadModelWith loads a GGUF file with explicit parameters.
func (l *Lib) LoadModelWith(path string, p ModelParams) (*Model, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("llamacpp: %w", err)
	}
	ptr := l.ll.modelLoad(path, p)
	if ptr == 0 {
		return nil, fmt.Errorf("llamacpp: llama.cpp could not load %s (AKUNU_LLAMA_LOG=1 shows why)", path)
	}
	return &Model{lib: l, ptr: ptr, vocab: l.ll.modelGetVocab(ptr)}, nil
}

// Close frees the model. Contexts made from it must be closed first.
func (m *Model) Close() {
	if m.ptr != 0 {
		m.lib.ll.modelFree(m.ptr)
		m.ptr, m.vocab = 0, 0
	}
}

// NEmbd is the embedding width.
func (m *Model) NEmbd() int { return int(m.lib.ll.modelNEmbd(m.ptr)) }

// NLayer is the number of blocks.
func (m *Model) NLayer() int { return int(m.lib.ll.modelNLayer(m.ptr)) }

// NHead is the number of query heads.
func (m *Model) NHead() int { return int(m.lib.ll.modelNHead(m.ptr)) }

// NHeadKV is the number of key/value heads.
func (m *Model) NHeadKV() int { return int(m.lib.ll.modelNHeadKV(m.ptr)) }

// NCtxTrain is the context length the model was trained with.
func (m *Model) NCtxTrain() int { return int(m.lib.ll.modelNCtxTrain(m.ptr)) }

// NParams is the number of weights.
func (m *Model) NParams() uint64 { return m.lib.ll.modelNParams(m.ptr) }

// RopeType is llama.cpp's rope type for the architecture (RopeTypeNorm, ...).
func (m *Model) RopeType() int { return int(m.lib.ll.modelRopeType(m.ptr)) }

// RopeFreqScaleTrain is the trained RoPE frequency scale (1 when unscaled).
func (m *Model) RopeFreqScaleTrain() float32 { return m.lib.ll.modelRopeFreqScale(m.ptr) }

// cString calls fill with growing buffers until the C string (whose length
// fill returns, negative on failure) fits.
func cString(fill func(buf *byte, size uintptr) int32) (string, bool) {
	buf := make([]byte, 256)
	for {
		n := fill(&buf[0], uintptr(len(buf)))
		if n < 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return string(buf[:n]), true
		}
		buf = make([]byte, int(n)+1)
	}
}

// Meta returns a scalar GGUF metadata value rendered as a string by
// llama.cpp, or false when the key is absent (arrays are not supported).
func (m *Model) Meta(key string) (string, bool) {
	return cString(func(buf *byte, size uintptr) int32 { return m.lib.ll.modelMetaValStr(m.ptr, key, buf, size) })
}

// Desc is llama.cpp's one-line description ("llama ?B all F32").
func (m *Model) Desc() string {
	s, _ := cString(func(buf *byte, size uintptr) int32 { return m.lib.ll.modelDesc(m.ptr, buf, size) })
	return s
}

// NVocab is the number of tokens in the vocabulary.
func (m *Model) NVocab() int { return int(m.lib.ll.vocabNTokens(m.vocab)) }

// VocabType is llama.cpp's tokenizer kind (1 SPM, 2 BPE, 3 WPM, 4 UGM, ...).
func (m *Model) VocabType() int { return int(m.lib.ll.vocabType(m.vocab)) }

// BOS, EOS, EOT and NL are the special token ids (-1 when absent).
func (m *Model) BOS() int32 { return m.lib.ll.vocabBOS(m.vocab) }
func (m *Model) EOS() int32 { return m.lib.ll.vocabEOS(m.vocab) }
func (m *Model) EOT() int32 { return m.lib.ll.vocabEOT(m.vocab) }
func (m *Model) NL() int32  { return m.lib.ll.vocabNL(m.vocab) }

// AddBOS and AddEOS say whether tokenizing with addSpecial adds them.
func (m *Model) AddBOS() bool { return m.lib.ll.vocabGetAddBOS(m.vocab) }
func (m *Model) AddEOS() bool { return m.lib.ll.vocabGetAddEOS(m.vocab) }

// IsEOG reports an end-of-generation token.
func (m *Model) IsEOG(tok int32) bool { return m.lib.ll.vocabIsEOG(m.vocab, tok) }

// IsControl reports a control token.
func (m *Model) IsControl(tok int32) bool { return m.lib.ll.vocabIsControl(m.vocab, tok) }

// TokenText, TokenScore and TokenAttr are the vocabulary's entries for tok.
func (m *Model) TokenText(tok int32) string   { return m.lib.ll.vocabGetText(m.vocab, tok) }
func (m *Model) TokenScore(tok int32) float32 { return m.lib.ll.vocabGetScore(m.vocab, tok) }
func (m *Model) TokenAttr(tok int32) int32    { return m.lib.ll.vocabGetAttr(m.vocab, tok) }

// Tokenize is llama_tokenize: addSpecial adds BOS/EOS as the vocabulary
// asks, parseSpecial turns special-token text into their ids.
func (m *Model) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	bs := []byte(text)
	bs = append(bs, 0) // a non-nil pointer even for ""
	toks := make([]int32, len(text)+8)
	for {
		n := m.lib.ll.tokenize(m.vocab, &bs[0], int32(len(text)), &toks[0], int32(len(toks)), addSpecial, parseSpecial)
		if n >= 0 {
			return toks[:n], nil
		}
		if n == math.MinInt32 {
			return nil, fmt.Errorf("llamacpp: tokenizing %d bytes overflows int32", len(text))
		}
		if int(-n) <= len(toks) {
			return nil, fmt.Errorf("llamacpp: llama_tokenize failed (%d)", n)
		}
		toks = make([]int32, -n)
	}
}

// TokenToPiece is llama_token_to_piece without stripping leading spaces;
// special renders control tokens' text.
func (m *Model) TokenToPiece(tok int32, special bool) string {
	buf := make([]byte, 64)
	for {
		n := m.lib.ll.tokenToPiece(m.vocab, tok, &buf[0], int32(len(buf)), 0, special)
		if n >= 0 {
			return string(buf[:n])
		}
		if int(-n) <= len(buf) {
			return ""
		}
		buf = make([]byte, -n)
	}
}

// Detokenize is llama_detokenize.
func (m *Model) Detokenize(toks []int32, removeSpecial, unparseSpecial bool) (string, error) {
	if len(toks) == 0 {
		return "", nil
	}
	buf := make([]byte, 16*len(toks)+16)
	for {
		n := m.lib.ll.detokenize(m.vocab, &toks[0], int32(len(toks)), &buf[0], int32(len(buf)), removeSpecial, unparseSpecial)
		if n >= 0 {
			return string(buf[:n]), nil
		}
		if int(-n) <= len(buf) {
			return "", fmt.Errorf("llamacpp: llama_detokenize failed (%d)", n)
		}
		buf = make([]byte, -n)
	}
}

// Context is a llama_context and a reusable batch: one sequence for Decode,
// up to NSeqMax for Embed (embed.go).
type Context struct {
	m        *Model
	ptr      uintptr
	b        batch
	nBatch   int
	nVocab   int
	nOut     int     // tokens in the last Decode
	pool     uintptr // an attached ggml threadpool (AttachThreadpool)
	poolFree uintptr // its ggml_threadpool_free

	// embeddings mirrors cparams.embeddings, which llama.h cannot read
	// back (set at NewContextWith, changed by SetEmbeddings).
	embeddings bool
}

// NewContext makes a context of nctx positions that decodes up to nbatch
// tokens per call on nthreads threads (0: llama.cpp's default).
func (m *Model) NewContext(nctx, nbatch, nthreads int) (*Context, error) {
	p := m.lib.DefaultContextParams()
	p.NCtx = uint32(nctx)
	p.NBatch = uint32(nbatch)
	p.NUbatch = uint32(nbatch)
	p.NSeqMax = 1
	if nthreads > 0 {
		p.NThreads = int32(nthreads)
		p.NThreadsBatch = int32(nthreads)
	}
	p.NoPerf = true
	p.FlashAttnType = FlashAttnDisabled
	return m.NewContextWith(p)
}

// NewContextWith makes a context with explicit parameters.
func (m *Model) NewContextWith(p ContextParams) (*Context, error) {
	if p.NBatch == 0 {
		return nil, errors.New("llamacpp: n_batch must be positive")
	}
	ptr := m.lib.ll.initFromModel(m.ptr, p)
	if ptr == 0 {
		return nil, errors.New("llamacpp: llama_init_from_model failed (AKUNU_LLAMA_LOG=1 shows why)")
	}
	c := &Context{m: m, ptr: ptr, nBatch: int(p.NBatch), nVocab: m.NVocab(), embeddings: p.Embeddings}
	c.b = m.lib.ll.batchInit(int32(p.NBatch), 0, 1)
	return c, nil
}

// NCtx is the context's size in positions.
func (c *Context) NCtx() int { return int(c.m.lib.ll.nCtx(c.ptr)) }

// Close frees the context and its batch.
func (c *Context) Close() {
	if c.ptr != 0 {
		c.m.lib.ll.batchFree(c.b)
		c.m.lib.ll.free(c.ptr)
		c.ptr = 0
	}
	c.freePool()
}

// ClearKV empties the KV cache (llama_memory_clear with data).
func (c *Context) ClearKV() {
	c.m.lib.ll.memoryClear(c.m.lib.ll.getMemory(c.ptr), true)
}

// Decode runs tokens at positions pos0, pos0+1, ... of sequence 0 and keeps
// the logits of every token (Logits(i) for i < len(tokens)).
func (c *Context) Decode(tokens []int32, pos0 int) error { return c.decode(tokens, pos0, true) }

// DecodeLast is Decode keeping only the last token's logits
// (Logits(len(tokens)-1)); it saves memory on long prompts.
func (c *Context) DecodeLast(tokens []int32, pos0 int) error { return c.decode(tokens, pos0, false) }

func (c *Context) decode(tokens []int32, pos0 int, all bool) error {
	n := len(tokens)
	if n == 0 || n > c.nBatch {
		return fmt.Errorf("llamacpp: decode of %d tokens (batch holds 1..%d)", n, c.nBatch)
	}
	// The batch's arrays are C memory sized by llama_batch_init.
	tok := unsafe.Slice(c.b.Token, c.nBatch)
	pos := unsafe.Slice(c.b.Pos, c.nBatch)
	nseq := unsafe.Slice(c.b.NSeqID, c.nBatch)
	seq := unsafe.Slice(c.b.SeqID, c.nBatch)
	out := unsafe.Slice(c.b.Logits, c.nBatch)
	for i, t := range tokens {
		tok[i] = t
		pos[i] = int32(pos0 + i)
		nseq[i] = 1
		*seq[i] = 0
		out[i] = 0
		if all || i == n-1 {
			out[i] = 1
		}
	}
	b := c.b
	b.NTokens = int32(n)
	if rc := c.m.lib.ll.decode(c.ptr, b); rc != 0 {
		return fmt.Errorf("llamacpp: llama_decode of %d tokens at position %d returned %d", n, pos0, rc)
	}
	c.nOut = n
	return nil
}

// Logits returns a copy of the logits of token i of the last Decode, or nil
// when that token produced none.
func (c *Context) Logits(i int) []float32 {
	if i < 0 || i >= c.nOut {
		return nil
	}
	p := c.m.lib.ll.getLogitsIth(c.ptr, int32(i))
	if p == nil {
		return nil
	}
	out := make([]float32, c.nVocab)
	copy(out, unsafe.Slice(p, c.nVocab))
	runtime.KeepAlive(c)
	return out
}

// ArgmaxAt is the argmax of token i's logits read in place (no copy: a
// benchmark's decode loop must not allocate 4 bytes a vocabulary entry
// per token), -1 when that token produced none.
func (c *Context) ArgmaxAt(i int) int {
	if i < 0 || i >= c.nOut {
		return -1
	}
	p := c.m.lib.ll.getLogitsIth(c.ptr, int32(i))
	if p == nil {
		return -1
	}
	best := Argmax(unsafe.Slice(p, c.nVocab))
	runtime.KeepAlive(c)
	return best
}

// Argmax is the index of the largest value, the first one on ties (NaNs
// never win).
func Argmax(xs []float32) int {
	best := -1
	for i, x := range xs {
		if best < 0 && !math.IsNaN(float64(x)) || best >= 0 && x > xs[best] {
			best = i
		}
	}
	return best
}

// GreedyGenerate clears the KV cache, decodes prompt and then n tokens
// greedily, one at a time. It returns the generated tokens and, for each,
// the logits it was chosen from.
func (c *Context) GreedyGenerate(prompt []int32, n int) ([]int32, [][]float32, error) {
	if len(prompt) == 0 {
		return nil, nil, errors.New("llamacpp: greedy generation needs a prompt")
	}
	if len(prompt)+n > c.NCtx() {
		return nil, nil, fmt.Errorf("llamacpp: %d prompt + %d generated tokens exceed the context of %d", len(prompt), n, c.NCtx())
	}
	c.ClearKV()
	pos := 0
	for len(prompt)-pos > c.nBatch {
		if err := c.DecodeLast(prompt[pos:pos+c.nBatch], pos); err != nil {
			return nil, nil, err
		}
		pos += c.nBatch
	}
	if err := c.DecodeLast(prompt[pos:], pos); err != nil {
		return nil, nil, err
	}
	last := len(prompt) - pos - 1
	pos = len(prompt)
	toks := make([]int32, 0, n)
	steps := make([][]float32, 0, n)
	for range n {
		lg := c.Logits(last)
		if lg == nil {
			return toks, steps, errors.New("llamacpp: llama.cpp returned no logits")
		}
		t := int32(Argmax(lg))
		toks = append(toks, t)
		steps = append(steps, lg)
		if len(toks) == n {
			break
		}
		if err := c.Decode([]int32{t}, pos); err != nil {
			return toks, steps, err
		}
		pos++
		last = 0
	}
	return toks, steps, nil
}
