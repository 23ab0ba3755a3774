//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func accQ8_0AVX2(acc, p, v unsafe.Pointer, hdv, n int)

func init() {
	if haveAVX2 {
		accQ8 = accQ8Asm
	}
}

// accQ8Asm is accQ8 in AVX2 (attnq8_amd64.s) for heads of whole blocks;
// within float32 rounding of accQ8Go (its products are fused into the
// adds).
func accQ8Asm(acc, p []float32, v []byte) {
	hdv, n := len(acc), len(p)
	if n == 0 || hdv == 0 || hdv%qk != 0 {
		accQ8Go(acc, p, v)
		return
	}
	_ = v[n*(hdv/qk*34)-1]
	accQ8_0AVX2(unsafe.Pointer(&acc[0]), unsafe.Pointer(&p[0]), unsafe.Pointer(&v[0]), hdv, n)
}
