package cpu

import (
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Activations are F16 (Apple plans) or F32 (CPU plans); the kernel's name
// says which, and every kernel reads and writes its activation buffers in
// that dtype. Arithmetic is float32 throughout; an F16 output is rounded
// once, when it is stored.

// f32s views b as float32s (the buffers are little-endian and 4-aligned:
// Alloc aligns to 64, GGUF tensors to 32).
func f32s(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// u16s views b as uint16s (F16 and BF16 elements).
func u16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// u32s views b as uint32s (token ids).
func u32s(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// f16tab widens every binary16 value: one load instead of dtype's branches
// on the paths that read F16 in volume (the KV cache, F16 activations).
var f16tab = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = dtype.Float16frombits(uint16(i))
	}
	return &t
}()

func h2f(h uint16) float32 { return f16tab[h] }

// f2h rounds to binary16, nearest even: dtype.Float16bits, bit for bit
// (TestF2HMatchesDtype), without its branches on the two common ranges.
// A half normal keeps 10 of the 23 mantissa bits: add just under half a
// unit plus the kept lowest bit, truncate, rebias the exponent (a carry
// runs into it, as it should). A half subnormal counts units of 2^-24:
// adding 0.5, whose ulp is 2^-24, rounds |f| to one in the float32 add.
// Overflow, infinities and NaNs take dtype's path.
func f2h(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u &^ (1 << 31)
	switch {
	case a < 0x38800000: // |f| < 2^-14
		return sign | uint16(math.Float32bits(math.Float32frombits(a)+0.5)-0x3f000000)
	case a < 0x477ff000: // |f| < 65520, which rounds to infinity
		return sign | uint16((a+0xfff+(a>>13&1)-(127-15)<<23)>>13)
	}
	return dtype.Float16bits(f)
}

// act is an activation buffer's dtype.
type act bool

const (
	actF32 act = false
	actF16 act = true
)

func actOf(t dtype.Type) act { return t == dtype.F16 }

// size is the bytes of one element.
func (a act) size() int {
	if a {
		return 2
	}
	return 4
}

// load widens n elements of src, from element i, into dst[:n].
func (a act) load(dst []float32, src []byte, i, n int) {
	if a {
		s := u16s(src)[i : i+n]
		for j, h := range s {
			dst[j] = f16tab[h]
		}
		return
	}
	copy(dst[:n], f32s(src)[i:i+n])
}

// store writes src into n elements of dst from element i.
func (a act) store(dst []byte, i int, src []float32) {
	if a {
		f2hRow(u16s(dst)[i:i+len(src)], src)
		return
	}
	copy(f32s(dst)[i:i+len(src)], src)
}

func (a act) get(src []byte, i int) float32 {
	if a {
		return f16tab[u16s(src)[i]]
	}
	return f32s(src)[i]
}

func (a act) set(dst []byte, i int, v float32) {
	if a {
		u16s(dst)[i] = f2h(v)
		return
	}
	f32s(dst)[i] = v
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// siluMul is the SiLU gate, x[i] = silu(x[i])·y[i] (len(y) ≥ len(x)): the
// portable form, or an AVX2 twin (expf_amd64.s) within float32 rounding of
// it.
var siluMul = siluMulGo

func siluMulGo(x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		x[i] = silu(v) * y[i]
	}
}

// gelu is the tanh approximation ggml's gelu uses:
// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))). ggml's CPU backend reads it
// from an F16 table (input and output rounded to f16); we evaluate it in
// float32, which differs from the table by at most that rounding.
func gelu(x float32) float32 {
	const sqrt2overPi = 0.79788456080286535587989211986876
	const coefA = 0.044715
	return 0.5 * x * (1 + float32(math.Tanh(float64(sqrt2overPi*x*(1+coefA*x*x)))))
}
