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

// The f44 entries: weight rows 0..3 of w (rb bytes apart) against
// activation rows i..i+3 of x (k floats each), out[4j+r] equal to dotF32
// of row r, widened, with x_{i+j}, to the bit: the kernel's lanes, then
// the tail in order, as dotF32Asm adds it. F16 and BF16 widen exactly
// (f16tab and VCVTPH2PS; a shift), so that is also dotF16's and dotBF16's
// value.

func ftileF32Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	ftile(ftileF32AVX512, 4, func(w []byte, x []float32) float32 { return tailF32(f32s(w), x) }, w, rb, x, i, k, out)
}

func ftileF16Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	ftile(ftileF16AVX512, 2, func(w []byte, x []float32) float32 { return tailF16(u16s(w), x) }, w, rb, x, i, k, out)
}

func ftileBF16Asm(w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	ftile(ftileBF16AVX512, 2, func(w []byte, x []float32) float32 { return tailBF16(u16s(w), x) }, w, rb, x, i, k, out)
}

// ftile runs kernel over the whole sixteens of the rows (es bytes an
// element) and adds each pair's tail.
func ftile(kernel func(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32), es int,
	tail func(w []byte, x []float32) float32, w []byte, rb int, x []float32, i, k int, out *[16]float32) {
	n := k &^ 15
	_, _ = w[3*rb+es*k-1], x[(i+4)*k-1]
	if n > 0 {
		kernel(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&x[i*k]), 4*k, n, out)
	} else {
		*out = [16]float32{}
	}
	if n < k {
		for j := range 4 {
			xj := x[(i+j)*k+n : (i+j)*k+k]
			for r := range 4 {
				out[4*j+r] += tail(w[r*rb+es*n:r*rb+es*k], xj)
			}
		}
	}
}
