package grammar

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// Machine is a grammar lowered to bytes: a pushdown machine whose
// terminals are sets of bytes (a code-point class becomes the UTF-8 byte
// sequences of its ranges) or tokens. Its states, sets of parse stacks,
// are interned as they are met and each keeps a table of its successors
// by byte, so that stepping a state seen before is one read. A Machine is
// safe for concurrent use.
type Machine struct {
	mu sync.Mutex

	elems []melem   // every alternative's elements, each run ended by mEnd
	alts  [][]int32 // per rule, the start of each alternative in elems
	sets  [][4]uint64
	root  int

	frames  []frame // interned stack frames; 0 is the empty stack
	frameID map[frame]int32
	expand  map[frame][]int32 // memo: a frame position expanded to stacks
	seen    map[frame]bool    // places one expansion has visited

	states  []mstate
	stateID map[string]int32
	start   int32
	key     []byte // scratch for state keys
	// bytes counts what the states hold (stacks, keys, transition
	// tables), which maxBytes bounds.
	bytes   int
	scratch []int32
	err     error

	indexes []*Index // NewMatcher's, by vocabulary
	minLen  []int32  // per rule: its shortest sentence's length (Sample)
}

type melemKind uint8

const (
	mEnd   melemKind = iota // end of an alternative
	mBytes                  // one byte in sets[arg]
	mRef                    // rule arg
	mToken                  // the token arg (mNotToken: any other)
	mNotToken
	mTokenText // a <text> token not yet resolved (index arg into texts)
)

type melem struct {
	kind melemKind
	arg  int32
}

// ret is the frame that stands for "below the cut" in a state's local
// part (see local): returning to it ends a walk there, as returning to
// the empty stack 0 ends the sentence.
const ret = 1

// frame is a stack: a position in elems and the frame below it.
type frame struct{ pos, parent int32 }

// mstate is an interned state: its stacks (frame ids whose position is a
// terminal; 0 for the empty stack) and successors by byte.
type mstate struct {
	stacks    []int32
	accepting bool // holds the empty stack: the grammar may end here
	tokens    bool // some stack's top is a token element
	popped    bool // holds ret: a local state's walk went below its cut
	next      *[256]int32
	// local is the state's local part (see Machine.local): 0 not yet
	// computed, -1 none.
	local int32
}

// Transition table values besides state ids.
const (
	unknown = -2
	dead    = -1
)

// Bounds on what a grammar may grow to while matching.
const (
	maxStacks = 1 << 14 // per state
	maxStates = 1 << 20
	maxFrames = 1 << 22
)

// maxBytes bounds the memory a machine's states may hold (their stacks,
// keys and transition tables): a hostile grammar or schema (a request's)
// fails with ErrTooComplex before it takes the server's memory. A var for
// the test that reaches it.
var maxBytes = 256 << 20

// ErrTooComplex is wrapped when matching a grammar would exceed the
// machine's bounds (too many ambiguous parses alive at once).
var ErrTooComplex = errors.New("grammar: too ambiguous to match")

// Compile lowers g to a Machine.
func Compile(g *Grammar) (*Machine, error) {
	if g == nil || g.Root < 0 || g.Root >= len(g.Rules) {
		return nil, errors.New("grammar: no start rule")
	}
	m := &Machine{
		frameID: map[frame]int32{},
		expand:  map[frame][]int32{},
		stateID: map[string]int32{},
		frames:  []frame{{-1, -1}, {-2, -2}}, // the empty stack, ret
		alts:    make([][]int32, len(g.Rules)),
		root:    g.Root,
	}
	classRule := map[string]int32{}
	setID := map[[4]uint64]int32{}
	addSet := func(s [4]uint64) int32 {
		if id, ok := setID[s]; ok {
			return id
		}
		id := int32(len(m.sets))
		m.sets = append(m.sets, s)
		setID[s] = id
		return id
	}
	var extra [][][]melem // the alternatives of generated class rules
	// lowerClass is the element that matches one code point of rs: a byte
	// set when every range is ASCII, else a reference to a rule whose
	// alternatives are the ranges' UTF-8 byte sequences.
	lowerClass := func(rs []Range) melem {
		if len(rs) > 0 && rs[len(rs)-1].Hi < utf8.RuneSelf {
			var s [4]uint64
			for _, r := range rs {
				for c := r.Lo; c <= r.Hi; c++ {
					s[c>>6] |= 1 << (c & 63)
				}
			}
			return melem{mBytes, addSet(s)}
		}
		k := fmt.Sprint(rs)
		if id, ok := classRule[k]; ok {
			return melem{mRef, id}
		}
		id := int32(len(g.Rules) + len(extra))
		classRule[k] = id
		var alts [][]melem
		for _, r := range rs {
			utf8Sequences(r.Lo, r.Hi, func(seq [][2]byte) {
				alt := make([]melem, len(seq))
				for i, br := range seq {
					var s [4]uint64
					for c := int(br[0]); c <= int(br[1]); c++ {
						s[c>>6] |= 1 << (c & 63)
					}
					alt[i] = melem{mBytes, addSet(s)}
				}
				alts = append(alts, alt)
			})
		}
		extra = append(extra, alts)
		return melem{mRef, id}
	}
	var texts []string
	for id, r := range g.Rules {
		for _, alt := range r.Alts {
			m.alts[id] = append(m.alts[id], int32(len(m.elems)))
			for _, e := range alt {
				switch e.Kind {
				case Chars:
					if len(e.Ranges) == 0 {
						m.elems = append(m.elems, melem{mBytes, addSet([4]uint64{})}) // matches nothing
						continue
					}
					m.elems = append(m.elems, lowerClass(e.Ranges))
				case Ref:
					if e.Rule < 0 || e.Rule >= len(g.Rules) {
						return nil, fmt.Errorf("grammar: rule %q refers to rule %d of %d", r.Name, e.Rule, len(g.Rules))
					}
					m.elems = append(m.elems, melem{mRef, int32(e.Rule)})
				case Token:
					k := mToken
					if e.Not {
						k = mNotToken
					}
					if e.Text != "" && e.Token < 0 {
						m.elems = append(m.elems, melem{mTokenText, int32(len(texts))})
						texts = append(texts, e.Text)
						continue
					}
					m.elems = append(m.elems, melem{k, e.Token})
				default:
					return nil, fmt.Errorf("grammar: rule %q holds an element of unknown kind %d", r.Name, e.Kind)
				}
			}
			m.elems = append(m.elems, melem{mEnd, 0})
		}
		if len(r.Alts) == 0 {
			return nil, fmt.Errorf("grammar: rule %q has no alternatives", r.Name)
		}
	}
	for _, alts := range extra {
		var starts []int32
		for _, alt := range alts {
			starts = append(starts, int32(len(m.elems)))
			m.elems = append(m.elems, alt...)
			m.elems = append(m.elems, melem{mEnd, 0})
		}
		m.alts = append(m.alts, starts)
	}
	m.computeMinLen()
	if len(texts) > 0 {
		return nil, fmt.Errorf("grammar: token %s is written by its text, which only a vocabulary resolves (runtime's Model.GrammarIndex does; here write <[id]>)", texts[0])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stacks, err := m.expandRef(int32(g.Root), 0)
	if err != nil {
		return nil, err
	}
	m.start = m.intern(stacks)
	if m.err != nil {
		return nil, m.err
	}
	return m, nil
}

// Start is the state before any input.
func (m *Machine) Start() int32 { return m.start }

// Accepting reports whether the grammar may end in state s.
func (m *Machine) Accepting(s int32) bool {
	if s < 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[s].accepting
}

// Step is the state after byte b from s (dead: -1).
func (m *Machine) Step(s int32, b byte) int32 {
	if s < 0 {
		return dead
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.step(s, b)
}

// Advance steps s through text.
func (m *Machine) Advance(s int32, text string) int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := 0; i < len(text) && s >= 0; i++ {
		s = m.step(s, text[i])
	}
	return s
}

// Accepts reports whether text is in the grammar's language.
func (m *Machine) Accepts(text string) bool {
	s := m.Advance(m.Start(), text)
	return m.Accepting(s)
}

// Err is the error that stopped the machine growing (ErrTooComplex), if
// any: its states then lead nowhere.
func (m *Machine) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// step is Step with m.mu held.
func (m *Machine) step(s int32, b byte) int32 {
	st := &m.states[s]
	if st.next == nil {
		if m.bytes += 1024; m.bytes > maxBytes {
			m.fail(fmt.Errorf("%w: its states would hold more than %d MiB", ErrTooComplex, maxBytes>>20))
			return dead
		}
		t := new([256]int32)
		for i := range t {
			t[i] = unknown
		}
		st.next = t
	}
	if n := st.next[b]; n != unknown {
		return n
	}
	next := m.scratch[:0]
	for _, sid := range st.stacks {
		if sid == 0 || sid == ret {
			continue
		}
		f := m.frames[sid]
		e := m.elems[f.pos]
		if e.kind != mBytes || m.sets[e.arg][b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		more, err := m.expandAt(f.pos+1, f.parent)
		if err != nil {
			m.fail(err)
			break
		}
		next = append(next, more...)
	}
	m.scratch = next[:0]
	n := int32(dead)
	if len(next) > 0 && m.err == nil {
		n = m.intern(next)
	}
	m.states[s].next[b] = n // states may have grown: index again
	return n
}

// stepToken is the state after the whole token tok taken as a token
// symbol (token elements), dead when no stack's top is one it matches.
func (m *Machine) stepToken(s int32, tok int32) int32 {
	var next []int32
	for _, sid := range m.states[s].stacks {
		if sid == 0 || sid == ret {
			continue
		}
		f := m.frames[sid]
		e := m.elems[f.pos]
		if !(e.kind == mToken && e.arg == tok || e.kind == mNotToken && e.arg != tok) {
			continue
		}
		more, err := m.expandAt(f.pos+1, f.parent)
		if err != nil {
			m.fail(err)
			return dead
		}
		next = append(next, more...)
	}
	if len(next) == 0 {
		return dead
	}
	return m.intern(next)
}

func (m *Machine) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// intern is the state of a set of stacks (sorted and deduplicated here).
func (m *Machine) intern(stacks []int32) int32 {
	slices.Sort(stacks)
	stacks = slices.Compact(stacks)
	if len(stacks) > maxStacks {
		m.fail(fmt.Errorf("%w: %d parses alive at once (at most %d)", ErrTooComplex, len(stacks), maxStacks))
		return dead
	}
	k := m.key[:0]
	for _, s := range stacks {
		k = append(k, byte(s), byte(s>>8), byte(s>>16), byte(s>>24))
	}
	m.key = k
	if id, ok := m.stateID[string(k)]; ok {
		return id
	}
	if len(m.states) >= maxStates {
		m.fail(fmt.Errorf("%w: more than %d states", ErrTooComplex, maxStates))
		return dead
	}
	if m.bytes += 8*len(stacks) + 64; m.bytes > maxBytes {
		m.fail(fmt.Errorf("%w: its states would hold more than %d MiB", ErrTooComplex, maxBytes>>20))
		return dead
	}
	id := int32(len(m.states))
	st := mstate{stacks: slices.Clone(stacks)}
	for _, s := range stacks {
		if s == 0 {
			st.accepting = true
		} else if s == ret {
			st.popped = true
		} else if k := m.elems[m.frames[s].pos].kind; k == mToken || k == mNotToken {
			st.tokens = true
		}
	}
	m.states = append(m.states, st)
	m.stateID[string(k)] = id
	return id
}

// frameOf interns the frame (pos, parent).
func (m *Machine) frameOf(pos, parent int32) (int32, error) {
	f := frame{pos, parent}
	if id, ok := m.frameID[f]; ok {
		return id, nil
	}
	if len(m.frames) >= maxFrames {
		return 0, fmt.Errorf("%w: stacks deeper or more numerous than %d frames", ErrTooComplex, maxFrames)
	}
	id := int32(len(m.frames))
	m.frames = append(m.frames, f)
	m.frameID[f] = id
	return id, nil
}

// expandAt is the stacks, each topped by a terminal (or empty), that
// continue from position pos with parent below: rule references are
// entered (a reference last in its alternative does not keep a frame to
// return to), ends of alternatives return to the parent.
func (m *Machine) expandAt(pos, parent int32) ([]int32, error) {
	f := frame{pos, parent}
	if r, ok := m.expand[f]; ok {
		return r, nil
	}
	if m.seen == nil {
		m.seen = map[frame]bool{}
	}
	clear(m.seen)
	out, err := m.expandWalk(pos, parent, 0, nil)
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	out = slices.Compact(out)
	m.expand[f] = out
	return out, nil
}

func (m *Machine) expandRef(rule, parent int32) ([]int32, error) {
	var out []int32
	for _, a := range m.alts[rule] {
		more, err := m.expandAt(a, parent)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

func (m *Machine) expandWalk(pos, parent int32, depth int, out []int32) ([]int32, error) {
	if depth > 4096 {
		return nil, fmt.Errorf("%w: rules nest more than 4096 deep without reading anything (left recursion?)", ErrTooComplex)
	}
	// A place met again in the same expansion adds nothing new: without
	// this, nullable cycles ('( [x]* )*') would expand forever.
	if m.seen[frame{pos, parent}] {
		return out, nil
	}
	m.seen[frame{pos, parent}] = true
	e := m.elems[pos]
	switch e.kind {
	case mEnd:
		if parent == 0 || parent == ret {
			return append(out, parent), nil
		}
		pf := m.frames[parent]
		return m.expandWalk(pf.pos, pf.parent, depth+1, out)
	case mRef:
		cont := parent
		if m.elems[pos+1].kind != mEnd {
			var err error
			if cont, err = m.frameOf(pos+1, parent); err != nil {
				return nil, err
			}
		}
		for _, a := range m.alts[e.arg] {
			var err error
			if out, err = m.expandWalk(a, cont, depth+1, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	id, err := m.frameOf(pos, parent)
	if err != nil {
		return nil, err
	}
	return append(out, id), nil
}

// utf8Sequences calls emit with the byte ranges of each UTF-8 sequence
// form covering the code points lo..hi (surrogates excluded), each a
// product of per-byte ranges.
func utf8Sequences(lo, hi rune, emit func([][2]byte)) {
	if lo <= 0xDFFF && hi >= 0xD800 { // no surrogates
		if lo < 0xD800 {
			utf8Sequences(lo, 0xD7FF, emit)
		}
		if hi > 0xDFFF {
			utf8Sequences(0xE000, hi, emit)
		}
		return
	}
	for _, max := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= max && hi > max {
			utf8Sequences(lo, max, emit)
			utf8Sequences(max+1, hi, emit)
			return
		}
	}
	if hi < utf8.RuneSelf {
		emit([][2]byte{{byte(lo), byte(hi)}})
		return
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		mask := rune(1)<<(6*i) - 1
		if lo&^mask != hi&^mask {
			if lo&mask != 0 {
				utf8Sequences(lo, lo|mask, emit)
				utf8Sequences((lo|mask)+1, hi, emit)
				return
			}
			if hi&mask != mask {
				utf8Sequences(lo, (hi&^mask)-1, emit)
				utf8Sequences(hi&^mask, hi, emit)
				return
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([][2]byte, n)
	for i := range seq {
		seq[i] = [2]byte{a[i], b[i]}
	}
	emit(seq)
}

// local is the local part of real state s, or -1: each stack with the
// highest frame that lies below the top of every stack (their common
// base) replaced by ret. A token whose bytes, walked from the local
// state, never return to ret is allowed from s exactly when it is allowed
// from the local state, whatever lies below the base; so what a local
// state allows is computed once and shared by every context it occurs in
// (a JSON string's insides, whichever property it is the value of). This
// is XGrammar's context-independent split, with the context cut at the
// deepest point every stack shares. Called with m.mu held.
func (m *Machine) local(s int32) int32 {
	st := &m.states[s]
	if st.local != 0 {
		return st.local
	}
	st.local = -1
	stacks := st.stacks
	if len(stacks) == 0 {
		return -1
	}
	// The candidates: the first stack's frames below its top, nearest
	// first; the base is the first that every other stack holds below
	// its top.
	var cands []int32
	for f := m.frames[stacks[0]].parent; f > ret; f = m.frames[f].parent {
		cands = append(cands, f)
	}
	base := int32(-1)
	for _, c := range cands {
		all := true
		for _, sid := range stacks[1:] {
			found := false
			for f := m.frames[sid].parent; f > ret && !found; f = m.frames[f].parent {
				found = f == c
			}
			if !found {
				all = false
				break
			}
		}
		if all {
			base = c
			break
		}
	}
	if base < 0 {
		return -1
	}
	var rebuild func(f int32) (int32, error)
	rebuild = func(f int32) (int32, error) {
		if f == base {
			return ret, nil
		}
		p, err := rebuild(m.frames[f].parent)
		if err != nil {
			return 0, err
		}
		return m.frameOf(m.frames[f].pos, p)
	}
	out := make([]int32, 0, len(stacks))
	for _, sid := range stacks {
		f, err := rebuild(sid)
		if err != nil {
			m.fail(err)
			return -1
		}
		out = append(out, f)
	}
	l := m.intern(out)
	m.states[s].local = l // intern may have moved the states
	return l
}
