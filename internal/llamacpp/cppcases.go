package llamacpp

import (
	"fmt"
	"strings"
)

// Arg is one argument of a C++ call read by Calls: a string (adjacent
// literals concatenated), a brace list, or other tokens as text (an
// identifier, a number, an expression such as token(10) + "x").
type Arg struct {
	Str    string
	IsStr  bool
	List   []Arg
	IsList bool
	Text   string
}

// Calls finds every call of fn in C++ source (llama.cpp's tests) and
// returns each call's arguments: how the tests read llama.cpp's test
// cases as data. It understands string literals (escapes, raw strings
// R"d(...)d", adjacent concatenation), brace lists and parentheses; an
// argument holding anything else keeps its text.
func Calls(src, fn string) ([][]Arg, error) {
	var out [][]Arg
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], fn+"(")
		if j < 0 {
			break
		}
		at := i + j
		i = at + len(fn) + 1
		if at > 0 && (isIdent(src[at-1]) || src[at-1] == '.' || src[at-1] == '>') {
			continue
		}
		// Skip the definition: "static void fn(const std::string & ...".
		pre := strings.TrimRight(src[max(0, at-40):at], " \t")
		if strings.HasSuffix(pre, "void") || strings.HasSuffix(pre, "bool") || strings.HasSuffix(pre, "auto") {
			continue
		}
		p := &cpp{s: src, i: i}
		args, err := p.list(')')
		if err != nil {
			return nil, fmt.Errorf("%s call at byte %d: %w", fn, at, err)
		}
		out = append(out, args)
		i = p.i
	}
	return out, nil
}

func isIdent(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

type cpp struct {
	s string
	i int
}

func (p *cpp) skipSpace() {
	for p.i < len(p.s) {
		switch {
		case p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r':
			p.i++
		case strings.HasPrefix(p.s[p.i:], "//"):
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case strings.HasPrefix(p.s[p.i:], "/*"):
			k := strings.Index(p.s[p.i+2:], "*/")
			if k < 0 {
				p.i = len(p.s)
				return
			}
			p.i += k + 4
		default:
			return
		}
	}
}

// list reads comma-separated arguments up to close.
func (p *cpp) list(close byte) ([]Arg, error) {
	var args []Arg
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated argument list")
		}
		if p.s[p.i] == close {
			p.i++
			return args, nil
		}
		a, err := p.arg(close)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		}
	}
}

// arg reads one argument: up to a comma or close at depth zero.
func (p *cpp) arg(close byte) (Arg, error) {
	var a Arg
	var text strings.Builder
	strOnly, any := true, false
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return a, fmt.Errorf("unterminated argument")
		}
		c := p.s[p.i]
		if c == ',' || c == close {
			break
		}
		switch {
		case c == '"' || c == 'R' && p.i+1 < len(p.s) && p.s[p.i+1] == '"':
			s, err := p.str()
			if err != nil {
				return a, err
			}
			a.Str += s
			text.WriteString(fmt.Sprintf("%q", s))
			any = true
		case c == '\'': // a character literal ('"' must not open a string)
			k := p.i + 1
			for k < len(p.s) && p.s[k] != '\'' {
				if p.s[k] == '\\' {
					k++
				}
				k++
			}
			text.WriteString(p.s[p.i:min(k+1, len(p.s))])
			p.i = k + 1
			strOnly = false
			any = true
		case c == '{':
			p.i++
			l, err := p.list('}')
			if err != nil {
				return a, err
			}
			if !any {
				a.List, a.IsList = l, true
			}
			strOnly = false
			text.WriteString("{...}")
			any = true
		case c == '(':
			p.i++
			l, err := p.list(')')
			if err != nil {
				return a, err
			}
			text.WriteString("(")
			for k, x := range l {
				if k > 0 {
					text.WriteString(",")
				}
				text.WriteString(x.Text)
			}
			text.WriteString(")")
			strOnly = false
			any = true
		default:
			text.WriteByte(c)
			p.i++
			strOnly = false
			any = true
		}
	}
	a.Text = text.String()
	a.IsStr = strOnly && any && !a.IsList
	if a.IsList && a.Text != "{...}" {
		a.IsList = false
	}
	return a, nil
}

// str reads a string literal (plain or raw) at p.i.
func (p *cpp) str() (string, error) {
	if p.s[p.i] == 'R' {
		open := strings.IndexByte(p.s[p.i+2:], '(')
		if open < 0 {
			return "", fmt.Errorf("bad raw string")
		}
		delim := p.s[p.i+2 : p.i+2+open]
		start := p.i + 2 + open + 1
		end := strings.Index(p.s[start:], ")"+delim+`"`)
		if end < 0 {
			return "", fmt.Errorf("unterminated raw string")
		}
		p.i = start + end + len(delim) + 2
		return p.s[start : start+end], nil
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), nil
		case '\\':
			if p.i+1 >= len(p.s) {
				return "", fmt.Errorf("unterminated string")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'x':
				v, n := 0, 0
				for n < 2 && p.i < len(p.s) && strings.IndexByte("0123456789abcdefABCDEF", p.s[p.i]) >= 0 {
					v = v*16 + strings.IndexByte("0123456789abcdef", lower(p.s[p.i]))
					p.i++
					n++
				}
				b.WriteByte(byte(v))
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				v := 0
				for k := 0; k < n && p.i < len(p.s); k++ {
					v = v*16 + strings.IndexByte("0123456789abcdef", lower(p.s[p.i]))
					p.i++
				}
				b.WriteRune(rune(v))
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("unterminated string")
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 32
	}
	return c
}
