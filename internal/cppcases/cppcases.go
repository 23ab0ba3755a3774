package cppcases

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a C++ token.
type Kind uint8

const (
	Ident Kind = iota
	Number
	String // a string literal, value decoded
	Char   // a character literal, value decoded
	Punct
)

type Tok struct {
	Kind Kind
	Text string // the source text (Ident, Number, Punct) or the decoded value (String, Char)
	Line int
}

// Tokenize splits C++ source into tokens, dropping comments and
// preprocessor lines.
func Tokenize(src string) ([]Tok, error) {
	var toks []Tok
	line := 1
	i := 0
	bol := true // only blanks since the line began
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			bol = true
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#' && bol:
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					line++
					i++
				}
				i++
			}
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
			i += 2 + end + 2
			continue
		}
		bol = false
		start, startLine := i, line
		switch {
		case isIdentStart(c):
			for i < len(src) && (isIdentStart(src[i]) || '0' <= src[i] && src[i] <= '9') {
				i++
			}
			word := src[start:i]
			if i < len(src) && (src[i] == '"' || src[i] == '\'') && isLiteralPrefix(word) {
				var v string
				var err error
				if strings.HasSuffix(word, "R") {
					v, i, err = raw(src, i)
				} else {
					v, i, err = quoted(src, i)
				}
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", startLine, err)
				}
				line += strings.Count(src[start:i], "\n")
				kind := String
				if src[start+len(word)] == '\'' {
					kind = Char
				}
				toks = append(toks, Tok{kind, v, startLine})
				continue
			}
			toks = append(toks, Tok{Ident, word, startLine})
		case '0' <= c && c <= '9':
			for i < len(src) && (isIdentStart(src[i]) || '0' <= src[i] && src[i] <= '9' || src[i] == '.' || src[i] == '\'') {
				i++
			}
			toks = append(toks, Tok{Number, strings.ReplaceAll(src[start:i], "'", ""), startLine})
		case c == '"' || c == '\'':
			v, j, err := quoted(src, i)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", startLine, err)
			}
			i = j
			kind := String
			if c == '\'' {
				kind = Char
			}
			toks = append(toks, Tok{kind, v, startLine})
		default:
			n := 1
			for _, op := range []string{"::", "->", "++", "--", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-="} {
				if strings.HasPrefix(src[i:], op) {
					n = 2
					break
				}
			}
			i += n
			toks = append(toks, Tok{Punct, src[start:i], startLine})
		}
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func isLiteralPrefix(w string) bool {
	switch w {
	case "R", "u8", "u", "U", "L", "u8R", "uR", "UR", "LR":
		return true
	}
	return false
}

// raw reads a raw string R"delim(...)delim" whose '"' is at i.
func raw(src string, i int) (string, int, error) {
	open := strings.IndexByte(src[i+1:], '(')
	if open < 0 || open > 16 {
		return "", 0, errors.New("raw string without its '('")
	}
	delim := src[i+1 : i+1+open]
	body := i + 1 + open + 1
	end := strings.Index(src[body:], ")"+delim+`"`)
	if end < 0 {
		return "", 0, fmt.Errorf("unterminated raw string R\"%s(", delim)
	}
	return src[body : body+end], body + end + len(delim) + 2, nil
}

// quoted reads a "..." or '...' literal whose quote is at i, decoding
// C++'s escapes into the bytes they stand for (UTF-8 for \u and \U).
func quoted(src string, i int) (string, int, error) {
	q := src[i]
	i++
	var b strings.Builder
	for {
		if i >= len(src) || src[i] == '\n' {
			return "", 0, fmt.Errorf("unterminated literal %c", q)
		}
		c := src[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(src) {
			return "", 0, errors.New("escape at the end of the file")
		}
		e := src[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'x': // as many hex digits as follow
			j := i
			for j < len(src) && strings.IndexByte("0123456789abcdefABCDEF", src[j]) >= 0 {
				j++
			}
			v, err := strconv.ParseUint(src[i:j], 16, 8)
			if err != nil {
				return "", 0, fmt.Errorf("bad escape \\x%s", src[i:j])
			}
			b.WriteByte(byte(v))
			i = j
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if i+n > len(src) {
				return "", 0, fmt.Errorf("short escape \\%c", e)
			}
			v, err := strconv.ParseUint(src[i:i+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", 0, fmt.Errorf("bad escape \\%c%s", e, src[i:i+n])
			}
			b.WriteRune(rune(v))
			i += n
		default:
			if '0' <= e && e <= '7' { // up to three octal digits
				j := i - 1
				for j < len(src) && j < i+2 && '0' <= src[j] && src[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(src[i-1:j], 8, 16)
				if v > 255 {
					return "", 0, fmt.Errorf("bad octal escape \\%s", src[i-1:j])
				}
				b.WriteByte(byte(v))
				i = j
				continue
			}
			return "", 0, fmt.Errorf("unknown escape \\%c", e)
		}
	}
}

// Val is one argument (or brace-list item) of a call: a string
// expression folded to its value, a brace list, or other tokens.
type Val struct {
	Line int
	// IsStr: Str is the value of a string expression (literals, adjacent
	// or joined by +, token(N) calls, string variables of the function).
	IsStr bool
	Str   string
	// HasToken: the string holds token(N) parts, each encoded as
	// llama.cpp's test encodes it: 0xFF then N in 4 big-endian bytes.
	HasToken bool
	IsList   bool
	List     []Val
	Toks     []Tok // everything else (and a string's own tokens)
}

// Call is one call of a function in a C++ file.
type Call struct {
	Func string
	Line int
	Args []Val
}

// Func is a function definition's body.
type Func struct {
	Name string
	Body []Tok
}

// Funcs splits a file's tokens into its top-level function bodies.
func Funcs(toks []Tok) []Func {
	var out []Func
	depth := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i].Text {
		case "{":
			if depth == 0 && toks[i].Kind == Punct && i > 0 && toks[i-1].Text == ")" {
				// name ( params ) { : walk back over the params
				j, d := i-1, 0
				for ; j >= 0; j-- {
					if toks[j].Text == ")" {
						d++
					} else if toks[j].Text == "(" {
						d--
						if d == 0 {
							break
						}
					}
				}
				end, dd := i, 0
				for ; end < len(toks); end++ {
					if toks[end].Kind != Punct {
						continue
					}
					if toks[end].Text == "{" {
						dd++
					} else if toks[end].Text == "}" {
						dd--
						if dd == 0 {
							break
						}
					}
				}
				if j > 0 && toks[j-1].Kind == Ident {
					out = append(out, Func{Name: toks[j-1].Text, Body: toks[i+1 : min(end, len(toks))]})
				}
				i = end
				continue
			}
			depth++
		case "}":
			depth--
		}
	}
	return out
}

// Vars are the string variables a body assigns (`name = <string>;`),
// by name.
func Vars(body []Tok) map[string]Val {
	vars := map[string]Val{}
	for i := 1; i+1 < len(body); i++ {
		if body[i].Kind != Punct || body[i].Text != "=" || body[i-1].Kind != Ident {
			continue
		}
		end := i + 1
		for end < len(body) && !(body[end].Kind == Punct && body[end].Text == ";") {
			end++
		}
		if v := Fold(body[i+1:end], vars); v.IsStr {
			vars[body[i-1].Text] = v
		}
	}
	return vars
}

// Calls are the calls of fn in toks, their arguments read with the
// string variables vars (may be nil). A declaration or definition of fn
// (a type name before it) is not a call.
func Calls(toks []Tok, fn string, vars map[string]Val) []Call {
	var out []Call
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind != Ident || toks[i].Text != fn || toks[i+1].Text != "(" {
			continue
		}
		if i > 0 && (toks[i-1].Kind == Ident || toks[i-1].Text == "*" || toks[i-1].Text == "&") {
			continue
		}
		args, end := args(toks, i+2, ")", vars)
		out = append(out, Call{Func: fn, Line: toks[i].Line, Args: args})
		i = end
	}
	return out
}

// args reads comma-separated values from toks[i] up to the closer;
// it returns them and the index of the closer.
func args(toks []Tok, i int, closer string, vars map[string]Val) ([]Val, int) {
	var out []Val
	for i < len(toks) && toks[i].Text != closer {
		if toks[i].Kind == Punct && toks[i].Text == "{" {
			items, end := args(toks, i+1, "}", vars)
			out = append(out, Val{Line: toks[i].Line, IsList: true, List: items})
			i = end + 1
		} else {
			start, depth := i, 0
			for ; i < len(toks); i++ {
				t := toks[i]
				if t.Kind != Punct {
					continue
				}
				if depth == 0 && (t.Text == "," || t.Text == closer) {
					break
				}
				switch t.Text {
				case "(", "{", "[":
					depth++
				case ")", "}", "]":
					depth--
				}
			}
			out = append(out, Fold(toks[start:i], vars))
		}
		if i < len(toks) && toks[i].Kind == Punct && toks[i].Text == "," {
			i++
		}
	}
	return out, i
}

// Fold folds a string expression to its value; anything else comes
// back with IsStr false and its tokens.
func Fold(toks []Tok, vars map[string]Val) Val {
	v := Val{Toks: toks}
	if len(toks) == 0 {
		return v
	}
	v.Line = toks[0].Line
	var b strings.Builder
	needOperand := true
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Kind == String:
			b.WriteString(t.Text) // adjacent literals concatenate
			needOperand = false
		case t.Kind == Punct && t.Text == "+" && !needOperand:
			needOperand = true
		case t.Kind == Ident && t.Text == "token" && i+3 < len(toks) && toks[i+1].Text == "(" && toks[i+2].Kind == Number && toks[i+3].Text == ")":
			n, err := strconv.ParseUint(toks[i+2].Text, 0, 32)
			if err != nil {
				return v
			}
			b.WriteString(string([]byte{0xFF, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}))
			v.HasToken = true
			i += 3
			needOperand = false
		case t.Kind == Ident && (t.Text == "std" || t.Text == "string") || t.Kind == Punct && (t.Text == "::" || t.Text == "(" || t.Text == ")"):
			// std::string("...") around a literal
		case t.Kind == Ident && vars != nil && needOperand:
			w, ok := vars[t.Text]
			if !ok {
				return v
			}
			b.WriteString(w.Str)
			v.HasToken = v.HasToken || w.HasToken
			needOperand = false
		default:
			return v
		}
	}
	if needOperand {
		return v
	}
	v.IsStr, v.Str = true, b.String()
	return v
}

// FileCalls are the calls of fn in every function of C++ source, each
// read with its function's string variables.
func FileCalls(src, fn string) ([]Call, error) {
	toks, err := Tokenize(src)
	if err != nil {
		return nil, err
	}
	var out []Call
	for _, f := range Funcs(toks) {
		out = append(out, Calls(f.Body, fn, Vars(f.Body))...)
	}
	return out, nil
}

// FuncVars are the string variables of each function of C++ source
// (function name -> variable -> value).
func FuncVars(src string) (map[string]map[string]Val, error) {
	toks, err := Tokenize(src)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]Val{}
	for _, f := range Funcs(toks) {
		out[f.Name] = Vars(f.Body)
	}
	return out, nil
}
