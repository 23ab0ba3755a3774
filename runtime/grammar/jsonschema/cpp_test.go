package jsonschema

// A small reader of llama.cpp's C++ test files, enough for the schema
// cases: comments, identifiers, punctuation, "..." and '...' literals with
// their escapes, raw strings R"d(...)d", and adjacent literals joined. The
// arguments of each call to a named function come back as values: a
// string, an identifier, or a {...} list of values. llama.cpp's files are
// read at test time; nothing of them is copied.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/akunu-dev/akunu/internal/llamacpp"
	"github.com/akunu-dev/akunu/internal/proof"
)

type tokKind uint8

const (
	tokPunct tokKind = iota
	tokIdent
	tokString
)

type ctok struct {
	kind tokKind
	text string // the punctuation, the identifier, or the literal's value
	line int
}

// cval is one argument: a string, an identifier, or a list.
type cval struct {
	str   *string
	ident string
	list  []cval
	line  int
}

func (v cval) String() string {
	switch {
	case v.str != nil:
		return *v.str
	case v.ident != "":
		return v.ident
	}
	return fmt.Sprint(v.list)
}

func llamaSource(t *testing.T, rel string) string {
	t.Helper()
	dir, err := llamacpp.SourceDir()
	if err != nil {
		proof.Missing(t, "llama.cpp source "+rel, err.Error()+" (run scripts/fetch-llama-src.sh)")
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("llama.cpp source %s: %v", rel, err)
	}
	return string(b)
}

// lexCpp splits C++ source into tokens, joining adjacent string literals.
func lexCpp(src string) ([]ctok, error) {
	var out []ctok
	line := 1
	lastString := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
			continue
		}
		start := line
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			w := src[i:j]
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && (w == "R" || w == "u8" || w == "u8R" || w == "L" || w == "u" || w == "U") {
				i = j
				if strings.HasSuffix(w, "R") {
					s, n, err := rawLiteral(src, j)
					if err != nil {
						return nil, fmt.Errorf("line %d: %v", line, err)
					}
					line += strings.Count(src[j:n], "\n")
					out, lastString = appendString(out, lastString, s, start), true
					i = n
					continue
				}
				continue // the prefix of an ordinary literal
			}
			out = append(out, ctok{tokIdent, w, start})
			lastString = false
			i = j
			continue
		}
		if c == '"' || c == '\'' {
			s, n, err := quotedLiteral(src, i)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			i = n
			if c == '\'' {
				out = append(out, ctok{tokPunct, "'", start})
				lastString = false
				continue
			}
			out, lastString = appendString(out, lastString, s, start), true
			continue
		}
		out = append(out, ctok{tokPunct, string(c), start})
		lastString = false
		i++
	}
	return out, nil
}

func appendString(out []ctok, joined bool, s string, line int) []ctok {
	if joined {
		out[len(out)-1].text += s
		return out
	}
	return append(out, ctok{tokString, s, line})
}

// rawLiteral reads R"delim(...)delim" whose opening quote is at src[i].
func rawLiteral(src string, i int) (string, int, error) {
	open := strings.IndexByte(src[i:], '(')
	if open < 0 || open > 17 {
		return "", 0, fmt.Errorf("raw string without '('")
	}
	delim := src[i+1 : i+open]
	body := i + open + 1
	end := strings.Index(src[body:], ")"+delim+"\"")
	if end < 0 {
		return "", 0, fmt.Errorf("unterminated raw string")
	}
	return src[body : body+end], body + end + len(delim) + 2, nil
}

// quotedLiteral reads a "..." or '...' literal starting at src[i].
func quotedLiteral(src string, i int) (string, int, error) {
	q := src[i]
	var b strings.Builder
	for j := i + 1; j < len(src); {
		c := src[j]
		switch {
		case c == q:
			return b.String(), j + 1, nil
		case c == '\n':
			return "", 0, fmt.Errorf("newline in a literal")
		case c != '\\':
			b.WriteByte(c)
			j++
			continue
		}
		if j+1 >= len(src) {
			break
		}
		e := src[j+1]
		j += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			k := j - 1
			for k < len(src) && k < j+2 && src[k] >= '0' && src[k] <= '7' {
				k++
			}
			n, _ := strconv.ParseUint(src[j-1:k], 8, 8)
			b.WriteByte(byte(n))
			j = k
		case 'x':
			k := j
			for k < len(src) && strings.IndexByte("0123456789abcdefABCDEF", src[k]) >= 0 {
				k++
			}
			n, err := strconv.ParseUint(src[j:k], 16, 8)
			if err != nil {
				return "", 0, fmt.Errorf("bad \\x escape")
			}
			b.WriteByte(byte(n))
			j = k
		case 'u', 'U':
			w := 4
			if e == 'U' {
				w = 8
			}
			if j+w > len(src) {
				return "", 0, fmt.Errorf("short \\%c escape", e)
			}
			n, err := strconv.ParseUint(src[j:j+w], 16, 32)
			if err != nil || !utf8.ValidRune(rune(n)) {
				return "", 0, fmt.Errorf("bad \\%c escape", e)
			}
			b.WriteRune(rune(n))
			j += w
		case '\\', '"', '\'', '?':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		default:
			return "", 0, fmt.Errorf("unknown escape \\%c", e)
		}
	}
	return "", 0, fmt.Errorf("unterminated literal")
}

// callsOf returns the argument lists of every call fn(...) in toks whose
// arguments are all values (strings, identifiers, lists of them); a call
// with anything else (an expression, a variable joined with +) comes back
// with ok false so that the test can list it rather than drop it.
func callsOf(toks []ctok, fn string) (calls [][]cval, bad []int) {
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != tokIdent || toks[i].text != fn || toks[i+1].text != "(" || toks[i+1].kind != tokPunct {
			continue
		}
		if i > 0 && toks[i-1].kind == tokIdent && toks[i-1].text == "void" {
			continue // the definition
		}
		args, _, ok := values(toks, i+2, ")")
		if !ok {
			bad = append(bad, toks[i].line)
			continue
		}
		calls = append(calls, args)
	}
	return calls, bad
}

// values reads comma-separated values up to closer, from toks[i].
func values(toks []ctok, i int, closer string) ([]cval, int, bool) {
	var out []cval
	for i < len(toks) {
		t := toks[i]
		if t.kind == tokPunct && t.text == closer {
			return out, i + 1, true
		}
		var v cval
		switch {
		case t.kind == tokString:
			s := t.text
			v = cval{str: &s, line: t.line}
			i++
		case t.kind == tokIdent:
			v = cval{ident: t.text, line: t.line}
			i++
		case t.kind == tokPunct && t.text == "{":
			l, n, ok := values(toks, i+1, "}")
			if !ok {
				return nil, 0, false
			}
			v = cval{list: l, line: t.line}
			if l == nil {
				v.list = []cval{}
			}
			i = n
		default:
			return nil, 0, false
		}
		out = append(out, v)
		if i < len(toks) && toks[i].kind == tokPunct && toks[i].text == "," {
			i++
			continue
		}
		if i < len(toks) && toks[i].kind == tokPunct && toks[i].text == closer {
			continue
		}
		return nil, 0, false
	}
	return nil, 0, false
}
