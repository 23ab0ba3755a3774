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

//go:noescape
func scoresF16x2AVX512(k, q0, q1 unsafe.Pointer, hd, groups int, scale float32, out0, out1 unsafe.Pointer, m *[2]float32)

//go:noescape
func accF16x2AVX512(acc0, acc1, p0, p1, v unsafe.Pointer, cols, n, stride int)

func init() {
	if !haveAVX2 {
		return
	}
	scoresF16 = scoresF16Asm
	expSum = expSumAsm
	scaleRoundF16 = scaleRoundF16Asm
	accF16 = accF16Asm
	if haveAVX512 {
		scoresF16x2 = scoresF16x2Asm
		accF16x2 = accF16x2Asm
		accF16x2Cols = accF16x2ColsAsm
	}
}

// scoresF16x2Asm runs the pair kernel on whole groups of eight keys and,
// when a tail is left, once more on the last eight (which recomputes a
// few scores: each key's score is the same in any slot of a group).
// Fewer than eight keys, or a head size that is not whole 16-element
// chunks, go through the one-head form.
func scoresF16x2Asm(k []uint16, q0, q1 []float32, scale float32, out0, out1 []float32) (float32, float32) {
	hd, n := len(q0), len(out0)
	if hd%16 != 0 || hd == 0 || n < 8 {
		return scoresF16x2Each(k, q0, q1, scale, out0, out1)
	}
	_, _, _ = k[n*hd-1], q1[hd-1], out1[n-1]
	var m [2]float32
	scoresF16x2AVX512(unsafe.Pointer(&k[0]), unsafe.Pointer(&q0[0]), unsafe.Pointer(&q1[0]), hd, n/8, scale,
		unsafe.Pointer(&out0[0]), unsafe.Pointer(&out1[0]), &m)
	if n%8 != 0 {
		m0, m1 := m[0], m[1]
		j := n - 8
		scoresF16x2AVX512(unsafe.Pointer(&k[j*hd]), unsafe.Pointer(&q0[0]), unsafe.Pointer(&q1[0]), hd, 1, scale,
			unsafe.Pointer(&out0[j]), unsafe.Pointer(&out1[j]), &m)
		m[0], m[1] = max(m[0], m0), max(m[1], m1)
	}
	return m[0], m[1]
}

func accF16x2Asm(acc0, acc1, p0, p1 []float32, v []uint16) {
	hdv, n := len(acc0), len(p0)
	if hdv%16 != 0 || hdv == 0 || n == 0 {
		accF16x2Each(acc0, acc1, p0, p1, v)
		return
	}
	_, _, _ = v[n*hdv-1], acc1[hdv-1], p1[n-1]
	accF16x2AVX512(unsafe.Pointer(&acc0[0]), unsafe.Pointer(&acc1[0]), unsafe.Pointer(&p0[0]), unsafe.Pointer(&p1[0]), unsafe.Pointer(&v[0]), hdv, n, hdv)
}

// accF16x2ColsAsm is accF16x2Asm over the len(acc0) columns from v's
// first element of rows stride elements apart (v starts at the first
// column): each column gets the bits the whole rows' run gives it.
func accF16x2ColsAsm(acc0, acc1, p0, p1 []float32, v []uint16, stride int) {
	cols, n := len(acc0), len(p0)
	if cols%16 != 0 || cols == 0 || n == 0 {
		panic("cpu: accF16x2Cols: columns not whole groups of 16, or no rows")
	}
	_, _, _ = v[(n-1)*stride+cols-1], acc1[cols-1], p1[n-1]
	accF16x2AVX512(unsafe.Pointer(&acc0[0]), unsafe.Pointer(&acc1[0]), unsafe.Pointer(&p0[0]), unsafe.Pointer(&p1[0]), unsafe.Pointer(&v[0]), cols, n, stride)
}

func scoresF16Asm(k []uint16, q []float32, scale float32, out []float32) float32 {
	hd, n := len(q), len(out)
	g := n / 8
	if hd%8 != 0 || hd == 0 || g == 0 {
		return scoresF16Go(k, q, scale, out)
	}
	_ = k[n*hd-1]
	m := scoresF16AVX2(unsafe.Pointer(&k[0]), unsafe.Pointer(&q[0]), hd, g, scale, unsafe.Pointer(&out[0]))
	if n%8 != 0 { // the last eight again: a key's score is the same in any slot of a group
		j := n - 8
		m = max(m, scoresF16AVX2(unsafe.Pointer(&k[j*hd]), unsafe.Pointer(&q[0]), hd, 1, scale, unsafe.Pointer(&out[j])))
	}
	return m
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
