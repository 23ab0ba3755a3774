package chat

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python's str methods, as templates call them ('a b'.split(), s.strip('\n')).
// Indices are in characters, whitespace is Python's (pySpace).

func (ip *interp) strMethod(off int, s, name string, args []any, kw []kwVal) any {
	ip.work(off, len(s)/64)
	str := func(v any, what string) string {
		x, ok := v.(string)
		if !ok {
			ip.operandCheck(off, v)
			fail(off, ErrRender, "%s() argument %s must be str, not %s", name, what, typeName(v))
		}
		return x
	}
	integer := func(v any, def int64) int64 {
		if v == absent || v == nil {
			return def
		}
		n, ok := asInt(v)
		if !ok {
			fail(off, ErrRender, "%s(): an integer is required, not %s", name, typeName(v))
		}
		return n
	}
	switch name {
	case "startswith", "endswith":
		a := bindArgs(off, name, args, kw, "prefix", "start", "end")
		sub := s
		if a[1] != absent || a[2] != absent {
			rs := runes(s)
			lo, hi := clampRange(integer(a[1], 0), integer(a[2], int64(len(rs))), len(rs))
			sub = string(rs[lo:hi])
		}
		var cands []any
		switch p := a[0].(type) {
		case tuple:
			cands = p
		default:
			cands = []any{p}
		}
		for _, c := range cands {
			p := str(c, "1")
			if (name == "startswith" && strings.HasPrefix(sub, p)) || (name == "endswith" && strings.HasSuffix(sub, p)) {
				return true
			}
		}
		return false
	case "strip", "lstrip", "rstrip":
		a := bindArgs(off, name, args, kw, "chars")
		cut := pySpace
		if a[0] != absent && a[0] != nil {
			set := str(a[0], "1")
			cut = func(r rune) bool { return strings.ContainsRune(set, r) }
		}
		if name != "rstrip" {
			s = strings.TrimLeftFunc(s, cut)
		}
		if name != "lstrip" {
			s = strings.TrimRightFunc(s, cut)
		}
		return s
	case "split", "rsplit":
		a := bindArgs(off, name, args, kw, "sep", "maxsplit")
		max := integer(a[1], -1)
		ip.charge(off, 2*len(s))
		if a[0] == absent || a[0] == nil {
			return splitSpace(s, max, name == "rsplit")
		}
		sep := str(a[0], "1")
		if sep == "" {
			fail(off, ErrRender, "empty separator")
		}
		var parts []string
		switch {
		case max < 0:
			parts = strings.Split(s, sep)
		case name == "split":
			parts = strings.SplitN(s, sep, int(min(max, int64(len(s))+1))+1)
		default:
			for ; max > 0; max-- {
				i := strings.LastIndex(s, sep)
				if i < 0 {
					break
				}
				parts = append(parts, s[i+len(sep):])
				s = s[:i]
			}
			parts = append(parts, s)
			for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
				parts[i], parts[j] = parts[j], parts[i]
			}
		}
		return strList(parts)
	case "splitlines":
		a := bindArgs(off, name, args, kw, "keepends")
		ip.charge(off, 2*len(s))
		return splitLines(s, truthy(argOr(a[0], false)))
	case "upper":
		bindArgs(off, name, args, kw)
		return strings.ToUpper(s)
	case "lower", "casefold":
		bindArgs(off, name, args, kw)
		return strings.ToLower(s)
	case "title":
		bindArgs(off, name, args, kw)
		return pyTitle(s)
	case "capitalize":
		bindArgs(off, name, args, kw)
		return capitalize(s)
	case "swapcase":
		bindArgs(off, name, args, kw)
		return strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, s)
	case "replace":
		a := bindArgs(off, name, args, kw, "old", "new", "count")
		old, repl := str(a[0], "1"), str(a[1], "2")
		n := integer(a[2], -1)
		if old != "" {
			c := int64(strings.Count(s, old))
			if n >= 0 && n < c {
				c = n
			}
			ip.room(off, int64(len(s))+c*int64(len(repl)))
		} else {
			ip.room(off, int64(len(s))+int64(len(s)+1)*int64(len(repl)))
		}
		out := strings.Replace(s, old, repl, int(max(min(n, int64(len(s))+1), -1)))
		ip.charge(off, len(out))
		return out
	case "find", "rfind", "index", "rindex":
		a := bindArgs(off, name, args, kw, "sub", "start", "end")
		sub := str(a[0], "1")
		rs := runes(s)
		lo, hi := clampRange(integer(a[1], 0), integer(a[2], int64(len(rs))), len(rs))
		if lo > hi {
			lo = hi
		}
		hay := string(rs[lo:hi])
		var i int
		if name == "find" || name == "index" {
			i = strings.Index(hay, sub)
		} else {
			i = strings.LastIndex(hay, sub)
		}
		if i < 0 {
			if name == "index" || name == "rindex" {
				fail(off, ErrRender, "substring not found")
			}
			return int64(-1)
		}
		return int64(lo + utf8.RuneCountInString(hay[:i]))
	case "count":
		a := bindArgs(off, name, args, kw, "sub")
		sub := str(a[0], "1")
		if sub == "" {
			return int64(strLen(s) + 1)
		}
		return int64(strings.Count(s, sub))
	case "join":
		a := bindArgs(off, name, args, kw, "iterable")
		return ip.joinStrs(off, s, ip.iterate(off, a[0]))
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace":
		bindArgs(off, name, args, kw)
		test := map[string]func(rune) bool{
			"isdigit": unicode.IsDigit, "isdecimal": unicode.IsDigit, "isnumeric": unicode.IsNumber,
			"isalpha": unicode.IsLetter, "isspace": pySpace,
			"isalnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) },
		}[name]
		if s == "" {
			return false
		}
		for _, r := range s {
			if !test(r) {
				return false
			}
		}
		return true
	case "islower", "isupper":
		bindArgs(off, name, args, kw)
		return caseIs(s, name == "isupper")
	case "removeprefix":
		a := bindArgs(off, name, args, kw, "prefix")
		return strings.TrimPrefix(s, str(a[0], "1"))
	case "removesuffix":
		a := bindArgs(off, name, args, kw, "suffix")
		return strings.TrimSuffix(s, str(a[0], "1"))
	case "partition", "rpartition":
		a := bindArgs(off, name, args, kw, "sep")
		sep := str(a[0], "1")
		if sep == "" {
			fail(off, ErrRender, "empty separator")
		}
		i := strings.Index(s, sep)
		if name == "rpartition" {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "rpartition" {
				return tuple{"", "", s}
			}
			return tuple{s, "", ""}
		}
		return tuple{s[:i], sep, s[i+len(sep):]}
	case "zfill", "ljust", "rjust", "center":
		a := bindArgs(off, name, args, kw, "width", "fillchar")
		w := integer(a[0], 0)
		fill := " "
		if name != "zfill" && a[1] != absent {
			fill = str(a[1], "2")
			if utf8.RuneCountInString(fill) != 1 {
				fail(off, ErrRender, "the fill character must be exactly one character long")
			}
		}
		n := int64(strLen(s))
		if w <= n {
			return s
		}
		ip.room(off, w*int64(len(fill)))
		pad := int(w - n)
		ip.charge(off, len(s)+pad*len(fill))
		switch name {
		case "zfill":
			sign := ""
			if s != "" && (s[0] == '-' || s[0] == '+') {
				sign, s = s[:1], s[1:]
			}
			return sign + strings.Repeat("0", pad) + s
		case "ljust":
			return s + strings.Repeat(fill, pad)
		case "rjust":
			return strings.Repeat(fill, pad) + s
		}
		left := pad/2 + (pad & int(w) & 1)
		return strings.Repeat(fill, left) + s + strings.Repeat(fill, pad-left)
	case "format":
		return ip.strFormat(off, s, args, kw)
	}
	fail(off, ErrRender, "'str' object has no method '%s'", name)
	return nil
}

func clampRange(lo, hi int64, n int) (int, int) {
	fix := func(v int64) int {
		if v < 0 {
			v += int64(n)
		}
		return int(max(0, min(v, int64(n))))
	}
	a, b := fix(lo), fix(hi)
	if b < a {
		b = a
	}
	return a, b
}

func strList(parts []string) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

// splitSpace is str.split() and str.rsplit() without a separator: runs of
// whitespace separate, ends are dropped, and after maxsplit splits the rest
// is kept whole (its inner edge stripped).
func splitSpace(s string, max int64, fromRight bool) []any {
	if fromRight {
		rs := runes(s)
		var parts []string
		i := len(rs)
		for {
			for i > 0 && pySpace(rs[i-1]) {
				i--
			}
			if i == 0 {
				break
			}
			if max >= 0 && int64(len(parts)) >= max {
				parts = append(parts, string(rs[:i]))
				break
			}
			j := i
			for j > 0 && !pySpace(rs[j-1]) {
				j--
			}
			parts = append(parts, string(rs[j:i]))
			i = j
		}
		for a, b := 0, len(parts)-1; a < b; a, b = a+1, b-1 {
			parts[a], parts[b] = parts[b], parts[a]
		}
		return strList(parts)
	}
	parts := []string{}
	i := 0
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			break
		}
		if max >= 0 && int64(len(parts)) >= max {
			parts = append(parts, s[i:])
			break
		}
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if pySpace(r) {
				break
			}
			j += n
		}
		parts = append(parts, s[i:j])
		i = j
	}
	return strList(parts)
}

// splitLines is str.splitlines: Python's line boundaries, \r\n as one.
func splitLines(s string, keep bool) []any {
	out := []any{}
	start := 0
	rs := runes(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		default:
			continue
		}
		end := i + 1
		if r == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
			end++
		}
		if keep {
			out = append(out, string(rs[start:end]))
		} else {
			out = append(out, string(rs[start:i]))
		}
		start = end
		i = end - 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// pyTitle is str.title: a cased character after an uncased one starts a word.
func pyTitle(s string) string {
	var b strings.Builder
	prev := false
	for _, r := range s {
		if prev {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prev = isCased(r)
	}
	return b.String()
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + strings.ToLower(s[n:])
}

func caseIs(s string, upper bool) bool {
	cased := false
	for _, r := range s {
		if unicode.IsTitle(r) || (upper && unicode.IsLower(r)) || (!upper && unicode.IsUpper(r)) {
			return false
		}
		if isCased(r) {
			cased = true
		}
	}
	return cased
}

// strFormat is str.format for the common fields: {}, {0}, {name}, with
// .attr and [key] lookups, !s and !r, and a format spec (formatSpec).
func (ip *interp) strFormat(off int, f string, args []any, kw []kwVal) string {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(f[i:], '}')
		if end < 0 {
			fail(off, ErrRender, "single '{' encountered in format string")
		}
		field := f[i+1 : i+end]
		i += end
		spec, conv := "", ""
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field, spec = field[:k], field[k+1:]
		}
		if k := strings.IndexByte(field, '!'); k >= 0 {
			field, conv = field[:k], field[k+1:]
		}
		name := field
		rest := ""
		if k := strings.IndexAny(field, ".["); k >= 0 {
			name, rest = field[:k], field[k:]
		}
		var v any
		switch {
		case name == "":
			if auto >= len(args) {
				fail(off, ErrRender, "replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case isDec(name[0]):
			n, _ := strconv.Atoi(name)
			if n >= len(args) {
				fail(off, ErrRender, "replacement index %d out of range for positional args tuple", n)
			}
			v = args[n]
		default:
			found := false
			for _, k := range kw {
				if k.name == name {
					v, found = k.v, true
				}
			}
			if !found {
				fail(off, ErrRender, "format field '%s' is missing", name)
			}
		}
		for rest != "" {
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				if k < 0 {
					k = len(rest) - 1
				}
				v = ip.getattr(off, v, rest[1:1+k])
				rest = rest[1+k:]
				continue
			}
			k := strings.IndexByte(rest, ']')
			if k < 0 {
				fail(off, ErrRender, "missing ']' in format string")
			}
			key := rest[1:k]
			var kv any = key
			if n, err := strconv.ParseInt(key, 10, 64); err == nil {
				kv = n
			}
			v = ip.getitem(off, v, kv)
			rest = rest[k+1:]
		}
		switch conv {
		case "":
		case "s":
			v = pyStr(off, v)
		case "r", "a":
			v = pyRepr(off, v)
		default:
			fail(off, ErrRender, "unknown conversion specifier %s", conv)
		}
		s := formatSpec(off, v, spec)
		ip.charge(off, len(s))
		b.WriteString(s)
	}
	return b.String()
}

// formatSpec is Python's format(v, spec) for
// [[fill]align][sign][0][width][.precision][type].
func formatSpec(off int, v any, spec string) string {
	if u, ok := v.(*undef); ok {
		fail(off, u.errKind(), "%s", u.message())
	}
	if spec == "" {
		return pyStr(off, v)
	}
	rs := []rune(spec)
	i := 0
	fill, align := ' ', rune(0)
	if len(rs) >= 2 && strings.ContainsRune("<>^=", rs[1]) {
		fill, align, i = rs[0], rs[1], 2
	} else if len(rs) >= 1 && strings.ContainsRune("<>^=", rs[0]) {
		align, i = rs[0], 1
	}
	sign := rune(0)
	if i < len(rs) && strings.ContainsRune("+- ", rs[i]) {
		sign = rs[i]
		i++
	}
	if i < len(rs) && rs[i] == '0' {
		if align == 0 {
			fill, align = '0', '='
		}
		i++
	}
	w := 0
	for i < len(rs) && rs[i] >= '0' && rs[i] <= '9' {
		w = min(w*10+int(rs[i]-'0'), 1<<16)
		i++
	}
	prec := -1
	if i < len(rs) && rs[i] == '.' {
		i++
		prec = 0
		for i < len(rs) && rs[i] >= '0' && rs[i] <= '9' {
			prec = min(prec*10+int(rs[i]-'0'), 1<<10)
			i++
		}
	}
	typ := rune(0)
	if i < len(rs) {
		typ = rs[i]
		i++
	}
	if i != len(rs) {
		fail(off, ErrRender, "invalid format specifier '%s'", spec)
	}
	var body string
	neg := false
	switch x := v.(type) {
	case string:
		if typ != 0 && typ != 's' {
			fail(off, ErrRender, "unknown format code '%c' for object of type 'str'", typ)
		}
		body = x
		if prec >= 0 && utf8.RuneCountInString(body) > prec {
			body = string([]rune(body)[:prec])
		}
		if align == 0 {
			align = '<'
		}
	case bool, int64, float64:
		n, isInt := asInt(x)
		if _, isB := x.(bool); isB && typ == 0 {
			body = pyStr(off, x)
			break
		}
		if isInt && (typ == 0 || strings.ContainsRune("dxXobc", typ)) {
			neg = n < 0
			u := abs64(n)
			switch typ {
			case 'x':
				body = strconv.FormatInt(u, 16)
			case 'X':
				body = strings.ToUpper(strconv.FormatInt(u, 16))
			case 'o':
				body = strconv.FormatInt(u, 8)
			case 'b':
				body = strconv.FormatInt(u, 2)
			case 'c':
				body = string(rune(n))
			default:
				body = strconv.FormatInt(u, 10)
			}
		} else {
			f := toFloat(x)
			neg = f < 0
			if neg {
				f = -f
			}
			p := prec
			if p < 0 {
				p = 6
			}
			switch typ {
			case 'f', 'F':
				body = strconv.FormatFloat(f, 'f', p, 64)
			case 'e', 'E':
				body = strconv.FormatFloat(f, 'e', p, 64)
			case 'g', 'G':
				body = strconv.FormatFloat(f, 'g', max(p, 1), 64)
			case '%':
				body = strconv.FormatFloat(f*100, 'f', p, 64) + "%"
			case 0:
				if prec >= 0 {
					body = strconv.FormatFloat(f, 'g', max(p, 1), 64)
				} else {
					body = pyFloat(f)
				}
			default:
				fail(off, ErrRender, "unknown format code '%c' for object of type 'float'", typ)
			}
			if typ == 'E' || typ == 'G' || typ == 'F' {
				body = strings.ToUpper(body)
			}
		}
		if align == 0 {
			align = '>'
		}
	default:
		fail(off, ErrRender, "unsupported format string passed to %s.__format__", typeName(v))
	}
	pre := ""
	switch {
	case neg:
		pre = "-"
	case sign == '+':
		pre = "+"
	case sign == ' ':
		pre = " "
	}
	pad := w - utf8.RuneCountInString(pre+body)
	if pad <= 0 {
		return pre + body
	}
	p := strings.Repeat(string(fill), pad)
	switch align {
	case '<':
		return pre + body + p
	case '^':
		l := pad / 2
		return strings.Repeat(string(fill), l) + pre + body + strings.Repeat(string(fill), pad-l)
	case '=':
		return pre + p + body
	}
	return p + pre + body
}
