package runtime

import (
	"math"
	"strings"
	"time"

	"github.com/akunu-dev/akunu/runtime/sampling"
)

// Stop says why a generation ended.
type Stop string

const (
	StopEOS       Stop = "eos"       // the model produced an end-of-generation token
	StopLimit     Stop = "limit"     // MaxTokens were generated
	StopContext   Stop = "context"   // the context is full: no position is left for the next token
	StopCaller    Stop = "stopped"   // OnToken or OnText asked to stop
	StopString    Stop = "stop"      // the text reached one of the stop strings
	StopCancelled Stop = "cancelled" // the context was cancelled
	StopError     Stop = "error"     // a processor failed (a grammar no token can continue): Generate returns its error
)

// GenerateOptions configure one generation.
type GenerateOptions struct {
	// MaxTokens bounds the tokens generated (≤ 0: until EOS or the context
	// is full).
	MaxTokens int
	Sampling  Sampling
	// Processors change every step's logits before the token is chosen,
	// in order (penalties, biases, a grammar's mask).
	Processors []Processor
	// Stop are stop strings: the generation ends when its text reaches one
	// (Result.Text stops before it), and OnText never sees one, nor the
	// part of one that later tokens complete.
	Stop []string
	// IgnoreEOS generates through end-of-generation tokens (benchmarks).
	IgnoreEOS bool
	// TopLogits > 0 records, for every generated token, the TopLogits best
	// (id, logit) pairs of the distribution it came from (before the
	// processors). It needs the logits of every step on the host, so
	// decode runs one token per submission.
	TopLogits int
	// Logits, when set, sees the logits of every generated token's step,
	// before the processors (the slice is reused: copy what you keep).
	// Like TopLogits it makes decode run one token per submission.
	Logits func(step int, logits []float32)
	// OnToken, when set, sees each generated token as it is accepted;
	// returning false stops the generation (StopCaller).
	OnToken func(id int32) bool
	// OnText, when set, is given the generated text as it comes, held back
	// only where it could become a stop string; returning false stops.
	OnText func(text string) bool
	// LogProbs records, for every generated token, its log-probability and
	// the TopLogProbs most likely tokens' (OpenAI's logprobs), in the
	// distribution the token was chosen from: after the processors,
	// before the temperature and the top-k/p cuts. It needs every step's
	// logits on the host.
	LogProbs    bool
	TopLogProbs int
	// Latency bounds, while a caller streams (OnToken or OnText), how long
	// one chain of decode steps may take, so that tokens arrive steadily
	// rather than a chain at a time: 0 means DefaultLatency.
	Latency time.Duration
	// Spec, when set with a Drafter, decodes speculatively: drafts
	// checked in one batched pass (spec.go). The tokens are those of plain
	// decoding (greedy: the same; sampled: the same distribution).
	Spec *Speculation
}

// streaming reports whether a caller sees tokens as they come.
func (o *GenerateOptions) streaming() bool { return o.OnToken != nil || o.OnText != nil }

// TokenLogProb is a token and its log-probability.
type TokenLogProb struct {
	ID      int32
	LogProb float32
}

// StepLogProbs are a generated token's log-probability and the most
// likely tokens' of its step (GenerateOptions.LogProbs).
type StepLogProbs struct {
	TokenLogProb
	Top []TokenLogProb
}

// TokenLogit is one (id, logit) pair.
type TokenLogit struct {
	ID    int32
	Logit float32
}

// Result is what a generation did.
type Result struct {
	Prompt []int32 // the tokens fed before generating (a pending token of the last turn first)
	Tokens []int32 // generated, the stop token included when it is EOS
	// Text is the generated text: without end-of-generation tokens, cut
	// before a stop string.
	Text      string
	TopLogits [][]TokenLogit
	LogProbs  []StepLogProbs
	Stop      Stop
	// StopString is the stop string that ended it (StopString).
	StopString string
	// Seed is the sampling seed used (the one drawn, when unseeded).
	Seed uint32
	// PromptTime covers prefill and the choice of the first token;
	// DecodeTime the rest. FirstToken is from the call to the first token.
	PromptTime, DecodeTime, FirstToken time.Duration
	// Spec counts the speculative passes (GenerateOptions.Spec).
	Spec SpecStats
}

// generation is one generation's state, whichever loop drives it (a
// session's chains or steps, or a Batcher's batches): its options, its
// sampler and processors, what it produced and the text it streams.
type generation struct {
	m      *Model
	o      GenerateOptions
	res    *Result
	sp     sampling.Params
	greedy bool
	procs  []Processor
	smp    *sampling.Sampler
	text   *textStream // nil unless OnText or Stop
	t0     time.Time
	// host: every step's logits must reach the host (processors,
	// observers); the device's chains cannot serve it.
	host bool
	// spec is the speculative decoding state (GenerateOptions.Spec).
	spec *specState
	// err is a processor's failure, which ended the generation.
	err error
}

func newGeneration(m *Model, o GenerateOptions, res *Result, t0 time.Time) *generation {
	g := &generation{m: m, o: o, res: res, t0: t0, procs: o.Processors}
	smp := o.Sampling
	if smp.Unseeded && !smp.Greedy() {
		smp.Seed = NewSeed()
	}
	res.Seed = smp.Seed
	g.sp, g.greedy = smp.params(uint32(m.vocab)), smp.Greedy()
	if smp.penalized() {
		g.procs = append(append([]Processor(nil), g.procs...), &Penalties{Repeat: smp.RepeatPenalty, LastN: smp.RepeatLastN})
	}
	g.host = len(g.procs) > 0 || o.TopLogits > 0 || o.Logits != nil || o.LogProbs
	if !g.greedy || g.host {
		g.smp = sampling.New(m.vocab)
	}
	if o.OnText != nil || len(o.Stop) > 0 {
		g.text = newTextStream(m.Tokenizer, o.Stop, o.OnText)
	}
	if o.Spec != nil && o.Spec.Drafter != nil {
		g.spec = newSpecState(m, *o.Spec, g.greedy)
	}
	if o.MaxTokens > 0 { // no growth, hence no allocation, per token
		res.Tokens = make([]int32, 0, min(o.MaxTokens, m.Ctx()+1))
	}
	return g
}

// needLogits reports whether choosing the next token needs its logits on
// the host (else the device's argmax is the token).
func (g *generation) needLogits() bool { return g.host || !g.greedy }

// choose picks the token that follows hist from its logits (changed in
// place by the processors): pos is the position of the token whose
// logits these are, the noise stream's counter.
func (g *generation) choose(logits []float32, pos int, hist []int32) int32 {
	g.prepare(logits, hist)
	sp := g.sp
	sp.Position = uint32(pos)
	return g.chosen(logits, g.smp.Draw(logits, sp))
}

// prepare shows a step's logits to the observers (TopLogits, Logits) and
// runs the processors over them, in place: what every host choice of a
// token does first, speculative verification's included.
func (g *generation) prepare(logits []float32, hist []int32) {
	if g.o.TopLogits > 0 {
		g.res.TopLogits = append(g.res.TopLogits, topLogits(logits, g.o.TopLogits))
	}
	if g.o.Logits != nil {
		g.o.Logits(len(g.res.Tokens), logits)
	}
	for _, p := range g.procs {
		p.Process(logits, hist)
	}
}

// chosen records tok's log-probabilities (LogProbs) in the processed
// logits it was chosen from, and returns it.
func (g *generation) chosen(logits []float32, tok int32) int32 {
	if g.o.LogProbs {
		g.res.LogProbs = append(g.res.LogProbs, logProbs(logits, tok, g.o.TopLogProbs))
	}
	return tok
}

// logProbs is tok's log-probability under softmax(logits) and the top n
// tokens' (best first), the normalizer summed in float64.
func logProbs(logits []float32, tok int32, n int) StepLogProbs {
	m := math.Inf(-1)
	for _, l := range logits {
		m = max(m, float64(l))
	}
	var z float64
	for _, l := range logits {
		if !math.IsInf(float64(l), -1) && l == l {
			z += math.Exp(float64(l) - m)
		}
	}
	lse := m + math.Log(z)
	lp := func(l float32) float32 { return float32(float64(l) - lse) }
	out := StepLogProbs{TokenLogProb: TokenLogProb{ID: tok, LogProb: lp(logits[tok])}}
	if n > 0 {
		for _, t := range topLogits(logits, n) {
			out.Top = append(out.Top, TokenLogProb{ID: t.ID, LogProb: lp(t.Logit)})
		}
	}
	return out
}

// failed is the first failure a processor reports (Failer), if any.
func (g *generation) failed() error {
	for _, p := range g.procs {
		if f, ok := p.(Failer); ok {
			if err := f.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// accept records a generated token and says whether the generation ends.
// ctxLeft reports whether a position is left for the token after it.
func (g *generation) accept(tok int32, ctxLeft bool) (Stop, bool) {
	res := g.res
	res.Tokens = append(res.Tokens, tok)
	if len(res.Tokens) == 1 {
		res.FirstToken = time.Since(g.t0)
	}
	for _, p := range g.procs {
		if a, ok := p.(Acceptor); ok {
			a.Accept(tok)
		}
	}
	eos := !g.o.IgnoreEOS && g.m.Tokenizer.IsEOG(tok)
	if g.text != nil && !eos {
		if s, caller := g.text.add(tok); s != "" {
			res.StopString = s
			return StopString, true
		} else if caller {
			return StopCaller, true
		}
	}
	switch {
	case eos:
		return StopEOS, true
	case g.o.OnToken != nil && !g.o.OnToken(tok):
		return StopCaller, true
	case g.o.MaxTokens > 0 && len(res.Tokens) >= g.o.MaxTokens:
		return StopLimit, true
	case !ctxLeft:
		return StopContext, true
	}
	return "", false
}

// finish completes the result: the text (what was streamed, or the
// tokens' text).
func (g *generation) finish(stop Stop) {
	res := g.res
	res.Stop = stop
	if g.text != nil {
		if stop != StopString {
			g.text.flush()
		}
		res.Text = g.text.out.String()
		return
	}
	toks := res.Tokens
	if len(toks) > 0 && g.m.Tokenizer.IsEOG(toks[len(toks)-1]) {
		toks = toks[:len(toks)-1]
	}
	// As a stream would give it: the text continues the prompt's.
	d := g.m.Tokenizer.NewDecoder(false).Continuing()
	var b strings.Builder
	n := 0
	for _, t := range toks {
		n += len(g.m.Tokenizer.TokenToPiece(t, false))
	}
	b.Grow(n + 8) // one allocation, however long the text
	for _, t := range toks {
		b.WriteString(d.Add(t))
	}
	b.WriteString(d.Flush())
	res.Text = b.String()
}

// topLogits returns the k best (id, logit) pairs, best first (ties by id).
func topLogits(l []float32, k int) []TokenLogit {
	k = min(k, len(l))
	out := make([]TokenLogit, 0, k+1)
	for i, v := range l {
		if len(out) == k && !(v > out[k-1].Logit) {
			continue
		}
		j := len(out)
		if j < k {
			out = append(out, TokenLogit{})
		} else {
			j = k - 1
		}
		for j > 0 && v > out[j-1].Logit {
			out[j] = out[j-1]
			j--
		}
		out[j] = TokenLogit{int32(i), v}
	}
	return out
}
