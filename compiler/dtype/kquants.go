package dtype

import (
	"encoding/binary"
	"math"
)

// K-quant super-blocks of 256 elements (docs/formats.md#k-quants): 16
// sub-blocks of 16 (Q2_K, Q3_K, Q6_K) or 8 of 32 (Q4_K, Q5_K), each with a
// small integer scale (and, for Q2/Q4/Q5_K, a minimum) that multiplies a
// per-super-block fp16 scale. Q8_K is the float32-scaled intermediate used
// for dot products.
//
// As in legacy.go, float32(a*b) keeps a product rounded before it is added
// or subtracted, also when the product is first stored in a variable: Go
// fuses across statements.

const qkK = 256

// ScaleMinK4 unpacks the j-th 6-bit scale and minimum of a Q4_K/Q5_K
// super-block from their 12 packed bytes (docs/formats.md#q4_k); the CPU
// backend's dot products share it.
func ScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | q[j-4]>>6<<4, q[j+4]>>4 | q[j]>>6<<4
}

// Q3KScale unpacks the j-th signed 6-bit scale of a Q3_K super-block
// (docs/formats.md#q3_k): four low bits from a nibble of bytes 0..7, two
// high bits from bytes 8..11.
func Q3KScale(j int, s []byte) int32 {
	var lo byte
	if j < 8 {
		lo = s[j] & 0xf
	} else {
		lo = s[j-8] >> 4
	}
	hi := s[8+j%4] >> (2 * (j / 4)) & 3
	return int32(lo|hi<<4) - 32
}

func dequantQ2_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+84, dst[qkK:] {
		blk := src[b : b+84]
		scales, qs := blk[0:16], blk[16:80]
		d, dmin := f16At(blk, 80), f16At(blk, 82)
		for e := range qkK {
			sc := scales[e/16]
			dl := d * float32(sc&0xf)
			ml := float32(dmin * float32(sc>>4))
			q := qs[e/128*32+e%32] >> (2 * (e % 128 / 32)) & 3
			dst[e] = float32(dl*float32(q)) - ml
		}
	}
}

func dequantQ3_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+110, dst[qkK:] {
		blk := src[b : b+110]
		hmask, qs, scales := blk[0:32], blk[32:96], blk[96:108]
		d := f16At(blk, 108)
		for e := range qkK {
			dl := d * float32(Q3KScale(e/16, scales))
			shift := 2 * (e % 128 / 32)
			q := int32(qs[e/128*32+e%32] >> shift & 3)
			if hmask[e%32]>>(e/32)&1 == 0 {
				q -= 4
			}
			dst[e] = dl * float32(q)
		}
	}
}

func dequantQ4_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+144, dst[qkK:] {
		blk := src[b : b+144]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales, qs := blk[4:16], blk[16:144]
		for sb := range 8 {
			sc, m := ScaleMinK4(sb, scales)
			dl, ml := d*float32(sc), float32(dmin*float32(m))
			q := qs[sb/2*32 : sb/2*32+32]
			shift := 4 * (sb % 2)
			y := dst[sb*32 : sb*32+32]
			for l := range 32 {
				y[l] = float32(dl*float32(q[l]>>shift&0xf)) - ml
			}
		}
	}
}

func dequantQ5_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+176, dst[qkK:] {
		blk := src[b : b+176]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		for sb := range 8 {
			sc, m := ScaleMinK4(sb, scales)
			dl, ml := d*float32(sc), float32(dmin*float32(m))
			q := qs[sb/2*32 : sb/2*32+32]
			shift := 4 * (sb % 2)
			y := dst[sb*32 : sb*32+32]
			for l := range 32 {
				v := q[l]>>shift&0xf | (qh[l]>>sb&1)<<4
				y[l] = float32(dl*float32(v)) - ml
			}
		}
	}
}

func dequantQ6_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+210, dst[qkK:] {
		blk := src[b : b+210]
		d := f16At(blk, 208)
		for half := range 2 {
			ql := blk[half*64 : half*64+64]
			qh := blk[128+half*32 : 128+half*32+32]
			sc := blk[192+half*8 : 192+half*8+8]
			y := dst[half*128 : half*128+128]
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[l] = d * float32(int8(sc[is])) * float32(q1)
				y[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				y[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				y[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}

func dequantQ8_K(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+292, dst[qkK:] {
		blk := src[b : b+292]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		for j, q := range blk[4 : 4+qkK] {
			dst[j] = d * float32(int8(q))
		}
	}
}
