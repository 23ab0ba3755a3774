package grammar

// Reading llama.cpp's C++ grammar tests as data: a small C++ tokenizer
// (comments, string and character literals with their escapes, raw
// strings, adjacent-literal concatenation), a reader of the arguments of
// the calls to a named function, and the string variables of a function
// body. Shared by the parser's and the machine's tests; nothing of
// llama.cpp is copied, its files are read at test time.

import (
	"errors"
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

// llamaFile reads a file of llama.cpp's pinned source (rel to its root),
// or reports the missing source through proof.Missing and returns "".
func llamaFile(t testing.TB, rel string) string {
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

// llamaGrammarFiles are llama.cpp's grammars/*.gbnf: name -> text.
func llamaGrammarFiles(t testing.TB) map[string]string {
	t.Helper()
	dir, err := llamacpp.SourceDir()
	if err != nil {
		proof.Missing(t, "llama.cpp grammars/*.gbnf", err.Error()+" (run scripts/fetch-llama-src.sh)")
		return nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "grammars", "*.gbnf"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

// cppKind is the kind of a C++ token.
type cppKind uint8

const (
	cppIdent cppKind = iota
	cppNumber
	cppString // a string literal, value decoded
	cppChar   // a character literal, value decoded
	cppPunct
)

type cppTok struct {
	Kind cppKind
	Text string // the source text (Ident, Number, Punct) or the decoded value (String, Char)
	Line int
}

// cppTokens splits C++ source into tokens, dropping comments and
// preprocessor lines.
func cppTokens(src string) ([]cppTok, error) {
	var toks []cppTok
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
		case isCppIdentStart(c):
			for i < len(src) && (isCppIdentStart(src[i]) || '0' <= src[i] && src[i] <= '9') {
				i++
			}
			word := src[start:i]
			if i < len(src) && (src[i] == '"' || src[i] == '\'') && isLiteralPrefix(word) {
				var v string
				var err error
				if strings.HasSuffix(word, "R") {
					v, i, err = cppRaw(src, i)
				} else {
					v, i, err = cppQuoted(src, i)
				}
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", startLine, err)
				}
				line += strings.Count(src[start:i], "\n")
				kind := cppString
				if src[start+len(word)] == '\'' {
					kind = cppChar
				}
				toks = append(toks, cppTok{kind, v, startLine})
				continue
			}
			toks = append(toks, cppTok{cppIdent, word, startLine})
		case '0' <= c && c <= '9':
			for i < len(src) && (isCppIdentStart(src[i]) || '0' <= src[i] && src[i] <= '9' || src[i] == '.' || src[i] == '\'') {
				i++
			}
			toks = append(toks, cppTok{cppNumber, strings.ReplaceAll(src[start:i], "'", ""), startLine})
		case c == '"' || c == '\'':
			v, j, err := cppQuoted(src, i)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", startLine, err)
			}
			i = j
			kind := cppString
			if c == '\'' {
				kind = cppChar
			}
			toks = append(toks, cppTok{kind, v, startLine})
		default:
			n := 1
			for _, op := range []string{"::", "->", "++", "--", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-="} {
				if strings.HasPrefix(src[i:], op) {
					n = 2
					break
				}
			}
			i += n
			toks = append(toks, cppTok{cppPunct, src[start:i], startLine})
		}
	}
	return toks, nil
}

func isCppIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func isLiteralPrefix(w string) bool {
	switch w {
	case "R", "u8", "u", "U", "L", "u8R", "uR", "UR", "LR":
		return true
	}
	return false
}

// cppRaw reads a raw string R"delim(...)delim" whose '"' is at i.
func cppRaw(src string, i int) (string, int, error) {
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

// cppQuoted reads a "..." or '...' literal whose quote is at i, decoding
// C++'s escapes into the bytes they stand for (UTF-8 for \u and \U).
func cppQuoted(src string, i int) (string, int, error) {
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

// cppVal is one argument (or brace-list item) of a call: a string
// expression folded to its value, a brace list, or other tokens.
type cppVal struct {
	Line int
	// IsStr: Str is the value of a string expression (literals, adjacent
	// or joined by +, token(N) calls, string variables of the function).
	IsStr bool
	Str   string
	// HasToken: the string holds token(N) parts, each encoded as
	// llama.cpp's test encodes it: 0xFF then N in 4 big-endian bytes.
	HasToken bool
	IsList   bool
	List     []cppVal
	Toks     []cppTok // everything else (and a string's own tokens)
}

// cppCall is one call of a function in a C++ file.
type cppCall struct {
	Func string
	Line int
	Args []cppVal
}

// cppFunc is a function definition's body.
type cppFunc struct {
	Name string
	Body []cppTok
}

// cppFuncs splits a file's tokens into its top-level function bodies.
func cppFuncs(toks []cppTok) []cppFunc {
	var out []cppFunc
	depth := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i].Text {
		case "{":
			if depth == 0 && toks[i].Kind == cppPunct && i > 0 && toks[i-1].Text == ")" {
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
					if toks[end].Kind != cppPunct {
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
				if j > 0 && toks[j-1].Kind == cppIdent {
					out = append(out, cppFunc{Name: toks[j-1].Text, Body: toks[i+1 : min(end, len(toks))]})
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

// cppVars are the string variables a body assigns (`name = <string>;`),
// by name.
func cppVars(body []cppTok) map[string]cppVal {
	vars := map[string]cppVal{}
	for i := 1; i+1 < len(body); i++ {
		if body[i].Kind != cppPunct || body[i].Text != "=" || body[i-1].Kind != cppIdent {
			continue
		}
		end := i + 1
		for end < len(body) && !(body[end].Kind == cppPunct && body[end].Text == ";") {
			end++
		}
		if v := cppFold(body[i+1:end], vars); v.IsStr {
			vars[body[i-1].Text] = v
		}
	}
	return vars
}

// cppCalls are the calls of fn in toks, their arguments read with the
// string variables vars (may be nil). A declaration or definition of fn
// (a type name before it) is not a call.
func cppCalls(toks []cppTok, fn string, vars map[string]cppVal) []cppCall {
	var out []cppCall
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind != cppIdent || toks[i].Text != fn || toks[i+1].Text != "(" {
			continue
		}
		if i > 0 && (toks[i-1].Kind == cppIdent || toks[i-1].Text == "*" || toks[i-1].Text == "&") {
			continue
		}
		args, end := cppArgs(toks, i+2, ")", vars)
		out = append(out, cppCall{Func: fn, Line: toks[i].Line, Args: args})
		i = end
	}
	return out
}

// cppArgs reads comma-separated values from toks[i] up to the closer;
// it returns them and the index of the closer.
func cppArgs(toks []cppTok, i int, closer string, vars map[string]cppVal) ([]cppVal, int) {
	var out []cppVal
	for i < len(toks) && toks[i].Text != closer {
		if toks[i].Kind == cppPunct && toks[i].Text == "{" {
			items, end := cppArgs(toks, i+1, "}", vars)
			out = append(out, cppVal{Line: toks[i].Line, IsList: true, List: items})
			i = end + 1
		} else {
			start, depth := i, 0
			for ; i < len(toks); i++ {
				t := toks[i]
				if t.Kind != cppPunct {
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
			out = append(out, cppFold(toks[start:i], vars))
		}
		if i < len(toks) && toks[i].Kind == cppPunct && toks[i].Text == "," {
			i++
		}
	}
	return out, i
}

// cppFold folds a string expression to its value; anything else comes
// back with IsStr false and its tokens.
func cppFold(toks []cppTok, vars map[string]cppVal) cppVal {
	v := cppVal{Toks: toks}
	if len(toks) == 0 {
		return v
	}
	v.Line = toks[0].Line
	var b strings.Builder
	needOperand := true
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Kind == cppString:
			b.WriteString(t.Text) // adjacent literals concatenate
			needOperand = false
		case t.Kind == cppPunct && t.Text == "+" && !needOperand:
			needOperand = true
		case t.Kind == cppIdent && t.Text == "token" && i+3 < len(toks) && toks[i+1].Text == "(" && toks[i+2].Kind == cppNumber && toks[i+3].Text == ")":
			n, err := strconv.ParseUint(toks[i+2].Text, 0, 32)
			if err != nil {
				return v
			}
			b.WriteString(string([]byte{0xFF, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}))
			v.HasToken = true
			i += 3
			needOperand = false
		case t.Kind == cppIdent && (t.Text == "std" || t.Text == "string") || t.Kind == cppPunct && (t.Text == "::" || t.Text == "(" || t.Text == ")"):
			// std::string("...") around a literal
		case t.Kind == cppIdent && vars != nil && needOperand:
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

// llamaFileCalls reads a llama.cpp test file and returns the calls of fn
// in every function, with that function's string variables resolved.
func llamaFileCalls(t testing.TB, rel, fn string) []cppCall {
	t.Helper()
	src := llamaFile(t, rel)
	if src == "" {
		return nil
	}
	toks, err := cppTokens(src)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	var out []cppCall
	for _, f := range cppFuncs(toks) {
		out = append(out, cppCalls(f.Body, fn, cppVars(f.Body))...)
	}
	return out
}

// llamaFuncVars returns the string variables of each function of a
// llama.cpp test file (function name -> variable -> value).
func llamaFuncVars(t testing.TB, rel string) map[string]map[string]cppVal {
	t.Helper()
	src := llamaFile(t, rel)
	if src == "" {
		return nil
	}
	toks, err := cppTokens(src)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	out := map[string]map[string]cppVal{}
	for _, f := range cppFuncs(toks) {
		out[f.Name] = cppVars(f.Body)
	}
	return out
}

// atLeast fails t when an extractor found fewer cases than it found when
// the test was written: a broken extractor must not pass by finding none.
func atLeast(t testing.TB, what string, got, want int) {
	t.Helper()
	if got < want {
		t.Fatalf("%s: extracted %d cases, fewer than the %d found when this test was written: the extractor or the file changed", what, got, want)
	}
}

// GrammarCase is one test_grammar call of test-grammar-integration.cpp.
type grammarCase struct {
	Name    string
	Line    int
	Grammar string
	Pass    []string // may hold token(N) encodings (see cppVal.HasToken)
	Fail    []string
	Tokens  bool // some string or the grammar uses token(N)
}

// llamaIntegrationGrammars are the test_grammar cases of
// tests/test-grammar-integration.cpp (nil when the source is missing).
func llamaIntegrationGrammars(t testing.TB) []grammarCase {
	t.Helper()
	var out []grammarCase
	for _, c := range llamaFileCalls(t, "tests/test-grammar-integration.cpp", "test_grammar") {
		if len(c.Args) != 4 || !c.Args[0].IsStr || !c.Args[1].IsStr || !c.Args[2].IsList || !c.Args[3].IsList {
			t.Fatalf("test-grammar-integration.cpp:%d: test_grammar call not of the shape (name, grammar, {pass}, {fail})", c.Line)
		}
		gc := grammarCase{Name: c.Args[0].Str, Line: c.Line, Grammar: c.Args[1].Str}
		for k, list := range []*[]string{&gc.Pass, &gc.Fail} {
			for _, s := range c.Args[2+k].List {
				if !s.IsStr {
					t.Fatalf("test-grammar-integration.cpp:%d: a test string that is not a string expression", s.Line)
				}
				*list = append(*list, s.Str)
				gc.Tokens = gc.Tokens || s.HasToken
			}
		}
		out = append(out, gc)
	}
	return out
}
