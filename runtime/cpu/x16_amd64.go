//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func q4x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int, early int)

//go:noescape
func q8x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int, early int)

//go:noescape
func q4kx16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int)

//go:noescape
func q6kx16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int)

//go:noescape
func q6kx16OneVNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, y unsafe.Pointer)

//go:noescape
func q4kx16OneVNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, y unsafe.Pointer)

//go:noescape
func cpuidVendor() (ebx, edx, ecx uint32)

func init() {
	if haveVNNI {
		x16Q4_0.kernel, x16Q4_0.native = q4x16Asm, true
		x16Q8_0.kernel, x16Q8_0.native = q8x16Asm, true
		x16Q4_K.kernel, x16Q4_K.native = q4kx16Asm, true
		x16Q6_K.kernel, x16Q6_K.native = q6kx16Asm, true
	}
	// On Intel CPUs every pass asks for its weights into L2 ahead
	// (x16_amd64.s, X16EARLY, has the figures: Sapphire Rapids gains
	// 25–35% in decode; Zen 4's Qwen3 shape loses ~10%).
	if b, d, c := cpuidVendor(); b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e { // "GenuineIntel"
		x16Early = 1
	}
}

// x16Check holds an assembly x16 kernel's slices to what it reads and
// writes (layout l), so the kernel stays inside them; it reports whether
// there is work.
func x16Check(l *x16Layout, w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) bool {
	if nb <= 0 || ng <= 0 || mc <= 0 {
		return false
	}
	if mc > l.maxM {
		panic("cpu: x16: more activation rows in a pass than the kernel holds")
	}
	_, _, _ = w[ng*nb*l.block()-1], a[nb*mc*l.rec-1], y[(mc-1)*ldy+ng*x16Rows-1]
	return true
}

// q4x16Asm is q4x16Go in AVX-512 VNNI (x16_amd64.s), bit for bit.
func q4x16Asm(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	if x16Check(x16Q4_0, w, nb, ng, a, mc, y, ldy) {
		q4x16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy, x16Early)
	}
}

// q8x16Asm is q8x16Go in AVX-512 VNNI (x16_amd64.s), bit for bit.
func q8x16Asm(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	if x16Check(x16Q8_0, w, nb, ng, a, mc, y, ldy) {
		q8x16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy, x16Early)
	}
}

// q4kx16Asm is q4kx16Go in AVX-512 VNNI (x16k_amd64.s; one row:
// x16k1_amd64.s), bit for bit.
func q4kx16Asm(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	if !x16Check(x16Q4_K, w, nb, ng, a, mc, y, ldy) {
		return
	}
	if mc == 1 { // a decode step: the one-row form (x16k1_amd64.s)
		q4kx16OneVNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), unsafe.Pointer(&y[0]))
		return
	}
	q4kx16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy)
}

// q6kx16Asm is q6kx16Go in AVX-512 VNNI (x16k6_amd64.s; one row:
// x16k61_amd64.s), bit for bit.
func q6kx16Asm(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	if !x16Check(x16Q6_K, w, nb, ng, a, mc, y, ldy) {
		return
	}
	if mc == 1 { // a decode step: the one-row form (x16k61_amd64.s)
		q6kx16OneVNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), unsafe.Pointer(&y[0]))
		return
	}
	q6kx16VNNI(unsafe.Pointer(&w[0]), nb, ng, unsafe.Pointer(&a[0]), mc, unsafe.Pointer(&y[0]), ldy)
}
