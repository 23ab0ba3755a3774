package runtime

import "math"

// Processor changes the logits of a step before the token is chosen: a
// penalty, a bias, a grammar's mask. When a generation has any, its loop
// takes the path that shows it every step's logits on the host (one step
// a submission), so that the token it leads to is the one chosen; without
// any, decode runs in chains on the device.
type Processor interface {
	// Process changes logits, in place, for the token that follows hist
	// (every token of the sequence so far, prompt and generated). It must
	// not keep logits or hist.
	Process(logits []float32, hist []int32)
}

// Acceptor is a Processor that is told each token chosen (a grammar
// advancing its state).
type Acceptor interface {
	Accept(tok int32)
}

// Failer is a Processor that can fail (a grammar that no token can
// continue): the generation ends before the token chosen from the failed
// step, and Generate returns the error.
type Failer interface {
	Err() error
}

// Penalties are llama.cpp's repetition penalties over the last LastN
// tokens (64 when 0): a token that occurred has its logit divided by
// Repeat when positive, multiplied when negative (1: off), then lowered
// by Frequency times its count and by Presence once (OpenAI's penalties;
// 0: off). It keeps a count per token, sized at its first use.
type Penalties struct {
	Repeat, Frequency, Presence float32
	LastN                       int
	count                       []int32
}

// Process applies the penalties.
func (p *Penalties) Process(logits []float32, hist []int32) {
	n := p.LastN
	if n <= 0 {
		n = 64
	}
	recent := hist[max(0, len(hist)-n):]
	if len(p.count) < len(logits) {
		p.count = make([]int32, len(logits))
	}
	for _, t := range recent {
		if t >= 0 && int(t) < len(logits) {
			p.count[t]++
		}
	}
	for _, t := range recent {
		if t < 0 || int(t) >= len(logits) || p.count[t] == 0 {
			continue
		}
		c := p.count[t]
		p.count[t] = 0 // each distinct token once
		l := logits[t]
		if p.Repeat > 0 && p.Repeat != 1 {
			if l > 0 {
				l /= p.Repeat
			} else {
				l *= p.Repeat
			}
		}
		l -= float32(c)*p.Frequency + p.Presence
		logits[t] = l
	}
}

// LogitBias adds a bias to the logits of some tokens (OpenAI's
// logit_bias): -inf bans a token.
type LogitBias map[int32]float32

// Process adds the biases.
func (b LogitBias) Process(logits []float32, _ []int32) {
	for t, v := range b {
		if t >= 0 && int(t) < len(logits) {
			if math.IsInf(float64(v), -1) {
				logits[t] = v
				continue
			}
			logits[t] += v
		}
	}
}
