package gguf

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Read(Write(x)) == x for random metadata: every type, random lengths,
// arrays nested to the limit, floats with random bit patterns (NaNs and
// infinities included).
func TestRoundTripRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		b := NewBuilder()
		var want []KV
		for i := range 1 + r.IntN(20) {
			kv := KV{Key: "k" + strconv.Itoa(i) + "." + randString(r, 6), Value: randValue(r, 0)}
			want = append(want, kv)
			b.Set(kv.Key, kv.Value)
		}
		f, err := read(mustWrite(t, b))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(f.KVs) != len(want) {
			t.Fatalf("round %d: %d keys back, wrote %d", round, len(f.KVs), len(want))
		}
		for i, kv := range want {
			if got := f.KVs[i]; got.Key != kv.Key || !got.Value.Equal(kv.Value) {
				t.Fatalf("round %d: %s = %v, wrote %s = %v", round, got.Key, got.Value, kv.Key, kv.Value)
			}
		}
	}
}

func randValue(r *rand.Rand, depth int) Value {
	t := ValueType(r.IntN(13))
	if t == TypeArray && depth >= MaxDepth-1 {
		t = TypeString
	}
	switch t {
	case TypeUint8:
		return Uint8(uint8(r.Uint32()))
	case TypeInt8:
		return Int8(int8(r.Uint32()))
	case TypeUint16:
		return Uint16(uint16(r.Uint32()))
	case TypeInt16:
		return Int16(int16(r.Uint32()))
	case TypeUint32:
		return Uint32(r.Uint32())
	case TypeInt32:
		return Int32(int32(r.Uint32()))
	case TypeFloat32:
		return Float32(math.Float32frombits(r.Uint32()))
	case TypeBool:
		return Bool(r.IntN(2) == 1)
	case TypeString:
		return String(randString(r, 40))
	case TypeUint64:
		return Uint64(r.Uint64())
	case TypeInt64:
		return Int64(int64(r.Uint64()))
	case TypeFloat64:
		return Float64(math.Float64frombits(r.Uint64()))
	}
	return randArray(r, depth)
}

func randArray(r *rand.Rand, depth int) Value {
	n := r.IntN(12)
	elem := ValueType(r.IntN(13))
	if elem == TypeArray && depth >= MaxDepth-1 {
		elem = TypeUint8
	}
	if elem == TypeArray {
		els := make([]Value, n)
		for i := range els {
			els[i] = randArray(r, depth+1)
		}
		v, _ := Arrays(els...)
		return v
	}
	els := make([]Value, n)
	for i := range els {
		for {
			if els[i] = randValue(r, MaxDepth); els[i].Type() == elem {
				break
			}
		}
	}
	return fromElems(elem, els)
}

// fromElems builds a typed array from scalar Values of one type.
func fromElems(elem ValueType, els []Value) Value {
	switch elem {
	case TypeUint8:
		return Uint8s(mapElems(els, func(v Value) uint8 { return uint8(v.bits) }))
	case TypeInt8:
		return Int8s(mapElems(els, func(v Value) int8 { return int8(v.bits) }))
	case TypeUint16:
		return Uint16s(mapElems(els, func(v Value) uint16 { return uint16(v.bits) }))
	case TypeInt16:
		return Int16s(mapElems(els, func(v Value) int16 { return int16(v.bits) }))
	case TypeUint32:
		return Uint32s(mapElems(els, func(v Value) uint32 { return uint32(v.bits) }))
	case TypeInt32:
		return Int32s(mapElems(els, func(v Value) int32 { return int32(v.bits) }))
	case TypeFloat32:
		return Float32s(mapElems(els, func(v Value) float32 { return math.Float32frombits(uint32(v.bits)) }))
	case TypeBool:
		return Bools(mapElems(els, func(v Value) bool { return v.bits != 0 }))
	case TypeString:
		return Strings(mapElems(els, func(v Value) string { return v.str }))
	case TypeUint64:
		return Uint64s(mapElems(els, func(v Value) uint64 { return v.bits }))
	case TypeInt64:
		return Int64s(mapElems(els, func(v Value) int64 { return int64(v.bits) }))
	}
	return Float64s(mapElems(els, func(v Value) float64 { return math.Float64frombits(v.bits) }))
}

func mapElems[T any](els []Value, f func(Value) T) []T {
	out := make([]T, len(els))
	for i, v := range els {
		out[i] = f(v)
	}
	return out
}

func randString(r *rand.Rand, max int) string {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}
