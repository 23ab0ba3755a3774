package gguf

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueType is the type code of a metadata value, as stored in the file.
type ValueType uint32

// The metadata value types (docs/gguf.md#value-types).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// String returns GGML's short name ("u32", "str", "arr"), or "type(N)".
func (t ValueType) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Valid reports whether t is one of the thirteen defined codes.
func (t ValueType) Valid() bool { return t <= TypeFloat64 }

// width is the encoded size of a fixed-width type, 0 for strings and arrays.
func (t ValueType) width() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one encoded element of type t can take: the
// bound that array counts are checked against before anything is allocated.
// A string is at least its 8-byte length; an array its 4-byte element type
// and 8-byte count.
func (t ValueType) minSize() int64 {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return int64(t.width())
}

func (t ValueType) isInt() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// Value is one metadata value: a scalar, a string, or an array whose
// elements all share one type (arrays may nest). The zero Value is invalid
// (Type reports TypeUint8 but Valid is false); build Values with the
// constructors (Uint32, String, Strings, Arrays, ...). A Value is immutable:
// constructors copy their input and accessors return copies.
type Value struct {
	typ   ValueType
	elem  ValueType // element type, arrays only
	bits  uint64    // scalar numbers and bools, as stored (ints sign-extended)
	str   string
	arr   any // arrays: []uint8 ... []float64, []bool, []string, []Value
	valid bool
}

// Uint8 makes a u8 value.
func Uint8(v uint8) Value { return Value{typ: TypeUint8, bits: uint64(v), valid: true} }

// Int8 makes an i8 value.
func Int8(v int8) Value { return Value{typ: TypeInt8, bits: uint64(int64(v)), valid: true} }

// Uint16 makes a u16 value.
func Uint16(v uint16) Value { return Value{typ: TypeUint16, bits: uint64(v), valid: true} }

// Int16 makes an i16 value.
func Int16(v int16) Value { return Value{typ: TypeInt16, bits: uint64(int64(v)), valid: true} }

// Uint32 makes a u32 value.
func Uint32(v uint32) Value { return Value{typ: TypeUint32, bits: uint64(v), valid: true} }

// Int32 makes an i32 value.
func Int32(v int32) Value { return Value{typ: TypeInt32, bits: uint64(int64(v)), valid: true} }

// Float32 makes an f32 value.
func Float32(v float32) Value {
	return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(v)), valid: true}
}

// Uint64 makes a u64 value.
func Uint64(v uint64) Value { return Value{typ: TypeUint64, bits: v, valid: true} }

// Int64 makes an i64 value.
func Int64(v int64) Value { return Value{typ: TypeInt64, bits: uint64(v), valid: true} }

// Float64 makes an f64 value.
func Float64(v float64) Value { return Value{typ: TypeFloat64, bits: math.Float64bits(v), valid: true} }

// String makes a string value.
func String(v string) Value { return Value{typ: TypeString, str: v, valid: true} }

// Bool makes a bool value (stored as one byte, 0 or 1).
func Bool(v bool) Value {
	var b uint64
	if v {
		b = 1
	}
	return Value{typ: TypeBool, bits: b, valid: true}
}

// The array constructors below copy their argument.

// Uint8s makes an array of u8.
func Uint8s(v []uint8) Value { return arrayOf(TypeUint8, slices.Clone(v)) }

// Int8s makes an array of i8.
func Int8s(v []int8) Value { return arrayOf(TypeInt8, slices.Clone(v)) }

// Uint16s makes an array of u16.
func Uint16s(v []uint16) Value { return arrayOf(TypeUint16, slices.Clone(v)) }

// Int16s makes an array of i16.
func Int16s(v []int16) Value { return arrayOf(TypeInt16, slices.Clone(v)) }

// Uint32s makes an array of u32.
func Uint32s(v []uint32) Value { return arrayOf(TypeUint32, slices.Clone(v)) }

// Int32s makes an array of i32 (token types, for one).
func Int32s(v []int32) Value { return arrayOf(TypeInt32, slices.Clone(v)) }

// Float32s makes an array of f32 (token scores, for one).
func Float32s(v []float32) Value { return arrayOf(TypeFloat32, slices.Clone(v)) }

// Bools makes an array of bool.
func Bools(v []bool) Value { return arrayOf(TypeBool, slices.Clone(v)) }

// Strings makes an array of strings (tokens and merges, for two).
func Strings(v []string) Value { return arrayOf(TypeString, slices.Clone(v)) }

// Uint64s makes an array of u64.
func Uint64s(v []uint64) Value { return arrayOf(TypeUint64, slices.Clone(v)) }

// Int64s makes an array of i64.
func Int64s(v []int64) Value { return arrayOf(TypeInt64, slices.Clone(v)) }

// Float64s makes an array of f64.
func Float64s(v []float64) Value { return arrayOf(TypeFloat64, slices.Clone(v)) }

// Arrays builds an array of arrays. Every element must itself be an array
// (of any element type: the format gives each inner array its own).
func Arrays(elems ...Value) (Value, error) {
	for i, e := range elems {
		if !e.valid || e.typ != TypeArray {
			return Value{}, fmt.Errorf("gguf: Arrays: element %d is %s, not an array: %w", i, e.Type(), ErrInvalid)
		}
	}
	return arrayOf(TypeArray, slices.Clone(elems)), nil
}

func arrayOf(elem ValueType, arr any) Value {
	return Value{typ: TypeArray, elem: elem, arr: arr, valid: true}
}

// Valid reports whether v was built by a constructor or read from a file.
func (v Value) Valid() bool { return v.valid }

// Type is the value's type code.
func (v Value) Type() ValueType { return v.typ }

// ElemType is the element type of an array (TypeArray for nested arrays);
// for other values it is meaningless and reported as TypeUint8.
func (v Value) ElemType() ValueType { return v.elem }

// Len is the number of elements of an array, 0 for anything else.
func (v Value) Len() int {
	switch a := v.arr.(type) {
	case nil:
		return 0
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []Value:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	panic("gguf: unreachable array storage")
}

// Uint returns an integer value of any width or signedness, if it is not
// negative. Converters disagree on whether a count is a u32 or an i32, so
// readers of hyperparameters should not care.
func (v Value) Uint() (uint64, bool) {
	if !v.valid || !v.typ.isInt() {
		return 0, false
	}
	if v.typ.isSigned() && int64(v.bits) < 0 {
		return 0, false
	}
	return v.bits, true
}

// Int returns an integer value of any width or signedness, if it fits an int64.
func (v Value) Int() (int64, bool) {
	if !v.valid || !v.typ.isInt() {
		return 0, false
	}
	if !v.typ.isSigned() && v.bits > math.MaxInt64 {
		return 0, false
	}
	return int64(v.bits), true
}

// Float returns an f32 or f64 value. Integers are not converted: a float
// hyperparameter stored as an integer is a converter bug worth seeing.
func (v Value) Float() (float64, bool) {
	if !v.valid {
		return 0, false
	}
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	if !v.valid || v.typ != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string value. (String is the display form.)
func (v Value) Str() (string, bool) {
	if !v.valid || v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// Array returns the elements of an array as Values (of its ElemType).
func (v Value) Array() ([]Value, bool) {
	if !v.valid || v.typ != TypeArray {
		return nil, false
	}
	n := v.Len()
	out := make([]Value, n)
	for i := range n {
		out[i] = v.index(i)
	}
	return out, true
}

// index returns element i of an array as a Value.
func (v Value) index(i int) Value {
	switch a := v.arr.(type) {
	case []uint8:
		return Uint8(a[i])
	case []int8:
		return Int8(a[i])
	case []uint16:
		return Uint16(a[i])
	case []int16:
		return Int16(a[i])
	case []uint32:
		return Uint32(a[i])
	case []int32:
		return Int32(a[i])
	case []float32:
		return Float32(a[i])
	case []bool:
		return Bool(a[i])
	case []string:
		return String(a[i])
	case []Value:
		return a[i]
	case []uint64:
		return Uint64(a[i])
	case []int64:
		return Int64(a[i])
	case []float64:
		return Float64(a[i])
	}
	panic("gguf: unreachable array storage")
}

// Strings returns a string array.
func (v Value) Strings() ([]string, bool) { return cloneAs[string](v) }

// Bools returns a bool array.
func (v Value) Bools() ([]bool, bool) { return cloneAs[bool](v) }

// Float32s returns an f32 array.
func (v Value) Float32s() ([]float32, bool) { return cloneAs[float32](v) }

// Float64s returns an f32 or f64 array as float64s (f32 widens exactly).
func (v Value) Float64s() ([]float64, bool) {
	if a, ok := v.arr.([]float32); ok {
		out := make([]float64, len(a))
		for i, f := range a {
			out[i] = float64(f)
		}
		return out, true
	}
	return cloneAs[float64](v)
}

// Int32s returns an integer array of any element type whose every element
// fits an int32 (token types are i32 in practice, but need not be).
func (v Value) Int32s() ([]int32, bool) { return intsAs[int32](v) }

// Uint32s returns an integer array whose every element fits a uint32.
func (v Value) Uint32s() ([]uint32, bool) { return intsAs[uint32](v) }

// Int64s returns an integer array whose every element fits an int64.
func (v Value) Int64s() ([]int64, bool) { return intsAs[int64](v) }

// Uint64s returns an integer array whose every element fits a uint64.
func (v Value) Uint64s() ([]uint64, bool) { return intsAs[uint64](v) }

func cloneAs[T any](v Value) ([]T, bool) {
	a, ok := v.arr.([]T)
	if !v.valid || !ok {
		return nil, false
	}
	return slices.Clone(a), true
}

type integer interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64
}

func intsAs[T integer](v Value) ([]T, bool) {
	if !v.valid {
		return nil, false
	}
	switch a := v.arr.(type) {
	case []uint8:
		return convInts[T](a)
	case []int8:
		return convInts[T](a)
	case []uint16:
		return convInts[T](a)
	case []int16:
		return convInts[T](a)
	case []uint32:
		return convInts[T](a)
	case []int32:
		return convInts[T](a)
	case []uint64:
		return convInts[T](a)
	case []int64:
		return convInts[T](a)
	}
	return nil, false
}

// convInts converts when every element survives the round trip with its
// sign intact, i.e. is exactly representable in T.
func convInts[T, E integer](src []E) ([]T, bool) {
	out := make([]T, len(src))
	for i, e := range src {
		t := T(e)
		if E(t) != e || (t < 0) != (e < 0) {
			return nil, false
		}
		out[i] = t
	}
	return out, true
}

// Equal reports whether v and o have the same type and contents. Floats
// compare by bits, so a NaN equals itself and 0 differs from -0: this is
// byte equality of the encodings, which is what round trips need.
func (v Value) Equal(o Value) bool {
	if v.valid != o.valid || v.typ != o.typ {
		return false
	}
	if v.typ != TypeArray {
		return v.bits == o.bits && v.str == o.str
	}
	if v.elem != o.elem || v.Len() != o.Len() {
		return false
	}
	switch a := v.arr.(type) {
	case []float32:
		b := o.arr.([]float32)
		return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
	case []float64:
		b := o.arr.([]float64)
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	case []Value:
		return slices.EqualFunc(a, o.arr.([]Value), Value.Equal)
	}
	for i := range v.Len() {
		if !v.index(i).Equal(o.index(i)) {
			return false
		}
	}
	return true
}

// String is a short display form: 42, 1e-05, true, "llama",
// [512]str{"<unk>", "<s>", ...}. Long strings and arrays are cut short.
func (v Value) String() string {
	var b strings.Builder
	v.format(&b, 0)
	return b.String()
}

const (
	displayElems = 6  // array elements shown before "..."
	displayChars = 64 // string bytes shown before "..."
	displayDepth = 3  // nested arrays shown before "..."
)

func (v Value) format(b *strings.Builder, depth int) {
	if !v.valid {
		b.WriteString("<invalid>")
		return
	}
	switch v.typ {
	case TypeFloat32:
		f, _ := v.Float()
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 32))
	case TypeFloat64:
		f, _ := v.Float()
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case TypeBool:
		b.WriteString(strconv.FormatBool(v.bits != 0))
	case TypeString:
		s := v.str
		if len(s) > displayChars {
			b.WriteString(strconv.Quote(s[:displayChars]))
			b.WriteString("...")
		} else {
			b.WriteString(strconv.Quote(s))
		}
	case TypeArray:
		n := v.Len()
		fmt.Fprintf(b, "[%d]%s{", n, v.elem)
		if depth >= displayDepth && n > 0 {
			b.WriteString("...}")
			return
		}
		for i := range min(n, displayElems) {
			if i > 0 {
				b.WriteString(", ")
			}
			v.index(i).format(b, depth+1)
		}
		if n > displayElems {
			b.WriteString(", ...")
		}
		b.WriteString("}")
	default:
		if v.typ.isSigned() {
			b.WriteString(strconv.FormatInt(int64(v.bits), 10))
		} else {
			b.WriteString(strconv.FormatUint(v.bits, 10))
		}
	}
}
