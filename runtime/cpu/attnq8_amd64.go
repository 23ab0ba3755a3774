//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func accQ8_0AVX2(acc, p, v unsafe.Pointer, hdv, n int)

//go:noescape
func scoresQ8_0AVX2(k, qs, d unsafe.Pointer, nb, n int, scale float32, out unsafe.Pointer) float32

//go:noescape
func accQ8_0x2AVX512(acc0, acc1, p0, p1, v unsafe.Pointer, hdv, n int)

//go:noescape
func scoresQ8_0x2AVX2(k, qs0, qs1, d0, d1 unsafe.Pointer, nb, n int, scale float32, out0, out1 unsafe.Pointer, m *[2]float32)

func init() {
	if haveAVX2 {
		accQ8 = accQ8Asm
		scoresQ8 = scoresQ8Asm
		scoresQ8x2 = scoresQ8x2Asm
	}
	if haveAVX512 {
		accQ8x2 = accQ8x2Asm
	}
}

// accQ8x2Asm is accQ8x2 in AVX-512 for heads of whole blocks: each head's
// result bit for bit accQ8Asm's.
func accQ8x2Asm(acc0, acc1, p0, p1 []float32, v []byte) {
	hdv, n := len(acc0), len(p0)
	if n == 0 || hdv == 0 || hdv%qk != 0 {
		accQ8x2Each(acc0, acc1, p0, p1, v)
		return
	}
	_, _, _ = acc1[hdv-1], p1[n-1], v[n*(hdv/qk*34)-1]
	accQ8_0x2AVX512(unsafe.Pointer(&acc0[0]), unsafe.Pointer(&acc1[0]), unsafe.Pointer(&p0[0]), unsafe.Pointer(&p1[0]), unsafe.Pointer(&v[0]), hdv, n)
}

// scoresQ8x2Asm is scoresQ8x2 with both heads in one pass over the keys:
// each score bit for bit scoresQ8's.
func scoresQ8x2Asm(k []byte, rb int, qs0, qs1 []int8, d0, d1 []float32, scale float32, out0, out1 []float32) (float32, float32) {
	nb, n := len(d0), len(out0)
	if n == 0 || nb == 0 || rb != nb*34 {
		return scoresQ8x2Each(k, rb, qs0, qs1, d0, d1, scale, out0, out1)
	}
	_, _, _, _, _ = k[n*rb-1], qs0[nb*qk-1], qs1[nb*qk-1], d1[nb-1], out1[n-1]
	var m [2]float32
	scoresQ8_0x2AVX2(unsafe.Pointer(&k[0]), unsafe.Pointer(&qs0[0]), unsafe.Pointer(&qs1[0]), unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0]),
		nb, n, scale, unsafe.Pointer(&out0[0]), unsafe.Pointer(&out1[0]), &m)
	return m[0], m[1]
}

// scoresQ8Asm is scoresQ8 with the loop over the keys in assembly: each
// score bit for bit the portable one's (dotQ8_0AVX2's operations).
func scoresQ8Asm(k []byte, rb int, qs []int8, d []float32, scale float32, out []float32) float32 {
	nb, n := len(d), len(out)
	if n == 0 || nb == 0 || rb != nb*34 {
		return scoresQ8Go(k, rb, qs, d, scale, out)
	}
	_, _ = k[n*rb-1], qs[nb*qk-1]
	return scoresQ8_0AVX2(unsafe.Pointer(&k[0]), unsafe.Pointer(&qs[0]), unsafe.Pointer(&d[0]), nb, n, scale, unsafe.Pointer(&out[0]))
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
