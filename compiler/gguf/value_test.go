package gguf

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestScalarAccessors(t *testing.T) {
	type want struct {
		u     uint64
		uok   bool
		i     int64
		iok   bool
		f     float64
		fok   bool
		shown string
	}
	cases := []struct {
		name string
		v    Value
		want want
	}{
		{"a u8 is an unsigned and a signed integer", Uint8(200), want{200, true, 200, true, 0, false, "200"}},
		{"a negative i8 is no uint", Int8(-3), want{0, false, -3, true, 0, false, "-3"}},
		{"a u16 is both", Uint16(65535), want{65535, true, 65535, true, 0, false, "65535"}},
		{"a positive i16 is both", Int16(7), want{7, true, 7, true, 0, false, "7"}},
		{"a u32 of all ones is both", Uint32(math.MaxUint32), want{math.MaxUint32, true, math.MaxUint32, true, 0, false, "4294967295"}},
		{"a negative i32 is only an int", Int32(-1), want{0, false, -1, true, 0, false, "-1"}},
		{"a u64 over MaxInt64 is no int", Uint64(math.MaxUint64), want{math.MaxUint64, true, 0, false, 0, false, "18446744073709551615"}},
		{"the least i64 is an int", Int64(math.MinInt64), want{0, false, math.MinInt64, true, 0, false, "-9223372036854775808"}},
		{"an f32 is only a float", Float32(1e-5), want{0, false, 0, false, float64(float32(1e-5)), true, "1e-05"}},
		{"an f64 is only a float", Float64(-2.5), want{0, false, 0, false, -2.5, true, "-2.5"}},
		{"a bool is no number", Bool(true), want{0, false, 0, false, 0, false, "true"}},
		{"a string is no number", String("7"), want{0, false, 0, false, 0, false, `"7"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, uok := c.v.Uint()
			i, iok := c.v.Int()
			f, fok := c.v.Float()
			if u != c.want.u || uok != c.want.uok {
				t.Errorf("Uint = %d, %v; want %d, %v", u, uok, c.want.u, c.want.uok)
			}
			if i != c.want.i || iok != c.want.iok {
				t.Errorf("Int = %d, %v; want %d, %v", i, iok, c.want.i, c.want.iok)
			}
			if f != c.want.f || fok != c.want.fok {
				t.Errorf("Float = %g, %v; want %g, %v", f, fok, c.want.f, c.want.fok)
			}
			if s := c.v.String(); s != c.want.shown {
				t.Errorf("String = %q, want %q", s, c.want.shown)
			}
			if !c.v.Valid() || c.v.Len() != 0 {
				t.Errorf("Valid = %v, Len = %d", c.v.Valid(), c.v.Len())
			}
			if _, ok := c.v.Array(); ok {
				t.Error("a scalar is an array")
			}
		})
	}
}

func TestStringAndBoolAccessors(t *testing.T) {
	if s, ok := String("llama").Str(); !ok || s != "llama" {
		t.Errorf("Str = %q, %v", s, ok)
	}
	if _, ok := Uint8(1).Str(); ok {
		t.Error("a u8 is a string")
	}
	if b, ok := Bool(false).Bool(); !ok || b {
		t.Errorf("Bool = %v, %v", b, ok)
	}
	if _, ok := Uint8(1).Bool(); ok {
		t.Error("a u8 is a bool")
	}
	var zero Value
	if zero.Valid() || zero.String() != "<invalid>" {
		t.Errorf("zero Value: Valid %v, String %q", zero.Valid(), zero.String())
	}
	if _, ok := zero.Uint(); ok {
		t.Error("zero Value is a uint")
	}
}

func TestArrayAccessors(t *testing.T) {
	t.Run("integer arrays convert when every element fits", func(t *testing.T) {
		v := Uint8s([]uint8{1, 255})
		if x, ok := v.Int32s(); !ok || !slices.Equal(x, []int32{1, 255}) {
			t.Errorf("Int32s = %v, %v", x, ok)
		}
		if x, ok := Int64s([]int64{-1}).Uint32s(); ok {
			t.Errorf("Uint32s of -1 = %v", x)
		}
		if x, ok := Uint64s([]uint64{1 << 40}).Int32s(); ok {
			t.Errorf("Int32s of 2^40 = %v", x)
		}
		if x, ok := Uint64s([]uint64{math.MaxUint64}).Int64s(); ok {
			t.Errorf("Int64s of MaxUint64 = %v", x)
		}
		if x, ok := Int32s([]int32{-5, 5}).Int64s(); !ok || !slices.Equal(x, []int64{-5, 5}) {
			t.Errorf("Int64s = %v, %v", x, ok)
		}
		if x, ok := Int16s([]int16{3}).Uint64s(); !ok || !slices.Equal(x, []uint64{3}) {
			t.Errorf("Uint64s = %v, %v", x, ok)
		}
		if _, ok := Float32s([]float32{1}).Int32s(); ok {
			t.Error("floats are integers")
		}
	})
	t.Run("typed accessors want their type", func(t *testing.T) {
		if _, ok := Int32s(nil).Strings(); ok {
			t.Error("i32 array gave strings")
		}
		if x, ok := Strings([]string{"a"}).Strings(); !ok || !slices.Equal(x, []string{"a"}) {
			t.Errorf("Strings = %v, %v", x, ok)
		}
		if x, ok := Float32s([]float32{0.5}).Float64s(); !ok || !slices.Equal(x, []float64{0.5}) {
			t.Errorf("Float64s of f32 = %v, %v", x, ok)
		}
		if x, ok := Bools([]bool{true}).Bools(); !ok || !slices.Equal(x, []bool{true}) {
			t.Errorf("Bools = %v, %v", x, ok)
		}
		if _, ok := String("a").Strings(); ok {
			t.Error("a string is an array")
		}
	})
	t.Run("accessors copy so a Value stays immutable", func(t *testing.T) {
		src := []string{"a", "b"}
		v := Strings(src)
		src[0] = "changed"
		got, _ := v.Strings()
		got[1] = "changed"
		again, _ := v.Strings()
		if !slices.Equal(again, []string{"a", "b"}) {
			t.Errorf("Value changed under us: %v", again)
		}
	})
	t.Run("nested arrays", func(t *testing.T) {
		in, _ := Arrays(Uint8s([]uint8{1}), Strings([]string{"x"}))
		if in.ElemType() != TypeArray || in.Len() != 2 {
			t.Fatalf("ElemType %v Len %d", in.ElemType(), in.Len())
		}
		els, ok := in.Array()
		if !ok || len(els) != 2 || els[1].ElemType() != TypeString {
			t.Fatalf("Array = %v, %v", els, ok)
		}
		if _, err := Arrays(Uint8(1)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Arrays of a scalar: %v", err)
		}
		if got, want := in.String(), `[2]arr{[1]u8{1}, [1]str{"x"}}`; got != want {
			t.Errorf("String = %s, want %s", got, want)
		}
	})
}

func TestDisplayIsShort(t *testing.T) {
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		name string
		v    Value
		want string
	}{
		{"long strings are cut", String(string(long)), `"` + string(long[:displayChars]) + `"...`},
		{"long arrays are cut", Int32s([]int32{1, 2, 3, 4, 5, 6, 7, 8}), "[8]i32{1, 2, 3, 4, 5, 6, ...}"},
		{"empty arrays say their type", Float32s(nil), "[0]f32{}"},
		{"floats print shortest", Float32s([]float32{0.1, 1e10}), "[2]f32{0.1, 1e+10}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.v.String(); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	deep := Uint8s([]uint8{1})
	for range 6 {
		deep, _ = Arrays(deep)
	}
	if got, want := deep.String(), "[1]arr{[1]arr{[1]arr{[1]arr{...}}}}"; got != want {
		t.Errorf("deep nesting shows %s, want %s", got, want)
	}
}

func TestEqualComparesEncodings(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name string
		a, b Value
		want bool
	}{
		{"NaN equals itself", Float32s([]float32{nan}), Float32s([]float32{nan}), true},
		{"zero differs from negative zero", Float64(0), Float64(math.Copysign(0, -1)), false},
		{"types matter", Uint32(1), Int32(1), false},
		{"element types matter", Uint32s(nil), Int32s(nil), false},
		{"lengths matter", Strings([]string{"a"}), Strings([]string{"a", "b"}), false},
		{"contents matter", Uint16s([]uint16{1, 2}), Uint16s([]uint16{1, 3}), false},
		{"equal strings", String("x"), String("x"), true},
		{"nil and empty arrays are equal", Strings(nil), Strings([]string{}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.Equal(c.b); got != c.want {
				t.Errorf("Equal = %v, want %v", got, c.want)
			}
		})
	}
}

func TestValueTypeNames(t *testing.T) {
	if TypeString.String() != "str" || TypeArray.String() != "arr" || ValueType(13).String() != "type(13)" {
		t.Errorf("names: %v %v %v", TypeString, TypeArray, ValueType(13))
	}
	if ValueType(13).Valid() || !TypeFloat64.Valid() {
		t.Error("Valid is wrong at the edge")
	}
}
