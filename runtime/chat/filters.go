package chat

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Jinja's built-in filters that chat templates use, with Jinja's semantics
// (jinja2/filters.py), and tojson as Hugging Face overrides it (json.dumps
// with ensure_ascii=False, Python's separators, optional indent/sort_keys).

type filterFn func(ip *interp, off int, v any, args []any, kw []kwVal) any

var filters map[string]filterFn

func init() {
	filters = map[string]filterFn{
		"abs":        fAbs,
		"attr":       fAttr,
		"batch":      lazy("do_batch", fBatch),
		"capitalize": strFilter(capitalize),
		"center":     fCenter,
		"count":      fLength,
		"d":          fDefault,
		"default":    fDefault,
		"dictsort":   fDictsort,
		"e":          fEscape,
		"escape":     fEscape,
		"first":      fFirst,
		"float":      fFloat,
		"format":     fFormat,
		"indent":     fIndent,
		"int":        fInt,
		"items":      lazy("do_items", fItems),
		"join":       fJoin,
		"last":       fLast,
		"length":     fLength,
		"list":       fList,
		"lower":      strFilter(strings.ToLower),
		"map":        lazy("sync_do_map", fMap),
		"max":        fMinMax(true),
		"min":        fMinMax(false),
		"reject":     lazy("select_or_reject", fSelect(false, false)),
		"rejectattr": lazy("select_or_reject", fSelect(false, true)),
		"replace":    fReplace,
		"reverse":    fReverse,
		"round":      fRound,
		"safe":       func(ip *interp, off int, v any, args []any, kw []kwVal) any { return v },
		"select":     lazy("select_or_reject", fSelect(true, false)),
		"selectattr": lazy("select_or_reject", fSelect(true, true)),
		"sort":       fSort,
		"string":     func(ip *interp, off int, v any, args []any, kw []kwVal) any { return pyStr(off, v) },
		"sum":        fSum,
		"title":      strFilter(jinjaTitle),
		"tojson":     fToJSON,
		"trim":       fTrim,
		"unique":     lazy("sync_do_unique", fUnique),
		"upper":      strFilter(strings.ToUpper),
		"wordcount":  fWordcount,
	}
}

func (ip *interp) applyFilter(f *filterExpr, v any, sc *scope) any {
	args, kw := ip.evalArgs(f.args, f.kw, f.star, f.dstr, sc)
	return ip.filter(f.off, f.name, v, args, kw)
}

func (ip *interp) filter(off int, name string, v any, args []any, kw []kwVal) any {
	fn, ok := filters[name]
	if !ok {
		fail(off, ErrUnsupported, "unknown filter '%s'", name)
	}
	return fn(ip, off, v, args, kw)
}

// lazy makes a filter a generator, as Jinja's generator-function filters
// are: nothing runs until the result is walked.
func lazy(name string, fn filterFn) filterFn {
	return func(ip *interp, off int, v any, args []any, kw []kwVal) any {
		return &iterator{name: name, produce: func() []any { return fn(ip, off, v, args, kw).([]any) }}
	}
}

func strFilter(f func(string) string) filterFn {
	return func(ip *interp, off int, v any, args []any, kw []kwVal) any {
		bindArgs(off, "filter", args, kw)
		return f(pyStr(off, v))
	}
}

// jinjaTitle is the title filter, which (unlike str.title) starts words only
// after whitespace, "-", and opening brackets.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if unicode.IsSpace(r) || strings.ContainsRune("-({[<", r) {
			b.WriteRune(r)
			start = true
			continue
		}
		if start {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		start = false
	}
	return b.String()
}

func fAbs(ip *interp, off int, v any, args []any, kw []kwVal) any {
	switch x := v.(type) {
	case bool:
		return boolInt(x)
	case int64:
		if x == math.MinInt64 {
			overflow(off)
		}
		return abs64(x)
	case float64:
		return math.Abs(x)
	}
	ip.operandCheck(off, v)
	fail(off, ErrRender, "bad operand type for abs(): '%s'", typeName(v))
	return nil
}

func fAttr(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "attr", args, kw, "name")
	name, _ := a[0].(string)
	// Only attributes, never items: a dict's attributes are its methods.
	if d, ok := v.(*dict); ok {
		if m := method(d, name); m != nil {
			return m
		}
		return &undef{name: name, obj: v, hasObj: true}
	}
	return ip.getattr(off, v, name)
}

func fBatch(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "batch", args, kw, "linecount", "fill_with")
	n, ok := asInt(a[0])
	if !ok || n <= 0 {
		fail(off, ErrRender, "batch() needs a positive count")
	}
	var out []any
	var cur []any
	for _, it := range ip.iterate(off, v) {
		cur = append(cur, it)
		if int64(len(cur)) == n {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		if a[1] != absent && a[1] != nil {
			ip.room(off, 16*n)
			for int64(len(cur)) < n {
				cur = append(cur, a[1])
			}
		}
		out = append(out, cur)
	}
	return out
}

func fCenter(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "center", args, kw, "width")
	return ip.strMethod(off, pyStr(off, v), "center", []any{argOr(a[0], int64(80))}, nil)
}

func fLength(ip *interp, off int, v any, args []any, kw []kwVal) any {
	bindArgs(off, "length", args, kw)
	switch x := v.(type) {
	case string:
		ip.work(off, len(x)/256)
		return int64(strLen(x))
	case []any:
		return int64(len(x))
	case tuple:
		return int64(len(x))
	case *dict:
		return int64(x.len())
	case *undef:
		return int64(0)
	}
	fail(off, ErrRender, "object of type '%s' has no len()", typeName(v))
	return nil
}

func fDefault(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "default", args, kw, "default_value", "boolean")
	if _, ok := v.(*undef); ok || (truthy(argOr(a[1], false)) && !truthy(v)) {
		return argOr(a[0], "")
	}
	return v
}

func fDictsort(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "dictsort", args, kw, "case_sensitive", "by", "reverse")
	d, ok := v.(*dict)
	if !ok {
		ip.operandCheck(off, v)
		fail(off, ErrRender, "dictsort needs a mapping, not '%s'", typeName(v))
	}
	pos := 0
	switch argOr(a[1], "key") {
	case "key":
	case "value":
		pos = 1
	default:
		fail(off, ErrRender, "you can only sort by either \"key\" or \"value\"")
	}
	items := dictItems(ip, off, d)
	cs := truthy(argOr(a[0], false))
	ip.sortBy(off, items, func(x any) any { return foldCase(x.(tuple)[pos], cs) }, truthy(argOr(a[2], false)))
	return items
}

func foldCase(v any, caseSensitive bool) any {
	if s, ok := v.(string); ok && !caseSensitive {
		return strings.ToLower(s)
	}
	return v
}

// sortBy is a stable sort with Python's ordering, which fails on values
// Python will not compare.
func (ip *interp) sortBy(off int, items []any, key func(any) any, reverse bool) {
	ip.work(off, len(items)*8)
	keys := make([]any, len(items))
	for i, it := range items {
		keys[i] = key(it)
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		c := compare(off, "<", keys[idx[i]], keys[idx[j]], 0)
		if reverse {
			return c > 0
		}
		return c < 0
	})
	sorted := make([]any, len(items))
	for i, k := range idx {
		sorted[i] = items[k]
	}
	copy(items, sorted)
}

func fEscape(ip *interp, off int, v any, args []any, kw []kwVal) any {
	s := pyStr(off, v)
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	out := r.Replace(s)
	ip.charge(off, len(out))
	return out
}

func fFirst(ip *interp, off int, v any, args []any, kw []kwVal) any {
	if it, ok := v.(*iterator); ok {
		it.fill()
		if it.pos < len(it.items) {
			it.pos++
			return it.items[it.pos-1]
		}
		return &undef{hint: "no first item, sequence was empty"}
	}
	items := ip.iterate(off, v)
	if len(items) == 0 {
		return &undef{hint: "no first item, sequence was empty"}
	}
	return items[0]
}

func fLast(ip *interp, off int, v any, args []any, kw []kwVal) any {
	if _, ok := v.(*iterator); ok {
		fail(off, ErrRender, "'%s' object is not reversible", typeName(v))
	}
	items := ip.iterate(off, v)
	if len(items) == 0 {
		return &undef{hint: "no last item, sequence was empty"}
	}
	return items[len(items)-1]
}

func fFloat(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "float", args, kw, "default")
	def := argOr(a[0], 0.0)
	ip.operandCheck(off, v) // float(Undefined) fails in Jinja too
	switch x := v.(type) {
	case bool, int64, float64:
		return toFloat(x)
	case string:
		f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimFunc(x, pySpace), "_", ""), 64)
		if err != nil && !isRangeErr(err) {
			return def
		}
		return f
	}
	return def
}

func fInt(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "int", args, kw, "default", "base")
	def := argOr(a[0], int64(0))
	ip.operandCheck(off, v) // int(Undefined) fails in Jinja too
	switch x := v.(type) {
	case bool:
		return boolInt(x)
	case int64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return def
		}
		return int64(x)
	case string:
		base := int64(10)
		if b, ok := asInt(argOr(a[1], int64(10))); ok {
			base = b
		}
		t := strings.ReplaceAll(strings.TrimFunc(x, pySpace), "_", "")
		if base == 16 || base == 8 || base == 2 {
			t = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(t), "0x"), "0o"), "0b")
		}
		if base < 2 || base > 36 {
			return def
		}
		if n, err := strconv.ParseInt(t, int(base), 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return int64(f)
		}
	}
	return def
}

func fFormat(ip *interp, off int, v any, args []any, kw []kwVal) any {
	f := pyStr(off, v)
	if len(kw) > 0 {
		if len(args) > 0 {
			fail(off, ErrRender, "format() takes positional or keyword arguments, not both")
		}
		d := newDict(len(kw))
		for _, k := range kw {
			d.set(k.name, k.v)
		}
		return ip.percent(off, f, d)
	}
	return ip.percent(off, f, tuple(args))
}

func fIndent(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "indent", args, kw, "width", "first", "blank")
	ind := "    "
	switch w := argOr(a[0], int64(4)).(type) {
	case string:
		ind = w
	default:
		n, ok := asInt(w)
		if !ok {
			fail(off, ErrRender, "indent width must be an int or a string")
		}
		ip.room(off, n)
		ind = strings.Repeat(" ", int(max(n, 0)))
	}
	str, ok := v.(string)
	if !ok {
		ip.operandCheck(off, v)
		fail(off, ErrRender, "unsupported operand type(s) for +=: '%s' and 'str'", typeName(v))
	}
	lines := splitLines(str+"\n", false)
	var b strings.Builder
	if truthy(argOr(a[2], false)) {
		for i, l := range lines {
			if i > 0 {
				b.WriteString("\n" + ind)
			}
			b.WriteString(l.(string))
		}
	} else {
		b.WriteString(lines[0].(string))
		for _, l := range lines[1:] {
			b.WriteByte('\n')
			if l.(string) != "" {
				b.WriteString(ind)
			}
			b.WriteString(l.(string))
		}
	}
	out := b.String()
	if truthy(argOr(a[1], false)) {
		out = ind + out
	}
	ip.charge(off, len(out))
	return out
}

func fItems(ip *interp, off int, v any, args []any, kw []kwVal) any {
	switch x := v.(type) {
	case *undef:
		return []any{}
	case *dict:
		return dictItems(ip, off, x)
	}
	fail(off, ErrRender, "can only get item pairs from a mapping, not '%s'", typeName(v))
	return nil
}

func fJoin(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "join", args, kw, "d", "attribute")
	sep := pyStr(off, argOr(a[0], ""))
	items := ip.iterate(off, v)
	var b strings.Builder
	for i, it := range items {
		if a[1] != absent && a[1] != nil {
			it = ip.attrPath(off, it, a[1])
		}
		if i > 0 {
			b.WriteString(sep)
		}
		s := pyStr(off, it)
		ip.charge(off, len(s)+len(sep))
		b.WriteString(s)
	}
	return b.String()
}

// attrPath looks up "a.b.0" in v, as the attribute= arguments of filters
// do; a default (not absent or None) replaces an undefined at every step.
func (ip *interp) attrPath(off int, v any, path any, def ...any) any {
	if n, ok := path.(int64); ok {
		path = strconv.FormatInt(n, 10)
	}
	p, ok := path.(string)
	if !ok {
		fail(off, ErrRender, "attribute must be a string")
	}
	for _, part := range strings.Split(p, ".") {
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			v = ip.getitem(off, v, n)
		} else {
			v = ip.getitem(off, v, part)
		}
		if _, u := v.(*undef); u && len(def) > 0 && def[0] != absent && def[0] != nil {
			v = def[0]
		}
	}
	return v
}

func fList(ip *interp, off int, v any, args []any, kw []kwVal) any {
	items := ip.iterate(off, v)
	ip.work(off, len(items)/16)
	ip.charge(off, 16*len(items))
	out := make([]any, len(items))
	copy(out, items)
	return out
}

func fMap(ip *interp, off int, v any, args []any, kw []kwVal) any {
	items := ip.iterate(off, v)
	out := make([]any, 0, len(items))
	if len(args) == 0 {
		var attr, def any = absent, absent
		for _, k := range kw {
			switch k.name {
			case "attribute":
				attr = k.v
			case "default":
				def = k.v
			default:
				fail(off, ErrRender, "map() got an unexpected keyword argument '%s'", k.name)
			}
		}
		if attr == absent {
			fail(off, ErrRender, "map() needs a filter name or attribute=")
		}
		for _, it := range items {
			out = append(out, ip.attrPath(off, it, attr, def))
		}
		return out
	}
	name, ok := args[0].(string)
	if !ok {
		fail(off, ErrRender, "map() needs a filter name")
	}
	for _, it := range items {
		ip.step(off)
		out = append(out, ip.filter(off, name, it, args[1:], kw))
	}
	return out
}

func fMinMax(isMax bool) filterFn {
	return func(ip *interp, off int, v any, args []any, kw []kwVal) any {
		a := bindArgs(off, "min/max", args, kw, "case_sensitive", "attribute")
		items := ip.iterate(off, v)
		if len(items) == 0 {
			return &undef{hint: "no aggregated item, sequence was empty"}
		}
		cs := truthy(argOr(a[0], false))
		key := func(x any) any {
			if a[1] != absent && a[1] != nil {
				x = ip.attrPath(off, x, a[1])
			}
			return foldCase(x, cs)
		}
		best := items[0]
		ip.work(off, len(items))
		for _, it := range items[1:] {
			c := compare(off, "<", key(it), key(best), 0)
			if (isMax && c > 0) || (!isMax && c < 0) {
				best = it
			}
		}
		return best
	}
}

// fSelect is select, reject, selectattr and rejectattr.
func fSelect(keep, byAttr bool) filterFn {
	return func(ip *interp, off int, v any, args []any, kw []kwVal) any {
		var attr any
		if byAttr {
			if len(args) == 0 {
				fail(off, ErrRender, "missing parameter for attribute name")
			}
			attr, args = args[0], args[1:]
		}
		items := ip.iterate(off, v)
		out := []any{}
		for _, it := range items {
			ip.step(off)
			x := it
			if byAttr {
				x = ip.attrPath(off, it, attr)
			}
			var ok bool
			if len(args) == 0 {
				ok = truthy(x)
			} else {
				name, isStr := args[0].(string)
				if !isStr {
					fail(off, ErrRender, "the test name must be a string")
				}
				ok = ip.test(off, name, x, args[1:], kw)
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return out
	}
}

func fReplace(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "replace", args, kw, "old", "new", "count")
	cargs := []any{pyStr(off, a[0]), pyStr(off, a[1])}
	if a[2] != absent && a[2] != nil {
		cargs = append(cargs, a[2])
	}
	return ip.strMethod(off, pyStr(off, v), "replace", cargs, nil)
}

// fReverse reverses a string; anything else Python can reverse becomes a
// reverse iterator, and an iterator becomes a reversed list.
func fReverse(ip *interp, off int, v any, args []any, kw []kwVal) any {
	if s, ok := v.(string); ok {
		rs := runes(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return string(rs)
	}
	switch v.(type) {
	case []any, tuple, *dict, *undef, *iterator:
	default:
		fail(off, ErrRender, "argument must be iterable")
	}
	items := ip.iterate(off, v)
	ip.work(off, len(items)/16)
	ip.charge(off, 16*len(items))
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	if _, ok := v.(*iterator); ok {
		return out
	}
	return &iterator{name: "reversed", items: out}
}

func fRound(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "round", args, kw, "precision", "method")
	p, _ := asInt(argOr(a[0], int64(0)))
	if !isNumber(v) {
		ip.operandCheck(off, v)
		fail(off, ErrRender, "round() needs a number, not '%s'", typeName(v))
	}
	f := toFloat(v)
	scale := math.Pow(10, float64(p))
	switch argOr(a[1], "common") {
	case "common":
		if n, ok := asInt(v); ok {
			return n // Python's round() of an int is that int
		}
		if p >= 0 && p < 300 {
			r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(p), 64), 64)
			return r
		}
		return f
	case "ceil":
		return math.Ceil(f*scale) / scale
	case "floor":
		return math.Floor(f*scale) / scale
	}
	fail(off, ErrRender, "method must be common, ceil or floor")
	return nil
}

func fSort(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "sort", args, kw, "reverse", "case_sensitive", "attribute")
	items := fList(ip, off, v, nil, nil).([]any)
	cs := truthy(argOr(a[1], false))
	ip.sortBy(off, items, func(x any) any {
		if a[2] != absent && a[2] != nil {
			x = ip.attrPath(off, x, a[2])
		}
		return foldCase(x, cs)
	}, truthy(argOr(a[0], false)))
	return items
}

func fSum(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "sum", args, kw, "attribute", "start")
	acc := argOr(a[1], int64(0))
	for _, it := range ip.iterate(off, v) {
		ip.step(off)
		if a[0] != absent && a[0] != nil {
			it = ip.attrPath(off, it, a[0])
		}
		acc = ip.arith(off, "+", acc, it)
	}
	return acc
}

func fToJSON(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	enc := jsonEncoder{ip: ip, off: off, ascii: truthy(argOr(a[0], false)), sortKeys: truthy(argOr(a[3], false))}
	switch ind := argOr(a[1], nil).(type) {
	case nil:
	case string:
		enc.indent, enc.pretty = ind, true
	default:
		n, ok := asInt(ind)
		if !ok {
			fail(off, ErrRender, "tojson indent must be an int or a string")
		}
		ip.room(off, n)
		enc.indent, enc.pretty = strings.Repeat(" ", int(max(n, 0))), true
	}
	enc.item, enc.key = ", ", ": "
	if enc.pretty {
		enc.item = ","
	}
	if seps := argOr(a[2], nil); seps != nil {
		items := ip.iterate(off, seps)
		if len(items) != 2 {
			fail(off, ErrRender, "tojson separators must be a pair of strings")
		}
		s1, ok1 := items[0].(string)
		s2, ok2 := items[1].(string)
		if !ok1 || !ok2 {
			fail(off, ErrRender, "tojson separators must be a pair of strings")
		}
		enc.item, enc.key = s1, s2
	}
	enc.value(v, 0)
	out := enc.b.String()
	ip.charge(off, len(out))
	return out
}

func fTrim(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "trim", args, kw, "chars")
	return ip.strMethod(off, pyStr(off, v), "strip", []any{argOr(a[0], nil)}, nil)
}

func fUnique(ip *interp, off int, v any, args []any, kw []kwVal) any {
	a := bindArgs(off, "unique", args, kw, "case_sensitive", "attribute")
	cs := truthy(argOr(a[0], false))
	var seen []any
	out := []any{}
	for _, it := range ip.iterate(off, v) {
		k := it
		if a[1] != absent && a[1] != nil {
			k = ip.attrPath(off, it, a[1])
		}
		k = foldCase(k, cs)
		if ip.inSeq(off, seen, k) {
			continue
		}
		seen = append(seen, k)
		out = append(out, it)
	}
	return out
}

func fWordcount(ip *interp, off int, v any, args []any, kw []kwVal) any {
	n, in := int64(0), false
	for _, r := range pyStr(off, v) {
		w := r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}
