package toolcall

// scan validates one JSON value (RFC 8259) fed a byte at a time, so that a
// call's arguments can be passed on as they arrive and a malformed one is
// caught at the byte that breaks it. It keeps a stack of open containers and
// nothing of the values.
type scan struct {
	st    scanState
	stack []byte // '{' or '[' per open container
	key   bool   // the string being read is an object key
	lit   string // the rest of true, false or null
	hex   int    // \u digits still expected
}

type scanState uint8

const (
	sValue      scanState = iota // a value may start (leading whitespace skipped)
	sString                      // inside a string
	sEscape                      // after a backslash
	sHex                         // inside \uXXXX
	sMinus                       // after '-': a digit must follow
	sZero                        // a number's leading 0
	sInt                         // integer digits
	sDot                         // after '.': a digit must follow
	sFrac                        // fraction digits
	sExp                         // after e/E: a sign or digit
	sExpSign                     // after the exponent's sign: a digit
	sExpDigits                   // exponent digits
	sLit                         // inside true, false or null
	sKeyOrClose                  // after '{': a key or '}'
	sKey                         // after ',' in an object: a key
	sColon                       // after a key
	sValueOrEnd                  // after '[': a value or ']'
	sAfter                       // after a value inside a container: ',' or the close
	sDone                        // the value is complete
)

type scanResult uint8

const (
	scanMore   scanResult = iota // the byte was taken; the value goes on
	scanDone                     // the byte completed the value
	scanBefore                   // the value ended before this byte (a number), which was not taken
	scanError                    // the byte cannot continue the value
)

// maxDepth bounds nesting, as encoding/json does (10000); calls need far less.
const maxDepth = 512

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ended reports whether the value is complete if no byte follows: a
// finished value, or a top-level number whose digits may simply stop.
func (s *scan) ended() bool {
	if s.st == sDone {
		return true
	}
	if len(s.stack) > 0 {
		return false
	}
	switch s.st {
	case sZero, sInt, sFrac, sExpDigits:
		return true
	}
	return false
}

// step feeds c; what names the byte's fault when the result is scanError.
func (s *scan) step(c byte) (r scanResult, what string) {
	switch s.st {
	case sValue:
		if isSpace(c) {
			return scanMore, ""
		}
		return s.begin(c)
	case sString:
		switch {
		case c == '"':
			if s.key {
				s.key = false
				s.st = sColon
				return scanMore, ""
			}
			return s.end()
		case c == '\\':
			s.st = sEscape
		case c < 0x20:
			return scanError, "control character in a string"
		}
		return scanMore, ""
	case sEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.st = sString
		case 'u':
			s.st, s.hex = sHex, 4
		default:
			return scanError, "invalid escape in a string"
		}
		return scanMore, ""
	case sHex:
		if !isHex(c) {
			return scanError, "invalid \\u escape in a string"
		}
		if s.hex--; s.hex == 0 {
			s.st = sString
		}
		return scanMore, ""
	case sMinus:
		switch {
		case c == '0':
			s.st = sZero
		case c >= '1' && c <= '9':
			s.st = sInt
		default:
			return scanError, "a digit must follow '-'"
		}
		return scanMore, ""
	case sZero, sInt:
		switch {
		case c >= '0' && c <= '9' && s.st == sInt:
			return scanMore, ""
		case c == '.':
			s.st = sDot
			return scanMore, ""
		case c == 'e' || c == 'E':
			s.st = sExp
			return scanMore, ""
		}
		return s.numberEnd(c)
	case sDot:
		if c < '0' || c > '9' {
			return scanError, "a digit must follow '.'"
		}
		s.st = sFrac
		return scanMore, ""
	case sFrac:
		switch {
		case c >= '0' && c <= '9':
			return scanMore, ""
		case c == 'e' || c == 'E':
			s.st = sExp
			return scanMore, ""
		}
		return s.numberEnd(c)
	case sExp:
		switch {
		case c == '+' || c == '-':
			s.st = sExpSign
		case c >= '0' && c <= '9':
			s.st = sExpDigits
		default:
			return scanError, "a digit must follow the exponent"
		}
		return scanMore, ""
	case sExpSign:
		if c < '0' || c > '9' {
			return scanError, "a digit must follow the exponent"
		}
		s.st = sExpDigits
		return scanMore, ""
	case sExpDigits:
		if c >= '0' && c <= '9' {
			return scanMore, ""
		}
		return s.numberEnd(c)
	case sLit:
		if c != s.lit[0] {
			return scanError, "invalid literal"
		}
		if s.lit = s.lit[1:]; s.lit == "" {
			return s.end()
		}
		return scanMore, ""
	case sKeyOrClose, sKey:
		switch {
		case isSpace(c):
			return scanMore, ""
		case c == '"':
			s.st, s.key = sString, true
			return scanMore, ""
		case c == '}' && s.st == sKeyOrClose:
			s.stack = s.stack[:len(s.stack)-1]
			return s.end()
		}
		return scanError, "expected a key"
	case sColon:
		switch {
		case isSpace(c):
			return scanMore, ""
		case c == ':':
			s.st = sValue
			return scanMore, ""
		}
		return scanError, "expected ':' after a key"
	case sValueOrEnd:
		switch {
		case isSpace(c):
			return scanMore, ""
		case c == ']':
			s.stack = s.stack[:len(s.stack)-1]
			return s.end()
		}
		return s.begin(c)
	case sAfter:
		top := s.stack[len(s.stack)-1]
		switch {
		case isSpace(c):
			return scanMore, ""
		case c == ',':
			if top == '{' {
				s.st = sKey
			} else {
				s.st = sValue
			}
			return scanMore, ""
		case c == '}' && top == '{', c == ']' && top == '[':
			s.stack = s.stack[:len(s.stack)-1]
			return s.end()
		}
		if top == '{' {
			return scanError, "expected ',' or '}' in an object"
		}
		return scanError, "expected ',' or ']' in an array"
	}
	return scanError, "text after the value"
}

// begin starts a value with its first byte.
func (s *scan) begin(c byte) (scanResult, string) {
	switch {
	case c == '"':
		s.st = sString
	case c == '-':
		s.st = sMinus
	case c == '0':
		s.st = sZero
	case c >= '1' && c <= '9':
		s.st = sInt
	case c == 't':
		s.st, s.lit = sLit, "rue"
	case c == 'f':
		s.st, s.lit = sLit, "alse"
	case c == 'n':
		s.st, s.lit = sLit, "ull"
	case c == '{' || c == '[':
		if len(s.stack) >= maxDepth {
			return scanError, "nested too deeply"
		}
		s.stack = append(s.stack, c)
		if c == '{' {
			s.st = sKeyOrClose
		} else {
			s.st = sValueOrEnd
		}
	default:
		return scanError, "expected a value"
	}
	return scanMore, ""
}

// end closes a value: the whole one, or one inside a container.
func (s *scan) end() (scanResult, string) {
	if len(s.stack) == 0 {
		s.st = sDone
		return scanDone, ""
	}
	s.st = sAfter
	return scanMore, ""
}

// numberEnd ends a number at c, which is not part of it.
func (s *scan) numberEnd(c byte) (scanResult, string) {
	if len(s.stack) == 0 {
		s.st = sDone
		return scanBefore, ""
	}
	s.st = sAfter
	return s.step(c)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
