//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func q4x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int)

func init() {
	if haveVNNI {
		q4x16, q4x16Native = q4x16Asm, true
	}
}

// q4x16Asm is q4x16Go in AVX-512 VNNI (q4x16_amd64.s), bit for bit. The
// slices are checked here, so the kernel reads and writes inside them.
func q4x16Asm(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	if nb <= 0 || ng <= 0 || mc <= 0 {
		return
	}
	if mc > x16MaxM {
		panic("cpu: q4x16: more than 16 activation rows in a pass")
	}
	_, _, _ = w[ng*nb*x16Block-1], a[nb*mc*x16Rec-1], y[(mc-1)*ldy+ng*x16Rows-1]
	q4x16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy)
}
