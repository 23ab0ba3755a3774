//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func q4x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int, early int)

//go:noescape
func cpuidVendor() (ebx, edx, ecx uint32)

func init() {
	if haveVNNI {
		q4x16, q4x16Native = q4x16Asm, true
	}
	// On Intel CPUs every pass asks for its weights into L2 ahead
	// (q4x16_amd64.s, X16EARLY, has the figures: Sapphire Rapids gains
	// 25–35% in decode; Zen 4's Qwen3 shape loses ~10%).
	if b, d, c := cpuidVendor(); b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e { // "GenuineIntel"
		x16Early = 1
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
	q4x16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy, x16Early)
}
