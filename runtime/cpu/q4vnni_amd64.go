//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotQ4_0x4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ4_0x4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)

// haveVNNI: haveAVX512 (ftile_amd64.go: foundation, byte/word, vector
// length, and an OS that saves the 512-bit state) with VNNI.
var haveVNNI = haveAVX512 && cpu.X86.HasAVX512VNNI

// This file's init runs after dot_amd64.go's (files initialize in name
// order), so the VNNI form replaces the AVX2 four-row Q4_0 dot.
func init() {
	if haveVNNI {
		weightTypeOf(dtype.Q4_0).q4 = dotQ4_0x4VNNIAsm
		weightTypeOf(dtype.Q4_0).q44 = dotQ4_0x4x4VNNIAsm
		weightTypeOf(dtype.Q4_0).reordered = true
	}
}

// dotQ4_0x4VNNIAsm is dotQ4_0x4Asm with the even blocks in AVX-512 VNNI; an
// odd last block goes through the AVX2 kernel.
func dotQ4_0x4VNNIAsm(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32) {
	nb := len(d)
	even := nb &^ 1
	if even == 0 {
		dotQ4_0x4Asm(w, rb, qs, d, s, out)
		return
	}
	_, _ = w[3*rb+nb*18-1], qs[nb*qk-1]
	dotQ4_0x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), even, out)
	if even < nb {
		var t [4]float32
		dotQ4_0x4AVX2(unsafe.Pointer(&w[even*18]), rb, unsafe.Pointer(&qs[even*qk]), unsafe.Pointer(&d[even]), 1, &t)
		for i := range out {
			out[i] += t[i]
		}
	}
}

// dotQ4_0x4x4VNNIAsm is four dotQ4_0x4VNNIAsm calls, activation rows i..i+3
// of q, in one pass over the weights: out[4j+r] is weight row r against
// activation row i+j, bit-identical to what dotQ4_0x4VNNIAsm gives.
func dotQ4_0x4x4VNNIAsm(w []byte, rb int, q *q8act, i, k int, out *[16]float32) {
	nb := k / qk
	even := nb &^ 1
	if even == 0 {
		var v [4]float32
		for j := range 4 {
			qs, d, s := q.row(aqQ8_0, i+j, k)
			dotQ4_0x4Asm(w, rb, qs, d, s, &v)
			copy(out[4*j:4*j+4], v[:])
		}
		return
	}
	_, _ = w[3*rb+nb*18-1], q.qs[(i+4)*k-1]
	_ = q.d[(i+4)*nb-1]
	dotQ4_0x4x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&q.qs[i*k]), k, unsafe.Pointer(&q.d[i*nb]), nb*4, even, out)
	if even < nb {
		for j := range 4 {
			var t [4]float32
			o := (i+j)*k + even*qk
			dotQ4_0x4AVX2(unsafe.Pointer(&w[even*18]), rb, unsafe.Pointer(&q.qs[o]), unsafe.Pointer(&q.d[(i+j)*nb+even]), 1, &t)
			for r := range 4 {
				out[4*j+r] += t[r]
			}
		}
	}
}
