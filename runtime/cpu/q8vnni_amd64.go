//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

//go:noescape
func dotQ8_0x4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)

//go:noescape
func dotQ8_0x4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)

func init() {
	if haveVNNI {
		weightTypeOf(dtype.Q8_0).q4 = dotQ8_0x4VNNIAsm
		weightTypeOf(dtype.Q8_0).q44 = dotQ8_0x4x4VNNIAsm
		weightTypeOf(dtype.Q8_0).reordered = true
	}
}

// dotQ8_0x4VNNIAsm is the decode GEMV's four-row Q8_0 dot in AVX-512 VNNI:
// out[r] is weight row r against the activation, bit for bit what
// dotQ8_0x4x4VNNIAsm gives for that activation row (an odd last block
// goes through the AVX2 four-row dot, as there).
func dotQ8_0x4VNNIAsm(w []byte, rb int, qs []int8, d, _ []float32, out *[4]float32) {
	nb := len(d)
	even := nb &^ 1
	_, _ = w[3*rb+nb*34-1], qs[nb*qk-1]
	if even > 0 {
		dotQ8_0x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), even, out)
	} else {
		*out = [4]float32{}
	}
	if even < nb {
		var t [4]float32
		dotQ8_0x4AVX2(unsafe.Pointer(&w[even*34]), rb, unsafe.Pointer(&qs[even*qk]), unsafe.Pointer(&d[even]), 1, &t)
		for r := range out {
			out[r] += t[r]
		}
	}
}

// dotQ8_0x4x4VNNIAsm is the Q8_0 4×4 tile, activation rows i..i+3 of q:
// out[4j+r] is weight row r against activation row i+j, within float32
// rounding of dotQ8_0 (an odd last block goes through the AVX2 four-row
// dot).
func dotQ8_0x4x4VNNIAsm(w []byte, rb int, q *q8act, i, k int, out *[16]float32) {
	nb := k / qk
	even := nb &^ 1
	_, _ = w[3*rb+nb*34-1], q.qs[(i+4)*k-1]
	_ = q.d[(i+4)*nb-1]
	if even > 0 {
		dotQ8_0x4x4VNNI(unsafe.Pointer(&w[0]), rb, unsafe.Pointer(&q.qs[i*k]), k, unsafe.Pointer(&q.d[i*nb]), nb*4, even, out)
	} else {
		*out = [16]float32{}
	}
	if even < nb {
		for j := range 4 {
			var t [4]float32
			o := (i+j)*k + even*qk
			dotQ8_0x4AVX2(unsafe.Pointer(&w[even*34]), rb, unsafe.Pointer(&q.qs[o]), unsafe.Pointer(&q.d[(i+j)*nb+even]), 1, &t)
			for r := range 4 {
				out[4*j+r] += t[r]
			}
		}
	}
}
