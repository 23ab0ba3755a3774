//go:build amd64 && !purego

package cpu

import (
	"math"
	"unsafe"
)

// The row pieces in assembly (vec_amd64.s): whole groups of eight in
// assembly, the tails through the portable twins (vec.go), bit for bit.

//go:noescape
func f2hRowAVX2(dst, src unsafe.Pointer, groups int)

//go:noescape
func rmsScales8AVX512(x unsafe.Pointer, stride, groups int, n, eps float64, sc *[8]float32)

//go:noescape
func scaleMulAVX2(dst, x, w unsafe.Pointer, groups int, scale float32)

//go:noescape
func rotateNeoXAVX2(x, cs unsafe.Pointer, h, groups int)

//go:noescape
func rotatePairsAVX2(x, cs unsafe.Pointer, groups int)

//go:noescape
func addRowAVX2(dst, src unsafe.Pointer, groups int)

//go:noescape
func prefetchT2(p unsafe.Pointer, lines int)

//go:noescape
func argmaxAVX2(x unsafe.Pointer, groups int, best *[32]float32, idx *[32]int32)

func init() {
	prefetchL2 = prefetchL2Asm
	if haveAVX2 {
		f2hRow = f2hRowAsm
		scaleMul = scaleMulAsm
		rotateNeoX = rotateNeoXAsm
		rotatePairs = rotatePairsAsm
		argmaxF32 = argmaxF32Asm
		addRow = addRowAsm
	}
	if haveAVX512 {
		rmsScales = rmsScalesAsm
	}
}

func f2hRowAsm(dst []uint16, src []float32) {
	n := len(src)
	g := n / 8
	if g > 0 {
		_ = dst[n-1]
		f2hRowAVX2(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), g)
	}
	f2hRowGo(dst[8*g:], src[8*g:])
}

// rmsScalesAsm does eight rows at a time where rows are whole groups of
// eight elements; the other rows, and rows of other lengths, in Go.
func rmsScalesAsm(sc []float32, x []float32, n, stride int, eps float32) {
	r := 0
	if n%8 == 0 && n > 0 {
		for ; r+8 <= len(sc); r += 8 {
			_ = x[(r+7)*stride+n-1]
			rmsScales8AVX512(unsafe.Pointer(&x[r*stride]), 4*stride, n/8, float64(n), float64(eps), (*[8]float32)(sc[r:r+8]))
		}
	}
	if r < len(sc) {
		rmsScalesGo(sc[r:], x[r*stride:], n, stride, eps)
	}
}

func scaleMulAsm(dst, x, w []float32, scale float32) {
	n := len(x)
	g := n / 8
	if g > 0 {
		_, _ = dst[n-1], w[n-1]
		scaleMulAVX2(unsafe.Pointer(&dst[0]), unsafe.Pointer(&x[0]), unsafe.Pointer(&w[0]), g, scale)
	}
	scaleMulGo(dst[8*g:n], x[8*g:], w[8*g:n], scale)
}

func rotateNeoXAsm(x, cs []float32) {
	h := len(cs) / 2
	g := h / 8
	if g > 0 {
		_ = x[2*h-1]
		rotateNeoXAVX2(unsafe.Pointer(&x[0]), unsafe.Pointer(&cs[0]), h, g)
	}
	if 8*g < h { // the tail pairs (i, i+h), i ≥ 8g
		x0s, x1s, c, s := x[8*g:h], x[h+8*g:2*h], cs[8*g:h], cs[h+8*g:2*h]
		for i := range x0s {
			x0, x1 := x0s[i], x1s[i]
			x0s[i] = float32(x0*c[i]) - float32(x1*s[i])
			x1s[i] = float32(x0*s[i]) + float32(x1*c[i])
		}
	}
}

func rotatePairsAsm(x, cs []float32) {
	g := len(cs) / 8
	if g > 0 {
		_ = x[8*g-1]
		rotatePairsAVX2(unsafe.Pointer(&x[0]), unsafe.Pointer(&cs[0]), g)
	}
	rotatePairsGo(x[8*g:], cs[8*g:])
}

// argmaxF32Asm scans groups of 32 in assembly, reduces its lanes (the
// largest value, the lowest index among the lanes that hold it) and goes
// on through the tail as the Go loop would from there.
func argmaxF32Asm(x []float32) int {
	g := len(x) / 32
	if g == 0 || len(x) > math.MaxInt32 {
		return argmaxF32Go(x)
	}
	var best [32]float32
	var idx [32]int32
	argmaxAVX2(unsafe.Pointer(&x[0]), g, &best, &idx)
	bv := float32(math.Inf(-1))
	for _, v := range best {
		bv = max(bv, v) // no lane holds a NaN
	}
	bi := 0
	if bv > float32(math.Inf(-1)) {
		bi = len(x)
		for l, v := range best {
			if v == bv {
				bi = min(bi, int(idx[l]))
			}
		}
	}
	for i, v := range x[32*g:] {
		if v > bv {
			bi, bv = 32*g+i, v
		}
	}
	return bi
}

func addRowAsm(dst, src []float32) {
	n := len(dst)
	g := n / 8
	if g > 0 {
		_ = src[n-1]
		addRowAVX2(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), g)
	}
	addRowGo(dst[8*g:], src[8*g:n])
}

func prefetchL2Asm(b []byte) {
	if len(b) > 0 {
		prefetchT2(unsafe.Pointer(&b[0]), (len(b)+63)/64)
	}
}
