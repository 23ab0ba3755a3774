package tokenizer

// The regex engine's front end: the syntax tree and its parser (see
// regex.go for what is supported and why).

import (
	"fmt"
	"strconv"
	"strings"
)

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
