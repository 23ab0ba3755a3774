package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// Speculative decoding (docs/adr/0014-speculative.md): a Drafter proposes
// k tokens to follow the conversation; one Forward of k+1 rows (the pending
// token and the drafts, every row out) gives the target's choice after
// each; the longest prefix of drafts the target agrees with is accepted,
// then the target's own token after it. The weights are read once for up
// to k+1 tokens. Rows past the first disagreement leave KV entries past
// the slot's length, which the next pass overwrites before it reads them
// (the invariant of chain decode), so a rejected draft leaves no trace.

// ErrDraftVocab: a draft model whose vocabulary is not the target's.
var ErrDraftVocab = errors.New("the draft model's vocabulary differs from the target's")

// Drafter proposes tokens to follow a conversation. Its methods are called
// from the loop that drives the generation, one at a time.
type Drafter interface {
	// Draft appends to out up to max tokens that may follow hist (every
	// token so far, the pending one last) and returns it. sp are the
	// generation's sampling knobs (temperature 0: greedy), for a drafter
	// that samples its drafts. It must not keep hist or out.
	Draft(ctx context.Context, hist []int32, max int, sp sampling.Params, out []int32) ([]int32, error)
	// Q is the distribution (a vocabulary's floats) draft i of the last
	// Draft was sampled from, or nil when the draft is a point mass (an
	// n-gram lookup, greedy drafting): speculative sampling's q.
	Q(i int) []float32
}

// Speculation configures speculative decoding.
type Speculation struct {
	Drafter Drafter
	// Max bounds the drafts a pass (0: DefaultDraftMax), and so does the
	// plan: a pass is at most MaxOutputs rows. Min: fewer drafts than Min
	// are not worth a pass, and the step decodes one token instead (0: 1).
	Max, Min int
	// Fixed drafts Max every pass instead of adapting the length to the
	// acceptance rate (tests, and benchmarks of the drafter alone).
	Fixed bool
	// RowCost is what a verified row costs beside a decode step, for the
	// adaptive length (0: DefaultRowCost).
	RowCost float64
	// acceptRule replaces speculative sampling's rule (tests: a wrong
	// rule must fail the distribution test).
	acceptRule func(p, q float32, u float64) bool
}

// Defaults of Speculation.
const (
	DefaultDraftMax = 8
	DefaultRowCost  = 0.15
)

// SpecStats count a generation's speculation.
type SpecStats struct {
	Passes   int `json:"passes"`   // verify passes (each gives 1 + its accepted drafts)
	Drafted  int `json:"drafted"`  // drafts verified
	Accepted int `json:"accepted"` // drafts accepted
	Plain    int `json:"plain"`    // tokens decoded without drafts
	// Drafting and Verifying are the time a Session's passes spent
	// drafting and in their verify Forward and its acceptance (a
	// Batcher's steps serve several generations and leave them 0).
	Drafting  time.Duration `json:"drafting_ns"`
	Verifying time.Duration `json:"verifying_ns"`
}

// AcceptRate is the share of verified drafts accepted.
func (s SpecStats) AcceptRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
}

// TokensPerPass is the tokens a verify pass gave.
func (s SpecStats) TokensPerPass() float64 {
	if s.Passes == 0 {
		return 0
	}
	return float64(s.Passes+s.Accepted) / float64(s.Passes)
}

// Streams of sampling.Uniform that speculation draws from, apart from one
// another and from the Gumbel noise, so that a seed reproduces each.
const (
	streamAccept   = 1 // accept a draft with probability min(1, p/q)
	streamResidual = 2 // a rejected draft's replacement, from max(0, p−q)
	streamBonus    = 3 // the token after the last accepted draft, from p
	streamDraft    = 4 // a draft model's sampled drafts, from q
)

// specState is one generation's speculation: the drafter, the adaptive
// length, and memory for the drafts and the distributions.
type specState struct {
	o      Speculation
	ad     adapt
	drafts []int32
	batch  Batch
	p, r   []float32 // the target's distribution and the residual
	// acceptRule decides a draft with target probability p and draft
	// probability q at uniform u (the tests swap a wrong rule in to show
	// that the distribution test can fail).
	acceptRule func(p, q float32, u float64) bool
	// cur are the drafts of the pass in flight (a Batcher step), pending
	// whether its rows await verification, pos their first row's position.
	cur     []int32
	pending bool
	pos     int
}

func newSpecState(m *Model, o Speculation, greedy bool) *specState {
	if o.Max <= 0 {
		o.Max = DefaultDraftMax
	}
	o.Min = max(o.Min, 1)
	if o.RowCost <= 0 {
		o.RowCost = DefaultRowCost
	}
	n := max(o.Max, 1)
	sp := &specState{o: o, drafts: make([]int32, 0, n), p: make([]float32, m.vocab), r: make([]float32, m.vocab),
		acceptRule: acceptDraft}
	if o.acceptRule != nil {
		sp.acceptRule = o.acceptRule
	}
	// A greedy generation's tokens do not depend on where its passes
	// fall, so its costs may be timed; a sampled one's do (each pass
	// draws its own uniforms), so it keeps RowCost and a seed reproduces
	// its text.
	sp.ad = adapt{lo: o.Min, hi: o.Max, rowCost: o.RowCost, rate: 0.6, fixed: o.Fixed, timed: m != nil && greedy}
	sp.batch = Batch{Tokens: make([]int32, 0, n+1), Pos: make([]int32, 0, n+1), Seq: make([]int32, 0, n+1), Out: make([]bool, 0, n+1)}
	return sp
}

// acceptDraft is speculative sampling's rule: accept with probability
// min(1, p/q).
func acceptDraft(p, q float32, u float64) bool {
	if !(q > 0) {
		return p > 0
	}
	return u*float64(q) < float64(p)
}

// want is the drafts to ask for at the slot's position pos, with room
// more output rows: the adaptive length, bounded by the context (every
// row inside it), the token limit (a pass gives up to k+1 tokens) and
// the room; 0 when fewer than Min would be asked.
func (sp *specState) want(g *generation, pos, room int) int {
	k := min(sp.ad.next(), sp.o.Max, g.m.Ctx()-pos-1, room)
	if g.o.MaxTokens > 0 {
		k = min(k, g.o.MaxTokens-len(g.res.Tokens)-1)
	}
	if k < sp.o.Min {
		return 0
	}
	return k
}

// draft asks the drafter for up to k drafts after hist; fewer than Min,
// or none, is nil. Drafts outside the vocabulary end the list (a drafter
// is not trusted with the target's rows).
func (sp *specState) draft(ctx context.Context, g *generation, hist []int32, k int) ([]int32, error) {
	if k <= 0 {
		return nil, nil
	}
	d, err := sp.o.Drafter.Draft(ctx, hist, k, g.sp, sp.drafts[:0])
	if err != nil {
		return nil, fmt.Errorf("runtime: drafting: %w", err)
	}
	d = d[:min(len(d), k)]
	for i, t := range d {
		if t < 0 || int(t) >= g.m.vocab {
			d = d[:i]
			break
		}
	}
	if len(d) < sp.o.Min {
		return nil, nil
	}
	return d, nil
}

// verify accepts the tokens of a pass whose outputs j0, j0+1, … are the
// rows of the pending token (at position pos) and of drafts: for row i,
// the target's token after it (greedy: its argmax, after the processors;
// sampled: draft i kept with probability min(1, p/q), else a token from
// max(0, p−q)); draft i is accepted when the target's token is it, and
// the pass ends at the first that is not, with the target's token. Each
// token goes through the generation's accept, so stops, the limit and
// the processors' state behave as without speculation. The caller rewinds
// the slot to the history it then holds.
func (sp *specState) verify(g *generation, s *Session, j0, pos int, drafts []int32) (Stop, bool) {
	m := g.m
	k := len(drafts)
	if k > 0 {
		g.res.Spec.Passes++
		g.res.Spec.Drafted += k
	} else {
		g.res.Spec.Plain++
		sp.ad.idle++
	}
	acc := 0
	for i := 0; i <= k; i++ {
		d := int32(-1)
		if i < k {
			d = drafts[i]
		}
		var tok int32
		if g.needLogits() {
			logits := m.OutputLogits(j0 + i)
			g.prepare(logits, s.hist)
			if g.greedy {
				tok = sampling.Argmax(logits)
			} else {
				var q []float32
				if d >= 0 {
					q = sp.o.Drafter.Q(i)
				}
				tok = sp.sample(g, logits, pos+i, d, q)
			}
			tok = g.chosen(logits, tok)
		} else {
			tok = m.OutputToken(j0 + i)
		}
		ok := d >= 0 && tok == d
		if ok {
			acc++
			g.res.Spec.Accepted++
		}
		stop, done := s.accept(g, tok)
		if done || !ok {
			if k > 0 {
				sp.ad.update(k, acc)
			}
			return stop, done
		}
	}
	return "", false // unreachable: the last row is never a draft
}

// sample is the target's token after the row at pos with (processed)
// logits, given draft d (−1: none) drawn from q (nil: a point mass on d):
// speculative sampling, whose tokens are distributed as the target's
// (Leviathan et al. 2023; Chen et al. 2023).
func (sp *specState) sample(g *generation, logits []float32, pos int, d int32, q []float32) int32 {
	prm := g.sp
	prm.Position = uint32(pos)
	p := sp.p
	g.smp.Probs(logits, prm, p)
	if d < 0 {
		return sampling.Pick(p, sampling.Uniform(prm.Seed, prm.Position, streamBonus))
	}
	qd := float32(1)
	if q != nil {
		qd = q[d]
	}
	if sp.acceptRule(p[d], qd, sampling.Uniform(prm.Seed, prm.Position, streamAccept)) {
		return d
	}
	r := sp.r
	var z float64
	if q == nil {
		copy(r, p)
		r[d] = 0
		z = 1 - float64(p[d])
	} else {
		for i := range r {
			r[i] = max(0, p[i]-q[i])
			z += float64(r[i])
		}
	}
	if !(z > 1e-12) { // p ≈ q: nothing to correct; draw from p
		r = p
	}
	return sampling.Pick(r, sampling.Uniform(prm.Seed, prm.Position, streamResidual))
}

// decodeSpec is the session's speculative loop: each step drafts, and
// verifies the drafts in one Forward, or decodes without drafts (a chain
// of tokens while the adaptive length is 0, as plain decoding would).
func (s *Session) decodeSpec(ctx context.Context, g *generation) (Stop, error) {
	m := s.m
	sp := g.spec
	if len(m.batch) == 0 {
		return "", fmt.Errorf("runtime: speculative decoding needs the plan's batch programs; recompile it with this akunuc: %w", ErrUnsupportedPlan)
	}
	for {
		if ctx.Err() != nil {
			return StopCancelled, nil
		}
		pos := s.Pos()
		t0 := time.Now() // a pass's time includes its drafting
		k := sp.want(g, pos, m.MaxOutputs()-1)
		drafts, err := sp.draft(ctx, g, s.hist, k)
		if err != nil {
			return "", err
		}
		if len(drafts) == 0 {
			if k == 0 && !g.needLogits() && !s.serial {
				// Not drafting: plain decode's own loop, up to the next probe.
				n0 := len(g.res.Tokens)
				stop, done, err := s.plainRun(ctx, g, sp.ad.plainRun())
				if err != nil || done {
					return stop, err
				}
				sp.ad.timePlain(time.Since(t0), len(g.res.Tokens)-n0)
				continue
			}
			stop, done, err := s.plainSteps(g, 1)
			if err != nil || done {
				return stop, err
			}
			sp.ad.timePlain(time.Since(t0), 1)
			continue
		}
		t1 := time.Now()
		g.res.Spec.Drafting += t1.Sub(t0)
		b := &sp.batch
		b.Reset()
		b.Add(s.hist[pos], int32(pos), int32(s.seq), true)
		for i, d := range drafts {
			b.Add(d, int32(pos+1+i), int32(s.seq), true)
		}
		b.ReadLogits = g.needLogits()
		if err := m.Forward(ctx, b); err != nil {
			m.Rewind(s.seq, pos)
			if ctx.Err() != nil {
				return StopCancelled, nil
			}
			return "", err
		}
		stop, done := sp.verify(g, s, 0, pos, drafts)
		m.Rewind(s.seq, len(s.hist)-1) // the rows of rejected drafts are forgotten
		g.res.Spec.Verifying += time.Since(t1)
		if done {
			return stop, nil
		}
		sp.ad.timePass(time.Since(t0), len(drafts))
	}
}

// plainRun decodes up to n tokens as plain decoding does (overlapped
// chains on the device), by running its loop with the token limit moved
// n tokens ahead; done is false when it stopped at that limit alone.
func (s *Session) plainRun(ctx context.Context, g *generation, n int) (Stop, bool, error) {
	limit, n0 := g.o.MaxTokens, len(g.res.Tokens)
	g.o.MaxTokens = n0 + n
	if limit > 0 {
		g.o.MaxTokens = min(g.o.MaxTokens, limit)
	}
	stop, err := s.decodeOverlapped(ctx, g)
	g.o.MaxTokens = limit
	made := len(g.res.Tokens) - n0
	g.res.Spec.Plain += made
	g.spec.ad.idle += made
	if err != nil {
		return "", true, err
	}
	if stop == StopLimit && (limit <= 0 || len(g.res.Tokens) < limit) {
		return "", false, nil
	}
	return stop, true, nil
}

// plainSteps decodes n tokens with the decode program, without drafts: a
// chain of argmaxes on the device (n > 1 only when the token is the
// argmax), or one step whose token is chosen on the host by the same rule
// as a verify pass's last row.
func (s *Session) plainSteps(g *generation, n int) (Stop, bool, error) {
	m := s.m
	pos := s.Pos()
	if err := m.writeToken(0, s.hist[pos]); err != nil {
		return "", false, err
	}
	if g.needLogits() {
		m.step[0] = plans.Step{Pos: uint32(pos), Batch: 1, Seq: uint32(s.seq)}
		if err := m.replay(m.decode); err != nil {
			return "", false, err
		}
		m.kv.len[s.seq]++
		m.out.n, m.out.read = 1, true
		if err := m.be.Read(f32Bytes(m.out.logits[:m.vocab]), m.io.logits, 0); err != nil {
			return "", false, fmt.Errorf("runtime: reading the logits: %w", err)
		}
		stop, done := g.spec.verify(g, s, 0, pos, nil)
		return stop, done, nil
	}
	if err := s.chain(m.decode, n); err != nil {
		return "", false, err
	}
	if err := m.be.Read(s.rb[:4*n], m.io.tokens, 4); err != nil {
		return "", false, err
	}
	for i := range n {
		m.kv.len[s.seq]++
		m.out.n, m.out.read = 1, false
		m.out.ids[0] = int32(u32At(s.rb, i))
		if stop, done := g.spec.verify(g, s, 0, pos+i, nil); done {
			return stop, true, nil
		}
	}
	return "", false, nil
}

// adapt chooses the draft length from the recent acceptance rate and
// what passes cost, measured: the time of a pass against a plain token's.
type adapt struct {
	lo, hi int
	// rowCost is what a draft row adds to a pass, in plain tokens' time:
	// the default until both have been timed, then measured. passCost is
	// what a pass costs beyond a plain token whatever its rows (a GPU's
	// batch program and host round trip: about two decode steps on an
	// H100), 0 until passes of different lengths have been timed.
	rowCost  float64
	passCost float64
	fit      passFit // the timed passes, for passCost and rowCost
	rate     float64 // the estimated probability that a draft is accepted
	fixed    bool
	timed    bool    // measure rowCost (else it stays as given)
	probing  bool    // the pass in flight is a probe
	idle     int     // tokens decoded without drafting since the last probe
	gap      int     // tokens between probes: probeEvery, doubled by each probe that fails
	plainT   float64 // seconds a plain token takes (0: not timed yet)
	passes   int     // passes timed
}

// probeEvery is how many undrafted tokens pass before a short probe pass
// measures the rate again: text that stops drafting well costs a probe in
// this many tokens, text that starts to draft well is found within them.
// Each probe that is rejected doubles the gap, up to maxProbeGap, so that
// text that never drafts well pays almost nothing.
const (
	probeEvery  = 16
	maxProbeGap = 256
)

// rateWeight is the weight of one observed draft in the rate (an
// exponential average over the last ten or so, so that a drafter that
// stops agreeing is given up within a few passes: from the starting 0.6,
// seven rejections end drafting at the default cost); costWeight that of
// one timing in the costs.
const (
	rateWeight = 0.2
	costWeight = 0.1
)

// next is the draft length to ask for now.
func (a *adapt) next() int {
	if a.fixed {
		return a.hi
	}
	if k := a.lenAt(a.rate); k > 0 {
		a.idle = 0
		return k
	}
	if a.idle >= max(a.gap, probeEvery) {
		a.idle = 0
		a.probing = true
		return a.lo
	}
	return 0
}

// lenAt is draftLen at acceptance rate with a's bounds and costs.
func (a *adapt) lenAt(rate float64) int { return draftLen(rate, a.lo, a.hi, a.rowCost, a.passCost) }

// plainRun is how many tokens to decode without drafts before the next
// probe (at least 1).
func (a *adapt) plainRun() int { return max(1, max(a.gap, probeEvery)-a.idle) }

// update takes a pass's outcome: accepted of drafted drafts kept (each
// kept draft is an observed success; the first rejected one a failure).
// While drafting pays, a stop will probe again soon (probeEvery). A probe
// doubles the gap when it keeps nothing, or when drafting could not pay
// even if every draft were kept (rows that cost a plain token or more:
// stories260K's on the dev box cost 1.6–2.0, and its probes, each keeping
// a draft or two of its prompt's text, came every 16–32 tokens); one that
// keeps a draft where a higher rate would pay leaves the gap as it was.
func (a *adapt) update(drafted, accepted int) {
	probing := a.probing
	a.probing = false
	for range accepted {
		a.rate += rateWeight * (1 - a.rate)
	}
	if accepted < drafted {
		a.rate -= rateWeight * a.rate
	}
	switch {
	case a.lenAt(a.rate) > 0:
		a.gap = probeEvery
	case probing && (accepted == 0 || a.lenAt(1) == 0):
		a.gap = min(2*max(a.gap, probeEvery), maxProbeGap)
	}
}

// timePlain takes n plain tokens' time.
func (a *adapt) timePlain(d time.Duration, n int) {
	if !a.timed {
		return
	}
	t := d.Seconds() / float64(max(n, 1))
	if a.plainT == 0 {
		a.plainT = t
	} else {
		a.plainT += costWeight * (t - a.plainT)
	}
}

// timePass takes the time of a pass of k drafts: beside a plain token's,
// what the pass added, y. The first passes' costs are averaged (the first
// replaces the prior), later ones weighted by costWeight: from the prior
// alone the estimate took a dozen passes to reach a small model's cost
// (stories260K on the dev box: rows at 1.1–1.4 plain tokens, estimated
// 0.15 → 0.29 → 0.39 …), and the generation drafted, and lost, all the
// while. Once the passes timed have had different lengths (their k's
// weighted variance at least minKSpread), y = passCost + rowCost·k is
// fitted to them (least squares); before that, and while the lengths stay
// the same, a pass's y less passCost is put on its rows. A cost that is
// all rows (the CPU's) fits passCost ≈ 0 and leaves the estimate as it
// was; one that is mostly the pass's own (a GPU's: a verify pass of 2
// rows cost 2.3 decode steps on an H100, of 8 rows 5) no longer reads
// as dear rows that keep the drafts short (0.99× at full acceptance on
// a copy task, against 1.58× where the lengths happened to vary).
func (a *adapt) timePass(d time.Duration, k int) {
	if !a.timed || a.plainT == 0 || k == 0 {
		return
	}
	a.passes++
	w := max(costWeight, 1/float64(a.passes))
	y, fk := d.Seconds()/a.plainT-1, float64(k)
	f := &a.fit
	f.k += w * (fk - f.k)
	f.kk += w * (fk*fk - f.kk)
	f.y += w * (y - f.y)
	f.ky += w * (fk*y - f.ky)
	if v := f.kk - f.k*f.k; v >= minKSpread {
		r := min(max((f.ky-f.k*f.y)/v, 0.01), 10)
		a.rowCost, a.passCost = r, min(max(f.y-r*f.k, 0), 10)
		return
	}
	c := (y - a.passCost) / fk
	a.rowCost += w * (min(max(c, 0.01), 10) - a.rowCost)
}

// passFit holds the timed passes' weighted averages of k, k², y (what a
// pass cost beyond a plain token, in plain tokens) and k·y: the least
// squares fit of y = passCost + rowCost·k.
type passFit struct{ k, kk, y, ky float64 }

// minKSpread is the variance of the timed passes' lengths from which
// timePass fits a pass's own cost apart from its rows'.
const minKSpread = 0.2

// draftLen is the draft length k ∈ {0} ∪ [lo, hi] that gives the most
// tokens per unit of cost when each draft is accepted with probability
// rate, given the previous ones were: a pass of k drafts gives
// E(k) = 1 + rate + … + rate^k tokens and costs 1 + passCost + rowCost·k
// decode steps. k = 0 (no pass, a plain step) gives 1 for 1.
func draftLen(rate float64, lo, hi int, rowCost, passCost float64) int {
	lo = max(lo, 1)
	best, bestV := 0, 1.0
	e, pw := 1.0, 1.0
	for k := 1; k <= hi; k++ {
		pw *= rate
		e += pw
		if k < lo {
			continue
		}
		if v := e / (1 + passCost + rowCost*float64(k)); v > bestV+1e-12 {
			best, bestV = k, v
		}
	}
	return best
}
