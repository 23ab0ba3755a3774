package runtime

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/akunu-dev/akunu/runtime/sampling"
)

// Sampling are the knobs of a generation, as llama.cpp names them.
type Sampling struct {
	// Temperature ≤ 0 is greedy (argmax); so is TopK 1.
	Temperature float32
	TopK        int     // keep the k most likely; 0 = all
	TopP        float32 // nucleus; 0 or 1 = all
	MinP        float32 // drop tokens below MinP × the top one's probability; 0 = none
	// RepeatPenalty > 0 and ≠ 1 divides the positive logits (multiplies
	// the negative ones) of the last RepeatLastN tokens of the session, as
	// llama.cpp does: shorthand for a Penalties processor.
	RepeatPenalty float32
	RepeatLastN   int // 0 = 64
	Seed          uint32
	// Unseeded draws a fresh seed for a sampled generation (Result.Seed
	// reports it; Seed then reproduces the text).
	Unseeded bool
}

// Greedy reports whether the knobs pick the argmax.
func (s Sampling) Greedy() bool {
	return !(s.Temperature > 0) || s.TopK == 1
}

func (s Sampling) penalized() bool { return s.RepeatPenalty > 0 && s.RepeatPenalty != 1 }

// params is the sampler's parameter struct for s (the gumbel_topk
// kernel's).
func (s Sampling) params(vocab uint32) sampling.Params {
	p := sampling.Params{Vocab: vocab, TopK: uint32(max(s.TopK, 0)), Seed: s.Seed, Temperature: s.Temperature, TopP: s.TopP, MinP: s.MinP}
	if !(p.TopP > 0) || p.TopP > 1 {
		p.TopP = 1
	}
	if s.Greedy() {
		p.Temperature = 0
	}
	return p
}

// NewSeed is a fresh random seed.
func NewSeed() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on the platforms Go supports
	return binary.LittleEndian.Uint32(b[:])
}
