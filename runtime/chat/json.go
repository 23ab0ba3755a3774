package chat

import (
	"math"
	"strconv"
	"strings"
)

// jsonEncoder writes what Python's json.dumps writes, since Hugging Face's
// tojson is json.dumps(x, ensure_ascii=False, indent=..., separators=...,
// sort_keys=...): item separator ", " (or "," when indenting), key separator
// ": ", floats as Python's repr, NaN/Infinity bare, non-ASCII characters
// as they are unless ensure_ascii, and only the escapes json.dumps uses.
type jsonEncoder struct {
	ip       *interp
	off      int
	b        strings.Builder
	ascii    bool
	sortKeys bool
	pretty   bool
	indent   string
	item     string
	key      string
}

// check fails once the text written passes what the render may still
// allocate: a wide indent over a long list grows fast.
func (e *jsonEncoder) check() {
	e.ip.room(e.off, int64(e.b.Len()))
	if e.b.Len() > maxRepr {
		fail(e.off, ErrLimit, "a value prints to more than %d bytes", maxRepr)
	}
}

func (e *jsonEncoder) value(v any, depth int) {
	deep(e.off, depth)
	e.check()
	switch x := v.(type) {
	case nil:
		e.b.WriteString("null")
	case bool:
		if x {
			e.b.WriteString("true")
		} else {
			e.b.WriteString("false")
		}
	case int64:
		e.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		e.b.WriteString(jsonFloat(x))
	case string:
		e.str(x)
	case []any:
		e.array(x, depth)
	case tuple:
		e.array(x, depth)
	case *dict:
		e.object(x, depth)
	default:
		fail(e.off, ErrRender, "Object of type %s is not JSON serializable", typeName(v))
	}
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloat(f)
}

func (e *jsonEncoder) newline(depth int) {
	if e.pretty {
		e.check()
		e.ip.room(e.off, int64(e.b.Len())+int64(depth)*int64(len(e.indent)))
		e.b.WriteByte('\n')
		for i := 0; i < depth; i++ {
			e.b.WriteString(e.indent)
		}
	}
}

func (e *jsonEncoder) array(items []any, depth int) {
	if len(items) == 0 {
		e.b.WriteString("[]")
		return
	}
	e.ip.work(e.off, len(items))
	e.b.WriteByte('[')
	e.newline(depth + 1)
	for i, it := range items {
		if i > 0 {
			e.b.WriteString(e.item)
			e.newline(depth + 1)
		}
		e.value(it, depth+1)
	}
	e.newline(depth)
	e.b.WriteByte(']')
}

func (e *jsonEncoder) object(d *dict, depth int) {
	if d.len() == 0 {
		e.b.WriteString("{}")
		return
	}
	e.ip.work(e.off, d.len())
	order := make([]int, d.len())
	for i := range order {
		order[i] = i
	}
	if e.sortKeys {
		keys := make([]any, d.len())
		for i := range keys {
			keys[i] = int64(i)
		}
		e.ip.sortBy(e.off, keys, func(x any) any { return d.keys[x.(int64)] }, false)
		for i, k := range keys {
			order[i] = int(k.(int64))
		}
	}
	e.b.WriteByte('{')
	e.newline(depth + 1)
	for n, i := range order {
		if n > 0 {
			e.b.WriteString(e.item)
			e.newline(depth + 1)
		}
		switch k := d.keys[i].(type) {
		case string:
			e.str(k)
		case nil, bool, int64:
			e.str(jsonScalar(k))
		case float64:
			e.str(jsonFloat(k))
		default:
			fail(e.off, ErrRender, "keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		e.b.WriteString(e.key)
		e.value(d.vals[i], depth+1)
	}
	e.newline(depth)
	e.b.WriteByte('}')
}

func jsonScalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func (e *jsonEncoder) str(s string) {
	b := &e.b
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (e.ascii && r == 0x7f):
				b.WriteString(`\u` + hex(uint64(r), 4))
			case e.ascii && r > 0x7f && r < 0x10000:
				b.WriteString(`\u` + hex(uint64(r), 4))
			case e.ascii && r >= 0x10000:
				r -= 0x10000
				b.WriteString(`\u` + hex(uint64(0xd800+(r>>10)), 4) + `\u` + hex(uint64(0xdc00+(r&0x3ff)), 4))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
