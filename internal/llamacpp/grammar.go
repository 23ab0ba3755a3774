package llamacpp

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// grammarFuncs are llama.cpp's grammar sampler calls, bound on first use
// (only the grammar benchmark's peer needs them).
type grammarFuncs struct {
	initGrammar func(vocab uintptr, src, root string) uintptr
	apply       func(smpl uintptr, cur *tokenDataArray)
	accept      func(smpl uintptr, tok int32)
	free        func(smpl uintptr)
}

var (
	grammarOnce sync.Once
	grammarFns  grammarFuncs
	grammarErr  error
)

// TokenData mirrors include/llama.h's llama_token_data.
type TokenData struct {
	ID    int32
	Logit float32
	P     float32
}

// tokenDataArray mirrors llama_token_data_array.
type tokenDataArray struct {
	data     *TokenData
	size     uintptr
	selected int64
	sorted   bool
}

// GrammarSampler is llama.cpp's grammar sampler (llama_sampler_init_grammar)
// over a model's vocabulary. Not safe for concurrent use.
type GrammarSampler struct {
	m   *Model
	ptr uintptr
	arr tokenDataArray
}

// NewGrammarSampler parses gbnf (start rule root) with llama.cpp's grammar
// code for m's vocabulary; an error when llama.cpp refuses the grammar.
func (m *Model) NewGrammarSampler(gbnf, root string) (*GrammarSampler, error) {
	grammarOnce.Do(func() {
		// The library is loaded already: opening it again gives its handle.
		path, err := findLib(m.lib.Dir, "llama")
		if err != nil {
			grammarErr = err
			return
		}
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			grammarErr = fmt.Errorf("llamacpp: dlopen %s: %w", path, err)
			return
		}
		var b binder
		b.fn(h, "llama_sampler_init_grammar", &grammarFns.initGrammar)
		b.fn(h, "llama_sampler_apply", &grammarFns.apply)
		b.fn(h, "llama_sampler_accept", &grammarFns.accept)
		b.fn(h, "llama_sampler_free", &grammarFns.free)
		grammarErr = b.err
	})
	if grammarErr != nil {
		return nil, grammarErr
	}
	if m.ptr == 0 {
		return nil, errors.New("llamacpp: grammar sampler of a closed model")
	}
	p := grammarFns.initGrammar(m.vocab, gbnf, root)
	if p == 0 {
		return nil, fmt.Errorf("llamacpp: llama.cpp refused the grammar (AKUNU_LLAMA_LOG=1 shows why)")
	}
	return &GrammarSampler{m: m, ptr: p}, nil
}

// Apply sets the logit of every candidate the grammar refuses now to -inf,
// in place.
func (s *GrammarSampler) Apply(cands []TokenData) error {
	if len(cands) == 0 {
		return nil
	}
	s.arr = tokenDataArray{data: &cands[0], size: uintptr(len(cands)), selected: -1}
	grammarFns.apply(s.ptr, &s.arr)
	runtime.KeepAlive(cands)
	if unsafe.Pointer(s.arr.data) != unsafe.Pointer(&cands[0]) {
		return errors.New("llamacpp: the grammar sampler replaced the candidate array (it is expected to filter in place)")
	}
	return nil
}

// Allowed counts the candidates Apply left with a finite logit.
func Allowed(cands []TokenData) int {
	n := 0
	for _, c := range cands {
		if !math.IsInf(float64(c.Logit), -1) {
			n++
		}
	}
	return n
}

// Accept advances the grammar past tok (which must be allowed: llama.cpp
// aborts the process on a token its grammar refuses).
func (s *GrammarSampler) Accept(tok int32) { grammarFns.accept(s.ptr, tok) }

// Close frees the sampler.
func (s *GrammarSampler) Close() {
	if s.ptr != 0 {
		grammarFns.free(s.ptr)
		s.ptr = 0
	}
}
