//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The AVX2 dot products of the low-bit types (lowbit_amd64.s): Q3_K (the
// bulk of a Q3_K_M model), Q2_K, IQ4_XS and IQ4_NL, one-row and four-row,
// installed when the CPU has AVX2+FMA+F16C. Each is bit-identical to its
// portable twin in lowbit.go, row for row (lowbit_amd64_test.go holds
// them to it, adversarial bytes included).

//go:noescape
func dotQ2_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32

//go:noescape
func dotQ2_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ3_KAVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ3_Kx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotIQ4_XSAVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotIQ4_XSx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotIQ4_NLAVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotIQ4_NLx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

// Bytes per block (docs/formats.md#q2_k, #q3_k, #iq4_xs, #iq4_nl).
const (
	q2KBytes   = 84
	q3KBytes   = 110
	iq4XSBytes = 136
	iq4NLBytes = 18
)

// This file's init runs after dot_amd64.go's (files initialize in name
// order), which sets haveAVX2.
func init() {
	if !haveAVX2 {
		return
	}
	q2k, q3k := weightTypeOf(dtype.Q2_K), weightTypeOf(dtype.Q3_K)
	xs, nl := weightTypeOf(dtype.IQ4_XS), weightTypeOf(dtype.IQ4_NL)
	q2k.q, q2k.q4 = dotQ2_KAsm, dotQ2_Kx4Asm
	q3k.q, q3k.q4 = dotQ3_KAsm, dotQ3_Kx4Asm
	xs.q, xs.q4 = dotIQ4_XSAsm, dotIQ4_XSx4Asm
	nl.q, nl.q4 = dotIQ4_NLAsm, dotIQ4_NLx4Asm
}

// The wrappers bounds-check every slice the kernel reads once, as the Go
// code would index it: nb blocks of weights (four rows rb bytes apart for
// the four-row forms; w[3·rb] also rejects a negative rb), the activation's
// qs for them, and Q2_K's 16 bsums a super-block.

func dotQ2_KAsm(w []byte, qs []int8, d, bs []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _, _ = w[nb*q2KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	return dotQ2_KAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb)
}

func dotQ2_Kx4Asm(w []byte, rb int, qs []int8, d, bs []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _, _ = w[3*rb], w[3*rb+nb*q2KBytes-1], qs[nb*qkK-1], bs[nb*16-1]
	dotQ2_Kx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), unsafe.Pointer(&bs[0]), nb, out)
}

func dotQ3_KAsm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*q3KBytes-1], qs[nb*qkK-1]
	return dotQ3_KAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotQ3_Kx4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb], w[3*rb+nb*q3KBytes-1], qs[nb*qkK-1]
	dotQ3_Kx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotIQ4_XSAsm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*iq4XSBytes-1], qs[nb*qkK-1]
	return dotIQ4_XSAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotIQ4_XSx4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb], w[3*rb+nb*iq4XSBytes-1], qs[nb*qkK-1]
	dotIQ4_XSx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotIQ4_NLAsm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*iq4NLBytes-1], qs[nb*qk-1]
	return dotIQ4_NLAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

func dotIQ4_NLx4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb], w[3*rb+nb*iq4NLBytes-1], qs[nb*qk-1]
	dotIQ4_NLx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}
