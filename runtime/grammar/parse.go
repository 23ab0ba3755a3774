package grammar

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/akunu-dev/akunu/internal/typo"
)

// Error is a grammar error at a place in the source (1-based line and
// column, counted in characters).
type Error struct {
	Line, Col int
	Msg       string
	wrap      error // a sentinel the error is an instance of (ErrLeftRecursion)
}

// Unwrap is the sentinel the error is an instance of, if any.
func (e *Error) Unwrap() error { return e.wrap }

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// Limits of what Parse accepts, so that hostile text costs bounded time
// and memory: llama.cpp's bound on the rules a repetition generates, a
// bound on nesting, and a bound on the rules of a grammar.
const (
	maxRepetition = 2000
	maxNesting    = 256
	maxRules      = 1 << 16
	maxSource     = 4 << 20
	maxElems      = 1 << 20 // elements of all rules, repetitions' copies included
)

// Parse reads a GBNF grammar whose start rule is "root".
func Parse(src string) (*Grammar, error) { return ParseRoot(src, "root") }

// ParseRoot reads a GBNF grammar (llama.cpp's dialect) whose start rule is
// root. Rules are numbered as llama.cpp numbers them (in order of first
// mention, generated rules named after the rule they occur in), so that
// rule ids match its parser's.
//
// It accepts what llama.cpp accepts, except, deliberately:
//   - a rule defined twice is an error (llama.cpp keeps the last);
//   - an escape beyond U+10FFFF is an error;
//   - a grammar of more than 4 MiB, 65536 rules, 1<<20 elements
//     (repetitions' copies included) or groups nested 256 deep is an
//     error, so hostile text costs bounded time and memory;
//   - left recursion through a rule that derives the empty string only
//     indirectly is an error too, unless every step of the cycle is a
//     reference last in its alternative (such a cycle returns to the same
//     parse stack: llama.cpp's "( [x]* )*");
//   - <text> tokens are kept as text (Elem.Text), for a vocabulary to
//     resolve, where llama.cpp tokenizes them while parsing.
func ParseRoot(src, root string) (*Grammar, error) {
	if len(src) > maxSource {
		return nil, &Error{Msg: fmt.Sprintf("grammar: %d bytes is more than the %d a grammar may hold", len(src), maxSource)}
	}
	p := &parser{src: src, ids: map[string]int{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	g := &Grammar{Rules: make([]Rule, len(p.names))}
	for id, name := range p.names {
		r := p.rules[id]
		if r == nil {
			at := p.refs[id]
			return nil, p.errAt(at, "undefined rule %s%s", quoteName(name), p.suggest(name))
		}
		g.Rules[id] = *r
		g.Rules[id].Name = name
	}
	rid, ok := p.ids[root]
	if !ok || p.rules[rid] == nil {
		return nil, &Error{Line: 1, Col: 1, Msg: fmt.Sprintf("no rule %s: the grammar starts there%s", quoteName(root), p.suggest(root))}
	}
	g.Root = rid
	if err := g.check(); err != nil {
		return nil, err
	}
	return g, nil
}

// parser is the state of one Parse.
type parser struct {
	src   string
	pos   int
	depth int
	ids   map[string]int
	names []string
	rules []*Rule
	refs  []int // the offset of each symbol's first mention
	elems int   // elements of all rules so far, repetitions' copies included
	lines []int // offsets of the lines' starts (where)
}

// errAt is an *Error at byte offset off.
func (p *parser) errAt(off int, format string, args ...any) *Error {
	line, col := p.where(off)
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// where is the 1-based line and column (in characters) of byte offset
// off, from an index of line starts built on first use, so that placing
// every rule costs time linear in the source.
func (p *parser) where(off int) (line, col int) {
	off = min(max(off, 0), len(p.src))
	if p.lines == nil {
		p.lines = []int{0}
		for i := 0; i < len(p.src); i++ {
			if p.src[i] == '\n' {
				p.lines = append(p.lines, i+1)
			}
		}
	}
	i := sort.SearchInts(p.lines, off+1) - 1 // the last line start <= off
	return i + 1, utf8.RuneCountInString(p.src[p.lines[i]:off]) + 1
}

func (p *parser) peek(k int) byte {
	if p.pos+k < len(p.src) {
		return p.src[p.pos+k]
	}
	return 0
}

// symbol is the id of a written name, numbered on first mention.
func (p *parser) symbol(name string, at int) int {
	if id, ok := p.ids[name]; ok {
		return id
	}
	return p.newSymbol(name, at)
}

// generated is a new rule named after base, as llama.cpp names it.
func (p *parser) generated(base string, at int) int {
	return p.newSymbol(base+"_"+strconv.Itoa(len(p.names)), at)
}

func (p *parser) newSymbol(name string, at int) int {
	id := len(p.names)
	p.ids[name] = id
	p.names = append(p.names, name)
	p.rules = append(p.rules, nil)
	p.refs = append(p.refs, at)
	return id
}

func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || '0' <= c && c <= '9'
}

// space skips blanks and comments, and newlines where newlineOK.
func (p *parser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\r' && p.src[p.pos] != '\n' {
				p.pos++
			}
		case newlineOK && (c == '\r' || c == '\n'):
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errAt(start, "expected a rule name, found %s", p.found(start))
	}
	return p.src[start:p.pos], nil
}

// found describes what is at off, for error messages.
func (p *parser) found(off int) string {
	if off >= len(p.src) {
		return "the end of the grammar"
	}
	r, _ := utf8.DecodeRuneInString(p.src[off:])
	switch r {
	case '\n', '\r':
		return "the end of the line"
	}
	return strconv.QuoteRune(r)
}

func (p *parser) parse() error {
	p.space(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return err
		}
		if len(p.names) > maxRules {
			return p.errAt(p.pos, "the grammar has more than %d rules", maxRules)
		}
	}
	return nil
}

func (p *parser) rule() error {
	start := p.pos
	name, err := p.name()
	if err != nil {
		return err
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		return p.errAt(p.pos, "expected ::= after rule name %s, found %s", quoteName(name), p.found(p.pos))
	}
	id := p.symbol(name, start)
	if r := p.rules[id]; r != nil && r.Line != 0 {
		prev := &Error{Line: r.Line, Col: r.Col}
		return p.errAt(start, "rule %s is defined twice (first at %d:%d)", quoteName(name), prev.Line, prev.Col)
	}
	p.pos += 3
	p.space(true)
	at := p.errAt(start, "")
	r := &Rule{Line: at.Line, Col: at.Col, Of: id}
	p.rules[id] = r // defined: a reference inside its own body is not undefined
	if err := p.alternates(name, id, r, false); err != nil {
		return err
	}
	switch {
	case p.pos >= len(p.src):
	case p.src[p.pos] == '\r':
		p.pos++
		if p.peek(0) == '\n' {
			p.pos++
		}
	case p.src[p.pos] == '\n':
		p.pos++
	default:
		return p.errAt(p.pos, "expected the end of the line after rule %s, found %s", quoteName(name), p.found(p.pos))
	}
	p.space(true)
	return nil
}

// alternates parses a|b|... into r (rule id, made for the rule named
// base).
func (p *parser) alternates(base string, id int, r *Rule, nested bool) error {
	seq, err := p.sequence(base, id, nested)
	if err != nil {
		return err
	}
	r.Alts = append(r.Alts[:0], seq)
	for p.peek(0) == '|' {
		p.pos++
		p.space(true)
		seq, err := p.sequence(base, id, nested)
		if err != nil {
			return err
		}
		r.Alts = append(r.Alts, seq)
	}
	return nil
}

// sequence parses the elements of one alternative.
func (p *parser) sequence(base string, owner int, nested bool) ([]Elem, error) {
	var seq []Elem
	last := -1 // start of the last symbol in seq, -1 before any
	nPrev := 1 // rules the last symbol stands for (llama.cpp's guard)
	for p.pos < len(p.src) {
		start := p.pos
		c := p.src[p.pos]
		before := len(seq)
		switch {
		case c == '"':
			p.pos++
			last, nPrev = len(seq), 1
			for {
				if p.pos >= len(p.src) {
					return nil, p.errAt(start, "unterminated literal: no closing \"")
				}
				if p.src[p.pos] == '"' {
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				if p.elems+len(seq)-before >= maxElems {
					return nil, p.errAt(start, "the grammar has more than %d elements", maxElems)
				}
				seq = append(seq, Elem{Kind: Chars, Ranges: []Range{{r, r}}})
			}
			p.pos++
			p.space(nested)
		case c == '[':
			e, err := p.class()
			if err != nil {
				return nil, err
			}
			last, nPrev = len(seq), 1
			seq = append(seq, e)
			p.space(nested)
		case c == '<' || c == '!':
			e, err := p.token()
			if err != nil {
				return nil, err
			}
			last, nPrev = len(seq), 1
			seq = append(seq, e)
			p.space(nested)
		case isWordChar(c):
			name, _ := p.name()
			id := p.symbol(name, start)
			p.space(nested)
			last, nPrev = len(seq), 1
			seq = append(seq, Elem{Kind: Ref, Rule: id})
		case c == '(':
			if p.depth >= maxNesting {
				return nil, p.errAt(start, "groups nested more than %d deep", maxNesting)
			}
			p.pos++
			p.space(true)
			before := len(p.names)
			sub := p.generated(base, start)
			r := &Rule{Of: owner}
			p.rules[sub] = r
			p.depth++
			err := p.alternates(base, owner, r, true)
			p.depth--
			if err != nil {
				return nil, err
			}
			nPrev = max(1, len(p.names)-before)
			last = len(seq)
			seq = append(seq, Elem{Kind: Ref, Rule: sub})
			if p.peek(0) != ')' {
				return nil, p.errAt(p.pos, "expected ')' to close the group at %s, found %s", p.errAt(start, "").pos(), p.found(p.pos))
			}
			p.pos++
			p.space(nested)
		case c == '.':
			last, nPrev = len(seq), 1
			seq = append(seq, Elem{Kind: Chars, Ranges: anyChar()})
			p.pos++
			p.space(nested)
		case c == '*' || c == '+' || c == '?':
			p.pos++
			p.space(nested)
			lo, hi := 0, -1
			if c == '+' {
				lo = 1
			} else if c == '?' {
				hi = 1
			}
			var err error
			if seq, nPrev, err = p.repeat(seq, last, nPrev, lo, hi, base, owner, start); err != nil {
				return nil, err
			}
		case c == '{':
			p.pos++
			p.space(nested)
			lo, err := p.int()
			if err != nil {
				return nil, err
			}
			p.space(nested)
			hi := lo
			switch p.peek(0) {
			case '}':
				p.pos++
			case ',':
				p.pos++
				p.space(nested)
				hi = -1
				if d := p.peek(0); '0' <= d && d <= '9' {
					if hi, err = p.int(); err != nil {
						return nil, err
					}
					p.space(nested)
				}
				if p.peek(0) != '}' {
					return nil, p.errAt(p.pos, "expected '}' to close the repetition, found %s", p.found(p.pos))
				}
				p.pos++
			default:
				return nil, p.errAt(p.pos, "expected ',' or '}' in the repetition, found %s", p.found(p.pos))
			}
			p.space(nested)
			if lo > maxRepetition {
				return nil, p.errAt(start, "repetition %.40s: more than %d repetitions", strings.Join(strings.Fields(p.src[start:p.pos]), ""), maxRepetition)
			}
			if hi > maxRepetition {
				hi = -1 // llama.cpp reads a huge bound as none
			}
			if hi >= 0 && hi < lo {
				return nil, p.errAt(start, "repetition %.40s: the maximum is below the minimum", strings.Join(strings.Fields(p.src[start:p.pos]), ""))
			}
			if seq, nPrev, err = p.repeat(seq, last, nPrev, lo, hi, base, owner, start); err != nil {
				return nil, err
			}
		default:
			return seq, nil
		}
		if c != '*' && c != '+' && c != '?' && c != '{' { // repeat counts its copies
			p.elems += len(seq) - before
		}
		if p.elems > maxElems {
			return nil, p.errAt(start, "the grammar has more than %d elements", maxElems)
		}
		if len(p.names) > maxRules {
			return nil, p.errAt(start, "the grammar has more than %d rules", maxRules)
		}
	}
	return seq, nil
}

// pos formats an *Error's place.
func (e *Error) pos() string { return fmt.Sprintf("%d:%d", e.Line, e.Col) }

// repeat applies a repetition {lo,hi} (hi < 0: unbounded) to the symbol
// of seq that starts at last, as llama.cpp rewrites it: S{m,n} becomes m
// copies of S then a chain of n-m optional rules; S{m,} m copies then a
// right-recursive rule.
func (p *parser) repeat(seq []Elem, last, nPrev, lo, hi int, base string, owner, at int) ([]Elem, int, error) {
	if last < 0 || last >= len(seq) {
		return nil, 0, p.errAt(at, "a repetition needs an item before it")
	}
	total := 1
	if hi > 0 {
		total = hi
	} else if lo > 0 {
		total = lo
	}
	if nPrev*total > maxRepetition {
		return nil, 0, p.errAt(at, "the repetition would make more than %d copies of its item's rules", maxRepetition)
	}
	nOpt := hi - lo
	if hi < 0 {
		nOpt = 1
	}
	copies := max(lo-1, 0) + nOpt
	p.elems += copies * (len(seq) - last + 1)
	if p.elems > maxElems {
		return nil, 0, p.errAt(at, "the repetition would make the grammar more than %d elements", maxElems)
	}
	prev := append([]Elem(nil), seq[last:]...)
	if lo == 0 {
		seq = seq[:last]
	} else {
		for i := 1; i < lo; i++ {
			seq = append(seq, prev...)
		}
	}
	lastRec := 0
	for i := 0; i < nOpt; i++ {
		id := p.generated(base, at)
		body := append([]Elem(nil), prev...)
		if i > 0 || hi < 0 {
			ref := lastRec
			if hi < 0 {
				ref = id
			}
			body = append(body, Elem{Kind: Ref, Rule: ref})
		}
		p.rules[id] = &Rule{Alts: [][]Elem{body, nil}, Of: owner}
		lastRec = id
	}
	if nOpt > 0 {
		seq = append(seq, Elem{Kind: Ref, Rule: lastRec})
	}
	return seq, nPrev * total, nil
}

func (p *parser) int() (int, error) {
	start := p.pos
	for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == start {
		return 0, p.errAt(start, "expected a number, found %s", p.found(start))
	}
	n, err := strconv.ParseUint(p.src[start:p.pos], 10, 64)
	if err != nil { // llama.cpp's stoull refuses it too
		return 0, p.errAt(start, "repetition count %.20s is too large", p.src[start:p.pos])
	}
	// Any count above the bound means the same (too many, or no maximum):
	// clamp it so that it fits an int.
	return int(min(n, maxRepetition+1)), nil
}

// char reads one character of a literal or class: an escape or a UTF-8
// character.
func (p *parser) char() (rune, error) {
	start := p.pos
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errAt(start, "invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, p.errAt(start, "unterminated escape at the end of the grammar")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	hex := 0
	switch c {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']', '-':
		return rune(c), nil
	default:
		r, _ := utf8.DecodeRuneInString(p.src[start+1:])
		return 0, p.errAt(start, "unknown escape \\%c", r)
	}
	if p.pos+hex > len(p.src) {
		return 0, p.errAt(start, "\\%c needs %d hex digits", c, hex)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+hex], 16, 32)
	if err != nil {
		return 0, p.errAt(start, "\\%c needs %d hex digits, found %q", c, hex, p.src[p.pos:p.pos+hex])
	}
	p.pos += hex
	if v > uint64(MaxRune) {
		return 0, p.errAt(start, "\\%c%s is beyond U+10FFFF", c, p.src[p.pos-hex:p.pos])
	}
	return rune(v), nil
}

// class reads [...] or [^...] into a Chars element.
func (p *parser) class() (Elem, error) {
	start := p.pos
	p.pos++
	neg := false
	if p.peek(0) == '^' {
		neg = true
		p.pos++
	}
	var rs []Range
	for {
		if p.pos >= len(p.src) {
			return Elem{}, p.errAt(start, "unterminated character class: no closing ]")
		}
		if p.src[p.pos] == ']' {
			break
		}
		lo, err := p.char()
		if err != nil {
			return Elem{}, err
		}
		hi := lo
		if p.peek(0) == '-' && p.peek(1) != ']' {
			if p.pos+1 >= len(p.src) {
				return Elem{}, p.errAt(start, "unterminated character class: no closing ]")
			}
			p.pos++
			at := p.pos
			if hi, err = p.char(); err != nil {
				return Elem{}, err
			}
			if hi < lo {
				return Elem{}, p.errAt(at, "range %s-%s runs backwards", strconv.QuoteRune(lo), strconv.QuoteRune(hi))
			}
		}
		rs = append(rs, Range{lo, hi})
	}
	p.pos++
	rs = normalize(rs)
	if neg {
		rs = complement(rs)
	}
	return Elem{Kind: Chars, Ranges: rs}, nil
}

// token reads <[id]>, <text> or their negations !<...>.
func (p *parser) token() (Elem, error) {
	start := p.pos
	e := Elem{Kind: Token}
	if p.src[p.pos] == '!' {
		e.Not = true
		p.pos++
	}
	if p.peek(0) != '<' {
		return Elem{}, p.errAt(p.pos, "expected '<' of a token after '!', found %s", p.found(p.pos))
	}
	end := strings.IndexByte(p.src[p.pos:], '>')
	if end < 0 {
		return Elem{}, p.errAt(start, "unterminated token: no closing >")
	}
	body := p.src[p.pos+1 : p.pos+end]
	p.pos += end + 1
	if strings.HasPrefix(body, "[") {
		n, err := strconv.ParseUint(strings.TrimSuffix(body[1:], "]"), 10, 31)
		if err != nil || !strings.HasSuffix(body, "]") {
			return Elem{}, p.errAt(start, "token <%s>: expected a token id in <[...]>", body)
		}
		e.Token = int32(n)
		return e, nil
	}
	if body == "" {
		return Elem{}, p.errAt(start, "an empty token <>")
	}
	e.Token, e.Text = -1, "<"+body+">"
	return e, nil
}

// anyChar is what '.' matches: every code point.
func anyChar() []Range { return []Range{{0, MaxRune}} }

// normalize sorts ranges and merges overlapping and adjacent ones.
func normalize(rs []Range) []Range {
	out := append([]Range(nil), rs...)
	for i := 1; i < len(out); i++ { // insertion sort: classes are short
		for j := i; j > 0 && out[j].Lo < out[j-1].Lo; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	n := 0
	for _, r := range out {
		if n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

// complement is every code point outside rs (normalized).
func complement(rs []Range) []Range {
	var out []Range
	next := rune(0)
	for _, r := range rs {
		if r.Lo > next {
			out = append(out, Range{next, r.Lo - 1})
		}
		next = r.Hi + 1
	}
	if next <= MaxRune {
		out = append(out, Range{next, MaxRune})
	}
	return out
}

// suggest is " (did you mean x?)" for the defined rule nearest to name.
func (p *parser) suggest(name string) string {
	const maxSuggest = 64 // longer names are not typos worth a guess
	if len(name) > maxSuggest {
		return ""
	}
	best, bd := "", 1<<30
	for id, n := range p.names {
		if p.rules[id] == nil || p.rules[id].Line == 0 || n == name || len(n) > maxSuggest {
			continue
		}
		if d := typo.Distance(name, n); d < bd || d == bd && n < best {
			best, bd = n, d
		}
	}
	if best == "" || bd > max(2, len(name)/3) {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// quoteName quotes a rule name for a message, cut to a readable length.
func quoteName(n string) string {
	const limit = 64
	if len(n) > limit {
		return strconv.Quote(n[:limit]) + "..."
	}
	return strconv.Quote(n)
}

// ErrLeftRecursion is wrapped by the error of a left-recursive grammar.
var ErrLeftRecursion = errors.New("left recursion")
