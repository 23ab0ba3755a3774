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
	bytes  int
	limit  int
	stateD []int32 // per trie depth: the state reached (a mask walk's stack)
}

// NewIndex pairs m and v; the mask cache holds up to 64 MiB.
func NewIndex(m *Machine, v *Vocab) *Index {
	return &Index{m: m, v: v, masks: map[int32][]uint32{}, limit: 64 << 20, stateD: make([]int32, v.maxD+1)}
}

// Words is the length in uint32 words of a mask over the vocabulary.
func (x *Index) Words() int { return x.v.words }

// mask is the mask of state s, computed or cached. The slice is the
// cache's: read it, do not keep it past the next call.
func (x *Index) mask(s int32) ([]uint32, error) {
	if mk, ok := x.masks[s]; ok {
		return mk, nil
	}
	m, v := x.m, x.v
	mk := make([]uint32, v.words)
	m.mu.Lock()
	x.stateD[0] = s
	b, depth, end, tok0, toks := v.b, v.depth, v.end, v.tok0, v.toks
	for i := 0; i < len(b); {
		d := depth[i]
		ps := x.stateD[d-1]
		st := &m.states[ps]
		var ns int32 = unknown
		if st.next != nil {
			ns = st.next[b[i]]
		}
		if ns == unknown {
			ns = m.step(ps, b[i])
		}
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
		x.bytes = 0
	}
	x.masks[s] = mk
	x.bytes += 4 * len(mk)
	return mk, nil
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
