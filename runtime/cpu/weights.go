package cpu

import (
	"github.com/akunu-dev/akunu/compiler/dtype"
)

// weightType is what the matrix kernels need of a weight dtype: its block
// geometry, and either the dot product of a row with a quantized
// activation (the quantized types) or with a float one (F32, F16, BF16;
// for the half types the activation is first rounded to the weight's type,
// as ggml converts it).
type weightType struct {
	dt     dtype.Type
	bs, bb int      // elements and bytes per block
	aq     actQuant // the activation's form: ggml's vec_dot_type
	q      qdot
	f      func(w []byte, x []float32) float32

	// q4 and f4, where an assembly twin exists (dot_amd64.go), are q and
	// f for four rows rb bytes apart in one pass, each row's result
	// bit-identical to q's or f's (unless reordered); nil elsewhere.
	q4 func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	f4 func(w []byte, rb int, x []float32, out *[4]float32)

	// q44, where an assembly tile exists (q4vnni_amd64.go, q8vnni_amd64.go,
	// ktile_amd64.go), is q4 for four activation rows i..i+3 of q at once
	// (the prefill GEMM's tile): out[4j+r] is weight row r against
	// activation row i+j, bit-identical to q4's; nil elsewhere.
	q44 func(w []byte, rb int, q *q8act, i, k int, out *[16]float32)

	// f44, where an assembly tile exists (ftile_amd64.go), is the float
	// weights' tile: weight rows 0..3 of w (rb bytes apart) against
	// activation rows i..i+3 of x (k floats each), out[4j+r] bit-identical
	// to dotF32 of row r, widened, with row i+j; nil elsewhere.
	f44 func(w []byte, rb int, x []float32, i, k int, out *[16]float32)

	// reordered is set where q4 sums in an order of its own (the AVX-512
	// VNNI forms of Q4_0 and Q8_0): its rows then agree with q to float32
	// rounding instead of bit for bit.
	reordered bool
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
	{dt: dtype.F32, bs: 1, bb: 4, aq: aqF32, f: func(w []byte, x []float32) float32 { return dotF32(f32s(w), x) }},
	{dt: dtype.F16, bs: 1, bb: 2, aq: aqF16, f: func(w []byte, x []float32) float32 { return dotF16(u16s(w), x) }},
	{dt: dtype.BF16, bs: 1, bb: 2, aq: aqBF16, f: func(w []byte, x []float32) float32 { return dotBF16(u16s(w), x) }},
	{dt: dtype.Q4_0, bs: 32, bb: 18, aq: aqQ8_0, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ4_0(w, qs, d, s) }},
	{dt: dtype.Q4_1, bs: 32, bb: 20, aq: aqQ8_1, q: dotQ4_1Go},
	{dt: dtype.Q5_0, bs: 32, bb: 22, aq: aqQ8_0, q: dotQ5_0Go},
	{dt: dtype.Q5_1, bs: 32, bb: 24, aq: aqQ8_1, q: dotQ5_1Go},
	{dt: dtype.Q8_0, bs: 32, bb: 34, aq: aqQ8_0, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ8_0(w, qs, d, s) }},
	{dt: dtype.Q4_K, bs: 256, bb: 144, aq: aqQ8_K, q: dotQ4_KGo},
	{dt: dtype.Q5_K, bs: 256, bb: 176, aq: aqQ8_K, q: dotQ5_KGo},
	{dt: dtype.Q6_K, bs: 256, bb: 210, aq: aqQ8_K, q: func(w []byte, qs []int8, d, s []float32) float32 { return dotQ6_K(w, qs, d, s) }},
	{dt: dtype.Q2_K, bs: 256, bb: 84, aq: aqQ8_K, q: dotQ2_KGo},
	{dt: dtype.Q3_K, bs: 256, bb: 110, aq: aqQ8_K, q: dotQ3_KGo},
	{dt: dtype.IQ4_NL, bs: 32, bb: 18, aq: aqQ8_0, q: dotIQ4_NLGo},
	{dt: dtype.IQ4_XS, bs: 256, bb: 136, aq: aqQ8_K, q: dotIQ4_XSGo},
}

// roundAct rounds m rows of k activations to what a half-type weight
// meets; a no-op for the others.
func (t *weightType) roundAct(x []float32) {
	switch t.aq {
	case aqF16:
		roundF16(x)
	case aqBF16:
		roundBF16(x)
	}
}

// The dispatched dot products: the portable versions unless an assembly
// twin replaced them at init.
var (
	dotF32  = dotF32Go
	dotF16  = dotF16Go
	dotBF16 = dotBF16Go
	dotQ4_0 = dotQ4_0Go
	dotQ8_0 = dotQ8_0Go
	dotQ6_K = dotQ6_KGo
)
