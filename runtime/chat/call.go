package chat

import (
	"strings"
)

// Callables of the template world: built-in functions (range, namespace,
// raise_exception, ...), methods bound to a value ('a'.upper, d.items) and
// macros. A template can call nothing else.

type builtinFn struct {
	name string
	fn   func(ip *interp, off int, args []any, kw []kwVal) any
}

type boundMethod struct {
	recv any
	name string
}

type macroVal struct {
	m     *macroStmt
	scope *scope
}

type absentT struct{}

// absent marks an argument that was not passed.
var absent any = absentT{}

// bindArgs matches positional and keyword arguments to parameter names the
// way Python does; parameters not passed are `absent`.
func bindArgs(off int, fname string, args []any, kw []kwVal, names ...string) []any {
	if len(args) > len(names) {
		fail(off, ErrRender, "%s() takes at most %d argument(s) (%d given)", fname, len(names), len(args))
	}
	out := make([]any, len(names))
	for i := range out {
		out[i] = absent
	}
	copy(out, args)
	for _, k := range kw {
		i := indexOf(names, k.name)
		if i < 0 {
			fail(off, ErrRender, "%s() got an unexpected keyword argument '%s'", fname, k.name)
		}
		if out[i] != absent {
			fail(off, ErrRender, "%s() got multiple values for argument '%s'", fname, k.name)
		}
		out[i] = k.v
	}
	return out
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func argOr(v, def any) any {
	if v == absent {
		return def
	}
	return v
}

func (ip *interp) call(off int, fn any, args []any, kw []kwVal) any {
	switch f := fn.(type) {
	case *builtinFn:
		return f.fn(ip, off, args, kw)
	case *boundMethod:
		return ip.callMethod(off, f, args, kw)
	case *macroVal:
		return ip.callMacro(off, f, args, kw, nil)
	case *undef:
		fail(off, f.errKind(), "%s", f.message())
	}
	fail(off, ErrRender, "'%s' object is not callable", typeName(fn))
	return nil
}

// callMacro renders a macro's body in a new scope chained to the one it was
// defined in and returns the text. Like Jinja, missing arguments without a
// default are Undefined; extra ones land in varargs and kwargs.
func (ip *interp) callMacro(off int, mv *macroVal, args []any, kw []kwVal, caller any) string {
	ip.calls++
	defer func() { ip.calls-- }()
	if ip.calls > ip.lim.MaxDepth {
		fail(off, ErrLimit, "macro calls nested more than %d deep", ip.lim.MaxDepth)
	}
	m := mv.m
	sc := newScope(mv.scope)
	set := make([]bool, len(m.params))
	var varargs []any
	for i, a := range args {
		if i < len(m.params) {
			sc.set(m.params[i].name, a)
			set[i] = true
		} else {
			varargs = append(varargs, a)
		}
	}
	kwargs := newDict(0)
	for _, k := range kw {
		i := -1
		for j, p := range m.params {
			if p.name == k.name {
				i = j
			}
		}
		switch {
		case i >= 0 && set[i]:
			fail(off, ErrRender, "macro '%s' got multiple values for argument '%s'", m.name, k.name)
		case i >= 0:
			sc.set(k.name, k.v)
			set[i] = true
		case k.name == "caller":
			caller = k.v
		default:
			kwargs.set(k.name, k.v)
		}
	}
	for i, p := range m.params {
		if set[i] {
			continue
		}
		if p.def != nil {
			sc.set(p.name, ip.eval(p.def, sc))
		} else {
			sc.set(p.name, &undef{hint: "parameter '" + p.name + "' was not provided"})
		}
	}
	if varargs == nil {
		varargs = []any{}
	}
	sc.set("varargs", tuple(varargs))
	sc.set("kwargs", kwargs)
	if caller != nil {
		sc.set("caller", caller)
	}
	return ip.capture(m.body, sc)
}

var strMethods = map[string]bool{
	"startswith": true, "endswith": true, "strip": true, "lstrip": true, "rstrip": true,
	"split": true, "rsplit": true, "splitlines": true, "upper": true, "lower": true,
	"title": true, "capitalize": true, "swapcase": true, "casefold": true, "replace": true,
	"find": true, "rfind": true, "index": true, "rindex": true, "count": true, "join": true,
	"isdigit": true, "isdecimal": true, "isnumeric": true, "isalpha": true, "isalnum": true,
	"isspace": true, "islower": true, "isupper": true, "removeprefix": true,
	"removesuffix": true, "partition": true, "rpartition": true, "zfill": true,
	"ljust": true, "rjust": true, "center": true, "format": true,
}

var dictMethods = map[string]bool{"items": true, "keys": true, "values": true, "get": true, "copy": true}

var listMethods = map[string]bool{"index": true, "count": true, "copy": true}

var mutators = map[string]bool{
	"append": true, "extend": true, "insert": true, "pop": true, "remove": true,
	"reverse": true, "sort": true, "clear": true, "update": true, "setdefault": true,
	"popitem": true,
}

// method returns obj's method called name, a refusal for the methods that
// would change a list or dict, or nil.
func method(obj any, name string) any {
	var ok bool
	switch obj.(type) {
	case string:
		ok = strMethods[name]
	case *dict:
		ok = dictMethods[name]
	case []any, tuple:
		ok = listMethods[name]
	default:
		return nil
	}
	if ok {
		return &boundMethod{recv: obj, name: name}
	}
	if _, isStr := obj.(string); !isStr && mutators[name] {
		return &undef{
			hint: "access to attribute '" + name + "' of '" + typeName(obj) + "' object is unsafe: " +
				"lists and dicts cannot be changed in the sandbox (build a new one, or use a namespace)",
			kind: ErrUnsupported,
		}
	}
	return nil
}

func (ip *interp) callMethod(off int, m *boundMethod, args []any, kw []kwVal) any {
	switch r := m.recv.(type) {
	case string:
		return ip.strMethod(off, r, m.name, args, kw)
	case *dict:
		switch m.name {
		case "items":
			bindArgs(off, "items", args, kw)
			return dictItems(ip, off, r)
		case "keys":
			bindArgs(off, "keys", args, kw)
			return append([]any{}, r.keys...)
		case "values":
			bindArgs(off, "values", args, kw)
			return append([]any{}, r.vals...)
		case "get":
			a := bindArgs(off, "get", args, kw, "key", "default")
			if a[0] == absent {
				fail(off, ErrRender, "get() needs a key")
			}
			if v, ok := r.get(a[0]); ok {
				return v
			}
			return argOr(a[1], nil)
		case "copy":
			return r
		}
	case []any:
		return ip.listMethod(off, r, m.name, args, kw)
	case tuple:
		return ip.listMethod(off, r, m.name, args, kw)
	case *loopObj:
		switch m.name {
		case "cycle":
			if len(args) == 0 {
				fail(off, ErrRender, "no items for cycling given")
			}
			return args[r.index0%len(args)]
		case "changed":
			changed := !r.seen || !equalSeq(off, r.changed, args, 0)
			r.seen, r.changed = true, args
			return changed
		}
	}
	fail(off, ErrRender, "'%s' object has no method '%s'", typeName(m.recv), m.name)
	return nil
}

func dictItems(ip *interp, off int, d *dict) []any {
	ip.charge(off, 48*d.len())
	out := make([]any, d.len())
	for i, k := range d.keys {
		out[i] = tuple{k, d.vals[i]}
	}
	return out
}

func (ip *interp) listMethod(off int, l []any, name string, args []any, kw []kwVal) any {
	switch name {
	case "index":
		a := bindArgs(off, "index", args, kw, "value")
		ip.work(off, len(l))
		for i, x := range l {
			if equal(off, x, a[0], 0) {
				return int64(i)
			}
		}
		fail(off, ErrRender, "%s is not in list", pyRepr(off, a[0]))
	case "count":
		a := bindArgs(off, "count", args, kw, "value")
		ip.work(off, len(l))
		n := int64(0)
		for _, x := range l {
			if equal(off, x, a[0], 0) {
				n++
			}
		}
		return n
	case "copy":
		return l
	}
	fail(off, ErrRender, "list has no method '%s'", name)
	return nil
}

// joinStrs is str.join: every item must be a string.
func (ip *interp) joinStrs(off int, sep string, items []any) string {
	var b strings.Builder
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			ip.operandCheck(off, it)
			fail(off, ErrRender, "sequence item %d: expected str instance, %s found", i, typeName(it))
		}
		if i > 0 {
			b.WriteString(sep)
		}
		ip.charge(off, len(s)+len(sep))
		b.WriteString(s)
	}
	return b.String()
}
