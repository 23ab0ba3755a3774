package chat

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Arithmetic with Python's semantics: ints stay ints (64-bit here, and an
// overflow is an error rather than a silent wrap), / is true division, // and
// % floor toward negative infinity, + concatenates strings and lists, *
// repeats them.

func (ip *interp) arith(off int, op string, a, b any) any {
	ip.operandCheck(off, a, b)
	if isNumber(a) && isNumber(b) {
		return ip.numeric(off, op, a, b)
	}
	switch op {
	case "+":
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				ip.charge(off, len(x)+len(y))
				return x + y
			}
			fail(off, ErrRender, "can only concatenate str (not \"%s\") to str", typeName(b))
		case []any:
			if y, ok := b.([]any); ok {
				ip.charge(off, 16*(len(x)+len(y)))
				out := make([]any, 0, len(x)+len(y))
				return append(append(out, x...), y...)
			}
			fail(off, ErrRender, "can only concatenate list (not \"%s\") to list", typeName(b))
		case tuple:
			if y, ok := b.(tuple); ok {
				ip.charge(off, 16*(len(x)+len(y)))
				out := make(tuple, 0, len(x)+len(y))
				return append(append(out, x...), y...)
			}
		}
	case "*":
		if n, ok := asInt(b); ok {
			if r, ok := ip.repeat(off, a, n); ok {
				return r
			}
		}
		if n, ok := asInt(a); ok {
			if r, ok := ip.repeat(off, b, n); ok {
				return r
			}
		}
	case "%":
		if f, ok := a.(string); ok {
			return ip.percent(off, f, b)
		}
	}
	fail(off, ErrRender, "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	return nil
}

func (ip *interp) repeat(off int, v any, n int64) (any, bool) {
	n = max(n, 0)
	// Check the size before building: 'x' * 10**12 must fail, not allocate.
	budget := func(unit int) int {
		if unit > 0 && n > (ip.lim.MaxAlloc-ip.alloc)/int64(unit) {
			ip.room(off, -1)
		}
		ip.charge(off, unit*int(n))
		return int(n)
	}
	switch x := v.(type) {
	case string:
		return strings.Repeat(x, budget(len(x))), true
	case []any:
		if len(x) == 0 {
			return []any{}, true
		}
		k := budget(16 * len(x))
		out := make([]any, 0, len(x)*k)
		for i := 0; i < k; i++ {
			out = append(out, x...)
		}
		return out, true
	case tuple:
		l, _ := ip.repeat(off, []any(x), n)
		return tuple(l.([]any)), true
	}
	return nil, false
}

func (ip *interp) numeric(off int, op string, a, b any) any {
	ai, aInt := asInt(a)
	bi, bInt := asInt(b)
	if aInt && bInt {
		return intOp(off, op, ai, bi)
	}
	x, y := toFloat(a), toFloat(b)
	switch op {
	case "+":
		return x + y
	case "-":
		return x - y
	case "*":
		return x * y
	case "/":
		if y == 0 {
			fail(off, ErrRender, "float division by zero")
		}
		return x / y
	case "//":
		if y == 0 {
			fail(off, ErrRender, "float floor division by zero")
		}
		return math.Floor(x / y)
	case "%":
		if y == 0 {
			fail(off, ErrRender, "float modulo")
		}
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	case "**":
		return floatPow(off, x, y)
	}
	fail(off, ErrRender, "unknown operator %s", op)
	return nil
}

func overflow(off int) {
	fail(off, ErrUnsupported, "integer overflow: values beyond 64 bits are not supported")
}

func intOp(off int, op string, a, b int64) any {
	switch op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			overflow(off)
		}
		return s
	case "-":
		s := a - b
		if (s < a) != (b > 0) {
			overflow(off)
		}
		return s
	case "*":
		if a == 0 || b == 0 {
			return int64(0)
		}
		hi, lo := bits.Mul64(uint64(abs64(a)), uint64(abs64(b)))
		if hi != 0 || lo > math.MaxInt64 || a == math.MinInt64 || b == math.MinInt64 {
			overflow(off)
		}
		if (a < 0) != (b < 0) {
			return -int64(lo)
		}
		return int64(lo)
	case "/":
		if b == 0 {
			fail(off, ErrRender, "division by zero")
		}
		return float64(a) / float64(b)
	case "//", "%":
		if b == 0 {
			fail(off, ErrRender, "integer division or modulo by zero")
		}
		if a == math.MinInt64 && b == -1 {
			if op == "%" {
				return int64(0)
			}
			overflow(off)
		}
		q, r := a/b, a%b
		if r != 0 && (r < 0) != (b < 0) {
			q--
			r += b
		}
		if op == "//" {
			return q
		}
		return r
	case "**":
		if b < 0 {
			return floatPow(off, float64(a), float64(b))
		}
		switch a {
		case 0:
			if b == 0 {
				return int64(1)
			}
			return int64(0)
		case 1:
			return int64(1)
		case -1:
			if b%2 == 0 {
				return int64(1)
			}
			return int64(-1)
		}
		// |a| >= 2, so an overflow comes within 63 squarings.
		res, base := int64(1), a
		for e := b; e > 0; e >>= 1 {
			if e&1 == 1 {
				res = intOp(off, "*", res, base).(int64)
			}
			if e > 1 {
				base = intOp(off, "*", base, base).(int64)
			}
		}
		return res
	}
	fail(off, ErrRender, "unknown operator %s", op)
	return nil
}

// floatPow is Python's float **: zero to a negative power is an error, and
// a negative base to a fractional power (a complex number) is refused.
func floatPow(off int, x, y float64) float64 {
	if x == 0 && y < 0 {
		fail(off, ErrRender, "0.0 cannot be raised to a negative power")
	}
	if x < 0 && y != math.Trunc(y) {
		fail(off, ErrUnsupported, "complex numbers are not supported")
	}
	return math.Pow(x, y)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (ip *interp) negate(off int, v any) any {
	switch x := v.(type) {
	case bool:
		return -boolInt(x)
	case int64:
		if x == math.MinInt64 {
			overflow(off)
		}
		return -x
	case float64:
		return -x
	}
	ip.operandCheck(off, v)
	fail(off, ErrRender, "bad operand type for unary -: '%s'", typeName(v))
	return nil
}

// percent is Python's printf-style `format % args`, for the conversions
// templates use: s r d i f F e E g G x X o c and %%, with flags, width and
// precision, and %(name)s with a dict.
func (ip *interp) percent(off int, format string, args any) string {
	var list []any
	var named *dict
	switch a := args.(type) {
	case tuple:
		list = a
	case *dict:
		named = a
		list = []any{a}
	default:
		list = []any{a}
	}
	next := 0
	arg := func() any {
		if next >= len(list) {
			fail(off, ErrRender, "not enough arguments for format string")
		}
		next++
		return list[next-1]
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			fail(off, ErrRender, "incomplete format")
		}
		var v any
		haveV := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 || named == nil {
				fail(off, ErrRender, "format requires a mapping")
			}
			key := format[i+1 : i+end]
			x, ok := named.get(key)
			if !ok {
				fail(off, ErrRender, "format key '%s' is missing", key)
			}
			v, haveV = x, true
			i += end + 1
		}
		flags := ""
		for i < len(format) && strings.IndexByte("-+ 0#", format[i]) >= 0 {
			flags += string(format[i])
			i++
		}
		width := ""
		for i < len(format) && (isDec(format[i]) || format[i] == '*') {
			width += string(format[i])
			i++
		}
		prec := ""
		if i < len(format) && format[i] == '.' {
			prec = "."
			i++
			for i < len(format) && isDec(format[i]) {
				prec += string(format[i])
				i++
			}
		}
		if i >= len(format) {
			fail(off, ErrRender, "incomplete format")
		}
		conv := format[i]
		if conv == '%' {
			b.WriteByte('%')
			continue
		}
		if strings.Contains(width, "*") {
			fail(off, ErrUnsupported, "'*' widths in %% formats are not supported")
		}
		if !haveV {
			v = arg()
		}
		ip.operandCheck(off, v)
		var s string
		switch conv {
		case 's':
			s = pyStr(off, v)
			if prec != "" {
				p, _ := strconv.Atoi(prec[1:])
				if rs := runes(s); len(rs) > p {
					s = string(rs[:p])
				}
			}
		case 'r', 'a':
			s = pyRepr(off, v)
		case 'd', 'i', 'x', 'X', 'o', 'c':
			n, ok := asInt(v)
			if f, isF := v.(float64); isF {
				n, ok = int64(f), true
			}
			if !ok {
				fail(off, ErrRender, "%%%c format: a number is required, not %s", conv, typeName(v))
			}
			switch conv {
			case 'x':
				s = strconv.FormatInt(n, 16)
			case 'X':
				s = strings.ToUpper(strconv.FormatInt(n, 16))
			case 'o':
				s = strconv.FormatInt(n, 8)
			case 'c':
				s = string(rune(n))
			default:
				s = strconv.FormatInt(n, 10)
			}
			if n >= 0 && strings.Contains(flags, "+") && conv != 'c' {
				s = "+" + s
			} else if n >= 0 && strings.Contains(flags, " ") && conv != 'c' {
				s = " " + s
			}
		case 'f', 'F', 'e', 'E', 'g', 'G':
			if !isNumber(v) {
				fail(off, ErrRender, "must be real number, not %s", typeName(v))
			}
			p := 6
			if prec != "" {
				p, _ = strconv.Atoi(prec[1:])
			}
			s = strconv.FormatFloat(toFloat(v), conv|0x20, p, 64)
			if conv == 'E' || conv == 'G' {
				s = strings.ToUpper(s)
			}
			if toFloat(v) >= 0 && strings.Contains(flags, "+") {
				s = "+" + s
			}
		default:
			fail(off, ErrRender, "unsupported format character '%c'", conv)
		}
		if w, _ := strconv.Atoi(width); w > len(s) {
			w = min(w, 1<<16)
			pad := w - strLen(s)
			switch {
			case pad <= 0:
			case strings.Contains(flags, "-"):
				s += strings.Repeat(" ", pad)
			case strings.Contains(flags, "0") && conv != 's' && conv != 'r':
				sign := ""
				if s != "" && (s[0] == '-' || s[0] == '+' || s[0] == ' ') {
					sign, s = s[:1], s[1:]
				}
				s = sign + strings.Repeat("0", pad) + s
			default:
				s = strings.Repeat(" ", pad) + s
			}
		}
		ip.charge(off, len(s))
		b.WriteString(s)
	}
	// Python lets a single list or dict argument go unused (it checks
	// for a mapping); only a tuple's or a scalar's leftovers are errors.
	_, isList := args.([]any)
	if named == nil && !isList && next < len(list) {
		fail(off, ErrRender, "not all arguments converted during string formatting")
	}
	return b.String()
}
