//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The AVX2 Q4_1, Q5_0 and Q5_1 dot products (q5_amd64.s), one row and four
// rows at a time, installed where the CPU has AVX2+FMA+F16C (haveAVX2,
// dot_amd64.go). Each is bit-identical to its portable twin in quant.go,
// for every input (q5_amd64_test.go).

//go:noescape
func dotQ4_1AVX2(w, qs, d, s unsafe.Pointer, nb int) float32

//go:noescape
func dotQ5_0AVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ5_1AVX2(w, qs, d, s unsafe.Pointer, nb int) float32

//go:noescape
func dotQ4_1x4AVX2(w unsafe.Pointer, stride int, qs, d, s unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ5_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ5_1x4AVX2(w unsafe.Pointer, stride int, qs, d, s unsafe.Pointer, nb int, out *[4]float32)

func init() {
	if !haveAVX2 {
		return
	}
	q41, q50, q51 := weightTypeOf(dtype.Q4_1), weightTypeOf(dtype.Q5_0), weightTypeOf(dtype.Q5_1)
	q41.q, q41.q4 = dotQ4_1Asm, dotQ4_1x4Asm
	q50.q, q50.q4 = dotQ5_0Asm, dotQ5_0x4Asm
	q51.q, q51.q4 = dotQ5_1Asm, dotQ5_1x4Asm
}

// The wrappers check every slice once, where the portable code would index
// past its end, and hand the kernels bare pointers.

func dotQ4_1Asm(w []byte, qs []int8, d, s []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _, _ = w[nb*20-1], qs[nb*qk-1], s[nb-1]
	return dotQ4_1AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), nb)
}

func dotQ5_0Asm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*22-1], qs[nb*qk-1]
	return dotQ5_0AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotQ5_1Asm(w []byte, qs []int8, d, s []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _, _ = w[nb*24-1], qs[nb*qk-1], s[nb-1]
	return dotQ5_1AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), nb)
}

// The four-row forms: rows 0..3 of w, rb bytes apart, against one
// activation; out[r] is bit-identical to the one-row form on row r.

func dotQ4_1x4Asm(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb+nb*20-1], qs[nb*qk-1], s[nb-1]
	dotQ4_1x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), nb, out)
}

func dotQ5_0x4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _ = w[3*rb+nb*22-1], qs[nb*qk-1]
	dotQ5_0x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotQ5_1x4Asm(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb+nb*24-1], qs[nb*qk-1], s[nb-1]
	dotQ5_1x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&s[0]), nb, out)
}
