package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
)

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

// AST

type reOp uint8

const (
	reClass  reOp = iota // one codepoint of cls
	reConcat             // subs in sequence
	reAlt                // the first of subs that leads to a match
	reRepeat             // subs[0] between min and max times (max < 0: no bound)
	reLook               // lookahead on subs[0] (neg: negative)
	reEnd                // $: end of the text
	reWordB              // \b
	reEmpty
)

type reNode struct {
	op       reOp
	cls      *charClass
	subs     []*reNode
	min, max int
	neg      bool
}

func (n *reNode) nullable() bool {
	switch n.op {
	case reClass:
		return false
	case reConcat:
		for _, s := range n.subs {
			if !s.nullable() {
				return false
			}
		}
		return true
	case reAlt:
		for _, s := range n.subs {
			if s.nullable() {
				return true
			}
		}
		return false
	case reRepeat:
		return n.min == 0 || n.subs[0].nullable()
	}
	return true
}

// parser

type reParser struct {
	src  string
	rs   []rune
	pos  int
	errs []string
}

func (p *reParser) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("at %d: %s", p.pos, fmt.Sprintf(format, args...)))
	p.pos = len(p.rs) // stop
}

func (p *reParser) more() bool { return p.pos < len(p.rs) }
func (p *reParser) peek() rune {
	if p.pos < len(p.rs) {
		return p.rs[p.pos]
	}
	return -1
}

func (p *reParser) eat(r rune) bool {
	if p.peek() == r {
		p.pos++
		return true
	}
	return false
}

// parseRegex parses an ECMAScript pattern of the supported subset.
func parseRegex(src string) (*reNode, error) {
	p := &reParser{src: src, rs: []rune(src)}
	n := p.alt()
	if p.more() && len(p.errs) == 0 {
		p.fail("unexpected %q", p.peek())
	}
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("regex %q: %s", src, strings.Join(p.errs, "; "))
	}
	return simplify(n), nil
}

func (p *reParser) alt() *reNode {
	var subs []*reNode
	for {
		subs = append(subs, p.concat())
		if !p.eat('|') {
			break
		}
	}
	if len(subs) == 1 {
		return subs[0]
	}
	return &reNode{op: reAlt, subs: subs}
}

func (p *reParser) concat() *reNode {
	var subs []*reNode
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		subs = append(subs, p.repeat())
	}
	switch len(subs) {
	case 0:
		return &reNode{op: reEmpty}
	case 1:
		return subs[0]
	}
	return &reNode{op: reConcat, subs: subs}
}

func (p *reParser) repeat() *reNode {
	atom := p.atom()
	for p.more() {
		lo, hi := 0, 0
		switch p.peek() {
		case '*':
			p.pos++
			lo, hi = 0, -1
		case '+':
			p.pos++
			lo, hi = 1, -1
		case '?':
			p.pos++
			lo, hi = 0, 1
		case '{':
			var ok bool
			lo, hi, ok = p.braces()
			if !ok {
				return atom
			}
		default:
			return atom
		}
		if p.peek() == '?' || p.peek() == '+' {
			p.fail("lazy and possessive quantifiers are not supported")
			return atom
		}
		if atom.op == reLook || atom.op == reEnd || atom.op == reWordB {
			p.fail("quantified assertion")
			return atom
		}
		atom = &reNode{op: reRepeat, subs: []*reNode{atom}, min: lo, max: hi}
	}
	return atom
}

// braces parses {n}, {n,} or {n,m} after the current position.
func (p *reParser) braces() (lo, hi int, ok bool) {
	end := p.pos + 1
	for end < len(p.rs) && p.rs[end] != '}' {
		end++
	}
	if end >= len(p.rs) {
		p.fail("unterminated {")
		return 0, 0, false
	}
	body := string(p.rs[p.pos+1 : end])
	a, b, comma := strings.Cut(body, ",")
	lo, err := strconv.Atoi(a)
	if err != nil {
		p.fail("bad repeat count %q", body)
		return 0, 0, false
	}
	hi = lo
	if comma {
		hi = -1
		if b != "" {
			if hi, err = strconv.Atoi(b); err != nil || hi < lo {
				p.fail("bad repeat count %q", body)
				return 0, 0, false
			}
		}
	}
	p.pos = end + 1
	return lo, hi, true
}

func (p *reParser) atom() *reNode {
	r := p.peek()
	switch r {
	case '(':
		p.pos++
		var n *reNode
		switch {
		case p.eat('?'):
			switch {
			case p.eat(':'):
				n = p.alt()
			case p.eat('='):
				n = &reNode{op: reLook, subs: []*reNode{p.alt()}}
			case p.eat('!'):
				n = &reNode{op: reLook, subs: []*reNode{p.alt()}, neg: true}
			default:
				p.fail("unsupported group (?%c", p.peek())
				return &reNode{op: reEmpty}
			}
		default:
			n = p.alt()
		}
		if !p.eat(')') {
			p.fail("missing )")
		}
		return n
	case '[':
		p.pos++
		return &reNode{op: reClass, cls: p.class()}
	case '.':
		p.pos++
		c := &charClass{neg: true, ranges: []runeRange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}}
		return &reNode{op: reClass, cls: c.seal()}
	case '$':
		p.pos++
		return &reNode{op: reEnd}
	case '^', '*', '+', '?', '{', ')':
		p.fail("unexpected %q", r)
		return &reNode{op: reEmpty}
	case '\\':
		p.pos++
		if p.eat('b') {
			return &reNode{op: reWordB}
		}
		c := &charClass{}
		if !p.escape(c, false) {
			return &reNode{op: reEmpty}
		}
		return &reNode{op: reClass, cls: c.seal()}
	}
	p.pos++
	c := &charClass{ranges: []runeRange{{r, r}}}
	return &reNode{op: reClass, cls: c.seal()}
}

// class parses the inside of [...] after the [.
func (p *reParser) class() *charClass {
	c := &charClass{}
	if p.eat('^') {
		c.neg = true
	}
	first := true
	for p.more() && (first || p.peek() != ']') {
		first = false
		lo, single := p.classAtom(c)
		if !single {
			continue
		}
		if p.peek() == '-' && p.pos+1 < len(p.rs) && p.rs[p.pos+1] != ']' {
			p.pos++
			hi, ok := p.classAtom(c)
			if !ok || hi < lo {
				p.fail("bad class range")
				break
			}
			c.ranges = append(c.ranges, runeRange{lo, hi})
			continue
		}
		c.ranges = append(c.ranges, runeRange{lo, lo})
	}
	if !p.eat(']') {
		p.fail("missing ]")
	}
	return c.seal()
}

// classAtom parses one member of a class: a character (returned, single
// true) or an escape that adds a set to c (single false).
func (p *reParser) classAtom(c *charClass) (rune, bool) {
	r := p.peek()
	p.pos++
	if r != '\\' {
		return r, true
	}
	if lit, ok := p.literalEscape(); ok {
		return lit, true
	}
	p.escape(c, true)
	return 0, false
}

// literalEscape parses an escape that stands for one character, after the
// backslash; it leaves the position alone if the escape is not one.
func (p *reParser) literalEscape() (rune, bool) {
	r := p.peek()
	switch r {
	case 'r':
		p.pos++
		return '\r', true
	case 'n':
		p.pos++
		return '\n', true
	case 't':
		p.pos++
		return '\t', true
	case 'f':
		p.pos++
		return '\f', true
	case 'v':
		p.pos++
		return '\v', true
	case '0':
		p.pos++
		return 0, true
	case 'x', 'u':
		n := 2
		if r == 'u' {
			n = 4
		}
		if p.pos+1+n > len(p.rs) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(p.rs[p.pos+1:p.pos+1+n]), 16, 32)
		if err != nil {
			return 0, false
		}
		p.pos += 1 + n
		return rune(v), true
	}
	if r > 0 && r < 0x80 && !isASCIIAlnum(r) {
		p.pos++
		return r, true
	}
	return 0, false
}

// escape parses a set escape after the backslash (\s \d \w \p{..} and, out
// of classes, their negations and single characters) into c.
func (p *reParser) escape(c *charClass, inClass bool) bool {
	if lit, ok := p.literalEscape(); ok {
		c.ranges = append(c.ranges, runeRange{lit, lit})
		return true
	}
	r := p.peek()
	p.pos++
	switch r {
	case 's', 'd', 'w':
		addShorthand(c, r)
		return true
	case 'S', 'D', 'W':
		if inClass {
			p.fail("negated shorthand \\%c inside a class", r)
			return false
		}
		addShorthand(c, r+'a'-'A')
		c.neg = true
		return true
	case 'p':
		if !p.eat('{') {
			p.fail("\\p without {")
			return false
		}
		end := p.pos
		for end < len(p.rs) && p.rs[end] != '}' {
			end++
		}
		name := string(p.rs[p.pos:min(end, len(p.rs))])
		p.pos = end + 1
		bit, ok := categoryBits[name]
		if !ok {
			p.fail("unsupported property \\p{%s}", name)
			return false
		}
		c.cats |= bit
		return true
	}
	p.fail("unsupported escape \\%c", r)
	return false
}

// categoryBits maps the \p{..} names of the patterns to class bits. The
// letter subcategories are all letters, as llama.cpp matches them.
var categoryBits = map[string]uint16{
	"L": cLetter, "Lu": cLetter, "Ll": cLetter, "Lt": cLetter, "Lm": cLetter, "Lo": cLetter,
	"N": cNumber, "P": cPunctuation, "M": cMark, "S": cSymbol,
}

func addShorthand(c *charClass, r rune) {
	switch r {
	case 's':
		c.cats |= cWhitespace
	case 'd':
		c.ranges = append(c.ranges, runeRange{'0', '9'})
	case 'w':
		c.ranges = append(c.ranges, runeRange{'0', '9'}, runeRange{'A', 'Z'}, runeRange{'a', 'z'}, runeRange{'_', '_'})
	}
}

func isASCIIAlnum(r rune) bool {
	return ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
}

// simplify flattens nested sequences and rewrites a positive one-character
// lookahead followed by a class, (?=[A])[B], as the class A∩B: the
// gpt-4o-style patterns spell "uppercase letter" that way, and as a class
// the repetition around it runs as a fast loop.
func simplify(n *reNode) *reNode {
	for i, s := range n.subs {
		n.subs[i] = simplify(s)
	}
	if n.op != reConcat {
		return n
	}
	var flat []*reNode
	for _, s := range n.subs {
		if s.op == reConcat {
			flat = append(flat, s.subs...)
		} else if s.op != reEmpty {
			flat = append(flat, s)
		}
	}
	var out []*reNode
	for i := 0; i < len(flat); i++ {
		s := flat[i]
		if s.op == reLook && !s.neg && s.subs[0].op == reClass && i+1 < len(flat) && flat[i+1].op == reClass && flat[i+1].cls.and == nil {
			b := *flat[i+1].cls
			b.and = s.subs[0].cls
			out = append(out, &reNode{op: reClass, cls: b.seal()})
			i++
			continue
		}
		out = append(out, s)
	}
	switch len(out) {
	case 0:
		return &reNode{op: reEmpty}
	case 1:
		return out[0]
	}
	n.subs = out
	return n
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
