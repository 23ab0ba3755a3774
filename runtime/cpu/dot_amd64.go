//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"golang.org/x/sys/cpu"
)

// The AVX2+FMA+F16C dot products (dot_amd64.s), installed when the CPU has
// them; the portable ones stay otherwise, and the tests hold each twin to
// its portable reference.

//go:noescape
func dotQ4_0AVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ8_0AVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotF16AVX2(w, x unsafe.Pointer, n int) float32

//go:noescape
func dotF32AVX2(w, x unsafe.Pointer, n int) float32

//go:noescape
func dotBF16AVX2(w, x unsafe.Pointer, n int) float32

//go:noescape
func dotQ4_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ8_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotF32x4AVX2(w unsafe.Pointer, stride int, x unsafe.Pointer, n int, out *[4]float32)

var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

func init() {
	if !haveAVX2 {
		return
	}
	dotQ4_0 = dotQ4_0Asm
	dotQ8_0 = dotQ8_0Asm
	dotF16 = dotF16Asm
	dotBF16 = dotBF16Asm
	dotF32 = dotF32Asm
	weightTypeOf(dtype.Q4_0).q4 = dotQ4_0x4Asm
	weightTypeOf(dtype.Q8_0).q4 = dotQ8_0x4Asm
	weightTypeOf(dtype.F32).f4 = dotF32x4Asm
}

// The four-row twins: rows r0..r0+3 of w (rb bytes each) against one
// activation, each row bit-identical to its one-row form.

func dotQ4_0x4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _ = w[3*rb+nb*18-1], qs[nb*qk-1]
	dotQ4_0x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotQ8_0x4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _ = w[3*rb+nb*34-1], qs[nb*qk-1]
	dotQ8_0x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotF32x4Asm(w []byte, rb int, x []float32, out *[4]float32) {
	k := len(x)
	n := k &^ 15
	_ = w[3*rb+4*k-1]
	if n > 0 {
		dotF32x4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&x[0]), n, out)
	} else {
		*out = [4]float32{}
	}
	if n < k {
		for r := range out {
			out[r] += tailF32(f32s(w[r*rb : r*rb+4*k])[n:], x[n:])
		}
	}
}

func dotQ4_0Asm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*18-1], qs[nb*qk-1]
	return dotQ4_0AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotQ8_0Asm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*34-1], qs[nb*qk-1]
	return dotQ8_0AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotF16Asm(w []uint16, x []float32) float32 {
	n := len(x) &^ 15
	var s float32
	if n > 0 {
		_ = w[n-1]
		s = dotF16AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0]), n)
	}
	return s + tailF16(w[n:len(x)], x[n:])
}

func dotBF16Asm(w []uint16, x []float32) float32 {
	n := len(x) &^ 15
	var s float32
	if n > 0 {
		_ = w[n-1]
		s = dotBF16AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0]), n)
	}
	return s + tailBF16(w[n:len(x)], x[n:])
}

func dotF32Asm(w []float32, x []float32) float32 {
	n := len(x) &^ 15
	var s float32
	if n > 0 {
		_ = w[n-1]
		s = dotF32AVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0]), n)
	}
	return s + tailF32(w[n:len(x)], x[n:])
}
