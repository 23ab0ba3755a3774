package runtime

import (
	"fmt"
	"slices"
	"time"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
)

// Stop says why a generation ended.
type Stop string

const (
	StopEOS     Stop = "eos"     // the model produced an end-of-generation token
	StopLimit   Stop = "limit"   // MaxTokens were generated
	StopContext Stop = "context" // the context is full: no position is left for the next token
	StopCaller  Stop = "stopped" // the OnToken callback asked to stop
)

// GenerateOptions configure one Generate call.
type GenerateOptions struct {
	// MaxTokens bounds the tokens generated (≤ 0: until EOS or the context
	// is full).
	MaxTokens int
	Sampling  Sampling
	// IgnoreEOS generates through end-of-generation tokens (benchmarks).
	IgnoreEOS bool
	// TopLogits > 0 records, for every generated token, the TopLogits best
	// (id, logit) pairs of the distribution it came from. It needs the
	// logits of every step on the host, so decode runs one token per
	// submission.
	TopLogits int
	// Logits, when set, sees the logits of every generated token's step
	// (the slice is reused: copy what you keep). Like TopLogits it makes
	// decode run one token per submission.
	Logits func(step int, logits []float32)
	// OnToken, when set, sees each generated token as it is accepted;
	// returning false stops the generation (StopCaller).
	OnToken func(id int32) bool
}

// TokenLogit is one (id, logit) pair.
type TokenLogit struct {
	ID    int32
	Logit float32
}

// Result is what Generate did.
type Result struct {
	Prompt    []int32 // the tokens fed before generating (a pending token of the last turn first)
	Tokens    []int32 // generated, the stop token included when it is EOS
	TopLogits [][]TokenLogit
	Stop      Stop
	// PromptTime covers prefill and the choice of the first token;
	// DecodeTime the rest.
	PromptTime, DecodeTime time.Duration
}

// Session is one conversation over a Model's KV cache: the tokens so far
// and how many of them the cache holds. The last generated token is not in
// the cache until the next turn feeds it, so a turn continues exactly where
// the last stopped. A Model serves one Session at a time.
type Session struct {
	m *Model
	// hist is every token of the conversation; the KV cache holds
	// hist[:pos].
	hist  []int32
	pos   int
	steps []plans.Step
	smp   *sampler
	seen  []bool
	// sampling is the sampled program's knobs as last written.
	sampling kernels.SamplingParams
	params   []byte
	// serial makes chain decode wait for each chain before encoding the
	// next (decodeSerial): the reference the tests hold the overlapped
	// loop to.
	serial bool
}

// NewSession starts an empty conversation (the KV cache is reused as it
// is: positions past pos are never read).
func (m *Model) NewSession() *Session {
	v := int(m.Plan.Model.HParams.Vocab)
	return &Session{
		m:     m,
		hist:  make([]int32, 0, m.Ctx()+1),
		steps: make([]plans.Step, m.chainChunk()),
		smp:   newSampler(v),
		seen:  make([]bool, v),
	}
}

// Pos is the number of positions the KV cache holds.
func (s *Session) Pos() int { return s.pos }

// History is every token of the conversation (do not modify).
func (s *Session) History() []int32 { return s.hist }

// Reset forgets the conversation.
func (s *Session) Reset() { s.hist, s.pos = s.hist[:0], 0 }

// Rewind keeps the first n tokens of the conversation and forgets the rest.
// The KV cache keeps what it held of those n (positions past them are
// overwritten before they are read again), so a chat that re-renders its
// whole history feeds only what differs from the last turn.
func (s *Session) Rewind(n int) {
	n = max(0, min(n, len(s.hist)))
	s.hist = s.hist[:n]
	s.pos = min(s.pos, n)
}

// Generate feeds input (after any token the last turn left pending) and
// generates until a stop condition.
func (s *Session) Generate(input []int32, o GenerateOptions) (*Result, error) {
	m := s.m
	feed := append(slices.Clone(s.hist[s.pos:]), input...)
	res := &Result{Prompt: feed}
	if len(feed) == 0 {
		return nil, fmt.Errorf("runtime: nothing to feed: an empty prompt and no pending token")
	}
	vocab := len(m.logits)
	for _, t := range feed {
		if t < 0 || int(t) >= vocab {
			return nil, fmt.Errorf("runtime: token %d outside the vocabulary of %d", t, vocab)
		}
	}
	if s.pos+len(feed) > m.Ctx() {
		return nil, fmt.Errorf("runtime: %d tokens at position %d exceed the plan's context of %d: %w", len(feed), s.pos, m.Ctx(), ErrContextFull)
	}
	if len(s.hist)+len(input) > cap(s.hist) {
		return nil, fmt.Errorf("runtime: the conversation exceeds the context of %d: %w", m.Ctx(), ErrContextFull)
	}
	t0 := time.Now()
	s.hist = append(s.hist, input...)
	if err := s.prefill(feed); err != nil {
		return nil, err
	}
	smp := o.Sampling
	sp := smp.params(uint32(vocab))
	perStep := o.TopLogits > 0 || o.Logits != nil || smp.penalized()
	see := func() {
		if o.TopLogits > 0 {
			res.TopLogits = append(res.TopLogits, topLogits(m.logits, o.TopLogits))
		}
		if o.Logits != nil {
			o.Logits(len(res.Tokens), m.logits)
		}
	}
	// The first token: the prefill's argmax (slot 0), or a host draw.
	first := int32(m.tokens[0])
	see()
	if !smp.Greedy() || smp.penalized() {
		first = s.hostSample(sp, smp, uint32(s.pos-1))
	}
	if o.MaxTokens > 0 { // no growth, hence no allocation, per token
		res.Tokens = make([]int32, 0, min(o.MaxTokens, m.Ctx()-s.pos+1))
	}
	res.PromptTime = time.Since(t0)
	t1 := time.Now()
	defer func() { res.DecodeTime = time.Since(t1) }()

	if !smp.Greedy() && !smp.penalized() && m.sampled != nil {
		s.setSampling(sp)
	}
	prog := m.decode
	if !smp.Greedy() && !smp.penalized() {
		if m.sampled == nil {
			return nil, fmt.Errorf("runtime: sampling needs the plan's %s program, which it lacks: %w", plans.ProgSampled, ErrUnsupportedPlan)
		}
		prog = m.sampled
	}

	if stop, done := s.accept(first, res, o); done {
		res.Stop = stop
		return res, nil
	}
	if s.pos >= m.Ctx() {
		res.Stop = StopContext
		return res, nil
	}
	var err error
	switch {
	case perStep:
		res.Stop, err = s.decodeSerial(prog, res, o, func() int32 {
			see()
			if smp.penalized() {
				return s.hostSample(sp, smp, uint32(s.pos))
			}
			return int32(m.tokens[1])
		})
	case s.serial:
		res.Stop, err = s.decodeSerial(prog, res, o, nil)
	default:
		res.Stop, err = s.decodeOverlapped(prog, res, o)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// chainLen is the length of the next chain at position at, with issued
// tokens generated or in flight: ChainChunk, cut to the context and to
// MaxTokens, so that no chain, in flight or not, computes a position past
// the context or a token past the limit. 0: none is needed.
func (s *Session) chainLen(at, issued int, o GenerateOptions) int {
	n := min(len(s.steps), s.m.Ctx()-at)
	if o.MaxTokens > 0 {
		n = min(n, o.MaxTokens-issued)
	}
	return max(n, 0)
}

// decodeSerial runs one chain per submission and waits for it before the
// next: the host writes slot 0 and reads slots 1..n. With step set (the
// per-step paths: TopLogits, Logits, repetition penalty), chains are one
// token long and step returns the token of each, having seen its logits.
// Session.serial forces it for chains too, as the reference the
// overlapped loop is tested against.
func (s *Session) decodeSerial(prog *bound, res *Result, o GenerateOptions, step func() int32) (Stop, error) {
	m := s.m
	for {
		n := s.chainLen(s.pos, len(res.Tokens), o)
		if step != nil {
			n = min(n, 1)
		}
		if n == 0 { // unreachable: accept stops at the limit and the context first
			return StopContext, nil
		}
		m.tokens[0] = uint32(s.hist[s.pos])
		if err := s.chain(prog, n); err != nil {
			return "", err
		}
		for i := 1; i <= n; i++ {
			tok := int32(m.tokens[i])
			if step != nil {
				tok = step()
			}
			s.pos++ // the token of slot i-1 is now in the cache
			if stop, done := s.accept(tok, res, o); done {
				return stop, nil
			}
		}
	}
}

// decodeOverlapped keeps one chain in flight while the host reads the
// last: chain k+1 is encoded and committed before the host waits for
// chain k. That needs the hand-off on the device: each chain ends with two
// copies, its tokens (slots 1..n) into readback[k%2] and its last token
// (slot n) into slot 0, where chain k+1 reads it. The host reads chain k
// from readback[k%2] while chain k+1 writes the other one, and encodes
// chain k+2 (into readback[k%2] again) only after that.
//
// Positions and tokens are planned ahead (at, issued) but committed to
// the session only as the host accepts them: a stop inside chain k (EOS,
// OnToken) waits for chain k+1 and drops it and the rest of chain k. Their
// KV entries lie at positions ≥ pos, which every later step writes before
// it reads them (a step at position p writes p, then attends to ≤ p), so
// the cache still holds exactly hist[:pos]. Slot 0 then holds a dropped
// token; the next turn's prefill overwrites it.
func (s *Session) decodeOverlapped(prog *bound, res *Result, o GenerateOptions) (Stop, error) {
	m := s.m
	m.tokens[0] = uint32(s.hist[s.pos]) // nothing is in flight: the host may write it
	var sizes [2]int                    // chain c's length, at c%2
	at, issued := s.pos, len(res.Tokens)
	committed, read := 0, 0 // chains committed, and read back
	for {
		for committed-read < 2 {
			n := s.chainLen(at, issued, o)
			if n == 0 {
				break
			}
			s.launch(prog, at, n, committed%2)
			sizes[committed%2] = n
			committed++
			at, issued = at+n, issued+n
		}
		if committed == read { // unreachable: accept stops at the limit and the context first
			return StopContext, nil
		}
		if err := m.be.WaitOldest(); err != nil {
			m.be.Wait()
			return "", fmt.Errorf("runtime: %s at position %d: %w", prog.prog.Name, s.pos, err)
		}
		c := read % 2
		read++
		for _, id := range m.readback[c][:sizes[c]] {
			s.pos++ // the token before it is now in the cache
			if stop, done := s.accept(int32(id), res, o); done {
				if committed > read { // a chain in flight: wait for it and drop it
					if err := m.be.Wait(); err != nil {
						return "", fmt.Errorf("runtime: %s at position %d (dropped): %w", prog.prog.Name, s.pos, err)
					}
				}
				return stop, nil
			}
		}
	}
}

// launch encodes and commits prog for n tokens from position at, then the
// chain's hand-off copies (decodeOverlapped), without waiting.
func (s *Session) launch(b *bound, at, n, rb int) {
	m := s.m
	for i := range n {
		s.steps[i] = plans.Step{Index: uint32(i), Pos: uint32(at + i), Batch: 1}
	}
	m.be.Encode(b.cmds, s.steps[:n])
	m.be.EncodeCopy(m.readbackBytes[rb], 0, m.tokenBytes, 4, 4*n)
	m.be.EncodeCopy(m.tokenBytes, 0, m.tokenBytes, 4*n, 4)
	m.be.Commit()
}

// accept appends a generated token and says whether generation ends.
func (s *Session) accept(tok int32, res *Result, o GenerateOptions) (Stop, bool) {
	s.hist = append(s.hist, tok)
	res.Tokens = append(res.Tokens, tok)
	switch {
	case !o.IgnoreEOS && s.m.Tokenizer.IsEOG(tok):
		return StopEOS, true
	case o.OnToken != nil && !o.OnToken(tok):
		return StopCaller, true
	case o.MaxTokens > 0 && len(res.Tokens) >= o.MaxTokens:
		return StopLimit, true
	case len(s.hist) >= cap(s.hist):
		return StopContext, true
	}
	return "", false
}

// hostSample draws from io.logits on the host, after the repetition
// penalty, as the sampled program would at position pos.
func (s *Session) hostSample(sp kernels.SamplingParams, smp Sampling, pos uint32) int32 {
	l := s.m.logits
	if smp.penalized() {
		n := smp.RepeatLastN
		if n <= 0 {
			n = 64
		}
		penalize(l, s.hist[max(0, len(s.hist)-n):], smp.RepeatPenalty, s.seen)
	}
	return s.smp.sample(l, sp, pos)
}

// setSampling writes the knobs into the sampled program's gumbel command
// (every field but the patched position).
func (s *Session) setSampling(sp kernels.SamplingParams) {
	if sp == s.sampling && s.params != nil {
		return
	}
	s.sampling = sp
	s.params = kernels.Encode(sp)
	for at := 0; at+4 <= len(s.params); at += 4 {
		if at == 12 { // position: patched per step
			continue
		}
		v := uint64(s.params[at]) | uint64(s.params[at+1])<<8 | uint64(s.params[at+2])<<16 | uint64(s.params[at+3])<<24
		s.m.be.SetParam(s.m.sample, at, 4, v)
	}
}

// prefill runs tokens through the prefill programs in chunks from s.pos,
// leaving the last token's logits in io.logits and its argmax in slot 0.
func (s *Session) prefill(tokens []int32) error {
	m := s.m
	for len(tokens) > 0 {
		b := m.prefillFor(len(tokens))
		if b == nil { // no prefill program: one decode step per token
			m.tokens[0] = uint32(tokens[0])
			s.steps[0] = plans.Step{Index: 0, Pos: uint32(s.pos), Batch: 1}
			m.be.Encode(m.decode.cmds, s.steps[:1])
			m.be.Commit()
			if err := m.be.Wait(); err != nil {
				return fmt.Errorf("runtime: %s at position %d: %w", plans.ProgDecode, s.pos, err)
			}
			m.tokens[0] = m.tokens[1]
			s.pos++
			tokens = tokens[1:]
			continue
		}
		n := min(len(tokens), int(b.prog.Batch))
		for i, t := range tokens[:n] {
			m.tokens[i] = uint32(t)
		}
		s.steps[0] = plans.Step{Index: 0, Pos: uint32(s.pos), Batch: uint32(n)}
		m.be.Encode(b.cmds, s.steps[:1])
		m.be.Commit()
		if err := m.be.Wait(); err != nil {
			return fmt.Errorf("runtime: %s at position %d: %w", b.prog.Name, s.pos, err)
		}
		s.pos += n
		tokens = tokens[n:]
	}
	return nil
}

// chain replays prog for n tokens in one submission and waits for it:
// token i at position pos+i reads slot i, its argmax writes slot i+1. It
// does not move pos and allocates nothing.
func (s *Session) chain(b *bound, n int) error {
	for i := range n {
		s.steps[i] = plans.Step{Index: uint32(i), Pos: uint32(s.pos + i), Batch: 1}
	}
	s.m.be.Encode(b.cmds, s.steps[:n])
	s.m.be.Commit()
	if err := s.m.be.Wait(); err != nil {
		return fmt.Errorf("runtime: %s at position %d: %w", b.prog.Name, s.pos, err)
	}
	return nil
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
