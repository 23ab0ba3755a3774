//go:build amd64 && !purego

package cpu

import "unsafe"

// quantizeQ8_KAVX2 (quant8k_amd64.s) quantizes whole super-blocks until
// the first one that holds a NaN or an infinity, and returns how many it
// did.
//
//go:noescape
func quantizeQ8_KAVX2(x, qs, d, bsums unsafe.Pointer, nb int) int

func init() {
	if haveAVX2 {
		quantizeQ8_K = quantizeQ8_KAsm
	}
}

// quantizeQ8_KAsm is quantizeQ8_KGo, bit for bit: the finite super-blocks
// in assembly, one with a NaN or an infinity through the Go code, whose
// float comparisons (NaN never wins, +Inf does) decide what it gets.
func quantizeQ8_KAsm(x []float32, qs []int8, d, bsums []float32) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_, _, _ = qs[nb*qkK-1], d[nb-1], bsums[nb*16-1]
	for b := 0; b < nb; b++ {
		b += quantizeQ8_KAVX2(unsafe.Pointer(&x[b*qkK]), unsafe.Pointer(&qs[b*qkK]),
			unsafe.Pointer(&d[b]), unsafe.Pointer(&bsums[b*16]), nb-b)
		if b == nb {
			return
		}
		quantizeQ8_KGo(x[b*qkK:b*qkK+qkK], qs[b*qkK:b*qkK+qkK], d[b:b+1], bsums[b*16:b*16+16])
	}
}
