package chat

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Template values are Python's, as Jinja sees them, held in plain Go types:
//
//	None      nil           int    int64      str   string (UTF-8; indexed by character)
//	bool      bool          float  float64    list  []any
//	tuple     tuple         dict   *dict      Undefined *undef
//
// plus a few objects of the template world (namespace, loop, callables).
// Nothing else ever reaches a template: Context data is converted into these
// on the way in (convert.go), which is what keeps Go internals out of reach.
// Lists and dicts are never changed once built (Hugging Face renders with
// Jinja's ImmutableSandboxedEnvironment), so they are shared freely.

type tuple []any

// undef is Jinja's Undefined: what a missing variable, key or attribute gives.
// It renders as "", is false, iterates as empty and has length 0; anything
// else done with it (attribute access, arithmetic, a call) is an error that
// says what was missing.
type undef struct {
	name   string
	obj    any
	hasObj bool
	hint   string // replaces the message (used for refused attributes)
	kind   error  // ErrRender, or ErrUnsupported for refused attributes
}

func (u *undef) message() string {
	if u.hint != "" {
		return u.hint
	}
	if !u.hasObj {
		return "'" + u.name + "' is undefined"
	}
	return "'" + objectTypeRepr(u.obj) + "' has no attribute '" + u.name + "'"
}

func objectTypeRepr(v any) string {
	if v == nil {
		return "None"
	}
	return typeName(v) + " object"
}

// dict is an insertion-ordered Python dict.
type dict struct {
	keys, vals []any
	idx        map[any]int
}

func newDict(n int) *dict {
	return &dict{keys: make([]any, 0, n), vals: make([]any, 0, n), idx: make(map[any]int, n)}
}

func (d *dict) get(k any) (any, bool) {
	hk, ok := hashKey(k)
	if !ok {
		return nil, false
	}
	i, ok := d.idx[hk]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// set is for building a dict (and for namespaces, the one mutable object).
func (d *dict) set(k, v any) bool {
	hk, ok := hashKey(k)
	if !ok {
		return false
	}
	if i, ok := d.idx[hk]; ok {
		d.vals[i] = v
		return true
	}
	d.idx[hk] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return true
}

func (d *dict) len() int { return len(d.keys) }

// hashKey maps a key to the Go value that identifies it, with Python's
// equalities (True == 1 == 1.0). Lists, dicts and the like are unhashable.
func hashKey(k any) (any, bool) {
	switch v := k.(type) {
	case nil, string, int64:
		return v, true
	case bool:
		if v {
			return int64(1), true
		}
		return int64(0), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<62 {
			return int64(v), true
		}
		return v, true
	}
	return nil, false
}

// namespace is the object namespace() makes: the one value a template may
// change ({% set ns.attr = ... %}), so that loops can carry state out.
type namespace struct{ attrs *dict }

// iterator is a Python generator or iterator: what Jinja's select, reject,
// selectattr, rejectattr, map, unique, batch and items filters (generator
// functions) and reverse return. Like Python's it is always true, has no
// length, is walked once (what a walk took is gone), and runs its filter
// only when first walked, so its errors come late, as in Jinja.
type iterator struct {
	name    string
	produce func() []any
	items   []any
	pos     int
}

func (it *iterator) fill() {
	if it.produce != nil {
		f := it.produce
		it.produce = nil
		it.items = f()
	}
}

// rest walks what is left.
func (it *iterator) rest() []any {
	it.fill()
	r := it.items[it.pos:]
	it.pos = len(it.items)
	return r
}

// loopObj is the `loop` variable of a for loop.
type loopObj struct {
	index0, length int
	items          []any
	changed        []any
	seen           bool
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case tuple:
		return "tuple"
	case *dict:
		return "dict"
	case *undef:
		return "Undefined"
	case *namespace:
		return "Namespace"
	case *loopObj:
		return "LoopContext"
	case *macroVal:
		return "Macro"
	case *boundMethod:
		return "builtin_function_or_method"
	case *iterator:
		if strings.HasPrefix(v.(*iterator).name, "reversed") {
			return "list_reverseiterator"
		}
		return "generator"
	}
	return "function"
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil, *undef:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case tuple:
		return len(x) > 0
	case *dict:
		return x.len() > 0
	}
	return true
}

// maxValueDepth bounds recursion over nested values (repr, JSON, equality).
const maxValueDepth = 256

func deep(off, depth int) {
	if depth > maxValueDepth {
		fail(off, ErrLimit, "value nested more than %d levels deep", maxValueDepth)
	}
}

// pyStr is Python's str(): what {{ }} prints.
func pyStr(off int, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case *undef:
		return ""
	}
	var b strings.Builder
	writeRepr(&b, off, v, 0)
	return b.String()
}

func pyRepr(off int, v any) string {
	var b strings.Builder
	writeRepr(&b, off, v, 0)
	return b.String()
}

// maxRepr bounds the text of one printed value: a list holding the same
// long string many times is small to build and huge to print.
const maxRepr = 64 << 20

func writeRepr(b *strings.Builder, off int, v any, depth int) {
	deep(off, depth)
	if b.Len() > maxRepr {
		fail(off, ErrLimit, "a value prints to more than %d bytes", maxRepr)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		writeStrRepr(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, off, e, depth+1)
		}
		b.WriteByte(']')
	case tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, off, e, depth+1)
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, off, k, depth+1)
			b.WriteString(": ")
			writeRepr(b, off, x.vals[i], depth+1)
		}
		b.WriteByte('}')
	case *undef:
		b.WriteString("Undefined")
	case *namespace:
		b.WriteString("<Namespace ")
		writeRepr(b, off, x.attrs, depth+1)
		b.WriteByte('>')
	case *loopObj:
		b.WriteString("<LoopContext " + strconv.Itoa(x.index0+1) + "/" + strconv.Itoa(x.length) + ">")
	case *iterator:
		b.WriteString("<" + typeName(x) + " object " + x.name + ">")
	default:
		b.WriteString("<" + typeName(v) + ">")
	}
}

// writeStrRepr is Python's repr of a str: single quotes unless the text has
// a single quote and no double quote; escapes for the unprintable.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + hex(uint64(r), 2))
		case r < 0x80 || isPrintable(r):
			b.WriteRune(r)
		case r < 0x100:
			b.WriteString(`\x` + hex(uint64(r), 2))
		case r < 0x10000:
			b.WriteString(`\u` + hex(uint64(r), 4))
		default:
			b.WriteString(`\U` + hex(uint64(r), 8))
		}
	}
	b.WriteByte(q)
}

// pyFloat is Python's repr of a float: the shortest digits that round-trip,
// in fixed notation for exponents from -4 to 15, with at least ".0".
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	e := strings.IndexByte(s, 'e')
	exp, _ := strconv.Atoi(s[e+1:])
	digs := strings.Replace(s[:e], ".", "", 1)
	if exp >= -4 && exp < 16 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digs
		}
		if len(digs) <= exp+1 {
			return sign + digs + strings.Repeat("0", exp+1-len(digs)) + ".0"
		}
		return sign + digs[:exp+1] + "." + digs[exp+1:]
	}
	m := digs[:1]
	if len(digs) > 1 {
		m += "." + digs[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	x := strconv.Itoa(exp)
	if len(x) < 2 {
		x = "0" + x
	}
	return sign + m + "e" + es + x
}

func isNumber(v any) bool {
	switch v.(type) {
	case bool, int64, float64:
		return true
	}
	return false
}

// toFloat and toInt read a number (bool counts, as in Python).
func toFloat(v any) float64 {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
		return 0
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return x, true
	}
	return 0, false
}

// equal is Python's ==.
func equal(off int, a, b any, depth int) bool {
	deep(off, depth)
	if isNumber(a) && isNumber(b) {
		ai, aok := asInt(a)
		bi, bok := asInt(b)
		if aok && bok {
			return ai == bi
		}
		return toFloat(a) == toFloat(b)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *undef:
		_, ok := b.(*undef)
		return ok
	case []any:
		y, ok := b.([]any)
		return ok && equalSeq(off, x, y, depth)
	case tuple:
		y, ok := b.(tuple)
		return ok && equalSeq(off, x, y, depth)
	case *dict:
		y, ok := b.(*dict)
		if !ok || x.len() != y.len() {
			return false
		}
		for i, k := range x.keys {
			v, ok := y.get(k)
			if !ok || !equal(off, x.vals[i], v, depth+1) {
				return false
			}
		}
		return true
	case *namespace:
		y, ok := b.(*namespace)
		return ok && x == y
	case *loopObj:
		y, ok := b.(*loopObj)
		return ok && x == y
	case *macroVal:
		y, ok := b.(*macroVal)
		return ok && x == y
	case *builtinFn:
		y, ok := b.(*builtinFn)
		return ok && x == y
	case *iterator:
		y, ok := b.(*iterator)
		return ok && x == y
	}
	return false
}

func equalSeq(off int, x, y []any, depth int) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(off, x[i], y[i], depth+1) {
			return false
		}
	}
	return true
}

// compare is Python's ordering: -1, 0 or 1, and an error for types Python
// will not order.
func compare(off int, op string, a, b any, depth int) int {
	deep(off, depth)
	if isNumber(a) && isNumber(b) {
		ai, aok := asInt(a)
		bi, bok := asInt(b)
		if aok && bok {
			return cmp3(ai < bi, ai > bi)
		}
		fa, fb := toFloat(a), toFloat(b)
		return cmp3(fa < fb, fa > fb)
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case []any:
		if y, ok := b.([]any); ok {
			return compareSeq(off, op, x, y, depth)
		}
	case tuple:
		if y, ok := b.(tuple); ok {
			return compareSeq(off, op, x, y, depth)
		}
	}
	if u, ok := a.(*undef); ok {
		fail(off, u.errKind(), "%s", u.message())
	}
	if u, ok := b.(*undef); ok {
		fail(off, u.errKind(), "%s", u.message())
	}
	fail(off, ErrRender, "'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
	return 0
}

func (u *undef) errKind() error {
	if u.kind != nil {
		return u.kind
	}
	return ErrRender
}

func cmp3(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

func compareSeq(off int, op string, x, y []any, depth int) int {
	for i := 0; i < len(x) && i < len(y); i++ {
		if !equal(off, x[i], y[i], depth+1) {
			return compare(off, op, x[i], y[i], depth+1)
		}
	}
	return cmp3(len(x) < len(y), len(x) > len(y))
}

// runes returns a string's characters, the unit Python indexes by.
func runes(s string) []rune {
	return []rune(s)
}

// isPrintable is Python's str.isprintable for one character: Go's
// unicode.IsPrint draws the same line (letters, marks, numbers, punctuation,
// symbols and the ASCII space).
func isPrintable(r rune) bool { return unicode.IsPrint(r) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func strLen(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}
