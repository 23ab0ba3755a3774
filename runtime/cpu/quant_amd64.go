//go:build amd64 && !purego

package cpu

import "unsafe"

// quantizeQ8_0AVX2 (quant_amd64.s) quantizes whole blocks until the first
// one that holds a NaN or an infinity, and returns how many it did.
//
//go:noescape
func quantizeQ8_0AVX2(x, qs, d, s unsafe.Pointer, nb int) int

// packRecsAVX2 (quant_amd64.s) is packRecsGo on nb blocks.
//
//go:noescape
func packRecsAVX2(a unsafe.Pointer, step int, qs, d unsafe.Pointer, nb int, bias int)

func init() {
	if haveAVX2 {
		quantizeQ8_0 = quantizeQ8_0Asm
		packRecs = packRecsAsm
	}
}

func packRecsAsm(a []byte, step int, qs []int8, d []float32, bias int32) {
	nb := len(d)
	if nb == 0 {
		return
	}
	_, _ = a[(nb-1)*step+x16Rec-1], qs[nb*qk-1]
	packRecsAVX2(unsafe.Pointer(&a[0]), step, unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, int(bias))
}

// quantizeQ8_0Asm is quantizeQ8_0Go, bit for bit: the finite blocks in
// assembly, a block with a NaN or an infinity through the Go code, whose
// NaN-propagating max and f2h decide what it gets.
func quantizeQ8_0Asm(x []float32, qs []int8, d, s []float32) {
	nb := len(x) / qk
	if nb == 0 {
		return
	}
	_, _ = qs[nb*qk-1], d[nb-1]
	if len(s) != 0 {
		_ = s[nb-1]
	}
	for b := 0; b < nb; b++ {
		var sp unsafe.Pointer
		if len(s) != 0 {
			sp = unsafe.Pointer(&s[b])
		}
		b += quantizeQ8_0AVX2(unsafe.Pointer(&x[b*qk]), unsafe.Pointer(&qs[b*qk]), unsafe.Pointer(&d[b]), sp, nb-b)
		if b == nb {
			return
		}
		var sb []float32
		if len(s) != 0 {
			sb = s[b : b+1]
		}
		quantizeQ8_0Go(x[b*qk:b*qk+qk], qs[b*qk:b*qk+qk], d[b:b+1], sb)
	}
}
