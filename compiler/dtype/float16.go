package dtype

import "math"

// Scalar conversions shared by the reference (de)quantizers and the CPU
// kernels. Each one is bit-exact with ggml's reference C code on every input,
// NaNs included; docs/formats.md#f16 and #bf16 say what that code does.

// Float16bits returns the IEEE 754 binary16 encoding nearest to f, ties to
// even. Values beyond the half range become infinities; every NaN becomes
// the quiet NaN 0x7E00 with f's sign (ggml drops NaN payloads here).
func Float16bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the half's biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// A half subnormal counts units of 2^-24: shift the full 24-bit
		// significand right and round to nearest even. f32 subnormals
		// (exp 0) are far below the smallest half and land here as zero.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		s := uint32(14 - e) // 14..24
		q := m >> s
		rem := m & (1<<s - 1)
		half := uint32(1) << (s - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++ // may carry into the exponent field: the smallest normal
		}
		return sign | uint16(q)
	}
	// Normal: keep 10 of the 23 mantissa bits, rounding to nearest even; a
	// carry out of the mantissa bumps the exponent, up to infinity.
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// Float16frombits widens a binary16 value exactly. Signaling NaNs come back
// quiet (the payload kept, the quiet bit set), as ggml's conversion does.
func Float16frombits(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		if mant != 0 {
			return math.Float32frombits(sign | 0x7fc00000 | mant<<13)
		}
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0:
		// Subnormal or zero: mant * 2^-24, exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// BFloat16bits rounds f to bfloat16 (its top 16 bits) to nearest even.
// NaNs are truncated and forced quiet; subnormals are kept.
func BFloat16bits(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BFloat16frombits widens a bfloat16 value exactly.
func BFloat16frombits(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// e8m0Half decodes an MXFP4 block exponent as 2^(e-128), half the E8M0
// value 2^(e-127), because the FP4 table stores doubled values
// (docs/formats.md#mxfp4). e = 0 and 1 give float32 subnormals.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// ue4m3Table holds the NVFP4 sub-block scale for each byte: the unsigned
// E4M3 value (bias 7, 3 mantissa bits; bit 7 ignored) times one half, for
// the same doubled FP4 table; 0x00 and 0x7F decode to zero
// (docs/formats.md#nvfp4).
var ue4m3Table = func() (t [256]float32) {
	for i := range t {
		x := uint8(i)
		if x == 0 || x == 0x7f {
			continue
		}
		exp := int(x>>3) & 0xf
		man := float64(x & 7)
		var raw float64
		if exp == 0 {
			raw = math.Ldexp(man, -9)
		} else {
			raw = math.Ldexp(1+float64(man/8), exp-7) // exact; the conversion only keeps the sum unfused
		}
		t[i] = float32(raw * 0.5)
	}
	return t
}()

// float32ToUE4M3 encodes a positive scale as unsigned E4M3 the way ggml's
// NVFP4 reference does: round half up on the first dropped mantissa bit,
// saturating at 0x7E (448), subnormals by rounding x*2^9, non-positive
// values to 0.
func float32ToUE4M3(x float32) uint8 {
	if !(x > 0) {
		return 0
	}
	if x > 448 {
		x = 448
	}
	b := math.Float32bits(x)
	exp := int32(b>>23&0xff) - 127 + 7
	if exp <= 0 {
		m := int32(float32(x*512) + 0.5)
		if m > 7 {
			m = 7
		}
		if m < 1 {
			return 0
		}
		return uint8(m)
	}
	if exp >= 15 {
		return 0x7e
	}
	man := int32(b>>20&7) + int32(b>>19&1)
	if man > 7 {
		man = 0
		exp++
		if exp >= 15 {
			return 0x7e
		}
	}
	return uint8(exp<<3 | man)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

func floor32(x float32) float32 { return float32(math.Floor(float64(x))) }

// log2f is a correctly rounded float32 log2 (rounding the float64 result),
// which is what glibc's log2f returns.
func log2f(x float32) float32 { return float32(math.Log2(float64(x))) }
