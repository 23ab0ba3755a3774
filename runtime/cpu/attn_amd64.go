//go:build amd64 && !purego

package cpu

import "unsafe"

// The AVX2 attention pieces (attn_amd64.s): whole groups of eight in
// assembly, the tails through the portable twins.

//go:noescape
func scoresF16AVX2(k, q unsafe.Pointer, hd, groups int, scale float32, out unsafe.Pointer) float32

//go:noescape
func expSumAVX2(s unsafe.Pointer, groups int, m float32) float32

//go:noescape
func scaleRoundF16AVX2(p unsafe.Pointer, groups int, a float32)

//go:noescape
func accF16AVX2(acc, p, v unsafe.Pointer, hdv, n int)

func init() {
	if !haveAVX2 {
		return
	}
	scoresF16 = scoresF16Asm
	expSum = expSumAsm
	scaleRoundF16 = scaleRoundF16Asm
	accF16 = accF16Asm
}

func scoresF16Asm(k []uint16, q []float32, scale float32, out []float32) float32 {
	hd, n := len(q), len(out)
	g := n / 8
	if hd%8 != 0 || hd == 0 || g == 0 {
		return scoresF16Go(k, q, scale, out)
	}
	_ = k[n*hd-1]
	m := scoresF16AVX2(unsafe.Pointer(&k[0]), unsafe.Pointer(&q[0]), hd, g, scale, unsafe.Pointer(&out[0]))
	return max(m, scoresF16Go(k[8*g*hd:], q, scale, out[8*g:]))
}

func expSumAsm(s []float32, m float32) float32 {
	g := len(s) / 8
	if g == 0 {
		return expSumGo(s, m)
	}
	return expSumAVX2(unsafe.Pointer(&s[0]), g, m) + expSumGo(s[8*g:], m)
}

func scaleRoundF16Asm(p []float32, a float32) {
	g := len(p) / 8
	if g > 0 {
		scaleRoundF16AVX2(unsafe.Pointer(&p[0]), g, a)
	}
	scaleRoundF16Go(p[8*g:], a)
}

func accF16Asm(acc, p []float32, v []uint16) {
	hdv, n := len(acc), len(p)
	if hdv%8 != 0 || hdv == 0 || n == 0 {
		accF16Go(acc, p, v)
		return
	}
	_ = v[n*hdv-1]
	accF16AVX2(unsafe.Pointer(&acc[0]), unsafe.Pointer(&p[0]), unsafe.Pointer(&v[0]), hdv, n)
}
