package specs

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Kind is the type of a metadata value or of an expression.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindInt          // every GGUF integer type
	KindFloat        // float32 and float64
	KindBool
	KindString
	KindArray
)

var kindNames = [...]string{"invalid", "int", "float", "bool", "string", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a static type of the expression language: a kind and, for arrays,
// the element kind.
type Type struct {
	Kind Kind
	Elem Kind
}

var (
	tInvalid = Type{}
	tInt     = Type{Kind: KindInt}
	tFloat   = Type{Kind: KindFloat}
	tBool    = Type{Kind: KindBool}
	tString  = Type{Kind: KindString}
)

func arrayOf(k Kind) Type { return Type{Kind: KindArray, Elem: k} }

func (t Type) String() string {
	if t.Kind == KindArray {
		if t.Elem == KindInvalid {
			return "[]any"
		}
		return "[]" + t.Elem.String()
	}
	return t.Kind.String()
}

func (t Type) numeric() bool { return t.Kind == KindInt || t.Kind == KindFloat }

// assignable reports whether a value of type v may be stored where t is
// declared: the same type, or an int where a float is wanted.
func (t Type) assignable(v Type) bool {
	if t == v {
		return true
	}
	if t.Kind == KindFloat && v.Kind == KindInt {
		return true
	}
	return t.Kind == KindArray && v.Kind == KindArray && (t.Elem == KindInvalid || v.Elem == KindInvalid)
}

// Value is one metadata value, or one result of an expression. Arrays carry
// their element kind and length; their elements are optional (Elems may be
// nil for a 150,000-entry token list: only len() of it is ever asked).
type Value struct {
	Kind  Kind
	Int   int64
	Float float64
	Bool  bool
	Str   string
	Elem  Kind    // arrays: element kind
	Len   int     // arrays: length
	Elems []Value // arrays: elements, when known
}

// IntValue, FloatValue, BoolValue, StringValue and ArrayValue build Values.
func IntValue(v int64) Value     { return Value{Kind: KindInt, Int: v} }
func FloatValue(v float64) Value { return Value{Kind: KindFloat, Float: v} }
func BoolValue(v bool) Value     { return Value{Kind: KindBool, Bool: v} }
func StringValue(v string) Value { return Value{Kind: KindString, Str: v} }
func ArrayValue(elem Kind, n int, elems []Value) Value {
	return Value{Kind: KindArray, Elem: elem, Len: n, Elems: elems}
}

// ValueOf converts a Go value to a Value: any integer, float, bool or string
// type, and slices of them. It is what an adapter from a GGUF reader calls.
func ValueOf(x any) (Value, bool) {
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return IntValue(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return Value{}, false
		}
		return IntValue(int64(u)), true
	case reflect.Float32, reflect.Float64:
		return FloatValue(rv.Float()), true
	case reflect.Bool:
		return BoolValue(rv.Bool()), true
	case reflect.String:
		return StringValue(rv.String()), true
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		elems := make([]Value, n)
		elem := KindInvalid
		for i := 0; i < n; i++ {
			v, ok := ValueOf(rv.Index(i).Interface())
			if !ok {
				return Value{}, false
			}
			elems[i] = v
			elem = v.Kind
		}
		if n == 0 {
			if v, ok := ValueOf(reflect.Zero(rv.Type().Elem()).Interface()); ok {
				elem = v.Kind
			}
		}
		return ArrayValue(elem, n, elems), true
	}
	return Value{}, false
}

// Type returns the value's static type.
func (v Value) Type() Type {
	if v.Kind == KindArray {
		return arrayOf(v.Elem)
	}
	return Type{Kind: v.Kind}
}

// AsFloat returns a numeric value as a float64.
func (v Value) AsFloat() float64 {
	if v.Kind == KindInt {
		return float64(v.Int)
	}
	return v.Float
}

func (v Value) String() string {
	switch v.Kind {
	case KindInt:
		return strconv.FormatInt(v.Int, 10)
	case KindFloat:
		return formatFloat(v.Float)
	case KindBool:
		return strconv.FormatBool(v.Bool)
	case KindString:
		return strconv.Quote(v.Str)
	case KindArray:
		if v.Elems == nil || len(v.Elems) > 16 {
			return fmt.Sprintf("[%d × %s]", v.Len, v.Elem)
		}
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "<invalid>"
}

// formatFloat prints a float so that it reads back as a float: 10000.0, not
// 10000.
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// convert coerces v to t where the language allows it (int to float), and
// reports whether it could.
func convert(v Value, t Type) (Value, bool) {
	if v.Type() == t || (t.Kind == KindArray && v.Kind == KindArray) {
		return v, true
	}
	if t.Kind == KindFloat && v.Kind == KindInt {
		return FloatValue(float64(v.Int)), true
	}
	return Value{}, false
}
