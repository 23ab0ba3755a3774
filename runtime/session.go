package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// Session is one conversation on one sequence slot of a Model's KV cache:
// the tokens so far, of which the slot holds the first SeqLen. The last
// generated token is not in the cache until the next turn feeds it, so a
// turn continues exactly where the last stopped. Sessions of one Model are
// used from one goroutine at a time (the engine submits one program at a
// time); Close gives the slot back.
type Session struct {
	m   *Model
	seq int
	// hist is every token of the conversation; the KV slot holds
	// hist[:Pos()].
	hist   []int32
	steps  []plans.Step
	closed bool
	// serial makes chain decode wait for each chain before encoding the
	// next (decodeSerial): the reference the tests hold the overlapped
	// loop to.
	serial bool
	// rb is host memory for a chain's tokens.
	rb []byte
}

// NewSession starts an empty conversation on a free sequence slot; it
// fails with ErrNoSeq when every slot is taken.
func (m *Model) NewSession() (*Session, error) {
	if err := m.generates(); err != nil {
		return nil, err
	}
	seq, err := m.acquire()
	if err != nil {
		return nil, err
	}
	return &Session{m: m, seq: seq, hist: make([]int32, 0, m.Ctx()+1), steps: make([]plans.Step, m.chainChunk()),
		rb: make([]byte, 4*m.chainChunk())}, nil
}

// Close gives the session's slot back. The session must not be used
// afterwards.
func (s *Session) Close() {
	if !s.closed {
		s.closed = true
		s.m.release(s.seq)
	}
}

// Seq is the session's sequence slot.
func (s *Session) Seq() int { return s.seq }

// Pos is the number of positions the KV slot holds.
func (s *Session) Pos() int { return s.m.kv.len[s.seq] }

// History is every token of the conversation (do not modify).
func (s *Session) History() []int32 { return s.hist }

// Reset forgets the conversation.
func (s *Session) Reset() { s.hist = s.hist[:0]; s.m.kv.len[s.seq] = 0 }

// Rewind keeps the first n tokens of the conversation and forgets the rest.
// The KV slot keeps what it held of those n (positions past them are
// overwritten before they are read again), so a chat that re-renders its
// whole history feeds only what differs from the last turn.
func (s *Session) Rewind(n int) {
	n = max(0, min(n, len(s.hist)))
	s.hist = s.hist[:n]
	s.m.Rewind(s.seq, n)
}

// CopyFrom makes the session's conversation the first n tokens of src's,
// copying their KV entries on the device instead of computing them again
// (a conversation that shares a prefix with another: a system prompt, the
// earlier turns of a chat). n is at most src.Pos().
func (s *Session) CopyFrom(src *Session, n int) error {
	if src.m != s.m {
		return fmt.Errorf("runtime: CopyFrom a session of another model")
	}
	if err := s.m.CopyPrefix(s.seq, src.seq, n); err != nil {
		return err
	}
	s.hist = append(s.hist[:0], src.hist[:n]...)
	return nil
}

// Generate feeds input (after any token the last turn left pending) and
// generates until a stop condition. A cancelled ctx ends it with
// StopCancelled and what was generated so far (a cancelled prompt leaves
// the conversation as it was).
func (s *Session) Generate(ctx context.Context, input []int32, o GenerateOptions) (*Result, error) {
	m := s.m
	feed, err := s.feedFor(input)
	if err != nil {
		return nil, err
	}
	res := &Result{Prompt: feed}
	t0 := time.Now()
	s.hist = append(s.hist, input...)
	g := newGeneration(m, o, res, t0)
	if err := s.prefill(ctx, feed, g.needLogits()); err != nil {
		s.hist = s.hist[:len(s.hist)-len(input)]
		m.Rewind(s.seq, len(s.hist))
		if ctx.Err() != nil {
			g.finish(StopCancelled)
			return res, nil
		}
		return nil, err
	}
	// The first token: the prefill's argmax, or chosen on the host.
	first := m.OutputToken(0)
	if g.needLogits() {
		first = g.choose(m.OutputLogits(0), s.Pos()-1, s.hist)
	}
	res.PromptTime = time.Since(t0)
	t1 := time.Now()
	defer func() { res.DecodeTime = time.Since(t1) }()
	stop, done := s.accept(g, first)
	if !done {
		var err error
		switch {
		case g.spec != nil:
			stop, err = s.decodeSpec(ctx, g)
		case g.host:
			stop, err = s.decodeHost(ctx, g)
		case s.serial:
			stop, err = s.decodeSerial(ctx, g)
		default:
			stop, err = s.decodeOverlapped(ctx, g)
		}
		if err != nil {
			return nil, err
		}
	}
	g.finish(stop)
	if g.err != nil {
		return res, g.err
	}
	return res, nil
}

// feedFor is what a turn with input feeds: a token the last turn left
// pending, then input; refused when the session is closed, a token lies
// outside the vocabulary or the context cannot hold them.
func (s *Session) feedFor(input []int32) ([]int32, error) {
	m := s.m
	if s.closed {
		return nil, fmt.Errorf("runtime: a closed session cannot generate")
	}
	pos := s.Pos()
	feed := append(slices.Clone(s.hist[pos:]), input...)
	if len(feed) == 0 {
		return nil, fmt.Errorf("runtime: nothing to feed: an empty prompt and no pending token")
	}
	for _, t := range feed {
		if t < 0 || int(t) >= m.vocab {
			return nil, fmt.Errorf("runtime: token %d outside the vocabulary of %d", t, m.vocab)
		}
	}
	if pos+len(feed) > m.Ctx() || len(s.hist)+len(input) > cap(s.hist) {
		return nil, fmt.Errorf("runtime: %d tokens at position %d exceed the plan's context of %d: %w", len(feed), pos, m.Ctx(), ErrContextFull)
	}
	return feed, nil
}

// prefill feeds tokens from the slot's position on, in batches, asking the
// last row's outputs (its logits too when the first token is chosen on the
// host).
func (s *Session) prefill(ctx context.Context, tokens []int32, logits bool) error {
	b := &s.m.pre
	b.Reset()
	pos := s.Pos()
	for i, t := range tokens {
		b.Add(t, int32(pos+i), int32(s.seq), i == len(tokens)-1)
	}
	b.ReadLogits = logits
	return s.m.Forward(ctx, b)
}

// accept takes a generated token into the conversation; a processor's
// failure ends the generation without it.
func (s *Session) accept(g *generation, tok int32) (Stop, bool) {
	if g.host {
		if g.err = g.failed(); g.err != nil {
			return StopError, true
		}
	}
	s.hist = append(s.hist, tok)
	return g.accept(tok, len(s.hist) < cap(s.hist))
}

// decodeHost runs one decode step per submission and chooses each token on
// the host from its logits, after the processors: the path for a
// generation whose every step must be seen.
func (s *Session) decodeHost(ctx context.Context, g *generation) (Stop, error) {
	m := s.m
	logits := m.out.logits[:m.vocab]
	for {
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		pos := s.Pos()
		if err := m.writeToken(0, s.hist[pos]); err != nil {
			return "", err
		}
		m.step[0] = plans.Step{Pos: uint32(pos), Batch: 1, Seq: uint32(s.seq)}
		if err := m.replay(m.decode); err != nil {
			return "", err
		}
		m.kv.len[s.seq]++
		if err := m.be.Read(f32Bytes(logits), m.io.logits, 0); err != nil {
			return "", fmt.Errorf("runtime: reading the logits: %w", err)
		}
		if stop, done := s.accept(g, g.choose(logits, pos, s.hist)); done {
			return stop, nil
		}
	}
}

// writeToken writes token id into token slot i.
func (m *Model) writeToken(i int, id int32) error {
	st := m.stage[:4]
	st[0], st[1], st[2], st[3] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
	return m.be.Write(m.io.tokens, 4*i, st)
}

// chainProgram is the program a chain runs: decode (argmax), or sampled
// with the generation's knobs written into its gumbel_topk command.
func (s *Session) chainProgram(g *generation) (*program, error) {
	if g.greedy {
		return s.m.decode, nil
	}
	if s.m.sampled == nil {
		return nil, fmt.Errorf("runtime: sampling needs the plan's %s program, which it lacks: %w", plans.ProgSampled, ErrUnsupportedPlan)
	}
	s.setSampling(g.sp)
	return s.m.sampled, nil
}

// chainLen is the length of the next chain at position at, with issued
// tokens generated or in flight: ChainChunk, cut to the context, to
// MaxTokens and to what the caller's latency allows, so that no chain, in
// flight or not, computes a position past the context or a token past the
// limit. 0: none is needed.
func (s *Session) chainLen(at, issued, streamCap int, o *GenerateOptions) int {
	n := min(len(s.steps), s.m.Ctx()-at, streamCap)
	if o.MaxTokens > 0 {
		n = min(n, o.MaxTokens-issued)
	}
	return max(n, 0)
}

// DefaultLatency is how long one chain may take while a caller streams
// (GenerateOptions.Latency 0): short enough that a reader sees text flow,
// long enough that a GPU's chains still amortize their submission.
const DefaultLatency = 20 * time.Millisecond

// pacer bounds chains while a caller streams: from the time each token has
// taken, a chain as long as the latency allows (one token to start with,
// and never fewer).
type pacer struct {
	budget  time.Duration
	perTok  time.Duration
	last    time.Time
	enabled bool
}

func newPacer(o *GenerateOptions) pacer {
	p := pacer{enabled: o.streaming(), budget: o.Latency, last: time.Now()}
	if p.budget <= 0 {
		p.budget = DefaultLatency
	}
	return p
}

// limit is the longest chain now, at most most.
func (p *pacer) limit(most int) int {
	if !p.enabled {
		return most
	}
	if p.perTok <= 0 {
		return 1
	}
	return max(1, min(most, int(p.budget/p.perTok)))
}

// read notes that n tokens arrived.
func (p *pacer) read(n int) {
	now := time.Now()
	if n > 0 {
		d := now.Sub(p.last) / time.Duration(n)
		if p.perTok == 0 {
			p.perTok = d
		} else {
			p.perTok = (3*p.perTok + d) / 4
		}
	}
	p.last = now
}

// decodeSerial runs one chain per submission and waits for it before the
// next: the host writes slot 0 and reads slots 1..n. Session.serial forces
// it, as the reference the overlapped loop is tested against.
func (s *Session) decodeSerial(ctx context.Context, g *generation) (Stop, error) {
	m := s.m
	prog, err := s.chainProgram(g)
	if err != nil {
		return "", err
	}
	pc := newPacer(&g.o)
	for {
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		pos := s.Pos()
		n := s.chainLen(pos, len(g.res.Tokens), pc.limit(len(s.steps)), &g.o)
		if n == 0 { // unreachable: accept stops at the limit and the context first
			return StopContext, nil
		}
		if err := m.writeToken(0, s.hist[pos]); err != nil {
			return "", err
		}
		if err := s.chain(prog, n); err != nil {
			return "", err
		}
		if err := m.be.Read(s.rb[:4*n], m.io.tokens, 4); err != nil {
			return "", err
		}
		pc.read(n)
		for i := range n {
			m.kv.len[s.seq]++ // the token of slot i is now in the cache
			if stop, done := s.accept(g, int32(u32At(s.rb, i))); done {
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
// OnToken, a stop string) waits for chain k+1 and drops it and the rest of
// chain k. Their KV entries lie at positions ≥ SeqLen, which every later
// step writes before it reads them (a step at position p writes p, then
// attends to ≤ p), so the slot still holds exactly hist[:SeqLen]. Slot 0
// then holds a dropped token; the next turn writes the slots it reads.
func (s *Session) decodeOverlapped(ctx context.Context, g *generation) (Stop, error) {
	m := s.m
	prog, err := s.chainProgram(g)
	if err != nil {
		return "", err
	}
	pos := s.Pos()
	if err := m.writeToken(0, s.hist[pos]); err != nil { // nothing is in flight: the host may write it
		return "", err
	}
	pc := newPacer(&g.o)
	var sizes [2]int // chain c's length, at c%2
	at, issued := pos, len(g.res.Tokens)
	committed, read := 0, 0 // chains committed, and read back
	for {
		for committed-read < 2 && ctx.Err() == nil {
			n := s.chainLen(at, issued, pc.limit(len(s.steps)), &g.o)
			if n == 0 {
				break
			}
			s.launch(prog, at, n, committed%2)
			sizes[committed%2] = n
			committed++
			at, issued = at+n, issued+n
		}
		if committed == read {
			if ctx.Err() != nil {
				return StopCancelled, nil
			}
			return StopContext, nil // unreachable: accept stops at the limit and the context first
		}
		if err := m.explain(m.be.WaitOldest()); err != nil {
			m.be.Wait()
			return "", fmt.Errorf("runtime: %s at position %d: %w", prog.p.Name, s.Pos(), err)
		}
		c := read % 2
		read++
		if err := m.be.Read(s.rb[:4*sizes[c]], m.readback[c], 0); err != nil {
			return "", err
		}
		pc.read(sizes[c])
		for i := range sizes[c] {
			m.kv.len[s.seq]++ // the token before it is now in the cache
			if stop, done := s.accept(g, int32(u32At(s.rb, i))); done {
				if committed > read { // a chain in flight: wait for it and drop it
					if err := m.wait(); err != nil {
						return "", fmt.Errorf("runtime: %s at position %d (dropped): %w", prog.p.Name, s.Pos(), err)
					}
				}
				return stop, nil
			}
		}
	}
}

// launch encodes and commits prog for n tokens from position at, then the
// chain's hand-off copies (decodeOverlapped), without waiting.
func (s *Session) launch(b *program, at, n, rb int) {
	m := s.m
	for i := range n {
		s.steps[i] = plans.Step{Index: uint32(i), Pos: uint32(at + i), Batch: 1, Seq: uint32(s.seq)}
	}
	m.be.Encode(b.h, s.steps[:n])
	m.be.Copy(m.readback[rb], 0, m.io.tokens, 4, 4*n)
	m.be.Copy(m.io.tokens, 0, m.io.tokens, 4*n, 4)
	m.be.Commit()
}

// chain replays prog for n tokens in one submission and waits for it:
// token i at position Pos()+i reads slot i, its argmax writes slot i+1. It
// does not move the position and allocates nothing.
func (s *Session) chain(b *program, n int) error {
	pos := s.Pos()
	for i := range n {
		s.steps[i] = plans.Step{Index: uint32(i), Pos: uint32(pos + i), Batch: 1, Seq: uint32(s.seq)}
	}
	s.m.be.Encode(b.h, s.steps[:n])
	s.m.be.Commit()
	if err := s.m.wait(); err != nil {
		return fmt.Errorf("runtime: %s at position %d: %w", b.p.Name, pos, err)
	}
	return nil
}

// setSampling writes the knobs into the sampled program's gumbel command
// (every field but the patched position), unless they are there already.
func (s *Session) setSampling(sp sampling.Params) {
	m := s.m
	if sp == m.sampling && m.samplingSet {
		return
	}
	m.sampling, m.samplingSet = sp, true
	params := kernels.Encode(sp)
	for at := 0; at+4 <= len(params); at += 4 {
		if at == 12 { // position: patched per step
			continue
		}
		m.be.SetParam(m.sampled.h, m.sampleCmd, at, 4, uint64(u32At(params, at/4)))
	}
}
