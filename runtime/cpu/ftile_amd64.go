//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"golang.org/x/sys/cpu"
)

// The 4×4 tiles for float weights (ftile_amd64.s): the prefill GEMM's
// F32, F16 and BF16 rows meet four activation rows per pass over four
// weight rows, sixteen zmm accumulators, where dotF32 on each widened row
// ran one latency-bound pair at a time. Each result is bit-identical to
// that dotF32.

//go:noescape
func ftileF32AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)

//go:noescape
func ftileF16AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)

//go:noescape
func ftileBF16AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)

// haveAVX512: the AVX2 set plus AVX-512 foundation, byte/word and vector
// length, with an OS that saves the 512-bit state (x/sys/cpu checks both).
var haveAVX512 = haveAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

func init() {
	if haveAVX512 {
		weightTypeOf(dtype.F32).f44 = ftileF32Asm
		weightTypeOf(dtype.F16).f44 = ftileF16Asm
		weightTypeOf(dtype.BF16).f44 = ftileBF16Asm
	}
}

// ftileF32Asm is weightType.f44 for F32: weight rows 0..3 of w (rb bytes
// apart) against activation rows i..i+3 of x (k floats each), out[4j+r]
// equal to dotF32(row r, x_{i+j}) to the bit: the kernel's lanes, then the
// tail in order, as dotF32Asm adds it.
func ftileF32Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	n := k &^ 15
	_, _ = w[3*rb+4*k-1], x[(i+4)*k-1]
	if n > 0 {
		ftileF32AVX512(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&x[i*k]), 4*k, n, out)
	} else {
		*out = [16]float32{}
	}
	if n < k {
		for j := range 4 {
			xj := x[(i+j)*k+n : (i+j)*k+k]
			for r := range 4 {
				out[4*j+r] += tailF32(f32s(w[r*rb : r*rb+4*k])[n:], xj)
			}
		}
	}
}

// ftileF16Asm is ftileF32Asm for F16 rows: dotF32 of the widened row
// (f16tab and VCVTPH2PS widen exactly, so also dotF16's value).
func ftileF16Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	n := k &^ 15
	_, _ = w[3*rb+2*k-1], x[(i+4)*k-1]
	if n > 0 {
		ftileF16AVX512(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&x[i*k]), 4*k, n, out)
	} else {
		*out = [16]float32{}
	}
	if n < k {
		for j := range 4 {
			xj := x[(i+j)*k+n : (i+j)*k+k]
			for r := range 4 {
				out[4*j+r] += tailF16(u16s(w[r*rb : r*rb+2*k])[n:], xj)
			}
		}
	}
}

// ftileBF16Asm is ftileF32Asm for BF16 rows (widened exactly, by a shift).
func ftileBF16Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	n := k &^ 15
	_, _ = w[3*rb+2*k-1], x[(i+4)*k-1]
	if n > 0 {
		ftileBF16AVX512(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&x[i*k]), 4*k, n, out)
	} else {
		*out = [16]float32{}
	}
	if n < k {
		for j := range 4 {
			xj := x[(i+j)*k+n : (i+j)*k+k]
			for r := range 4 {
				out[4*j+r] += tailBF16(u16s(w[r*rb : r*rb+2*k])[n:], xj)
			}
		}
	}
}
