package jsonschema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/akunu-dev/akunu/runtime/grammar"
)

// pattern turns a regular expression anchored by ^ and $ into GBNF for
// the string's content: literals, escapes (\d \w \s and their negations,
// escaped punctuation, \n \t \r, \uXXXX), classes, '.', groups ((...) and
// (?:...)), alternation and the quantifiers * + ? {m} {m,} {m,n}.
// Anything else is an error naming it.
func (c *converter) pattern(re, ptr, name string) (string, error) {
	if len(re) < 2 || re[0] != '^' || re[len(re)-1] != '$' {
		return "", c.unsupported(ptr, "a pattern not anchored by ^ and $")
	}
	p := &reParser{src: []rune(re[1 : len(re)-1])}
	out, err := p.alts(0)
	if err == nil && p.i < len(p.src) {
		err = fmt.Errorf("unbalanced ')' at %d", p.i+1)
	}
	if err == nil {
		err = checkClasses(out)
	}
	if err != nil {
		return "", c.unsupported(ptr, "pattern %q: %v", re, err)
	}
	return "(" + out + ")", nil
}

// checkClasses holds what a pattern became to GBNF's own rules (a class
// range that runs backwards, [z-a], is a regex error the translation
// passes through): the text is self-contained, so it parses alone.
func checkClasses(gbnf string) error {
	if _, err := grammar.Parse("root ::= " + gbnf); err != nil {
		var ge *grammar.Error
		if errors.As(err, &ge) {
			return errors.New(ge.Msg)
		}
		return err
	}
	return nil
}

type reParser struct {
	src []rune
	i   int
}

func (p *reParser) alts(depth int) (string, error) {
	if depth > 64 {
		return "", fmt.Errorf("groups nested too deep")
	}
	var alts []string
	for {
		seq, err := p.seq(depth)
		if err != nil {
			return "", err
		}
		if seq == "" {
			seq = `""`
		}
		alts = append(alts, seq)
		if p.i < len(p.src) && p.src[p.i] == '|' {
			p.i++
			continue
		}
		return strings.Join(alts, " | "), nil
	}
}

func (p *reParser) seq(depth int) (string, error) {
	var items []string
	for p.i < len(p.src) {
		r := p.src[p.i]
		var item string
		switch r {
		case '|', ')':
			return strings.Join(items, " "), nil
		case '(':
			p.i++
			if p.i+1 < len(p.src) && p.src[p.i] == '?' {
				if p.src[p.i+1] != ':' {
					return "", fmt.Errorf("group syntax (?%c", p.src[p.i+1])
				}
				p.i += 2
			}
			inner, err := p.alts(depth + 1)
			if err != nil {
				return "", err
			}
			if p.i >= len(p.src) || p.src[p.i] != ')' {
				return "", fmt.Errorf("unbalanced '('")
			}
			p.i++
			item = "(" + inner + ")"
		case '[':
			cls, err := p.class()
			if err != nil {
				return "", err
			}
			item = cls
		case '.':
			p.i++
			item = `[^\n]`
		case '\\':
			e, err := p.escape(false)
			if err != nil {
				return "", err
			}
			item = e
		case '^', '$':
			return "", fmt.Errorf("an anchor inside the pattern")
		case '*', '+', '?', '{':
			return "", fmt.Errorf("nothing to repeat before %q", r)
		default:
			p.i++
			item = grammar.Literal(string(r))
		}
		q, err := p.quantifier()
		if err != nil {
			return "", err
		}
		if q != "" && strings.HasPrefix(item, `"`) && len([]rune(item)) > 3 {
			item = "(" + item + ")"
		}
		items = append(items, item+q)
	}
	return strings.Join(items, " "), nil
}

func (p *reParser) quantifier() (string, error) {
	if p.i >= len(p.src) {
		return "", nil
	}
	switch r := p.src[p.i]; r {
	case '*', '+', '?':
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '?' || p.src[p.i] == '+') {
			return "", fmt.Errorf("lazy or possessive quantifiers")
		}
		return string(r), nil
	case '{':
		end := p.i
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end >= len(p.src) {
			return "", fmt.Errorf("unterminated {")
		}
		body := string(p.src[p.i+1 : end])
		var lo, hi int
		switch {
		case !strings.Contains(body, ","):
			if _, err := fmt.Sscanf(body, "%d", &lo); err != nil || fmt.Sprint(lo) != body {
				return "", fmt.Errorf("repetition {%s}", body)
			}
			hi = lo
		case strings.HasSuffix(body, ","):
			if _, err := fmt.Sscanf(body, "%d,", &lo); err != nil {
				return "", fmt.Errorf("repetition {%s}", body)
			}
			hi = -1
		default:
			if _, err := fmt.Sscanf(body, "%d,%d", &lo, &hi); err != nil || hi < lo {
				return "", fmt.Errorf("repetition {%s}", body)
			}
		}
		if lo > 1000 || hi > 1000 {
			return "", fmt.Errorf("repetition {%s} beyond 1000", body)
		}
		p.i = end + 1
		switch {
		case hi < 0:
			return fmt.Sprintf("{%d,}", lo), nil
		case lo == hi:
			return fmt.Sprintf("{%d}", lo), nil
		}
		return fmt.Sprintf("{%d,%d}", lo, hi), nil
	}
	return "", nil
}

// escape reads \x at p.i: a GBNF element, or (inClass) class content.
func (p *reParser) escape(inClass bool) (string, error) {
	if p.i+1 >= len(p.src) {
		return "", fmt.Errorf("a trailing backslash")
	}
	r := p.src[p.i+1]
	p.i += 2
	sets := map[rune][2]string{
		'd': {"0-9", "[0-9]"}, 'w': {"0-9A-Za-z_", "[0-9A-Za-z_]"}, 's': {` \t\n\r\f\v`, `[ \t\n\r\x0C\x0B]`},
		'D': {"", "[^0-9]"}, 'W': {"", "[^0-9A-Za-z_]"}, 'S': {"", `[^ \t\n\r\x0C\x0B]`},
	}
	if s, ok := sets[r]; ok {
		if inClass {
			if s[0] == "" {
				return "", fmt.Errorf(`\%c inside a class`, r)
			}
			return strings.ReplaceAll(strings.ReplaceAll(s[0], `\f`, `\x0C`), `\v`, `\x0B`), nil
		}
		return s[1], nil
	}
	var ch rune
	switch r {
	case 'n':
		ch = '\n'
	case 't':
		ch = '\t'
	case 'r':
		ch = '\r'
	case 'u':
		if p.i+4 > len(p.src) {
			return "", fmt.Errorf(`\u needs 4 hex digits`)
		}
		var v int
		if _, err := fmt.Sscanf(string(p.src[p.i:p.i+4]), "%04x", &v); err != nil {
			return "", fmt.Errorf(`\u needs 4 hex digits`)
		}
		p.i += 4
		ch = rune(v)
	default:
		if r < 0x80 && strings.ContainsRune(`.^$*+?()[]{}|\/-"`, r) {
			ch = r
		} else {
			return "", fmt.Errorf(`escape \%c`, r)
		}
	}
	if inClass {
		return classChar(ch), nil
	}
	return grammar.Literal(string(ch)), nil
}

func (p *reParser) class() (string, error) {
	p.i++ // [
	var b strings.Builder
	b.WriteByte('[')
	if p.i < len(p.src) && p.src[p.i] == '^' {
		b.WriteByte('^')
		p.i++
	}
	first := true
	for {
		if p.i >= len(p.src) {
			return "", fmt.Errorf("unterminated character class")
		}
		r := p.src[p.i]
		if r == ']' && !first {
			p.i++
			break
		}
		first = false
		switch r {
		case '\\':
			e, err := p.escape(true)
			if err != nil {
				return "", err
			}
			b.WriteString(e)
		case '-':
			b.WriteString("-")
			p.i++
		case '[':
			return "", fmt.Errorf("nested classes")
		default:
			b.WriteString(classChar(r))
			p.i++
		}
	}
	b.WriteByte(']')
	return b.String(), nil
}
