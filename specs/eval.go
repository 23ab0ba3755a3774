package specs

import (
	"fmt"
	"math"
)

// Metadata is what Resolve reads of a model: its metadata values and which
// tensors it has. A GGUF reader is adapted to it in a few lines, converting
// its values with ValueOf; MapMetadata serves tests and synthesizers.
type Metadata interface {
	// Lookup returns the value of a full key ("llama.embedding_length").
	Lookup(key string) (Value, bool)
	// HasTensor reports whether the model has a tensor of that name.
	HasTensor(name string) bool
}

// MapMetadata is a Metadata held in maps.
type MapMetadata struct {
	KV      map[string]Value
	Tensors map[string]bool
}

// NewMapMetadata returns a MapMetadata of the values and tensor names.
func NewMapMetadata(kv map[string]Value, tensors ...string) *MapMetadata {
	m := &MapMetadata{KV: kv, Tensors: map[string]bool{}}
	if m.KV == nil {
		m.KV = map[string]Value{}
	}
	for _, t := range tensors {
		m.Tensors[t] = true
	}
	return m
}

func (m *MapMetadata) Lookup(key string) (Value, bool) {
	v, ok := m.KV[key]
	return v, ok
}

func (m *MapMetadata) HasTensor(name string) bool { return m.Tensors[name] }

// missingKey is the evaluation error of an absent metadata key; ?? catches
// it, anything else reports it.
type missingKey struct {
	key string
	pos Pos
}

func (e *missingKey) Error() string { return fmt.Sprintf("missing metadata key %q", e.key) }

// evalErr is an evaluation error at a position.
type evalErr struct {
	pos  Pos
	kind error
	msg  string
}

func (e *evalErr) Error() string { return e.msg }

// evaluator evaluates the expressions of one spec against one model.
type evaluator struct {
	a      *Arch
	md     Metadata
	prefix string // general.architecture, for relative keys
	// hparam returns the value of an hparam (for the layer when it depends
	// on it).
	hparam func(name string, layer int) (Value, error)
}

func (ev *evaluator) fullKey(key string, abs bool) string {
	if abs {
		return key
	}
	return ev.prefix + "." + key
}

// meta reads a key and converts it to the type the registry gives it.
func (ev *evaluator) meta(key string, abs bool, want Type, pos Pos) (Value, error) {
	full := ev.fullKey(key, abs)
	v, ok := ev.md.Lookup(full)
	if !ok {
		return Value{}, &missingKey{key: full, pos: pos}
	}
	return conformMeta(full, v, want, pos)
}

// conformMeta converts a metadata value to the type a spec reads it as.
func conformMeta(full string, v Value, want Type, pos Pos) (Value, error) {
	if want.Kind == KindInt && v.Kind == KindArray && v.Elems != nil {
		// A per-layer array where the spec wants one number: accepted when
		// every layer has the same value.
		if len(v.Elems) == 0 {
			return Value{}, &evalErr{pos: pos, kind: ErrBadValue, msg: fmt.Sprintf("%s is an empty array", full)}
		}
		for _, e := range v.Elems[1:] {
			if e.Kind != v.Elems[0].Kind || e.Int != v.Elems[0].Int {
				return Value{}, &evalErr{pos: pos, kind: ErrBadValue,
					msg: fmt.Sprintf("%s differs between layers (%s); per-layer values are not supported", full, v)}
			}
		}
		v = v.Elems[0]
	}
	if want.Kind == KindArray && v.Kind == KindArray {
		return v, nil
	}
	cv, ok := convert(v, want)
	if !ok {
		return Value{}, &evalErr{pos: pos, kind: ErrBadValue,
			msg: fmt.Sprintf("%s is %s (%s), expected %s", full, v.Type(), v, want)}
	}
	return cv, nil
}

// eval evaluates an expression checked by the type checker.
func (ev *evaluator) eval(n node, layer int) (Value, error) {
	switch n := n.(type) {
	case *litNode:
		return n.v, nil
	case *nameNode:
		if n.name == "layer" {
			return IntValue(int64(layer)), nil
		}
		return ev.hparam(n.name, layer)
	case *metaNode:
		k, _ := LookupKey(n.key, !n.abs)
		return ev.meta(n.key, n.abs, k.Type, n.p)
	case *unaryNode:
		x, err := ev.eval(n.x, layer)
		if err != nil {
			return Value{}, err
		}
		if n.op == "!" {
			return BoolValue(!x.Bool), nil
		}
		if x.Kind == KindInt {
			return IntValue(-x.Int), nil
		}
		return FloatValue(-x.Float), nil
	case *binNode:
		return ev.binary(n, layer)
	case *callNode:
		return ev.call(n, layer)
	}
	panic("specs: unknown node")
}

func (ev *evaluator) binary(n *binNode, layer int) (Value, error) {
	if n.op == "??" {
		l, err := ev.eval(n.l, layer)
		if _, missing := err.(*missingKey); missing {
			r, err := ev.eval(n.r, layer)
			if err != nil {
				return Value{}, err
			}
			return r, nil
		}
		return l, err
	}
	l, err := ev.eval(n.l, layer)
	if err != nil {
		return Value{}, err
	}
	// && and || do not evaluate the right side when the left decides.
	switch {
	case n.op == "&&" && !l.Bool:
		return BoolValue(false), nil
	case n.op == "||" && l.Bool:
		return BoolValue(true), nil
	}
	r, err := ev.eval(n.r, layer)
	if err != nil {
		return Value{}, err
	}
	switch n.op {
	case "&&", "||":
		return BoolValue(r.Bool), nil
	case "==", "!=":
		eq := equal(l, r)
		return BoolValue(eq == (n.op == "==")), nil
	case "<", "<=", ">", ">=":
		a, b := l.AsFloat(), r.AsFloat()
		if l.Kind == KindInt && r.Kind == KindInt {
			a, b = float64(l.Int), float64(r.Int)
		}
		var res bool
		switch n.op {
		case "<":
			res = a < b
		case "<=":
			res = a <= b
		case ">":
			res = a > b
		default:
			res = a >= b
		}
		return BoolValue(res), nil
	}
	if l.Kind == KindInt && r.Kind == KindInt {
		a, b := l.Int, r.Int
		switch n.op {
		case "+":
			return IntValue(a + b), nil
		case "-":
			return IntValue(a - b), nil
		case "*":
			return IntValue(a * b), nil
		case "/", "%":
			if b == 0 {
				return Value{}, &evalErr{pos: n.p, kind: ErrBadValue, msg: fmt.Sprintf("division by zero in %s", exprString(n))}
			}
			if n.op == "/" {
				return IntValue(a / b), nil
			}
			return IntValue(a % b), nil
		}
	}
	a, b := l.AsFloat(), r.AsFloat()
	switch n.op {
	case "+":
		return FloatValue(a + b), nil
	case "-":
		return FloatValue(a - b), nil
	case "*":
		return FloatValue(a * b), nil
	case "/":
		if b == 0 {
			return Value{}, &evalErr{pos: n.p, kind: ErrBadValue, msg: fmt.Sprintf("division by zero in %s", exprString(n))}
		}
		return FloatValue(a / b), nil
	}
	panic("specs: unknown operator " + n.op)
}

func equal(l, r Value) bool {
	switch {
	case l.Kind == KindInt && r.Kind == KindInt:
		return l.Int == r.Int
	case (l.Kind == KindInt || l.Kind == KindFloat) && (r.Kind == KindInt || r.Kind == KindFloat):
		return l.AsFloat() == r.AsFloat()
	case l.Kind == KindBool:
		return l.Bool == r.Bool
	case l.Kind == KindString:
		return l.Str == r.Str
	}
	return false
}

func (ev *evaluator) call(n *callNode, layer int) (Value, error) {
	// select evaluates only the alternative it takes, so that the other may
	// read a key the model lacks.
	if n.fn == "select" {
		c, err := ev.eval(n.args[0], layer)
		if err != nil {
			return Value{}, err
		}
		if c.Bool {
			return ev.eval(n.args[1], layer)
		}
		return ev.eval(n.args[2], layer)
	}
	args := make([]Value, len(n.args))
	for i, a := range n.args {
		v, err := ev.eval(a, layer)
		if err != nil {
			return Value{}, err
		}
		args[i] = v
	}
	switch n.fn {
	case "sqrt":
		x := args[0].AsFloat()
		if x < 0 {
			return Value{}, &evalErr{pos: n.p, kind: ErrBadValue, msg: fmt.Sprintf("sqrt of %s < 0", formatFloat(x))}
		}
		return FloatValue(math.Sqrt(x)), nil
	case "float":
		return FloatValue(args[0].AsFloat()), nil
	case "int":
		if args[0].Kind == KindInt {
			return args[0], nil
		}
		return IntValue(int64(args[0].Float)), nil
	case "abs":
		if args[0].Kind == KindInt {
			if args[0].Int < 0 {
				return IntValue(-args[0].Int), nil
			}
			return args[0], nil
		}
		return FloatValue(math.Abs(args[0].Float)), nil
	case "pow":
		return FloatValue(math.Pow(args[0].AsFloat(), args[1].AsFloat())), nil
	case "min", "max":
		best := args[0]
		allInt := true
		for _, a := range args {
			allInt = allInt && a.Kind == KindInt
		}
		for _, a := range args[1:] {
			if (n.fn == "min") == (a.AsFloat() < best.AsFloat()) && a.AsFloat() != best.AsFloat() {
				best = a
			}
		}
		if !allInt {
			return FloatValue(best.AsFloat()), nil
		}
		return best, nil
	case "len":
		if args[0].Kind == KindString {
			return IntValue(int64(len(args[0].Str))), nil
		}
		return IntValue(int64(args[0].Len)), nil
	case "has_tensor":
		return BoolValue(ev.md.HasTensor(args[0].Str)), nil
	}
	panic("specs: unknown function " + n.fn)
}
