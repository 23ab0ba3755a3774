package specs

import (
	"fmt"
	"sort"
	"strings"
)

// The static checker of expressions and hyperparameters. Every expression
// of a spec is typed once, at load, so that Resolve and Program can only
// fail on what a model's metadata says, never on a spec's mistake.

// hpInfo is what the checker learnt of one hparam.
type hpInfo struct {
	decl     *hparamDecl
	typ      Type
	perLayer bool // depends on `layer`: one value per layer
	key      KeyInfo
	ok       bool // typed without error
}

// tinfo is the static information of an expression.
type tinfo struct {
	t     Type
	meta  bool // reads metadata, so it may be missing (left of ??)
	layer bool // depends on the layer
}

// scope is where an expression appears.
type scope struct {
	path  string
	layer bool // `layer` is defined
	meta  bool // metadata may be read (hparams and require only)
	where string
	cond  string // a graph statement's condition, as written ("" for none)
}

type checker struct {
	a     *Arch
	c     *errs
	state map[string]int // hparam typing: 1 in progress, 2 done
	stack []string
}

// hpType types an hparam on first use, in dependency order, and reports a
// cycle with its chain.
func (ck *checker) hpType(name string) (*hpInfo, bool) {
	info, ok := ck.a.hp[name]
	if !ok {
		return nil, false
	}
	switch ck.state[name] {
	case 2:
		return info, info.ok
	case 1:
		i := len(ck.stack) - 1
		for i >= 0 && ck.stack[i] != name {
			i--
		}
		chain := append(append([]string(nil), ck.stack[i:]...), name)
		ck.c.add(ErrCycle, info.decl.pos, info.decl.path, "hparam cycle: %s", strings.Join(chain, " -> "))
		return info, false
	}
	ck.state[name] = 1
	ck.stack = append(ck.stack, name)
	ck.typeHParam(info)
	ck.stack = ck.stack[:len(ck.stack)-1]
	ck.state[name] = 2
	return info, info.ok
}

func (ck *checker) typeHParam(info *hpInfo) {
	d := info.decl
	sc := scope{path: d.path, layer: true, meta: true, where: "hparams"}
	ok := true
	var t Type
	if d.key != "" {
		k, found := LookupKey(d.key, !d.abs)
		if !found {
			field := "key"
			if d.abs {
				field = "gguf"
			}
			hint := suggest(d.key, keyNames(!d.abs))
			if hint == "" {
				if _, other := LookupKey(d.key, d.abs); other {
					if d.abs {
						hint = " (it is relative to the architecture: use key)"
					} else {
						hint = " (it is absolute: use gguf)"
					}
				}
			}
			ck.c.add(ErrUnknownKey, d.keyPos, d.path+"."+field, "unknown metadata key %q%s", d.key, hint)
			ok = false
		}
		info.key = k
		t = k.Type
		if found && d.lenOf {
			if k.Type.Kind != KindArray && k.Alt.Kind != KindArray {
				ck.c.add(ErrType, d.keyPos, d.path, "len: %q is %s, not an array", d.key, k.Type)
				ok = false
			}
			t = tInt
		}
		if found && d.typ.Kind != KindInvalid && !d.typ.assignable(t) {
			if k.Alt.Kind == KindInvalid || !d.typ.assignable(k.Alt) {
				ck.c.add(ErrType, d.typPos, d.path+".type", "declared %s, but metadata key %q is %s", d.typ, d.key, t)
				ok = false
			}
		}
		if d.typ.Kind != KindInvalid {
			t = d.typ
		}
		if d.def != nil {
			ti, good := ck.typeOf(d.def, sc)
			switch {
			case !good:
				ok = false
			case ok && !t.assignable(ti.t):
				ck.c.add(ErrType, d.def.at(), d.path+".default", "default is %s, but %s is %s", ti.t, d.name, t)
				ok = false
			}
			info.perLayer = ti.layer
		}
	} else if d.expr != nil {
		ti, good := ck.typeOf(d.expr, sc)
		ok = ok && good
		t = ti.t
		if good && d.typ.Kind != KindInvalid {
			if !d.typ.assignable(ti.t) {
				ck.c.add(ErrType, d.expr.at(), d.path, "expression is %s, but %s is declared %s", ti.t, d.name, d.typ)
				ok = false
			}
			t = d.typ
		}
		info.perLayer = ti.layer
	} else {
		ok = false // the schema already reported it
	}
	if std, isStd := stdHParamByName(d.name); isStd && ok {
		if !std.typ.assignable(t) {
			ck.c.add(ErrType, d.pos, d.path, "%s is a standard hparam of type %s, not %s", d.name, std.typ, t)
			ok = false
		}
		if !std.perLayer && info.perLayer {
			ck.c.add(ErrType, d.pos, d.path, "%s must not depend on the layer", d.name)
			ok = false
		}
		t = std.typ
	}
	info.typ, info.ok = t, ok
}

func (ck *checker) hpNames() []string {
	names := []string{"layer"}
	for n := range ck.a.hp {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// typeOf types an expression, reporting errors; ok is false when it has
// any (the caller then stays quiet, so one mistake gives one message).
func (ck *checker) typeOf(n node, sc scope) (tinfo, bool) {
	switch n := n.(type) {
	case *litNode:
		return tinfo{t: n.v.Type()}, true
	case *nameNode:
		if n.name == "layer" {
			if !sc.layer {
				ck.c.add(ErrUnknownName, n.p, sc.path, "layer is not defined in %s (only in layer blocks, per-layer tensors, hparams and require)", sc.where)
				return tinfo{}, false
			}
			return tinfo{t: tInt, layer: true}, true
		}
		info, ok := ck.hpType(n.name)
		if info == nil {
			ck.c.add(ErrUnknownName, n.p, sc.path, "unknown hparam %q%s", n.name, suggest(n.name, ck.hpNames()))
			return tinfo{}, false
		}
		if !ok {
			return tinfo{}, false
		}
		if info.perLayer && !sc.layer {
			ck.c.add(ErrType, n.p, sc.path, "%s depends on the layer; it cannot be used in %s", n.name, sc.where)
			return tinfo{}, false
		}
		return tinfo{t: info.typ, layer: info.perLayer}, true
	case *metaNode:
		if !sc.meta {
			ck.c.add(ErrInvalid, n.p, sc.path, "metadata is read only in hparams and require; declare an hparam for %s", exprString(n))
			return tinfo{}, false
		}
		k, found := LookupKey(n.key, !n.abs)
		if !found {
			hint := suggest(n.key, keyNames(!n.abs))
			if _, other := LookupKey(n.key, n.abs); other && hint == "" {
				if n.abs {
					hint = fmt.Sprintf(" (it is relative to the architecture: meta.%s)", n.key)
				} else {
					hint = fmt.Sprintf(` (it is absolute: gguf("%s"))`, n.key)
				}
			}
			ck.c.add(ErrUnknownKey, n.p, sc.path, "unknown metadata key %q%s", n.key, hint)
			return tinfo{}, false
		}
		return tinfo{t: k.Type, meta: true}, true
	case *unaryNode:
		x, ok := ck.typeOf(n.x, sc)
		if !ok {
			return tinfo{}, false
		}
		switch {
		case n.op == "-" && x.t.numeric(), n.op == "!" && x.t == tBool:
			return x, true
		}
		ck.c.add(ErrType, n.p, sc.path, "%s applied to %s", n.op, x.t)
		return tinfo{}, false
	case *binNode:
		return ck.typeBinary(n, sc)
	case *callNode:
		return ck.typeCall(n, sc)
	}
	panic("specs: unknown node")
}

func (ck *checker) typeBinary(n *binNode, sc scope) (tinfo, bool) {
	l, okl := ck.typeOf(n.l, sc)
	r, okr := ck.typeOf(n.r, sc)
	if !okl || !okr {
		return tinfo{}, false
	}
	out := tinfo{meta: l.meta || r.meta, layer: l.layer || r.layer}
	mismatch := func(want string) (tinfo, bool) {
		ck.c.add(ErrType, n.p, sc.path, "%s wants %s, found %s %s %s", n.op, want, l.t, n.op, r.t)
		return tinfo{}, false
	}
	switch n.op {
	case "+", "-", "*", "/":
		if !l.t.numeric() || !r.t.numeric() {
			return mismatch("numbers")
		}
		out.t = unify(l.t, r.t)
	case "%":
		if l.t != tInt || r.t != tInt {
			return mismatch("ints")
		}
		out.t = tInt
	case "<", "<=", ">", ">=":
		if !l.t.numeric() || !r.t.numeric() {
			return mismatch("numbers")
		}
		out.t = tBool
	case "==", "!=":
		if !(l.t.numeric() && r.t.numeric()) && l.t != r.t {
			return mismatch("operands of one type")
		}
		out.t = tBool
	case "&&", "||":
		if l.t != tBool || r.t != tBool {
			return mismatch("bools")
		}
		out.t = tBool
	case "??":
		if !l.meta {
			ck.c.add(ErrType, n.p, sc.path, "the left side of ?? reads no metadata, so it is never missing")
			return tinfo{}, false
		}
		t, ok := common(l.t, r.t)
		if !ok {
			return mismatch("operands of one type")
		}
		out.t, out.meta = t, r.meta
	}
	return out, true
}

// unify is the type of arithmetic on a and b: int only if both are.
func unify(a, b Type) Type {
	if a == tInt && b == tInt {
		return tInt
	}
	return tFloat
}

// common is the type two alternatives (of ?? or select) share.
func common(a, b Type) (Type, bool) {
	switch {
	case a == b:
		return a, true
	case a.numeric() && b.numeric():
		return tFloat, true
	case a.Kind == KindArray && b.Kind == KindArray:
		return a, true
	}
	return tInvalid, false
}

// funcNames are the expression functions, for suggestions and docs.
var funcNames = []string{"abs", "float", "gguf", "has_tensor", "int", "len", "max", "min", "pow", "select", "sqrt"}

func (ck *checker) typeCall(n *callNode, sc scope) (tinfo, bool) {
	if _, isOp := ops[n.fn]; isOp {
		ck.c.add(ErrType, n.p, sc.path, "%s is an op of the layer program, not a function of expressions", n.fn)
		return tinfo{}, false
	}
	if len(n.named) > 0 {
		ck.c.add(ErrSyntax, n.named[0].p, sc.path, "%s takes no named arguments", n.fn)
		return tinfo{}, false
	}
	args := make([]tinfo, len(n.args))
	out := tinfo{}
	for i, a := range n.args {
		t, ok := ck.typeOf(a, sc)
		if !ok {
			return tinfo{}, false
		}
		args[i] = t
		out.layer = out.layer || t.layer
		out.meta = out.meta || t.meta
	}
	arity := func(want int) bool {
		if len(args) != want {
			ck.c.add(ErrType, n.p, sc.path, "%s takes %d argument(s), found %d", n.fn, want, len(args))
			return false
		}
		return true
	}
	bad := func(i int, want string) (tinfo, bool) {
		ck.c.add(ErrType, n.args[i].at(), sc.path, "%s wants %s, found %s", n.fn, want, args[i].t)
		return tinfo{}, false
	}
	switch n.fn {
	case "sqrt", "float":
		if !arity(1) {
			return tinfo{}, false
		}
		if !args[0].t.numeric() {
			return bad(0, "a number")
		}
		out.t = tFloat
	case "int":
		if !arity(1) {
			return tinfo{}, false
		}
		if !args[0].t.numeric() {
			return bad(0, "a number")
		}
		out.t = tInt
	case "abs":
		if !arity(1) {
			return tinfo{}, false
		}
		if !args[0].t.numeric() {
			return bad(0, "a number")
		}
		out.t = args[0].t
	case "pow":
		if !arity(2) {
			return tinfo{}, false
		}
		for i := range args {
			if !args[i].t.numeric() {
				return bad(i, "numbers")
			}
		}
		out.t = tFloat
	case "min", "max":
		if len(args) < 2 {
			ck.c.add(ErrType, n.p, sc.path, "%s takes two or more numbers", n.fn)
			return tinfo{}, false
		}
		out.t = tInt
		for i := range args {
			if !args[i].t.numeric() {
				return bad(i, "numbers")
			}
			out.t = unify(out.t, args[i].t)
		}
	case "len":
		if !arity(1) {
			return tinfo{}, false
		}
		if args[0].t.Kind != KindArray && args[0].t != tString {
			return bad(0, "an array or a string")
		}
		out.t = tInt
	case "select":
		if !arity(3) {
			return tinfo{}, false
		}
		if args[0].t != tBool {
			return bad(0, "a bool condition first")
		}
		t, ok := common(args[1].t, args[2].t)
		if !ok {
			ck.c.add(ErrType, n.p, sc.path, "select's alternatives differ: %s and %s", args[1].t, args[2].t)
			return tinfo{}, false
		}
		out.t = t
	case "has_tensor":
		if !sc.meta {
			ck.c.add(ErrInvalid, n.p, sc.path, "has_tensor is evaluated only in hparams and require; declare an hparam for it")
			return tinfo{}, false
		}
		if !arity(1) {
			return tinfo{}, false
		}
		if args[0].t != tString {
			return bad(0, "a tensor's name in the file")
		}
		out.t = tBool
	default:
		ck.c.add(ErrUnknownName, n.p, sc.path, "unknown function %q%s", n.fn, suggest(n.fn, funcNames))
		return tinfo{}, false
	}
	return out, true
}

// expect types an expression and checks it against want.
func (ck *checker) expect(n node, sc scope, want Type, what string) (tinfo, bool) {
	ti, ok := ck.typeOf(n, sc)
	if !ok {
		return ti, false
	}
	if !want.assignable(ti.t) {
		ck.c.add(ErrType, n.at(), sc.path, "%s must be %s, found %s", what, want, ti.t)
		return ti, false
	}
	return ti, true
}
