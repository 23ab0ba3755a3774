package grammar

import (
	"math"
	"math/rand/v2"
)

// noSentence is the length of a rule that derives no string of bytes (it
// needs a token element, or never stops recursing).
const noSentence = math.MaxInt32

// sampleSteps bounds the elements one Sample expands: a grammar whose
// nullable cycles ('( [x]* )*') can recurse without reading anything
// cannot keep it busy.
const sampleSteps = 1 << 20

// Sample is a random sentence of the grammar of at most maxLen bytes, and
// whether one was found: a random derivation that, at each choice, picks
// uniformly among the alternatives that can still end within the bytes
// left, and a random byte of each byte set (code-point classes were
// lowered to UTF-8 sequences, so the bytes are valid UTF-8). Grammars
// whose every sentence needs a token element, or is longer than maxLen,
// give false. For tests and fuzzing: it reads only what Compile fixed, so
// it is safe alongside matching.
func (m *Machine) Sample(rng *rand.Rand, maxLen int) (string, bool) {
	if m == nil || rng == nil || maxLen < 0 {
		return "", false
	}
	if int(m.minLen[m.root]) > maxLen {
		return "", false
	}
	// The pending elements, as positions in elems, innermost last: a
	// derivation is a stack machine over the alternatives' element runs.
	var out []byte
	stack := []int32{}
	// need is the shortest length of what the stack still holds below the
	// top (kept alongside it), so that a choice leaves room for the rest.
	needs := []int{}
	budget := func() int { return maxLen - len(out) - needs[len(needs)-1] }
	push := func(rule int32, rest int) bool {
		alts := m.alts[rule]
		b := maxLen - len(out) - rest
		n := 0
		for _, a := range alts {
			if int(m.altLen(a)) <= b {
				n++
			}
		}
		if n == 0 {
			return false
		}
		k := rng.IntN(n)
		for _, a := range alts {
			if int(m.altLen(a)) <= b {
				if k == 0 {
					stack = append(stack, a)
					needs = append(needs, rest)
					return true
				}
				k--
			}
		}
		return false
	}
	if !push(int32(m.root), 0) {
		return "", false
	}
	for steps := 0; len(stack) > 0; steps++ {
		if steps > sampleSteps {
			return "", false
		}
		top := len(stack) - 1
		pos := stack[top]
		e := m.elems[pos]
		switch e.kind {
		case mEnd:
			stack, needs = stack[:top], needs[:top]
			continue
		case mBytes:
			if budget() < m.altLen(pos+1)+1 {
				return "", false
			}
			b, ok := randomByte(rng, &m.sets[e.arg])
			if !ok {
				return "", false
			}
			out = append(out, b)
			stack[top] = pos + 1
		case mRef:
			rest := needs[top]
			if m.elems[pos+1].kind == mEnd { // a tail call: nothing to return to
				stack, needs = stack[:top], needs[:top]
			} else {
				stack[top] = pos + 1
				rest += m.altLen(pos + 1)
			}
			if !push(e.arg, rest) {
				return "", false
			}
		default: // a token element: no bytes spell it
			return "", false
		}
	}
	return string(out), true
}

// altLen is the shortest length of the elements from pos to the end of
// their alternative (noSentence when one derives nothing).
func (m *Machine) altLen(pos int32) int {
	n := 0
	for ; m.elems[pos].kind != mEnd; pos++ {
		l := m.elemLen(m.elems[pos])
		if l == noSentence {
			return noSentence
		}
		n += l
	}
	return n
}

func (m *Machine) elemLen(e melem) int {
	switch e.kind {
	case mBytes:
		if m.sets[e.arg] == ([4]uint64{}) {
			return noSentence // a class that matches nothing
		}
		return 1
	case mRef:
		return int(m.minLen[e.arg])
	}
	return noSentence
}

// computeMinLen fills minLen, each rule's shortest sentence in bytes, as
// the least fixed point of the rules' equations.
func (m *Machine) computeMinLen() {
	m.minLen = make([]int32, len(m.alts))
	for i := range m.minLen {
		m.minLen[i] = noSentence
	}
	// Rules are walked last to first (a generated rule comes after the
	// rule it serves), so most grammars settle in a pass or two. The
	// passes are bounded: an unsettled value is still the length of a
	// real sentence, so Sample would only be more cautious than needed.
	for changed, pass := true, 0; changed && pass <= len(m.alts); pass++ {
		changed = false
		for r := len(m.alts) - 1; r >= 0; r-- {
			for _, a := range m.alts[r] {
				if l := m.altLen(a); l < int(m.minLen[r]) {
					m.minLen[r] = int32(min(l, noSentence))
					changed = true
				}
			}
		}
	}
}

// randomByte is a uniformly chosen byte of the set s.
func randomByte(rng *rand.Rand, s *[4]uint64) (byte, bool) {
	n := 0
	for _, w := range s {
		n += popcount(w)
	}
	if n == 0 {
		return 0, false
	}
	k := rng.IntN(n)
	for c := 0; c < 256; c++ {
		if s[c>>6]&(1<<(c&63)) != 0 {
			if k == 0 {
				return byte(c), true
			}
			k--
		}
	}
	return 0, false
}

func popcount(w uint64) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}
