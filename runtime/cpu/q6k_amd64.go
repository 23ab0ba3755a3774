//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The AVX2 Q6_K dot products (q6k_amd64.s): Q6_K is the output and
// embedding matrix of most Q4_K_M models, the largest GEMV of a small one.
// Each is bit-identical to dotQ6_KGo, row for row.

//go:noescape
func dotQ6_KAVX2(w, qs, d unsafe.Pointer, nb int) float32

//go:noescape
func dotQ6_Kx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

// This file's init runs after dot_amd64.go's (files initialize in name
// order), which sets haveAVX2.
func init() {
	if !haveAVX2 {
		return
	}
	dotQ6_K = dotQ6_KAsm
	weightTypeOf(dtype.Q6_K).q4 = dotQ6_Kx4Asm
}

// q6kBlock is a Q6_K super-block's size in bytes: ql[128], qh[64],
// scales[16], f16 d.
const q6kBlock = 210

func dotQ6_KAsm(w []byte, qs []int8, d, _ []float32) float32 {
	nb := len(d)
	if nb == 0 {
		return 0
	}
	_, _ = w[nb*q6kBlock-1], qs[nb*qkK-1]
	return dotQ6_KAVX2(unsafe.Pointer(&w[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb)
}

// dotQ6_Kx4Asm is dotQ6_KAsm for rows 0..3 of w, rb bytes apart.
func dotQ6_Kx4Asm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _ = w[3*rb+nb*q6kBlock-1], qs[nb*qkK-1]
	dotQ6_Kx4AVX2(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}
