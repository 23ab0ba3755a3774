package cpu

import (
	"encoding/binary"
	"math"
)

// Quantized GEMV, the technique llama.cpp uses: the activation vector is
// quantized once per GEMV to 8-bit integers, 32 per block with a float32
// scale, and each weight block meets it in an integer dot product; the two
// scales multiply the block's integer sum. Blocks of 32 line up with every
// quantized weight type: the legacy blocks are 32 long and the K-quants'
// sub-blocks 32 (Q4_K, Q5_K) or 16 (Q6_K, two per activation block).
//
// Unlike ggml's Q8_0 (an f16 scale) and Q8_K (one scale per 256) the scale
// here is float32 per 32 elements, so the activation error is at most
// amax(block)/254 per element, no more than ggml's. ADR 0008 derives the
// bound the tests use.

const qk = 32 // elements per activation block

// roundMagic is 1.5·2^23: adding and subtracting it rounds a float32 of
// magnitude < 2^22 to an integer, ties to even.
const roundMagic float32 = 12582912

// q8act is a quantized activation: qs[i] ≈ x[i] / d[i/32], and s[b] is
// d[b]·Σ qs of block b, the term the weight types with a minimum (Q4_1,
// Q5_1, Q4_K, Q5_K) need.
type q8act struct {
	qs []int8
	d  []float32
	s  []float32
}

func (q *q8act) need(n int) {
	if len(q.qs) < n {
		q.qs = make([]int8, n)
		q.d = make([]float32, n/qk)
		q.s = make([]float32, n/qk)
	}
}

// quantizeQ8 quantizes x (a multiple of 32 long) into qs, d and s.
func quantizeQ8(x []float32, qs []int8, d, s []float32) {
	for b := range len(x) / qk {
		xb := x[b*qk : b*qk+qk]
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		db := amax / 127
		var id float32
		if db != 0 {
			id = 1 / db
		}
		q := qs[b*qk : b*qk+qk]
		var sum int32
		for j, v := range xb {
			// Round to nearest even by the 1.5·2^23 trick (|v·id| ≤ 127),
			// as ggml's SIMD quantizer rounds; float32 arithmetic, no call.
			r := int8(int32((v*id + roundMagic) - roundMagic))
			q[j] = r
			sum += int32(r)
		}
		d[b] = db
		s[b] = db * float32(sum)
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func f16le(b []byte, off int) float32 { return h2f(binary.LittleEndian.Uint16(b[off:])) }

// qdot is the dot product of one weight row (its whole bytes) with a
// quantized activation of the same length.
type qdot func(w []byte, qs []int8, d, s []float32) float32

// The portable dot products. The hot ones have assembly twins on amd64
// (dot_amd64.go); these are the reference the twins are tested against.

func dotQ4_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for b := range d {
		blk := w[b*18 : b*18+18]
		a := qs[b*qk : b*qk+qk]
		var sum int32
		for j, q := range blk[2:18] {
			sum += (int32(q&0xf)-8)*int32(a[j]) + (int32(q>>4)-8)*int32(a[j+16])
		}
		acc += float32(sum) * (f16le(blk, 0) * d[b])
	}
	return acc
}

func dotQ4_1Go(w []byte, qs []int8, d, s []float32) float32 {
	var acc float32
	for b := range d {
		blk := w[b*20 : b*20+20]
		a := qs[b*qk : b*qk+qk]
		var sum int32
		for j, q := range blk[4:20] {
			sum += int32(q&0xf)*int32(a[j]) + int32(q>>4)*int32(a[j+16])
		}
		acc += float32(sum)*(f16le(blk, 0)*d[b]) + f16le(blk, 2)*s[b]
	}
	return acc
}

func dotQ5_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for b := range d {
		blk := w[b*22 : b*22+22]
		a := qs[b*qk : b*qk+qk]
		qh := binary.LittleEndian.Uint32(blk[2:])
		var sum int32
		for j, q := range blk[6:22] {
			lo := int32(q&0xf|byte(qh>>j<<4)&0x10) - 16
			hi := int32(q>>4|byte(qh>>(j+12))&0x10) - 16
			sum += lo*int32(a[j]) + hi*int32(a[j+16])
		}
		acc += float32(sum) * (f16le(blk, 0) * d[b])
	}
	return acc
}

func dotQ5_1Go(w []byte, qs []int8, d, s []float32) float32 {
	var acc float32
	for b := range d {
		blk := w[b*24 : b*24+24]
		a := qs[b*qk : b*qk+qk]
		qh := binary.LittleEndian.Uint32(blk[4:])
		var sum int32
		for j, q := range blk[8:24] {
			lo := int32(q&0xf | byte(qh>>j<<4)&0x10)
			hi := int32(q>>4 | byte(qh>>(j+12))&0x10)
			sum += lo*int32(a[j]) + hi*int32(a[j+16])
		}
		acc += float32(sum)*(f16le(blk, 0)*d[b]) + f16le(blk, 2)*s[b]
	}
	return acc
}

func dotQ8_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for b := range d {
		blk := w[b*34 : b*34+34]
		a := qs[b*qk : b*qk+qk]
		var sum int32
		for j, q := range blk[2:34] {
			sum += int32(int8(q)) * int32(a[j])
		}
		acc += float32(sum) * (f16le(blk, 0) * d[b])
	}
	return acc
}

// scaleMinK4 unpacks the j-th 6-bit scale and minimum of a Q4_K/Q5_K
// super-block (docs/formats.md#q4_k).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | q[j-4]>>6<<4, q[j+4]>>4 | q[j]>>6<<4
}

// Q4_K: 8 sub-blocks of 32, value = d·sc·q − dmin·m (docs/formats.md#q4_k);
// sub-block j is activation block 8·sb + j.
func dotQ4_KGo(w []byte, qs []int8, d, s []float32) float32 {
	var acc float32
	for sb := range len(d) / 8 {
		blk := w[sb*144 : sb*144+144]
		dd, dmin := f16le(blk, 0), f16le(blk, 2)
		scales, q4 := blk[4:16], blk[16:144]
		for j := range 8 {
			sc, m := scaleMinK4(j, scales)
			b := sb*8 + j
			a := qs[b*qk : b*qk+qk]
			q := q4[j/2*32 : j/2*32+32]
			shift := 4 * (j % 2)
			var sum int32
			for l, v := range q {
				sum += int32(v>>shift&0xf) * int32(a[l])
			}
			acc += float32(sum)*(dd*float32(sc)*d[b]) - dmin*float32(m)*s[b]
		}
	}
	return acc
}

func dotQ5_KGo(w []byte, qs []int8, d, s []float32) float32 {
	var acc float32
	for sb := range len(d) / 8 {
		blk := w[sb*176 : sb*176+176]
		dd, dmin := f16le(blk, 0), f16le(blk, 2)
		scales, qh, q4 := blk[4:16], blk[16:48], blk[48:176]
		for j := range 8 {
			sc, m := scaleMinK4(j, scales)
			b := sb*8 + j
			a := qs[b*qk : b*qk+qk]
			q := q4[j/2*32 : j/2*32+32]
			shift := 4 * (j % 2)
			var sum int32
			for l, v := range q {
				sum += int32(v>>shift&0xf|(qh[l]>>j&1)<<4) * int32(a[l])
			}
			acc += float32(sum)*(dd*float32(sc)*d[b]) - dmin*float32(m)*s[b]
		}
	}
	return acc
}

// Q6_K: two halves of 128; in each, element l of group g (32 long) is
// ql/qh bits with scale sc[l/16 + 2g] (docs/formats.md#q6_k). Activation
// block b covers half b/4, group b%4.
func dotQ6_KGo(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for sb := range len(d) / 8 {
		blk := w[sb*210 : sb*210+210]
		dd := f16le(blk, 208)
		for half := range 2 {
			ql := blk[half*64 : half*64+64]
			qh := blk[128+half*32 : 128+half*32+32]
			sc := blk[192+half*8 : 192+half*8+8]
			for g := range 4 {
				b := sb*8 + half*4 + g
				a := qs[b*qk : b*qk+qk]
				var s0, s1 int32
				for l := range 32 {
					var v byte
					switch g {
					case 0:
						v = ql[l]&0xf | (qh[l]&3)<<4
					case 1:
						v = ql[l+32]&0xf | (qh[l]>>2&3)<<4
					case 2:
						v = ql[l]>>4 | (qh[l]>>4&3)<<4
					default:
						v = ql[l+32]>>4 | (qh[l]>>6&3)<<4
					}
					p := (int32(v) - 32) * int32(a[l])
					if l < 16 {
						s0 += p
					} else {
						s1 += p
					}
				}
				acc += (dd * d[b]) * float32(s0*int32(int8(sc[2*g]))+s1*int32(int8(sc[2*g+1])))
			}
		}
	}
	return acc
}

// Float weights meet float activations directly.

func dotF32Go(w []float32, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += w[i] * x[i]
		s1 += w[i+1] * x[i+1]
		s2 += w[i+2] * x[i+2]
		s3 += w[i+3] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += w[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotF16Go(w []uint16, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += f16tab[w[i]] * x[i]
		s1 += f16tab[w[i+1]] * x[i+1]
		s2 += f16tab[w[i+2]] * x[i+2]
		s3 += f16tab[w[i+3]] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += f16tab[w[i]] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func bf2f(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func dotBF16Go(w []uint16, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += bf2f(w[i]) * x[i]
		s1 += bf2f(w[i+1]) * x[i+1]
		s2 += bf2f(w[i+2]) * x[i+2]
		s3 += bf2f(w[i+3]) * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += bf2f(w[i]) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyF16 adds a·v to acc, v F16 (attention's V rows).
func axpyF16(acc []float32, a float32, v []uint16) {
	v = v[:len(acc)]
	for i, h := range v {
		acc[i] += a * f16tab[h]
	}
}
