package tokenizer

import "fmt"

// A small backtracking regular-expression engine for the pre-tokenizer
// patterns, which need what Go's regexp (RE2) refuses: lookahead, (?= and
// (?!. It implements the subset of ECMAScript syntax those patterns use and
// ECMAScript's matching rules, which are what llama.cpp gets from std::regex:
// leftmost match, the first alternative that lets the whole pattern match
// (not the longest), greedy quantifiers that give back one step at a time,
// atomic lookahead. docs/adr/0005-tokenizer.md says why and how.
//
// Patterns run over a slice of codepoints in which every non-ASCII
// whitespace codepoint has been replaced by U+000B (what llama.cpp does
// before handing text to std::regex, whose \s knows only ASCII). \p{L},
// \p{N}, \p{P}, \p{M} and \p{S} test a codepoint's general category;
// \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm} and \p{Lo} mean \p{L}, because llama.cpp
// collapses them into one letter class before matching.
//
// Supported: literals, escapes (\r \n \t \f \v \s \S \d \D \w \W \b, \p{..},
// \xHH, \uHHHH and any escaped punctuation), classes [...] and [^...] with
// ranges, ., groups (...) and (?:...), lookahead (?=...) and (?!...),
// alternation, the greedy quantifiers * + ? {n} {n,} {n,m}, and $. Anything
// else is a compile error, and so is a quantified group that can match the
// empty string (no pattern needs one, and refusing it keeps the matcher free
// of empty-loop checks).

// charClass is a set of codepoints.
type charClass struct {
	low    [4]uint64 // membership of U+0000..U+00FF, precomputed
	ranges []runeRange
	cats   uint16 // category bits (see unicode.go) whose codepoints belong
	neg    bool
	and    *charClass // if set, members must also belong to and
}

type runeRange struct{ lo, hi rune }

func (c *charClass) has(r rune) bool {
	if r >= 0 && r < 256 {
		return c.low[r>>6]&(1<<(uint(r)&63)) != 0
	}
	return c.slowHas(r)
}

func (c *charClass) slowHas(r rune) bool {
	in := c.cats != 0 && flagsOf(r)&c.cats != 0
	if !in {
		for _, rg := range c.ranges {
			if rg.lo <= r && r <= rg.hi {
				in = true
				break
			}
		}
	}
	if in == c.neg {
		return false
	}
	return c.and == nil || c.and.has(r)
}

// seal precomputes the membership of the first 256 codepoints.
func (c *charClass) seal() *charClass {
	c.low = [4]uint64{}
	for r := rune(0); r < 256; r++ {
		if c.slowHas(r) {
			c.low[r>>6] |= 1 << (uint(r) & 63)
		}
	}
	return c
}

// program

type instOp uint8

const (
	iClass instOp = iota // cls; pos++
	iRun                 // cls repeated min..max (max < 0: no bound), greedy
	iSplit               // try x, then y
	iJmp                 // goto x
	iLook                // lookahead: sub-program at x; neg
	iEnd                 // $
	iWordB               // \b
	iMatch
)

type inst struct {
	op       instOp
	neg      bool
	cls      *charClass
	x, y     int32
	min, max int32
}

// regex is a compiled pattern.
type regex struct {
	src  string
	prog []inst
}

func compileRegex(src string) (*regex, error) {
	n, err := parseRegex(src)
	if err != nil {
		return nil, err
	}
	c := &reCompiler{}
	if err := c.emit(n); err != nil {
		return nil, fmt.Errorf("regex %q: %v", src, err)
	}
	c.add(inst{op: iMatch})
	c.flushSubs()
	return &regex{src: src, prog: c.prog}, nil
}

type reCompiler struct {
	prog []inst
	subs []pendingSub // lookahead bodies, emitted after the main program
}

type pendingSub struct {
	at   int // the iLook instruction
	node *reNode
}

func (c *reCompiler) add(i inst) int {
	c.prog = append(c.prog, i)
	return len(c.prog) - 1
}

func (c *reCompiler) flushSubs() {
	for len(c.subs) > 0 {
		s := c.subs[0]
		c.subs = c.subs[1:]
		c.prog[s.at].x = int32(len(c.prog))
		_ = c.emit(s.node) // checked when first emitted
		c.add(inst{op: iMatch})
	}
}

func (c *reCompiler) emit(n *reNode) error {
	switch n.op {
	case reEmpty:
	case reClass:
		c.add(inst{op: iClass, cls: n.cls})
	case reConcat:
		for _, s := range n.subs {
			if err := c.emit(s); err != nil {
				return err
			}
		}
	case reAlt:
		// split L1, next; L1: a; jmp end; next: split L2, next2; ...
		var jmps []int
		for i, s := range n.subs {
			if i == len(n.subs)-1 {
				if err := c.emit(s); err != nil {
					return err
				}
				break
			}
			split := c.add(inst{op: iSplit})
			c.prog[split].x = int32(len(c.prog))
			if err := c.emit(s); err != nil {
				return err
			}
			jmps = append(jmps, c.add(inst{op: iJmp}))
			c.prog[split].y = int32(len(c.prog))
		}
		for _, j := range jmps {
			c.prog[j].x = int32(len(c.prog))
		}
	case reRepeat:
		sub := n.subs[0]
		if sub.op == reClass {
			c.add(inst{op: iRun, cls: sub.cls, min: int32(n.min), max: int32(n.max)})
			return nil
		}
		if sub.nullable() {
			return fmt.Errorf("a repeated group that can match the empty string is not supported")
		}
		for range n.min {
			if err := c.emit(sub); err != nil {
				return err
			}
		}
		if n.max < 0 {
			loop := c.add(inst{op: iSplit})
			c.prog[loop].x = int32(len(c.prog))
			if err := c.emit(sub); err != nil {
				return err
			}
			c.add(inst{op: iJmp, x: int32(loop)})
			c.prog[loop].y = int32(len(c.prog))
			return nil
		}
		var splits []int
		for range n.max - n.min {
			s := c.add(inst{op: iSplit})
			c.prog[s].x = int32(len(c.prog))
			splits = append(splits, s)
			if err := c.emit(sub); err != nil {
				return err
			}
		}
		for _, s := range splits {
			c.prog[s].y = int32(len(c.prog))
		}
	case reLook:
		// Check the body now so that errors surface; emit it later.
		probe := &reCompiler{}
		if err := probe.emit(n.subs[0]); err != nil {
			return err
		}
		at := c.add(inst{op: iLook, neg: n.neg})
		c.subs = append(c.subs, pendingSub{at: at, node: n.subs[0]})
	case reEnd:
		c.add(inst{op: iEnd})
	case reWordB:
		c.add(inst{op: iWordB})
	}
	return nil
}

// matcher runs programs; it holds the backtracking stack and is reused
// across matches (not safe for concurrent use).
type matcher struct {
	stack []btEntry
}

// btEntry is a place to resume: at pc with pos, or for a greedy run, at pc
// with any position from lo up to pos (tried from pos down).
type btEntry struct {
	pc, pos, lo int32
	run         bool
}

// match tries prog from pc at pos over s[:end] (s[segStart:] is the text the
// pattern may look behind into, for \b). It returns the end of the first
// match by ECMAScript's rules, or -1. With notEmpty, an empty match does not
// count (the matcher backtracks into the next alternative).
func (m *matcher) match(prog []inst, pc int32, s []rune, segStart, pos, end int, notEmpty bool) int {
	base := len(m.stack)
	start := pos
	for {
		in := &prog[pc]
		switch in.op {
		case iClass:
			if pos < end && in.cls.has(s[pos]) {
				pos++
				pc++
				continue
			}
		case iRun:
			n := 0
			limit := end - pos
			if in.max >= 0 && int(in.max) < limit {
				limit = int(in.max)
			}
			for n < limit && in.cls.has(s[pos+n]) {
				n++
			}
			if n >= int(in.min) {
				if n > int(in.min) {
					m.stack = append(m.stack, btEntry{pc: pc + 1, pos: int32(pos + n - 1), lo: int32(pos) + in.min, run: true})
				}
				pos += n
				pc++
				continue
			}
		case iSplit:
			m.stack = append(m.stack, btEntry{pc: in.y, pos: int32(pos)})
			pc = in.x
			continue
		case iJmp:
			pc = in.x
			continue
		case iLook:
			ok := m.match(prog, in.x, s, segStart, pos, end, false) >= 0
			if ok != in.neg {
				pc++
				continue
			}
		case iEnd:
			if pos == end {
				pc++
				continue
			}
		case iWordB:
			before := pos > segStart && isWordRune(s[pos-1])
			after := pos < end && isWordRune(s[pos])
			if before != after {
				pc++
				continue
			}
		case iMatch:
			if !notEmpty || pos > start {
				m.stack = m.stack[:base]
				return pos
			}
		}
		// fail: resume at the latest choice point
		if len(m.stack) == base {
			return -1
		}
		e := &m.stack[len(m.stack)-1]
		pc, pos = e.pc, int(e.pos)
		if e.run && e.pos > e.lo {
			e.pos--
		} else {
			m.stack = m.stack[:len(m.stack)-1]
		}
	}
}

func isWordRune(r rune) bool { return r == '_' || (r < 0x80 && isASCIIAlnum(r)) }

// split cuts s[segStart:segEnd] the way std::regex_iterator walks it: each
// match and each stretch of text between matches becomes a piece; empty
// matches make no piece. It appends the piece lengths to out.
func (re *regex) split(m *matcher, s []rune, segStart, segEnd int, out []int32) []int32 {
	last := segStart
	pos := segStart
	notEmpty := false
	for pos <= segEnd {
		ms, me := -1, -1
		if notEmpty {
			// after an empty match: a non-empty match at the same place,
			// else search on from the next position
			if e := m.match(re.prog, 0, s, segStart, pos, segEnd, true); e >= 0 {
				ms, me = pos, e
			} else {
				pos++
			}
			notEmpty = false
		}
		if ms < 0 {
			for p := pos; p <= segEnd; p++ {
				if e := m.match(re.prog, 0, s, segStart, p, segEnd, false); e >= 0 {
					ms, me = p, e
					break
				}
			}
		}
		if ms < 0 {
			break
		}
		if ms > last {
			out = append(out, int32(ms-last))
		}
		if me > ms {
			out = append(out, int32(me-ms))
		}
		last = me
		if me == ms {
			if me == segEnd {
				break
			}
			notEmpty = true
		}
		pos = me
	}
	if last < segEnd {
		out = append(out, int32(segEnd-last))
	}
	return out
}
