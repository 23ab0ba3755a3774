//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func siluMulAVX2(x, y unsafe.Pointer, groups int)

func init() {
	if haveAVX2 {
		siluMul = siluMulAsm
	}
}

func siluMulAsm(x, y []float32) {
	g := len(x) / 8
	if g > 0 {
		_ = y[8*g-1]
		siluMulAVX2(unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0]), g)
	}
	siluMulGo(x[8*g:], y[8*g:len(x)])
}
