package dtype

import (
	"encoding/binary"
	"math"
)

// The legacy block formats: one fp16 scale (and for the _1 variants an fp16
// minimum) per block of 32 (Q1_0: 128, Q2_0: 64). Layouts in
// docs/formats.md#q4_0 through #q2_0.
//
// C converts floats to small integers through a 32-bit truncation; the
// int8(int32(f)) spelling does the same.
//
// Float rounding: every product that feeds an addition is wrapped in an
// explicit float32 conversion. Go may otherwise fuse a*b+c into one FMA
// (arm64 always, amd64 at GOAMD64=v3), while the reference C build rounds
// the product first; the conversion forbids the fusion.

func f16At(b []byte, off int) float32 {
	return Float16frombits(binary.LittleEndian.Uint16(b[off:]))
}

func putF16(b []byte, off int, v float32) {
	binary.LittleEndian.PutUint16(b[off:], Float16bits(v))
}

func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+18, dst[32:] {
		blk := src[b : b+18]
		d := f16At(blk, 0)
		for j, q := range blk[2:18] {
			dst[j] = float32(int32(q&0xf)-8) * d
			dst[j+16] = float32(int32(q>>4)-8) * d
		}
	}
}

func dequantQ4_1(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+20, dst[32:] {
		blk := src[b : b+20]
		d, m := f16At(blk, 0), f16At(blk, 2)
		for j, q := range blk[4:20] {
			dst[j] = float32(float32(q&0xf)*d) + m
			dst[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

func dequantQ5_0(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+22, dst[32:] {
		blk := src[b : b+22]
		d := f16At(blk, 0)
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j, q := range blk[6:22] {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			dst[j] = float32(int32(q&0xf|h0)-16) * d
			dst[j+16] = float32(int32(q>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+24, dst[32:] {
		blk := src[b : b+24]
		d, m := f16At(blk, 0), f16At(blk, 2)
		qh := binary.LittleEndian.Uint32(blk[4:])
		for j, q := range blk[8:24] {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			dst[j] = float32(float32(q&0xf|h0)*d) + m
			dst[j+16] = float32(float32(q>>4|h1)*d) + m
		}
	}
}

func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+34, dst[32:] {
		blk := src[b : b+34]
		d := f16At(blk, 0)
		for j, q := range blk[2:34] {
			dst[j] = float32(int8(q)) * d
		}
	}
}

// Q8_1's second fp16 (d times the sum of the quants) only serves dot
// products; the values are d*q as in Q8_0.
func dequantQ8_1(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+36, dst[32:] {
		blk := src[b : b+36]
		d := f16At(blk, 0)
		for j, q := range blk[4:36] {
			dst[j] = float32(int8(q)) * d
		}
	}
}

func dequantQ1_0(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+18, dst[128:] {
		blk := src[b : b+18]
		d := f16At(blk, 0)
		for j := range 128 {
			if blk[2+j/8]>>(j%8)&1 != 0 {
				dst[j] = d
			} else {
				dst[j] = -d
			}
		}
	}
}

func dequantQ2_0(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+18, dst[64:] {
		blk := src[b : b+18]
		d := f16At(blk, 0)
		for j := range 64 {
			q := blk[2+j/4] >> (2 * (j % 4)) & 3
			dst[j] = float32(int32(q)-1) * d
		}
	}
}

// absMaxSigned returns the value of largest magnitude in x (the first one on
// ties) and that magnitude.
func absMaxSigned(x []float32) (max, amax float32) {
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, max = a, v
		}
	}
	return max, amax
}

func quantQ4_0(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+18, src[32:] {
		x, blk := src[:32], dst[b:b+18]
		max, _ := absMaxSigned(x)
		d := max / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		for j := range 16 {
			q0 := min(15, int8(int32(float32(x[j]*id)+8.5)))
			q1 := min(15, int8(int32(float32(x[j+16]*id)+8.5)))
			blk[2+j] = uint8(q0) | uint8(q1)<<4
		}
	}
}

// minMax is the smallest and largest value of x.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func quantQ4_1(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+20, src[32:] {
		x, blk := src[:32], dst[b:b+20]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		putF16(blk, 2, lo)
		for j := range 16 {
			q0 := min(15, int8(int32(float32((x[j]-lo)*id)+0.5)))
			q1 := min(15, int8(int32(float32((x[j+16]-lo)*id)+0.5)))
			blk[4+j] = uint8(q0) | uint8(q1)<<4
		}
	}
}

func quantQ5_0(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+22, src[32:] {
		x, blk := src[:32], dst[b:b+22]
		max, _ := absMaxSigned(x)
		d := max / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		var qh uint32
		for j := range 16 {
			q0 := uint8(min(31, int8(int32(float32(x[j]*id)+16.5))))
			q1 := uint8(min(31, int8(int32(float32(x[j+16]*id)+16.5))))
			blk[6+j] = q0&0xf | q1&0xf<<4
			qh |= uint32(q0>>4) << j
			qh |= uint32(q1>>4) << (j + 16)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}

func quantQ5_1(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+24, src[32:] {
		x, blk := src[:32], dst[b:b+24]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		putF16(blk, 2, lo)
		var qh uint32
		for j := range 16 {
			q0 := uint8(int32(float32((x[j]-lo)*id) + 0.5))
			q1 := uint8(int32(float32((x[j+16]-lo)*id) + 0.5))
			blk[8+j] = q0&0xf | q1&0xf<<4
			qh |= uint32(q0>>4&1) << j
			qh |= uint32(q1>>4&1) << (j + 16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}

// round32 is C's roundf: halfway cases away from zero.
func round32(x float32) float32 { return float32(math.Round(float64(x))) }

func absMax(x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	return amax
}

func quantQ8_0(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+34, src[32:] {
		x, blk := src[:32], dst[b:b+34]
		d := absMax(x) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		for j, v := range x {
			blk[2+j] = uint8(int8(int32(round32(v * id))))
		}
	}
}

func quantQ8_1(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+36, src[32:] {
		x, blk := src[:32], dst[b:b+36]
		d := absMax(x) / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		var sum int32
		for j, v := range x {
			q := int8(int32(round32(v * id)))
			blk[4+j] = uint8(q)
			sum += int32(q)
		}
		putF16(blk, 2, float32(sum)*d)
	}
}

func quantQ1_0(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+18, src[128:] {
		x, blk := src[:128], dst[b:b+18]
		var sum float32
		for _, v := range x {
			sum += abs32(v)
		}
		putF16(blk, 0, sum/128)
		clear(blk[2:])
		for j, v := range x {
			if v >= 0 {
				blk[2+j/8] |= 1 << (j % 8)
			}
		}
	}
}

func quantQ2_0(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+18, src[64:] {
		x, blk := src[:64], dst[b:b+18]
		var amax float32
		for _, v := range x {
			if a := abs32(v); a > amax {
				amax = a
			}
		}
		var id float32
		if amax > 0 {
			id = 1 / amax
		}
		putF16(blk, 0, amax)
		clear(blk[2:])
		for j, v := range x {
			q := min(3, max(0, int32(round32(v*id))+1))
			blk[2+j/4] |= uint8(q) << (2 * (j % 4))
		}
	}
}
