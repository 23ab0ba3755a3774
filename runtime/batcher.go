package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Batcher decodes many generations together, one session each: every Step
// is one Forward with a row for each generation that is decoding (its
// pending token) and the next prompt rows of those still prefilling, so
// that the weights are read once for all of them. Generations join with
// Add at any step and leave when they stop (continuous batching). It is
// the step a server's scheduler runs, and what akunu bench --batch times.
// A Batcher and its sessions are used from one goroutine.
type Batcher struct {
	m    *Model
	gens []*Gen
	b    Batch
	// owner is, per output row of the last Forward, its generation.
	owner []*Gen
	// PrefillRows bounds the prompt rows one step feeds, across
	// generations (0: the plan's prefill chunk); BusyPrefillRows bounds
	// them further while some generation is decoding, so that a long
	// prompt delays the others' next token by a short chunk, not by a
	// long one (0: PrefillRows).
	PrefillRows, BusyPrefillRows int
}

// Gen is one generation of a Batcher.
type Gen struct {
	ctx   context.Context
	s     *Session
	g     *generation
	feed  []int32 // prompt tokens not fed yet
	input int     // tokens of the input appended to the history
	t1    time.Time
	done  bool
	err   error
}

// Done reports whether the generation has stopped.
func (g *Gen) Done() bool { return g.done }

// Result is what it generated; complete once Done.
func (g *Gen) Result() *Result { return g.g.res }

// Err is the error that ended it, if one did.
func (g *Gen) Err() error { return g.err }

// NewBatcher starts a batcher over m's sessions.
func (m *Model) NewBatcher() *Batcher { return &Batcher{m: m} }

// Add starts a generation on session s (one the batcher does not run
// already): input is fed after any pending token, as Session.Generate
// would, from the next Step on. Cancelling ctx ends this generation alone
// (StopCancelled) at the next Step: a client that went away frees its
// session at once. A generation cancelled before its prompt was fed
// leaves the session as it was.
func (b *Batcher) Add(ctx context.Context, s *Session, input []int32, o GenerateOptions) (*Gen, error) {
	m := b.m
	if s.m != m {
		return nil, fmt.Errorf("runtime: a session of another model")
	}
	for _, g := range b.gens {
		if g.s == s {
			return nil, fmt.Errorf("runtime: session %d generates already", s.seq)
		}
	}
	feed, err := s.feedFor(input)
	if err != nil {
		return nil, err
	}
	res := &Result{Prompt: feed}
	g := &Gen{ctx: ctx, s: s, g: newGeneration(m, o, res, time.Now()), feed: feed, input: len(input)}
	s.hist = append(s.hist, input...)
	b.gens = append(b.gens, g)
	return g, nil
}

// Active is the number of generations still running.
func (b *Batcher) Active() int { return len(b.gens) }

// Run steps until every generation has stopped.
func (b *Batcher) Run(ctx context.Context) error {
	for len(b.gens) > 0 {
		if err := b.Step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Step runs one batch: a row for every decoding generation (up to the
// model's outputs a Forward gives; the rest wait a step), then prompt rows
// up to PrefillRows (BusyPrefillRows when a row decodes). A cancelled ctx stops every generation
// (StopCancelled).
func (b *Batcher) Step(ctx context.Context) error {
	m := b.m
	if ctx.Err() != nil {
		for _, g := range b.gens {
			b.cancel(g)
		}
		b.gens = b.gens[:0]
		return nil
	}
	for _, g := range b.gens {
		if g.ctx.Err() != nil {
			b.cancel(g)
		}
	}
	b.gens = slices.DeleteFunc(b.gens, func(g *Gen) bool { return g.done })
	b.b.Reset()
	b.owner = b.owner[:0]
	outs := 0
	// Drafts share what output rows the decoding generations' own rows
	// and a prompt's last row leave, so that no generation's drafts
	// crowd out another's next token or a prompt.
	decoding, speculating, prefilling := 0, 0, 0
	for _, g := range b.gens {
		switch {
		case len(g.feed) > 0:
			prefilling = 1
		case g.g.spec != nil:
			speculating++
			decoding++
		default:
			decoding++
		}
	}
	share := max(0, m.MaxOutputs()-decoding-prefilling) / max(1, speculating)
	for _, g := range b.gens {
		if len(g.feed) == 0 && outs < m.MaxOutputs() {
			s := g.s
			pos := s.Pos()
			b.b.Add(s.hist[pos], int32(pos), int32(s.seq), true)
			b.owner = append(b.owner, g)
			b.b.ReadLogits = b.b.ReadLogits || g.g.needLogits()
			outs++
			if sp := g.g.spec; sp != nil {
				// A speculating generation's drafts are rows of the
				// step too, every one out (spec.go verifies them).
				d, err := sp.draft(ctx, g.g, s.hist, sp.want(g.g, pos, min(share, m.MaxOutputs()-outs)))
				if err != nil {
					g.err = err
					d = nil
				}
				sp.cur, sp.pending, sp.pos = d, true, pos
				for i, t := range d {
					b.b.Add(t, int32(pos+1+i), int32(s.seq), true)
					b.owner = append(b.owner, g)
				}
				outs += len(d)
			}
		}
	}
	budget := b.PrefillRows
	if budget <= 0 {
		budget = max(int(m.Plan.Header.Target.Tuning.PrefillChunk), 1)
	}
	if outs > 0 && b.BusyPrefillRows > 0 {
		budget = min(budget, b.BusyPrefillRows)
	}
	for _, g := range b.gens {
		if len(g.feed) == 0 || budget == 0 || outs >= m.MaxOutputs() {
			continue
		}
		s := g.s
		k := min(len(g.feed), budget)
		pos := s.Pos()
		for i := range k {
			last := i == k-1 && k == len(g.feed)
			b.b.Add(g.feed[i], int32(pos+i), int32(s.seq), last)
			if last {
				b.owner = append(b.owner, g)
				b.b.ReadLogits = b.b.ReadLogits || g.g.needLogits()
				outs++
			}
		}
		g.feed = g.feed[k:]
		budget -= k
	}
	if b.b.Len() == 0 {
		return nil
	}
	if err := m.Forward(ctx, &b.b); err != nil {
		if ctx.Err() != nil {
			return b.Step(ctx) // cancels every generation
		}
		for _, g := range b.gens {
			g.err = err
			b.end(g, "")
		}
		b.gens = b.gens[:0]
		return err
	}
	for j := 0; j < len(b.owner); j++ {
		g := b.owner[j]
		s := g.s
		if sp := g.g.spec; sp != nil && sp.pending {
			sp.pending = false
			stop, done := sp.verify(g.g, s, j, sp.pos, sp.cur)
			m.Rewind(s.seq, len(s.hist)-1) // the rows of rejected drafts are forgotten
			j += len(sp.cur)
			if g.g.err != nil {
				g.err = g.g.err
			}
			if done || g.err != nil {
				b.end(g, stop)
			}
			continue
		}
		tok := m.OutputToken(j)
		if g.g.needLogits() {
			tok = g.g.choose(m.OutputLogits(j), s.Pos()-1, s.hist)
		}
		if len(g.g.res.Tokens) == 0 {
			g.g.res.PromptTime = time.Since(g.g.t0)
			g.t1 = time.Now()
		}
		if stop, done := s.accept(g.g, tok); done {
			if g.g.err != nil {
				g.err = g.g.err
			}
			b.end(g, stop)
		}
	}
	b.gens = slices.DeleteFunc(b.gens, func(g *Gen) bool { return g.done })
	return nil
}

// cancel ends a generation its context cancelled. One whose prompt was not
// all fed takes its input back out of the session, as Session.Generate
// does for a cancelled prompt.
func (b *Batcher) cancel(g *Gen) {
	if len(g.g.res.Tokens) == 0 {
		s := g.s
		s.hist = s.hist[:len(s.hist)-g.input]
		s.m.Rewind(s.seq, len(s.hist))
	}
	b.end(g, StopCancelled)
}

// end stops a generation.
func (b *Batcher) end(g *Gen, stop Stop) {
	if g.done {
		return
	}
	g.done = true
	if !g.t1.IsZero() {
		g.g.res.DecodeTime = time.Since(g.t1)
	}
	if stop != "" {
		g.g.finish(stop)
	}
}
