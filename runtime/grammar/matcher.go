package grammar

import (
	"fmt"
	"slices"
	"sync"
)

// Index pairs a Machine with a Vocab and caches, per state, the mask of
// tokens it allows. Matchers of the same grammar and vocabulary share one
// Index; it is safe for concurrent use.
type Index struct {
	m *Machine
	v *Vocab

	mu     sync.Mutex
	masks  map[int32][]uint32
	locals map[int32]*localMask // by local state (Machine.local)
	// localSeen: local states met before (a real state's mask computed).
	localSeen map[int32]bool
	bytes     int
	limit     int
	stateD    []int32 // per trie depth: the state reached (a mask walk's stack)
}

// NewIndex pairs m and v; the mask cache holds up to 64 MiB.
func NewIndex(m *Machine, v *Vocab) *Index {
	return &Index{m: m, v: v, masks: map[int32][]uint32{}, locals: map[int32]*localMask{}, localSeen: map[int32]bool{}, limit: 64 << 20, stateD: make([]int32, v.maxD+1)}
}

// Words is the length in uint32 words of a mask over the vocabulary.
func (x *Index) Words() int { return x.v.words }

// maxRoots is the most roots a local mask may have to be used: past it,
// re-walking the roots from the real state costs about a whole walk.
const maxRoots = 256

// localMask is what a local state allows whatever lies below its cut:
// yes, the tokens allowed for sure, and roots, the trie nodes where a walk
// went below the cut (a token through them depends on the context), each
// with the bytes that lead to its parent.
type localMask struct {
	yes    []uint32
	roots  []int32
	prefix [][]byte
}

// mask is the mask of state s, computed or cached. The slice is the
// cache's: read it, do not keep it past the next call.
func (x *Index) mask(s int32) ([]uint32, error) {
	if mk, ok := x.masks[s]; ok {
		return mk, nil
	}
	m, v := x.m, x.v
	mk := make([]uint32, v.words)
	m.mu.Lock()
	// The split pays where a local part recurs (a second context of the
	// same string rule): the first time it is met, the plain walk is as
	// cheap and the local walk would be extra; and it does not where most
	// of the walk goes below the cut (many roots).
	var lm *localMask
	if l := m.local(s); l >= 0 && m.err == nil {
		if lm = x.locals[l]; lm == nil && x.localSeen[l] {
			lm = x.localWalk(l)
			x.locals[l] = lm
			x.bytes += 4*len(lm.yes) + 4*len(lm.roots)
		}
		x.localSeen[l] = true
	}
	if lm != nil && len(lm.roots) <= maxRoots {
		copy(mk, lm.yes)
		// The context-dependent rest: each root's subtree walked from
		// s's own state at the root's parent.
		for k, r := range lm.roots {
			ps := s
			for _, c := range lm.prefix[k] {
				if ps = m.step(ps, c); ps < 0 {
					break
				}
			}
			if ps >= 0 {
				x.walk(mk, ps, int(r), int(v.end[r]))
			}
		}
	} else {
		x.walk(mk, s, 0, len(v.b))
	}
	st := m.states[s]
	if st.tokens { // token elements: try each token as a symbol
		for t := 0; t < v.n; t++ {
			if m.stepToken(s, int32(t)) >= 0 {
				mk[t>>5] |= 1 << (t & 31)
			}
		}
	}
	if st.accepting {
		for _, t := range v.eog {
			mk[t>>5] |= 1 << (t & 31)
		}
	}
	err := m.err
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if x.bytes+4*len(mk) > x.limit {
		clear(x.masks)
		clear(x.locals)
		clear(x.localSeen)
		x.bytes = 0
	}
	x.masks[s] = mk
	x.bytes += 4 * len(mk)
	return mk, nil
}

// walk sets in mk the tokens of trie nodes [from, to) (a whole subtree,
// or the whole trie) that state s, standing at the parent of node from,
// allows: one pass in preorder that jumps over every subtree whose byte
// is dead. Called with m.mu held.
func (x *Index) walk(mk []uint32, s int32, from, to int) {
	m, v := x.m, x.v
	b, depth, end, tok0, toks := v.b, v.depth, v.end, v.tok0, v.toks
	x.stateD[depth[from]-1] = s
	for i := from; i < to; {
		d := depth[i]
		ns := m.stepSeen(x.stateD[d-1], b[i])
		if ns < 0 {
			i = int(end[i])
			continue
		}
		x.stateD[d] = ns
		for _, t := range toks[tok0[i]:tok0[i+1]] {
			mk[t>>5] |= 1 << (t & 31)
		}
		i++
	}
}

// localWalk is the walk of local state l: a node whose state went below
// the cut (popped) becomes a root and its subtree is left to the real
// state; every other node the walk reaches alive is allowed for sure.
// Called with m.mu held.
func (x *Index) localWalk(l int32) *localMask {
	m, v := x.m, x.v
	lm := &localMask{yes: make([]uint32, v.words)}
	b, depth, end, tok0, toks := v.b, v.depth, v.end, v.tok0, v.toks
	path := make([]byte, v.maxD+1)
	x.stateD[0] = l
	for i := 0; i < len(b); {
		d := depth[i]
		ns := m.stepSeen(x.stateD[d-1], b[i])
		if ns < 0 {
			i = int(end[i])
			continue
		}
		path[d-1] = b[i]
		if m.states[ns].popped {
			lm.roots = append(lm.roots, int32(i))
			lm.prefix = append(lm.prefix, slices.Clone(path[:d-1]))
			i = int(end[i])
			continue
		}
		x.stateD[d] = ns
		for _, t := range toks[tok0[i]:tok0[i+1]] {
			lm.yes[t>>5] |= 1 << (t & 31)
		}
		i++
	}
	return lm
}

// Matcher is one generation's place in a grammar: its state, the mask of
// the tokens that may come next, and the step a chosen token makes.
type Matcher struct {
	x     *Index
	state int32
}

// NewMatcher starts a match of m's grammar over v's tokens. Matchers of
// the same Machine and Vocab share one Index (its cache of masks).
func NewMatcher(m *Machine, v *Vocab) *Matcher { return m.index(v).Matcher() }

// Matcher starts a match of x's grammar at its start.
func (x *Index) Matcher() *Matcher { return &Matcher{x: x, state: x.m.Start()} }

// index is the Index of m over v, made on first use. Only the last few
// vocabularies are kept (a Machine is normally matched against one).
func (m *Machine) index(v *Vocab) *Index {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.indexes {
		if x.v == v {
			return x
		}
	}
	x := NewIndex(m, v)
	if len(m.indexes) >= 4 {
		m.indexes = m.indexes[1:]
	}
	m.indexes = append(m.indexes, x)
	return x
}

// Mask writes into dst (Vocab.Words() words) a bit per token, set where
// the token may come next; end-of-generation tokens are set only where
// the grammar may end. ErrStuck when none is set.
func (c *Matcher) Mask(dst []uint32) error {
	c.x.mu.Lock()
	mk, err := c.x.mask(c.state)
	if err == nil {
		copy(dst, mk)
	}
	c.x.mu.Unlock()
	if err != nil {
		return err
	}
	for _, w := range dst[:len(mk)] {
		if w != 0 {
			return nil
		}
	}
	return fmt.Errorf("%w (and the grammar may not end here)", ErrStuck)
}

// Accept advances past token tok; an error when the grammar does not
// allow it. An end-of-generation token is accepted where the grammar may
// end and leaves the state as it is.
func (c *Matcher) Accept(tok int32) error {
	x := c.x
	if tok < 0 || int(tok) >= x.v.n {
		return fmt.Errorf("grammar: token %d outside the vocabulary of %d", tok, x.v.n)
	}
	m := x.m
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[c.state]
	if slices.Contains(x.v.eog, tok) {
		if st.accepting {
			return nil
		}
		if !st.tokens || m.stepToken(c.state, tok) < 0 {
			return fmt.Errorf("grammar: an end token where the grammar may not end")
		}
	}
	s := c.state
	for _, b := range x.v.bytes[tok] {
		if s = m.step(s, b); s < 0 {
			break
		}
	}
	if len(x.v.bytes[tok]) == 0 {
		s = dead
	}
	if st.tokens {
		ts := m.stepToken(c.state, tok)
		switch {
		case ts >= 0 && s >= 0:
			s = m.intern(append(slices.Clone(m.states[s].stacks), m.states[ts].stacks...))
		case ts >= 0:
			s = ts
		}
	}
	if s < 0 {
		if m.err != nil {
			return m.err
		}
		return fmt.Errorf("grammar: token %d (%q) does not continue the output", tok, x.v.bytes[tok])
	}
	c.state = s
	return nil
}

// Done reports whether the output is complete: the grammar may end and
// nothing may follow.
func (c *Matcher) Done() bool {
	m := c.x.m
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[c.state]
	return st.accepting && len(st.stacks) == 1
}

// Accepting reports whether the output so far is a whole sentence of the
// grammar (an end token is allowed now).
func (c *Matcher) Accepting() bool { return c.x.m.Accepting(c.state) }

// State is the matcher's state, to return to with SetState (a
// speculative pass rewinding).
func (c *Matcher) State() int32 { return c.state }

// SetState returns to a state State gave (of a matcher of the same
// grammar); an error for a state the machine never made.
func (c *Matcher) SetState(s int32) error {
	m := c.x.m
	m.mu.Lock()
	n := len(m.states)
	m.mu.Unlock()
	if s < 0 || int(s) >= n {
		return fmt.Errorf("grammar: state %d is not one of the machine's %d", s, n)
	}
	c.state = s
	return nil
}

// stepSeen is step reading the transition table first: one array read
// for a transition seen before. Called with m.mu held.
func (m *Machine) stepSeen(s int32, c byte) int32 {
	if t := m.states[s].next; t != nil {
		if ns := t[c]; ns != unknown {
			return ns
		}
	}
	return m.step(s, c)
}
