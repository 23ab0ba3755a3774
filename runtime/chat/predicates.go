package chat

import "strings"

// Jinja's tests (`x is defined`, `x is not none`, `x is equalto 3`), with
// Python's notion of each type: a bool is a number but not an integer, a
// string is iterable and a sequence, and (a quirk worth keeping) Undefined
// counts as iterable and as a sequence.

func (ip *interp) test(off int, name string, v any, args []any, kw []kwVal) bool {
	one := func() any {
		a := bindArgs(off, name, args, kw, "other")
		if a[0] == absent {
			fail(off, ErrRender, "test '%s' needs an argument", name)
		}
		return a[0]
	}
	none := func() { bindArgs(off, name, args, kw) }
	switch name {
	case "defined":
		none()
		_, u := v.(*undef)
		return !u
	case "undefined":
		none()
		_, u := v.(*undef)
		return u
	case "none":
		none()
		return v == nil
	case "boolean":
		none()
		_, ok := v.(bool)
		return ok
	case "true":
		none()
		b, ok := v.(bool)
		return ok && b
	case "false":
		none()
		b, ok := v.(bool)
		return ok && !b
	case "integer":
		none()
		_, ok := v.(int64)
		return ok
	case "float":
		none()
		_, ok := v.(float64)
		return ok
	case "number":
		none()
		return isNumber(v)
	case "string":
		none()
		_, ok := v.(string)
		return ok
	case "mapping":
		none()
		_, ok := v.(*dict)
		return ok
	case "iterable", "sequence":
		none()
		switch v.(type) {
		case string, []any, tuple, *dict, *undef:
			return true
		case *iterator:
			return name == "iterable" // a generator has no length
		}
		return false
	case "callable":
		none()
		switch v.(type) {
		case *builtinFn, *boundMethod, *macroVal, *undef:
			return true
		}
		return false
	case "lower", "upper":
		none()
		return caseIs(pyStr(off, v), name == "upper")
	case "even", "odd":
		none()
		// Jinja: even is value % 2 == 0, odd is value % 2 == 1 (so -1.5
		// is neither).
		r := ip.arith(off, "%", v, int64(2))
		if name == "even" {
			return equal(off, r, int64(0), 0)
		}
		return equal(off, r, int64(1), 0)
	case "divisibleby":
		d := ip.arith(off, "%", v, one())
		return !truthy(d)
	case "sameas":
		o := one()
		switch v.(type) {
		case nil, bool:
			return v == o
		}
		return equal(off, v, o, 0) && sameKind(v, o)
	case "escaped":
		none()
		return false
	case "in":
		return ip.contains(off, one(), v)
	case "eq", "equalto", "==":
		return equal(off, v, one(), 0)
	case "ne", "!=":
		return !equal(off, v, one(), 0)
	case "lt", "lessthan", "<":
		return compare(off, "<", v, one(), 0) < 0
	case "le", "<=":
		return compare(off, "<=", v, one(), 0) <= 0
	case "gt", "greaterthan", ">":
		return compare(off, ">", v, one(), 0) > 0
	case "ge", ">=":
		return compare(off, ">=", v, one(), 0) >= 0
	case "filter":
		none()
		n, _ := v.(string)
		_, ok := filters[n]
		return ok
	case "test":
		none()
		n, _ := v.(string)
		return knownTests[n]
	}
	fail(off, ErrUnsupported, "unknown test '%s'", name)
	return false
}

func sameKind(a, b any) bool { return typeName(a) == typeName(b) }

var knownTests = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`defined undefined none boolean true false integer float
		number string mapping iterable sequence callable lower upper even odd divisibleby
		sameas escaped in eq equalto == ne != lt lessthan < le <= gt greaterthan > ge >= filter test`) {
		knownTests[n] = true
	}
}
