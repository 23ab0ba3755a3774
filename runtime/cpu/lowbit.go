package cpu

import (
	"encoding/binary"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// The low-bit K-quants (Q2_K, Q3_K) and the I-quants without a codebook
// (IQ4_NL, IQ4_XS): their portable dot products against the activation
// quantized to ggml's vec_dot_type for them (Q8_K for the 256-element
// types, Q8_0 for IQ4_NL), in the arithmetic of the other dots here:
// exact integer sums per block or super-block, one float32 scale product
// per block, products rounded before they are added. Block layouts:
// docs/formats.md (#q2_k, #q3_k, #iq4_nl, #iq4_xs). Assembly twins
// (lowbit_amd64.go) must agree with these to the bit. The scales and the
// IQ4 table are compiler/dtype's, as its reference dequantizers read them.

// Q2_K·Q8_K: 16 sub-blocks of 16. Element 128n + 32g + l is bits 2g..2g+1
// of qs[32n+l]; scales[j] holds sub-block j's scale (low nibble) and
// minimum (high). As Q4_K: sumi = Σ sc_j·Σq·a and summ = Σ m_j·bsums_j,
// scaled by d_a·f16(d) and d_a·f16(dmin) and accumulated apart.
func dotQ2_KGo(w []byte, qs []int8, d, bs []float32) float32 {
	var acc, accm float32
	for sb := range d {
		blk := w[sb*84 : sb*84+84]
		scales, q2 := blk[0:16], blk[16:80]
		var sumi, summ int32
		for j := range 16 {
			n, g, l0 := j/8, j%8/2, 16*(j&1)
			a := qs[sb*qkK+16*j:][:16]
			q := q2[32*n+l0:][:16]
			shift := 2 * g
			var sum int32
			for l := range 16 {
				sum += int32(q[l]>>shift&3) * int32(a[l])
			}
			sc := scales[j]
			sumi += int32(sc&0xf) * sum
			summ += int32(sc>>4) * int32(bs[sb*16+j])
		}
		acc += float32(float32(d[sb]*f16le(blk, 80)) * float32(sumi))
		accm += float32(float32(d[sb]*f16le(blk, 82)) * float32(summ))
	}
	return acc - accm
}

// Q3_K·Q8_K: Q2_K's low bits; the third bit of element 128n + 32g + l is
// bit 4n+g of hmask[l], and a clear bit subtracts 4 (values −4..3). One
// integer sum Σ sc_j·Σq·a per super-block, scaled by f16(d)·d_a.
func dotQ3_KGo(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for sb := range d {
		blk := w[sb*110 : sb*110+110]
		hmask, q3, scales := blk[0:32], blk[32:96], blk[96:108]
		var sumi int32
		for j := range 16 {
			n, g, l0 := j/8, j%8/2, 16*(j&1)
			a := qs[sb*qkK+16*j:][:16]
			q := q3[32*n+l0:][:16]
			hm := hmask[l0:][:16]
			shift, bit := 2*g, byte(1)<<(4*n+g)
			var sum int32
			for l := range 16 {
				v := int32(q[l] >> shift & 3)
				if hm[l]&bit == 0 {
					v -= 4
				}
				sum += v * int32(a[l])
			}
			sumi += dtype.Q3KScale(j, scales) * sum
		}
		acc += float32(float32(d[sb]*f16le(blk, 108)) * float32(sumi))
	}
	return acc
}

// IQ4_NL·Q8_0: Q4_0's layout and lanes (element j < 16 the low nibble of
// qs[j], j+16 the high), each nibble an index into the table.
func dotIQ4_NLGo(w []byte, qs []int8, d, _ []float32) float32 {
	var acc [8]float32
	var p [32]int32
	for b := range d {
		blk := w[b*18 : b*18+18]
		a := qs[b*qk : b*qk+qk]
		for j, q := range blk[2:18] {
			p[j] = int32(dtype.IQ4NL(q)) * int32(a[j])
			p[j+16] = int32(dtype.IQ4NL(q>>4)) * int32(a[j+16])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc)
}

// IQ4_XS·Q8_K: 8 sub-blocks of 32, each IQ4_NL's layout with a 6-bit
// scale (a nibble of scales_l, two bits of scales_h) minus 32; one integer
// sum per super-block, scaled by f16(d)·d_a.
func dotIQ4_XSGo(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for sb := range d {
		blk := w[sb*136 : sb*136+136]
		sh := binary.LittleEndian.Uint16(blk[2:])
		sl, q4 := blk[4:8], blk[8:136]
		var sumi int32
		for ib := range 8 {
			ls := int32(sl[ib/2]>>(4*(ib%2))&0xf) | int32(sh>>(2*ib)&3)<<4
			a := qs[sb*qkK+32*ib:][:32]
			q := q4[16*ib:][:16]
			var sum int32
			for j := range 16 {
				sum += int32(dtype.IQ4NL(q[j]))*int32(a[j]) + int32(dtype.IQ4NL(q[j]>>4))*int32(a[j+16])
			}
			sumi += (ls - 32) * sum
		}
		acc += float32(float32(d[sb]*f16le(blk, 0)) * float32(sumi))
	}
	return acc
}
