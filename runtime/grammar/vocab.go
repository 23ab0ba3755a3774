package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Vocab is a vocabulary's token bytes as a trie laid out in preorder, so
// that the tokens a state allows are found in one pass that skips every
// subtree whose prefix the grammar refuses.
type Vocab struct {
	n     int     // tokens
	b     []byte  // per node: the byte that leads to it
	depth []int32 // per node: its depth (1 for the root's children)
	end   []int32 // per node: the index past its subtree
	tok0  []int32 // per node: its tokens are toks[tok0[i]:tok0[i+1]]
	toks  []int32
	maxD  int
	eog   []int32
	bytes [][]byte // per token (nil: never allowed)
	words int      // uint32 words of a mask
}

// NewVocab builds the trie of the tokens' bytes (pieces[t] for token t;
// empty: a token no grammar may produce) and records the end-of-generation
// tokens, allowed exactly where the grammar may end.
func NewVocab(pieces [][]byte, eog []int32) *Vocab {
	v := &Vocab{n: len(pieces), words: (len(pieces) + 31) / 32, bytes: pieces}
	for _, t := range eog {
		if t >= 0 && int(t) < len(pieces) {
			v.eog = append(v.eog, t)
		}
	}
	ids := make([]int32, 0, len(pieces))
	for t, p := range pieces {
		if len(p) > 0 && !slices.Contains(v.eog, int32(t)) {
			ids = append(ids, int32(t))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// In sorted order a token's node is always the last node made (a
	// token is never a proper prefix of the one before it), so the
	// tokens come grouped by node, in node order.
	var prev []byte
	var node []int32 // per entry of toks: its node
	for i, t := range ids {
		p := pieces[t]
		l := 0
		for l < len(prev) && l < len(p) && prev[l] == p[l] {
			l++
		}
		if i == 0 || l < len(p) || len(p) != len(prev) {
			for d := l; d < len(p); d++ {
				v.b = append(v.b, p[d])
				v.depth = append(v.depth, int32(d+1))
			}
		}
		v.toks = append(v.toks, t)
		node = append(node, int32(len(v.b)-1))
		v.maxD = max(v.maxD, len(p))
		prev = p
	}
	n := len(v.b)
	v.tok0 = make([]int32, n+1)
	j := 0
	for i := 0; i <= n; i++ {
		for j < len(node) && int(node[j]) < i {
			j++
		}
		v.tok0[i] = int32(j)
	}
	v.end = make([]int32, n)
	var stack []int32
	for i := 0; i < n; i++ {
		for len(stack) > 0 && v.depth[stack[len(stack)-1]] >= v.depth[i] {
			v.end[stack[len(stack)-1]] = int32(i)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, int32(i))
	}
	for _, s := range stack {
		v.end[s] = int32(n)
	}
	return v
}

// Len is the number of tokens.
func (v *Vocab) Len() int { return v.n }

// Words is the length in uint32 words of a mask over the vocabulary.
func (v *Vocab) Words() int { return v.words }

// ErrStuck is wrapped when no token can continue the output and the
// grammar may not end: the grammar and the vocabulary leave no way on.
var ErrStuck = errors.New("grammar: no token can continue the output")

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

// NewMatcher starts a match of x's grammar at its start.
func NewMatcher(x *Index) *Matcher { return &Matcher{x: x, state: x.m.Start()} }

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

// State is the matcher's state, to return to with SetState (a
// speculative pass rewinding).
func (c *Matcher) State() int32 { return c.state }

// SetState returns to a state State gave.
func (c *Matcher) SetState(s int32) { c.state = s }
