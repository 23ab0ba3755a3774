//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The AVX2 Q4_K and Q5_K dot products (kquant_amd64.s), one-row and
// four-row, installed when the CPU has AVX2+FMA+F16C. Each is
// bit-identical to dotQ4_KGo/dotQ5_KGo: the integer sums are exact in any
// order, and the float32 steps are the Go code's, in its order
// (kquant_amd64_test.go holds them to it, adversarial bytes included).

//go:noescape
func dotQ4_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32

//go:noescape
func dotQ5_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32

//go:noescape
func dotQ4_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ5_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)

// Bytes per super-block of 256 (docs/formats.md#q4_k, #q5_k).
const (
	q4KBytes = 144
	q5KBytes = 176
)

func init() {
	if !haveAVX2 {
		return
	}
	q4k, q5k := weightTypeOf(dtype.Q4_K), weightTypeOf(dtype.Q5_K)
	q4k.q, q4k.q4 = dotQ4_KAsm, dotQ4_Kx4Asm
	q5k.q, q5k.q4 = dotQ5_KAsm, dotQ5_Kx4Asm
}

// The wrappers bounds-check every slice the kernel reads once, as the Go
// code would index it: nb super-blocks of weights, 256·nb activation
// bytes, 16·nb bsums.

func dotQ4_KAsm(w []byte, qs []int8, d, bs []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _, _ = w[nb*q4KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	return dotQ4_KAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb)
}

func dotQ5_KAsm(w []byte, qs []int8, d, bs []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _, _ = w[nb*q5KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	return dotQ5_KAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb)
}

// The four-row forms: rows r = 0..3 at w[r·rb:], each bit-identical to
// the one-row form on it. w[3·rb] also rejects a negative rb.

func dotQ4_Kx4Asm(w []byte, rb int, qs []int8, d, bs []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _, _ = w[3*rb], w[3*rb+nb*q4KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	dotQ4_Kx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb, out)
}

func dotQ5_Kx4Asm(w []byte, rb int, qs []int8, d, bs []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _, _ = w[3*rb], w[3*rb+nb*q5KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	dotQ5_Kx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb, out)
}
