package cpu

import (
	"github.com/akunu-dev/akunu/compiler/dtype"
)

// weightType is what the matrix kernels need of a weight dtype: its block
// geometry, and either the dot product of a row with a quantized
// activation (the quantized types) or with a float one (F32, F16, BF16).
type weightType struct {
	dt     dtype.Type
	bs, bb int // elements and bytes per block
	q      qdot
	f      func(w []byte, x []float32) float32
}

func (t *weightType) rowBytes(k int) int { return k / t.bs * t.bb }

// dequant widens one row (whole blocks) into dst with the reference
// dequantizer: bit-identical to ggml's to_float, and allocation-free.
func (t *weightType) dequant(w []byte, dst []float32) {
	switch t.dt {
	case dtype.F32:
		copy(dst, f32s(w))
	case dtype.F16:
		for i, h := range u16s(w)[:len(dst)] {
			dst[i] = f16tab[h]
		}
	default:
		if err := dtype.Dequantize(t.dt, w[:t.rowBytes(len(dst))], dst); err != nil {
			panic("cpu: " + err.Error()) // Bind checked the shapes
		}
	}
}

// weightTypeOf returns the table entry of dt; nil for a type without
// kernels.
func weightTypeOf(dt dtype.Type) *weightType {
	for i := range weightTypes {
		if weightTypes[i].dt == dt {
			return &weightTypes[i]
		}
	}
	return nil
}

// weightTypes holds the dot products in use: the portable ones, replaced at
// init by assembly where the CPU has it (dot_amd64.go).
var weightTypes = []weightType{
	{dt: dtype.F32, bs: 1, bb: 4, f: func(w []byte, x []float32) float32 { return dotF32(f32s(w), x) }},
	{dt: dtype.F16, bs: 1, bb: 2, f: func(w []byte, x []float32) float32 { return dotF16(u16s(w), x) }},
	{dt: dtype.BF16, bs: 1, bb: 2, f: func(w []byte, x []float32) float32 { return dotBF16Go(u16s(w), x) }},
	{dt: dtype.Q4_0, bs: 32, bb: 18, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ4_0(w, qs, d, s) }},
	{dt: dtype.Q4_1, bs: 32, bb: 20, q: dotQ4_1Go},
	{dt: dtype.Q5_0, bs: 32, bb: 22, q: dotQ5_0Go},
	{dt: dtype.Q5_1, bs: 32, bb: 24, q: dotQ5_1Go},
	{dt: dtype.Q8_0, bs: 32, bb: 34, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ8_0(w, qs, d, s) }},
	{dt: dtype.Q4_K, bs: 256, bb: 144, q: dotQ4_KGo},
	{dt: dtype.Q5_K, bs: 256, bb: 176, q: dotQ5_KGo},
	{dt: dtype.Q6_K, bs: 256, bb: 210, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ6_K(w, qs, d, s) }},
}

// The dispatched dot products: the portable versions unless an assembly
// twin replaced them at init.
var (
	dotF32  = dotF32Go
	dotF16  = dotF16Go
	dotQ4_0 = dotQ4_0Go
	dotQ8_0 = dotQ8_0Go
	dotQ6_K = dotQ6_KGo
)
