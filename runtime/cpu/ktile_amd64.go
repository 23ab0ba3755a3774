//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The prefill GEMM's 4×4 tiles for the K-quants (ktile_amd64.s), AVX-512
// VNNI: each super-block's weights are unpacked once for four activation
// rows instead of once per row, which is where the four-row dots spend
// their time in a prefill. Every result is bit-identical to the four-row
// dot it replaces (ktile_amd64_test.go holds them to it).

//go:noescape
func dotQ4_Kx4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, bs unsafe.Pointer, bstride int, nb int, out *[16]float32) bool

//go:noescape
func dotQ6_Kx4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)

// This file's init runs after kquant_amd64.go's, q4vnni_amd64.go's and
// q6k_amd64.go's (files initialize in name order), which install the
// four-row dots and set haveVNNI.
func init() {
	if haveVNNI {
		weightTypeOf(dtype.Q4_K).q44 = dotQ4_Kx4x4VNNIAsm
		weightTypeOf(dtype.Q6_K).q44 = dotQ6_Kx4x4VNNIAsm
	}
}

// dotQ4_Kx4x4VNNIAsm is the Q4_K tile, activation rows i..i+3 of q:
// out[4j+r] is weight row r against activation row i+j, what
// dotQ4_Kx4Asm gives for the pair. Where the kernel declines (a bsum pair
// outside int16, which quantizeQ8_K never writes) the four-row dot
// computes the tile.
func dotQ4_Kx4x4VNNIAsm(w []byte, rb int, q *q8act, i, k int, out *[16]float32) {
	nb := k / qkK
	if nb > 0 {
		_, _ = w[3*rb], w[3*rb+nb*q4KBytes-1]
		_, _, _ = q.qs[(i+4)*k-1], q.d[(i+4)*nb-1], q.s[(i+4)*nb*16-1]
		if dotQ4_Kx4x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&q.qs[i*k]), k,
			unsafe.Pointer(&q.d[i*nb]), nb*4, unsafe.Pointer(&q.s[i*nb*16]), nb*64, nb, out) {
			return
		}
	}
	var v [4]float32
	for j := range 4 {
		qs, d, s := q.row(aqQ8_K, i+j, k)
		dotQ4_Kx4Asm(w, rb, qs, d, s, &v)
		copy(out[4*j:4*j+4], v[:])
	}
}

// dotQ6_Kx4x4VNNIAsm is the Q6_K tile, activation rows i..i+3 of q:
// out[4j+r] is weight row r against activation row i+j, what
// dotQ6_Kx4Asm gives for the pair.
func dotQ6_Kx4x4VNNIAsm(w []byte, rb int, q *q8act, i, k int, out *[16]float32) {
	nb := k / qkK
	if nb == 0 {
		*out = [16]float32{}
		return
	}
	_, _ = w[3*rb], w[3*rb+nb*q6kBlock-1]
	_, _ = q.qs[(i+4)*k-1], q.d[(i+4)*nb-1]
	dotQ6_Kx4x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&q.qs[i*k]), k, unsafe.Pointer(&q.d[i*nb]), nb*4, nb, out)
}
