//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The AVX-512 VNNI four-row dots of Q3_K and Q6_K (zvnni_k_amd64.s): the
// GEMV's form for the bulk of a Q3_K_M model (Q3_K) and its LM head (a
// tied Q6_K embedding), 64 elements an instruction where the AVX2 forms
// take 32, VPDPBUSD doing the byte products and their sums of four. Each
// row is bit-identical to dotQ3_KGo and dotQ6_KGo, as the AVX2 forms are
// (zvnni_k_amd64_test.go holds them to it, adversarial bytes included).
// With the weights in cache they take 0.75–0.8 (Q3_K) and 0.65 (Q6_K) of
// the AVX2 forms' time (BenchmarkVNNIKDots); in decode, where the weights
// stream from DRAM, most of the gain is their prefetch into L2 instead of
// L1 (ZPFD in the assembly says what was measured).

//go:noescape
func dotQ3_Kx4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ6_Kx4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

// This file's init runs after lowbit_amd64.go's and q6k_amd64.go's (files
// initialize in name order), so the VNNI forms replace the AVX2 four-row
// dots they install; haveVNNI (q4vnni_amd64.go) is a package variable,
// set before any init runs.
func init() {
	if haveVNNI {
		weightTypeOf(dtype.Q3_K).q4 = dotQ3_Kx4VNNIAsm
		weightTypeOf(dtype.Q6_K).q4 = dotQ6_Kx4VNNIAsm
	}
}

// The wrappers bounds-check what the kernel reads, as the AVX2 ones do:
// four rows of nb blocks rb bytes apart (w[3·rb] also rejects a negative
// rb) and the activation's qs for them.

func dotQ3_Kx4VNNIAsm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb], w[3*rb+nb*q3KBytes-1], qs[nb*qkK-1]
	dotQ3_Kx4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}

func dotQ6_Kx4VNNIAsm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	_, _, _ = w[3*rb], w[3*rb+nb*q6kBlock-1], qs[nb*qkK-1]
	dotQ6_Kx4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, out)
}
