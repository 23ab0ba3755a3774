package chat

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows Jinja's (jinja2/lexer.py) with the settings Hugging Face
// renders chat templates with: trim_blocks and lstrip_blocks on,
// keep_trailing_newline off, default delimiters, no line statements. Its
// whitespace rules decide the exact bytes of a prompt, so they are copied
// rule for rule:
//
//   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}",
//     "-#}" strip all whitespace after it.
//   - trim_blocks: one "\n" right after "%}" or "#}" is dropped ("+%}" keeps it).
//   - lstrip_blocks: spaces and tabs between the start of a line and "{%" or
//     "{#" are dropped ("{%+" keeps them); never before "{{".
//   - "\r\n" and "\r" become "\n", and one trailing newline of the source is
//     dropped.

type tokKind uint8

const (
	tEOF tokKind = iota
	tData
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
)

type token struct {
	kind tokKind
	off  int    // byte offset in the normalized source
	val  string // data, name, operator, or the decoded string literal
	ival int64
	fval float64
}

// source is a template's normalized text with its line starts, to turn byte
// offsets into line:col.
type source struct {
	text  string
	lines []int // byte offset of each line's start
}

func newSource(raw string) *source {
	t := raw
	if strings.Contains(t, "\r") {
		t = strings.ReplaceAll(t, "\r\n", "\n")
		t = strings.ReplaceAll(t, "\r", "\n")
	}
	t = strings.TrimSuffix(t, "\n")
	s := &source{text: t, lines: []int{0}}
	for i := 0; i < len(t); i++ {
		if t[i] == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

func (s *source) pos(off int) Pos {
	if off < 0 {
		off = 0
	}
	if off > len(s.text) {
		off = len(s.text)
	}
	line := sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > off }) - 1
	col := utf8.RuneCountInString(s.text[s.lines[line]:off]) + 1
	return Pos{Line: line + 1, Col: col}
}

// pySpace is Python's str.isspace, which Jinja's rstrip and \s use: Go's
// unicode.IsSpace plus the four ASCII information separators.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

func allSpace(s string) bool {
	for _, r := range s {
		if !pySpace(r) {
			return false
		}
	}
	return true
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !pySpace(r) {
			break
		}
		i += n
	}
	return i
}

type lexer struct {
	src    string
	pos    int
	toks   []token
	stack  []byte // open brackets inside a tag
	lineSt bool   // the last match ended with "\n" (Jinja's line_starting)
}

func lex(src string) []token {
	lx := &lexer{src: src, lineSt: true}
	lx.run()
	return lx.toks
}

func (lx *lexer) emit(t token) { lx.toks = append(lx.toks, t) }

func (lx *lexer) run() {
	s := lx.src
	for lx.pos < len(s) {
		i := nextOpener(s, lx.pos)
		if i < 0 {
			lx.emit(token{kind: tData, off: lx.pos, val: s[lx.pos:]})
			lx.pos = len(s)
			break
		}
		textOff := lx.pos
		text := s[lx.pos:i]
		kind := s[i+1]
		j := i + 2
		sign := byte(0)
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			sign = s[j]
			j++
		}
		rawEnd := -1
		if kind == '%' {
			rawEnd = matchRawBegin(s, j)
		}
		switch {
		case sign == '-':
			text = strings.TrimRightFunc(text, pySpace)
		case sign != '+' && kind != '{':
			text = lstripLine(text, lx.lineSt)
		}
		if text != "" {
			lx.emit(token{kind: tData, off: textOff, val: text})
		}
		lx.lineSt = false
		switch {
		case rawEnd >= 0:
			lx.pos = rawEnd
			lx.lineSt = s[rawEnd-1] == '\n'
			lx.raw(i)
		case kind == '#':
			lx.comment(i, j)
		case kind == '{':
			lx.emit(token{kind: tVarBegin, off: i})
			lx.pos = j
			lx.tag(false, i)
		default:
			lx.emit(token{kind: tBlockBegin, off: i})
			lx.pos = j
			lx.tag(true, i)
		}
	}
	lx.emit(token{kind: tEOF, off: len(s)})
}

// lstripLine drops the whitespace between the last line start of text and a
// block tag, if that is all there is (lstrip_blocks).
func lstripLine(text string, lineStarting bool) string {
	l := strings.LastIndexByte(text, '\n') + 1
	if l > 0 || lineStarting {
		if rest := text[l:]; rest != "" && allSpace(rest) {
			return text[:l]
		}
	}
	return text
}

// nextOpener finds the next "{{", "{%" or "{#" at or after from.
func nextOpener(s string, from int) int {
	for i := from; ; i++ {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 || i+j+1 >= len(s) {
			return -1
		}
		i += j
		if c := s[i+1]; c == '{' || c == '%' || c == '#' {
			return i
		}
	}
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at j (after "{%" and its
// sign) and returns the offset after it, or -1. No trim_blocks newline is
// dropped after "{% raw %}": Jinja's rule for it has none.
func matchRawBegin(s string, j int) int {
	k := skipSpace(s, j)
	if !strings.HasPrefix(s[k:], "raw") {
		return -1
	}
	k += 3
	if k < len(s) && isNameChar(rune(s[k])) {
		return -1
	}
	k = skipSpace(s, k)
	switch {
	case strings.HasPrefix(s[k:], "-%}"):
		return skipSpace(s, k+3)
	case strings.HasPrefix(s[k:], "%}"):
		return k + 2
	}
	return -1
}

func (lx *lexer) raw(open int) {
	s := lx.src
	for p := lx.pos; p+1 < len(s); p++ {
		if s[p] != '{' || s[p+1] != '%' {
			continue
		}
		k := p + 2
		sign := byte(0)
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			sign = s[k]
			k++
		}
		k = skipSpace(s, k)
		if !strings.HasPrefix(s[k:], "endraw") {
			continue
		}
		k = skipSpace(s, k+6)
		end := -1
		switch {
		case strings.HasPrefix(s[k:], "+%}"):
			end = k + 3
		case strings.HasPrefix(s[k:], "-%}"):
			end = skipSpace(s, k+3)
		case strings.HasPrefix(s[k:], "%}"):
			end = k + 2
			if end < len(s) && s[end] == '\n' {
				end++
			}
		}
		if end < 0 {
			continue
		}
		text := s[lx.pos:p]
		switch {
		case sign == '-':
			text = strings.TrimRightFunc(text, pySpace)
		case sign != '+':
			text = lstripLine(text, lx.lineSt)
		}
		if text != "" {
			lx.emit(token{kind: tData, off: lx.pos, val: text})
		}
		lx.pos = end
		lx.lineSt = s[end-1] == '\n'
		return
	}
	fail(open, ErrSyntax, "missing end of raw directive")
}

func (lx *lexer) comment(open, j int) {
	s := lx.src
	if j >= len(s) {
		// Jinja's lexer stops quietly on a "{#" that ends the source.
		lx.pos = len(s)
		return
	}
	q := strings.Index(s[j:], "#}")
	if q < 0 {
		fail(open, ErrSyntax, "missing end of comment tag")
	}
	q += j
	end := q + 2
	switch {
	case q-1 >= j && s[q-1] == '-':
		end = skipSpace(s, end)
	case q-1 >= j && s[q-1] == '+':
	default:
		if end < len(s) && s[end] == '\n' {
			end++
		}
	}
	lx.pos = end
	lx.lineSt = s[end-1] == '\n'
}

var ops2 = []string{"**", "//", "==", "!=", ">=", "<="}

const ops1 = "+-/*%~[](){}<>=.:|,;"

// tag lexes the inside of a {{ }} or {% %} up to and including its end.
func (lx *lexer) tag(block bool, open int) {
	s := lx.src
	lx.stack = lx.stack[:0]
	for {
		p := lx.pos
		if p >= len(s) {
			if block {
				fail(open, ErrSyntax, "unexpected end of template: unclosed '{%%'")
			}
			fail(open, ErrSyntax, "unexpected end of template: unclosed '{{'")
		}
		if len(lx.stack) == 0 {
			if end, ok := lx.tagEnd(block); ok {
				kind := tVarEnd
				if block {
					kind = tBlockEnd
				}
				lx.emit(token{kind: kind, off: p})
				lx.pos = end
				lx.lineSt = s[end-1] == '\n'
				return
			}
		}
		r, n := utf8.DecodeRuneInString(s[p:])
		switch {
		case pySpace(r):
			lx.pos = skipSpace(s, p)
		case r >= '0' && r <= '9':
			lx.number()
		case r == '_' || unicode.IsLetter(r):
			e := p + n
			for e < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[e:])
				if !isNameChar(r2) {
					break
				}
				e += n2
			}
			lx.emit(token{kind: tName, off: p, val: s[p:e]})
			lx.pos = e
		case r == '\'' || r == '"':
			lx.str()
		default:
			lx.operator()
		}
	}
}

func isNameChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

func (lx *lexer) tagEnd(block bool) (int, bool) {
	s, p := lx.src, lx.pos
	if block {
		switch {
		case strings.HasPrefix(s[p:], "+%}"):
			return p + 3, true
		case strings.HasPrefix(s[p:], "-%}"):
			return skipSpace(s, p+3), true
		case strings.HasPrefix(s[p:], "%}"):
			e := p + 2
			if e < len(s) && s[e] == '\n' {
				e++
			}
			return e, true
		}
		return 0, false
	}
	switch {
	case strings.HasPrefix(s[p:], "-}}"):
		return skipSpace(s, p+3), true
	case strings.HasPrefix(s[p:], "}}"):
		return p + 2, true
	}
	return 0, false
}

func (lx *lexer) operator() {
	s, p := lx.src, lx.pos
	for _, op := range ops2 {
		if strings.HasPrefix(s[p:], op) {
			lx.emit(token{kind: tOp, off: p, val: op})
			lx.pos += 2
			return
		}
	}
	c := s[p]
	if strings.IndexByte(ops1, c) < 0 {
		r, _ := utf8.DecodeRuneInString(s[p:])
		fail(p, ErrSyntax, "unexpected character %q", r)
	}
	switch c {
	case '(', '[', '{':
		lx.stack = append(lx.stack, c)
	case ')', ']', '}':
		if len(lx.stack) == 0 {
			fail(p, ErrSyntax, "unexpected '%c'", c)
		}
		want := map[byte]byte{'(': ')', '[': ']', '{': '}'}[lx.stack[len(lx.stack)-1]]
		if want != c {
			fail(p, ErrSyntax, "unexpected '%c', expected '%c'", c, want)
		}
		lx.stack = lx.stack[:len(lx.stack)-1]
	}
	lx.emit(token{kind: tOp, off: p, val: string(c)})
	lx.pos++
}

// digits matches Jinja's `(\d+_)*\d+` at i and returns its end, or i.
func digits(s string, i int, ok func(byte) bool) int {
	e := i
	for e < len(s) && ok(s[e]) {
		e++
		if e+1 < len(s) && s[e] == '_' && ok(s[e+1]) {
			e++
		}
	}
	return e
}

func isDec(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) number() {
	s, p := lx.src, lx.pos
	// Floats first, as Jinja tries its float rule before the integer one;
	// a number right after "." is never a float (foo.0.1 is two lookups).
	if p == 0 || s[p-1] != '.' {
		e := digits(s, p, isDec)
		f := e
		if f+1 < len(s) && s[f] == '.' && isDec(s[f+1]) {
			f = digits(s, f+1, isDec)
		}
		isFloat := f > e
		if f < len(s) && (s[f] == 'e' || s[f] == 'E') {
			g := f + 1
			if g < len(s) && (s[g] == '+' || s[g] == '-') {
				g++
			}
			if g < len(s) && isDec(s[g]) {
				f = digits(s, g, isDec)
				isFloat = true
			}
		}
		if isFloat {
			text := strings.ReplaceAll(s[p:f], "_", "")
			v, err := strconv.ParseFloat(text, 64)
			if err != nil && !isRangeErr(err) {
				fail(p, ErrSyntax, "invalid float literal %q", s[p:f])
			}
			lx.emit(token{kind: tFloat, off: p, fval: v})
			lx.pos = f
			return
		}
	}
	e := p + 1
	if s[p] == '0' && e < len(s) {
		var ok func(byte) bool
		switch s[e] | 0x20 {
		case 'b':
			ok = func(c byte) bool { return c == '0' || c == '1' }
		case 'o':
			ok = func(c byte) bool { return c >= '0' && c <= '7' }
		case 'x':
			ok = func(c byte) bool { return isDec(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
		}
		if ok != nil {
			k := e + 1
			for k < len(s) {
				if ok(s[k]) {
					k++
				} else if s[k] == '_' && k+1 < len(s) && ok(s[k+1]) {
					k += 2
				} else {
					break
				}
			}
			if k > e+1 {
				e = k
			}
		} else {
			// Decimal zero: `0(_?0)*`.
			for {
				if e < len(s) && s[e] == '0' {
					e++
				} else if e+1 < len(s) && s[e] == '_' && s[e+1] == '0' {
					e += 2
				} else {
					break
				}
			}
		}
	} else if s[p] != '0' {
		e = digits(s, p, isDec)
	}
	text := strings.ReplaceAll(s[p:e], "_", "")
	v, err := strconv.ParseInt(text, 0, 64)
	if err != nil {
		fail(p, ErrUnsupported, "integer literal %s does not fit in 64 bits", s[p:e])
	}
	lx.emit(token{kind: tInt, off: p, ival: v})
	lx.pos = e
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// str lexes a quoted literal and decodes it the way Jinja does: Python's
// unicode-escape codec over the body.
func (lx *lexer) str() {
	s, p := lx.src, lx.pos
	q := s[p]
	i := p + 1
	for i < len(s) && s[i] != q {
		if s[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(s) {
		fail(p, ErrSyntax, "unterminated string literal")
	}
	v, bad := unescape(s[p+1 : i])
	if bad != "" {
		fail(p, ErrSyntax, "%s", bad)
	}
	lx.emit(token{kind: tString, off: p, val: v})
	lx.pos = i + 1
}

// unescape implements Python's unicode-escape decoding of a string body.
// Unknown escapes stay as written, like Python's.
func unescape(body string) (string, string) {
	if strings.IndexByte(body, '\\') < 0 {
		return body, ""
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(body) {
			return "", "\\ at end of string"
		}
		i++
		c = body[i]
		switch c {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, k := 0, 0
			for k < 3 && i+k < len(body) && body[i+k] >= '0' && body[i+k] <= '7' {
				v = v*8 + int(body[i+k]-'0')
				k++
			}
			b.WriteRune(rune(v))
			i += k - 1
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			h := body[i+1 : min(i+1+n, len(body))]
			v, err := strconv.ParseUint(h, 16, 32)
			if len(h) != n || err != nil {
				return "", "truncated \\" + string(c) + " escape"
			}
			if v > unicode.MaxRune {
				return "", "illegal Unicode character"
			}
			b.WriteRune(rune(v))
			i += n
		case 'N':
			return "", "\\N{...} escapes are not supported"
		default:
			if c >= 0x80 {
				// Python first turns a non-ASCII character into its
				// backslash escape, so "\é" decodes to the text `\xe9`.
				r, n := utf8.DecodeRuneInString(body[i:])
				switch {
				case r < 0x100:
					b.WriteString("\\x" + hex(uint64(r), 2))
				case r < 0x10000:
					b.WriteString("\\u" + hex(uint64(r), 4))
				default:
					b.WriteString("\\U" + hex(uint64(r), 8))
				}
				i += n - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), ""
}

func hex(v uint64, width int) string {
	h := strconv.FormatUint(v, 16)
	for len(h) < width {
		h = "0" + h
	}
	return h
}
