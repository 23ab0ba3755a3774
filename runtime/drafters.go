package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
	"github.com/akunu-dev/akunu/runtime/sampling"
)

// NGram drafts by prompt lookup: the longest suffix of the conversation,
// from MaxMatch tokens down to MinMatch, that occurred before, most recent
// occurrence first; the drafts are the tokens that followed it (and, for
// a match that runs into the suffix, the period it repeats). It costs
// a scan of the history and no model: text that repeats its prompt (a
// code edit, a summary quoting its source) drafts well, other text finds
// no match and decodes as without it. It holds no state.
type NGram struct {
	MinMatch, MaxMatch int // 0: 2 and 4
}

// Draft implements Drafter.
func (n *NGram) Draft(_ context.Context, hist []int32, most int, _ sampling.Params, out []int32) ([]int32, error) {
	lo, hi := n.MinMatch, n.MaxMatch
	if lo <= 0 {
		lo = 2
	}
	if hi <= 0 {
		hi = 4
	}
	hi = max(hi, lo)
	h := len(hist)
	for l := min(hi, h-1); l >= lo; l-- {
		key := hist[h-l:]
		for j := h - l - 1; j >= 0; j-- {
			if hist[j] != key[0] || !slices.Equal(hist[j:j+l], key) {
				continue
			}
			// The drafts continue the sequence from the match on: past
			// the history's end they continue into the drafts themselves,
			// so a loop (the match just before the suffix) drafts whole
			// periods, not one token.
			start, from := len(out), j+l
			for i := range most {
				if k := from + i; k < h {
					out = append(out, hist[k])
				} else {
					out = append(out, out[start+k-h])
				}
			}
			return out, nil
		}
	}
	return out, nil
}

// Q implements Drafter: a lookup's draft is a point mass.
func (n *NGram) Q(int) []float32 { return nil }

// ModelDrafter drafts with a smaller model of the same vocabulary, on a
// session of its own that follows the target's conversation: each Draft
// rewinds it to what it shares with the history (the target's rejections
// are the draft's too), feeds the rest and decodes the drafts (greedy: a
// chain on the device; sampled: a step at a time, each draft drawn from
// the draft model's distribution q, kept for verification).
type ModelDrafter struct {
	m     *Model
	s     *Session
	b     Batch
	q     []float32 // max drafts of the vocabulary
	smp   *sampling.Sampler
	nq    int
	most  int
	logit []float32
	// The shortlist (SetShortlist): the ids below vocab, the end-of-
	// generation tokens (eog, those at or past vocab) and every other
	// token of the conversation (extra, sorted); spans is that list as the
	// LM head takes it, ver its version, dirty until it is built again.
	vocab  int
	eog    []int32
	extra  []int32
	spans  []device.Span
	ver    uint64
	dirty  bool
	listed bool // the latest draft's LM head over the list
	self   bool // the draft model is the target: its heads stay whole
}

// NewModelDrafter checks that draft's vocabulary is target's (ErrDraftVocab
// otherwise) and opens a session on draft for drafts of at most most
// tokens. Close releases it.
func NewModelDrafter(target, draft *Model, most int) (*ModelDrafter, error) {
	if err := CheckDraftVocab(target, draft); err != nil {
		return nil, err
	}
	if len(draft.batch) == 0 {
		return nil, fmt.Errorf("runtime: the draft model's plan has no batch programs; recompile it with this akunuc: %w", ErrUnsupportedPlan)
	}
	s, err := draft.NewSession()
	if err != nil {
		return nil, fmt.Errorf("runtime: the draft model: %w", err)
	}
	most = max(1, most)
	n := draft.Ctx()
	return &ModelDrafter{m: draft, s: s, q: make([]float32, most*draft.vocab), smp: sampling.New(draft.vocab), most: most, self: draft == target,
		b: Batch{Tokens: make([]int32, 0, n), Pos: make([]int32, 0, n), Seq: make([]int32, 0, n), Out: make([]bool, 0, n)}}, nil
}

// SetShortlist has the draft model's LM head compute the logits of the
// token ids below n (a byte-pair vocabulary orders its ids by merge rank,
// commonest first), the end-of-generation tokens and every token the
// conversation holds, and no others (-inf): where the vocabulary is large
// the LM head is much of a small model's bytes (a quarter of the Qwen3-0.6B
// shape's), and the drafts are then the commonest tokens or ones the
// conversation has. Greedy output stays the target's; a target token
// outside the list is a rejected draft. n 0 (NewModelDrafter's), or n at
// least the vocabulary, computes every logit. It takes effect where the
// backend can restrict a command's rows (the CPU); elsewhere every logit
// is computed, and so where the draft model is the target itself, whose
// verify passes need every logit. ADR 0014 has what it measured.
func (d *ModelDrafter) SetShortlist(n int) {
	if n <= 0 || n >= d.m.vocab || d.self {
		n = 0
	}
	d.vocab, d.eog, d.extra, d.dirty = n, d.eog[:0], d.extra[:0], true
	if n == 0 {
		return
	}
	v := d.m.Tokenizer.Vocab()
	for _, t := range append([]int32{v.EOS, v.EOT, v.EOM}, v.EOG...) {
		if t >= int32(n) && t < int32(d.m.vocab) && !slices.Contains(d.eog, t) {
			d.eog = append(d.eog, t)
		}
	}
	slices.Sort(d.eog)
	// A conversation holds at most the context's tokens: with room for
	// that many, noting them never allocates.
	room := min(d.m.vocab-n, d.m.Ctx()) + len(d.eog)
	if cap(d.extra) < room {
		d.extra, d.spans = make([]int32, 0, room), make([]device.Span, 0, room+1)
	}
	d.extra = append(d.extra, d.eog...)
}

// Shortlisted reports whether the draft model's LM head computed a
// shortlist of the vocabulary (SetShortlist) in this drafter's latest
// draft.
func (d *ModelDrafter) Shortlisted() bool { return d.listed }

// note adds the conversation's tokens hist to the shortlist, from scratch
// when fresh (a new conversation), and sets the draft model's LM head to
// it.
func (d *ModelDrafter) note(hist []int32, fresh bool) error {
	if d.vocab == 0 {
		d.listed = false
		if d.m.logitRows.on && d.m.logitRows.owner == d {
			_, err := d.m.setLogitRows(nil, nil, 0)
			return err
		}
		return nil
	}
	if fresh && len(d.extra) > len(d.eog) {
		d.extra, d.dirty = append(d.extra[:0], d.eog...), true
	}
	for _, t := range hist {
		if t < int32(d.vocab) || t >= int32(d.m.vocab) {
			continue
		}
		if i, ok := slices.BinarySearch(d.extra, t); !ok {
			d.extra, d.dirty = slices.Insert(d.extra, i, t), true
		}
	}
	if d.dirty {
		d.spans = append(d.spans[:0], device.Span{Lo: 0, Hi: int32(d.vocab)})
		for _, t := range d.extra {
			if k := len(d.spans) - 1; d.spans[k].Hi == t {
				d.spans[k].Hi++
				continue
			}
			d.spans = append(d.spans, device.Span{Lo: t, Hi: t + 1})
		}
		d.ver++
		d.dirty = false
	}
	on, err := d.m.setLogitRows(d.spans, d, d.ver)
	d.listed = on
	return err
}

// Close gives the draft session's slot back, and the draft model's LM head
// its every row where this drafter restricted it.
func (d *ModelDrafter) Close() {
	if d.m.logitRows.owner == d {
		_, _ = d.m.setLogitRows(nil, nil, 0) // every row again: nothing to refuse
	}
	d.s.Close()
}

// CheckDraftVocab refuses a draft model whose vocabulary is not the
// target's: the same logits width, the same tokens in the same order and
// the same special ids (its drafts are the target's token ids).
func CheckDraftVocab(target, draft *Model) error {
	tv, dv := target.Tokenizer.Vocab(), draft.Tokenizer.Vocab()
	switch {
	case target.vocab != draft.vocab:
		return fmt.Errorf("runtime: draft model: %d logits a row, the target %d: %w", draft.vocab, target.vocab, ErrDraftVocab)
	case len(tv.Tokens) != len(dv.Tokens):
		return fmt.Errorf("runtime: draft model: %d tokens, the target %d: %w", len(dv.Tokens), len(tv.Tokens), ErrDraftVocab)
	}
	for i := range tv.Tokens {
		if tv.Tokens[i] != dv.Tokens[i] {
			return fmt.Errorf("runtime: draft model: token %d is %q, the target's %q: %w", i, dv.Tokens[i], tv.Tokens[i], ErrDraftVocab)
		}
	}
	specials := []struct {
		name string
		t, d int32
	}{{"bos", tv.BOS, dv.BOS}, {"eos", tv.EOS, dv.EOS}, {"eot", tv.EOT, dv.EOT}, {"eom", tv.EOM, dv.EOM}, {"pad", tv.PAD, dv.PAD}}
	for _, s := range specials {
		if s.t != s.d {
			return fmt.Errorf("runtime: draft model: %s token %d, the target's %d: %w", s.name, s.d, s.t, ErrDraftVocab)
		}
	}
	if !slices.Equal(tv.EOG, dv.EOG) {
		return fmt.Errorf("runtime: draft model: end-of-generation tokens %v, the target's %v: %w", dv.EOG, tv.EOG, ErrDraftVocab)
	}
	return nil
}

// Q implements Drafter.
func (d *ModelDrafter) Q(i int) []float32 {
	if i < 0 || i >= d.nq {
		return nil
	}
	return d.q[i*d.m.vocab : (i+1)*d.m.vocab]
}

// Draft implements Drafter.
func (d *ModelDrafter) Draft(ctx context.Context, hist []int32, most int, sp sampling.Params, out []int32) ([]int32, error) {
	m, s := d.m, d.s
	d.nq = 0
	h := len(hist)
	most = min(most, d.most, m.chainChunk(), m.Ctx()-h)
	if h == 0 || most <= 0 || h > cap(s.hist) {
		return out, nil
	}
	// Follow the target: keep what the session shares with hist.
	lcp := 0
	for lcp < min(len(s.hist), h) && s.hist[lcp] == hist[lcp] {
		lcp++
	}
	s.Rewind(lcp)
	s.hist = append(s.hist, hist[lcp:]...)
	if err := d.note(hist[lcp:], lcp == 0); err != nil {
		return out, err
	}
	greedy := sp.Temperature <= 0
	start := len(out)
	// Catch up: the rows the session has not seen but the last. Greedy
	// drafting feeds the last one in the same pass and takes its argmax as
	// the first draft, so that the weights are read once for both (after a
	// pass that accepted every draft, the rows are the last draft and the
	// target's own token: two rows where a catch-up and a chain step read
	// the weights twice).
	if pos := s.Pos(); pos < h-1 {
		b := &d.b
		b.Reset()
		for i := pos; i < h-1; i++ {
			b.Add(hist[i], int32(i), int32(s.seq), false)
		}
		if greedy {
			b.Add(hist[h-1], int32(h-1), int32(s.seq), true)
		}
		if err := m.Forward(ctx, b); err != nil {
			s.Rewind(pos)
			return out, err
		}
		if greedy {
			out = append(out, m.OutputToken(0))
		}
	}
	if greedy {
		// The rest: one chain, its argmaxes the drafts.
		first, n := hist[h-1], most
		if len(out) > start {
			first, n = out[start], most-1
		}
		if n > 0 {
			if err := m.writeToken(0, first); err != nil {
				return out[:start], err
			}
			if err := s.chain(m.decode, n); err != nil {
				return out[:start], err
			}
			if err := m.be.Read(s.rb[:4*n], m.io.tokens, 4); err != nil {
				return out[:start], err
			}
			for i := range n {
				out = append(out, int32(u32At(s.rb, i)))
			}
			m.kv.len[s.seq] += n
		}
	} else {
		if err := m.writeToken(0, hist[h-1]); err != nil {
			return out, err
		}
		logits := m.out.logits[:m.vocab]
		for i := range most {
			pos := h - 1 + i
			m.step[0] = plans.Step{Pos: uint32(pos), Batch: 1, Seq: uint32(s.seq)}
			if err := m.replay(m.decode); err != nil {
				return out[:start], err
			}
			m.kv.len[s.seq]++
			if err := m.be.Read(f32Bytes(logits), m.io.logits, 0); err != nil {
				return out[:start], fmt.Errorf("runtime: reading the draft's logits: %w", err)
			}
			prm := sp
			prm.Position = uint32(pos)
			q := d.q[i*m.vocab : (i+1)*m.vocab]
			d.smp.Probs(logits, prm, q)
			t := sampling.Pick(q, sampling.Uniform(sp.Seed, prm.Position, streamDraft))
			out = append(out, t)
			d.nq = i + 1
			if i+1 < most {
				if err := m.writeToken(0, t); err != nil {
					return out, err
				}
			}
		}
	}
	// The session holds hist and the drafts, the last one pending.
	s.hist = append(s.hist, out[start:]...)
	m.kv.len[s.seq] = len(s.hist) - 1
	return out, nil
}
