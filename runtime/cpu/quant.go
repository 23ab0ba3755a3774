package cpu

import (
	"encoding/binary"
	"math"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// Quantized GEMV, the technique llama.cpp uses and the numerics of
// ggml-cpu's x86 build, so our logits differ from llama.cpp's by float32
// summation order and little else: the activation vector is quantized once
// per GEMV to the weight type's vec_dot_type (ggml-cpu.c type_traits_cpu),
// and each weight block meets it in an integer dot product whose sum one
// float32 product of the two scales multiplies.
//
//	Q4_0, Q5_0, Q8_0 → Q8_0: 32 per block, scale f16(amax/127)
//	Q4_1, Q5_1       → Q8_1: Q8_0 plus s = f16(d·Σq) for the minimum term
//	Q4_K, Q5_K, Q6_K → Q8_K: 256 per block, float32 scale max/−127 taken
//	                         from the signed extreme, sums of 16 (bsums)
//
// ggml-cpu's x86 quantize_row_q8_0/q8_1 (what runs, not the _ref) scales
// by id = 127/amax and rounds to nearest even; Q8_K is quantize_row_q8_K_ref
// on every target (nearest_int, the same rounding). docs/formats.md has the
// block layouts.

const qk = 32 // elements per Q8_0/Q8_1 block

const qkK = 256 // elements per Q8_K block

// roundMagic is 1.5·2^23: adding and subtracting it rounds a float32 of
// magnitude < 2^22 to an integer, ties to even.
const roundMagic float32 = 12582912

// actQuant is the form a weight type's dot product wants the activation
// in: ggml's vec_dot_type.
type actQuant uint8

const (
	aqF32  actQuant = iota // F32 weights: the activation as is
	aqF16                  // F16 weights: the activation rounded to f16
	aqBF16                 // BF16 weights: rounded to bf16
	aqQ8_0
	aqQ8_1
	aqQ8_K
)

// nd and ns are the lengths of a quantized row's d and s for k elements.
func (a actQuant) nd(k int) int {
	if a == aqQ8_K {
		return k / qkK
	}
	return k / qk
}

func (a actQuant) ns(k int) int {
	switch a {
	case aqQ8_1:
		return k / qk
	case aqQ8_K:
		return k / 16
	}
	return 0
}

// q8act is a quantized activation: qs[i] ≈ x[i] / d[block of i]; s is
// Q8_1's f16(d·Σqs) per block or Q8_K's bsums (Σqs per 16, exact in
// float32), by the weight type's actQuant.
type q8act struct {
	qs []int8
	d  []float32
	s  []float32
}

func (q *q8act) need(n int) {
	if len(q.qs) < n {
		q.qs = make([]int8, n)
		q.d = make([]float32, n/qk)
		q.s = make([]float32, n/16)
	}
}

// row is row i of an m×k quantized activation.
func (q *q8act) row(a actQuant, i, k int) (qs []int8, d, s []float32) {
	nd, ns := a.nd(k), a.ns(k)
	return q.qs[i*k : i*k+k], q.d[i*nd : i*nd+nd], q.s[i*ns : i*ns+ns]
}

// quantize quantizes the rows of x (m rows of k) to a.
func (q *q8act) quantize(a actQuant, x []float32, m, k int) {
	for i := range m {
		q.quantizeRow(a, x[i*k:i*k+k], i, k)
	}
}

// quantizeRow quantizes x (k elements) into row i.
func (q *q8act) quantizeRow(a actQuant, x []float32, i, k int) {
	qs, d, s := q.row(a, i, k)
	switch a {
	case aqQ8_0, aqQ8_1:
		quantizeQ8_0(x, qs, d, s)
	case aqQ8_K:
		quantizeQ8_K(x, qs, d, s)
	}
}

// quantizeQ8_0 is the dispatched Q8_0/Q8_1 quantizer: quantizeQ8_0Go
// unless an assembly twin, bit-identical to it, replaced it at init
// (quant_amd64.go).
var quantizeQ8_0 = quantizeQ8_0Go

// quantizeQ8_0Go is ggml-cpu's x86 quantize_row_q8_0 (and, with s, q8_1):
// d = amax/127 stored as f16, q = rne(x·127/amax). s, when not empty,
// gets f16(d·Σq) with d before its f16 rounding, as ggml computes it.
func quantizeQ8_0Go(x []float32, qs []int8, d, s []float32) {
	for b := range len(x) / qk {
		xb := x[b*qk : b*qk+qk]
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		db := amax / 127
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[b*qk : b*qk+qk]
		var sum int32
		for j, v := range xb {
			// float32() rounds the product before the add, as ggml's
			// _mm256_mul_ps does: without it GOAMD64=v3 fuses the two
			// into one FMA and rounds ties differently.
			r := int8(int32((float32(v*id) + roundMagic) - roundMagic))
			q[j] = r
			sum += int32(r)
		}
		d[b] = h2f(f2h(db))
		if len(s) != 0 {
			s[b] = h2f(f2h(db * float32(sum)))
		}
	}
}

// quantizeQ8_K is the dispatched Q8_K quantizer: quantizeQ8_KGo unless
// an assembly twin, bit-identical to it, replaced it at init
// (quant8k_amd64.go).
var quantizeQ8_K = quantizeQ8_KGo

// quantizeQ8_KGo is ggml's quantize_row_q8_K_ref: the scale comes from the
// element of largest magnitude (the first, on a tie) with its sign,
// iscale = −127/max, q = min(127, rne(iscale·x)), d = 1/iscale; bsums
// are the sums of 16.
func quantizeQ8_KGo(x []float32, qs []int8, d, bsums []float32) {
	for b := range len(x) / qkK {
		xb := x[b*qkK : b*qkK+qkK]
		q := qs[b*qkK : b*qkK+qkK]
		var amax, mx float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			d[b] = 0
			clear(q)
			clear(bsums[b*16 : b*16+16])
			continue
		}
		iscale := -127 / mx
		for j, v := range xb {
			q[j] = int8(min(127, int32((float32(iscale*v)+roundMagic)-roundMagic)))
		}
		for j := range 16 {
			var sum int32
			for _, v := range q[j*16 : j*16+16] {
				sum += int32(v)
			}
			bsums[b*16+j] = float32(sum)
		}
		d[b] = 1 / iscale
	}
}

// roundF16 and roundBF16 round x in place to the half type a F16 or BF16
// weight meets (ggml converts the activation to the weight's type; F16C
// and ggml_compute_fp32_to_bf16 both round to nearest even).
func roundF16(x []float32) {
	for i, v := range x {
		x[i] = h2f(f2h(v))
	}
}

func roundBF16(x []float32) {
	for i, v := range x {
		u := math.Float32bits(v)
		if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet
			x[i] = math.Float32frombits((u | 0x400000) &^ 0xffff)
			continue
		}
		x[i] = math.Float32frombits((u + 0x7fff + (u >> 16 & 1)) &^ 0xffff)
	}
}

// lanes8 accumulates a block's eight int32 lane sums (lane l: elements
// 4l..4l+3 of the 32) times its scale into acc, as ggml's AVX2 dot
// products do with one 8-wide accumulator. The product is rounded before
// the add (no FMA) so that the Go and assembly twins agree to the bit.
func lanes8(acc *[8]float32, dd float32, p *[32]int32) {
	for l := range 8 {
		acc[l] += float32(dd * float32(p[4*l]+p[4*l+1]+p[4*l+2]+p[4*l+3]))
	}
}

// hsum8 is ggml's hsum_float_8: the high half added to the low, then
// (0+2)+(1+3).
func hsum8(acc *[8]float32) float32 {
	r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func f16le(b []byte, off int) float32 { return h2f(binary.LittleEndian.Uint16(b[off:])) }

// qdot is the dot product of one weight row (its whole bytes) with a
// quantized activation of the same length.
type qdot func(w []byte, qs []int8, d, s []float32) float32

// The portable dot products, in ggml's AVX2 arithmetic: exact integer
// block sums, d = f16(d_w)·d_a per block in float32, eight lanes of
// float32 accumulation (lanes8, hsum8). The hot ones have assembly twins
// on amd64 (dot_amd64.go) that must agree with these to the bit.

func dotQ4_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc [8]float32
	var p [32]int32
	for b := range d {
		blk := w[b*18 : b*18+18]
		a := qs[b*qk : b*qk+qk]
		for j, q := range blk[2:18] {
			p[j] = (int32(q&0xf) - 8) * int32(a[j])
			p[j+16] = (int32(q>>4) - 8) * int32(a[j+16])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc)
}

// Q4_1·Q8_1: ggml adds f16(m)·s per block into a scalar kept apart from
// the lanes, and the two at the end.
func dotQ4_1Go(w []byte, qs []int8, d, s []float32) float32 {
	var acc [8]float32
	var p [32]int32
	var summs float32
	for b := range d {
		blk := w[b*20 : b*20+20]
		a := qs[b*qk : b*qk+qk]
		summs += float32(f16le(blk, 2) * s[b])
		for j, q := range blk[4:20] {
			p[j] = int32(q&0xf) * int32(a[j])
			p[j+16] = int32(q>>4) * int32(a[j+16])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc) + summs
}

func dotQ5_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc [8]float32
	var p [32]int32
	for b := range d {
		blk := w[b*22 : b*22+22]
		a := qs[b*qk : b*qk+qk]
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j, q := range blk[6:22] {
			p[j] = (int32(q&0xf|byte(qh>>j<<4)&0x10) - 16) * int32(a[j])
			p[j+16] = (int32(q>>4|byte(qh>>(j+12))&0x10) - 16) * int32(a[j+16])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc)
}

func dotQ5_1Go(w []byte, qs []int8, d, s []float32) float32 {
	var acc [8]float32
	var p [32]int32
	var summs float32
	for b := range d {
		blk := w[b*24 : b*24+24]
		a := qs[b*qk : b*qk+qk]
		summs += float32(f16le(blk, 2) * s[b])
		qh := binary.LittleEndian.Uint32(blk[4:])
		for j, q := range blk[8:24] {
			p[j] = int32(q&0xf|byte(qh>>j<<4)&0x10) * int32(a[j])
			p[j+16] = int32(q>>4|byte(qh>>(j+12))&0x10) * int32(a[j+16])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc) + summs
}

func dotQ8_0Go(w []byte, qs []int8, d, _ []float32) float32 {
	var acc [8]float32
	var p [32]int32
	for b := range d {
		blk := w[b*34 : b*34+34]
		a := qs[b*qk : b*qk+qk]
		for j, q := range blk[2:34] {
			p[j] = int32(int8(q)) * int32(a[j])
		}
		lanes8(&acc, f16le(blk, 0)*d[b], &p)
	}
	return hsum8(&acc)
}

// The K-quants meet Q8_K: per super-block of 256, one integer sum of
// sc_j·Σ q·a over the sub-blocks and, for Q4_K/Q5_K, one of m_j·bsums;
// ggml scales them by d_a·f16(d) and d_a·f16(dmin) in float32 and
// accumulates the two apart (value = d·sc·q − dmin·m, docs/formats.md#q4_k).
// Each product is rounded before it is added (the outer float32): without
// it the compiler may fuse the two (arm64, GOAMD64=v3), and the assembly
// twins could not match at every build setting.
func dotQ4_KGo(w []byte, qs []int8, d, bs []float32) float32 {
	var acc, accm float32
	for sb := range d {
		blk := w[sb*144 : sb*144+144]
		scales, q4 := blk[4:16], blk[16:144]
		var sumi, summ int32
		for j := range 8 {
			sc, m := dtype.ScaleMinK4(j, scales)
			a := qs[sb*qkK+j*32 : sb*qkK+j*32+32]
			q := q4[j/2*32 : j/2*32+32]
			shift := 4 * (j % 2)
			var sum int32
			for l, v := range q {
				sum += int32(v>>shift&0xf) * int32(a[l])
			}
			sumi += int32(sc) * sum
			summ += int32(m) * int32(bs[sb*16+2*j]+bs[sb*16+2*j+1])
		}
		acc += float32(float32(d[sb]*f16le(blk, 0)) * float32(sumi))
		accm += float32(float32(d[sb]*f16le(blk, 2)) * float32(summ))
	}
	return acc - accm
}

func dotQ5_KGo(w []byte, qs []int8, d, bs []float32) float32 {
	var acc, accm float32
	for sb := range d {
		blk := w[sb*176 : sb*176+176]
		scales, qh, q4 := blk[4:16], blk[16:48], blk[48:176]
		var sumi, summ int32
		for j := range 8 {
			sc, m := dtype.ScaleMinK4(j, scales)
			a := qs[sb*qkK+j*32 : sb*qkK+j*32+32]
			q := q4[j/2*32 : j/2*32+32]
			shift := 4 * (j % 2)
			var sum int32
			for l, v := range q {
				sum += int32(v>>shift&0xf|(qh[l]>>j&1)<<4) * int32(a[l])
			}
			sumi += int32(sc) * sum
			summ += int32(m) * int32(bs[sb*16+2*j]+bs[sb*16+2*j+1])
		}
		acc += float32(float32(d[sb]*f16le(blk, 0)) * float32(sumi))
		accm += float32(float32(d[sb]*f16le(blk, 2)) * float32(summ))
	}
	return acc - accm
}

// Q6_K: two halves of 128; in each, element l of group g (32 long) is
// ql/qh bits with scale sc[l/16 + 2g] (docs/formats.md#q6_k). The whole
// super-block is one integer sum scaled by f16(d)·d_a.
func dotQ6_KGo(w []byte, qs []int8, d, _ []float32) float32 {
	var acc float32
	for sb := range d {
		blk := w[sb*210 : sb*210+210]
		var sumi int32
		for half := range 2 {
			ql := blk[half*64 : half*64+64]
			qh := blk[128+half*32 : 128+half*32+32]
			sc := blk[192+half*8 : 192+half*8+8]
			for g := range 4 {
				a := qs[sb*qkK+half*128+g*32:][:32]
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
				sumi += s0*int32(int8(sc[2*g])) + s1*int32(int8(sc[2*g+1]))
			}
		}
		acc += float32(float32(f16le(blk, 208)*d[sb]) * float32(sumi))
	}
	return acc
}

// Float weights meet float activations (F16/BF16 weights: activations
// already rounded to the weight's type, roundAct). The dots run sixteen
// float32 lanes (element i in lane i mod 16), fold them to eight and reduce
// those as hsum8, then add the tail in order: the shape of the AVX2 twins,
// bit for bit (products rounded before the add, as there). ggml's own
// ggml_vec_dot_f32/f16 sum in another order (AVX-512 on this library's
// best x86 variant, and f64 for the tail); that is float32 rounding, 1e-7
// of Σ|w·x|.

func dotF32Go(w []float32, x []float32) float32 {
	var acc [16]float32
	n := len(x) &^ 15
	w = w[:len(x)]
	for i := 0; i < n; i += 16 {
		for l := range 16 {
			acc[l] += float32(w[i+l] * x[i+l])
		}
	}
	return fold16(&acc) + tailF32(w[n:], x[n:])
}

func dotF16Go(w []uint16, x []float32) float32 {
	var acc [16]float32
	n := len(x) &^ 15
	w = w[:len(x)]
	for i := 0; i < n; i += 16 {
		for l := range 16 {
			acc[l] += float32(f16tab[w[i+l]] * x[i+l])
		}
	}
	return fold16(&acc) + tailF16(w[n:], x[n:])
}

// fold16 adds lanes l and l+8, then reduces as hsum8.
func fold16(acc *[16]float32) float32 {
	var a [8]float32
	for l := range 8 {
		a[l] = acc[l] + acc[l+8]
	}
	return hsum8(&a)
}

func tailF32(w, x []float32) float32 {
	var s float32
	for i, v := range x {
		s += float32(w[i] * v)
	}
	return s
}

func tailF16(w []uint16, x []float32) float32 {
	var s float32
	for i, v := range x {
		s += float32(f16tab[w[i]] * v)
	}
	return s
}

func bf2f(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func dotBF16Go(w []uint16, x []float32) float32 {
	var acc [16]float32
	n := len(x) &^ 15
	w = w[:len(x)]
	for i := 0; i < n; i += 16 {
		for l := range 16 {
			acc[l] += float32(bf2f(w[i+l]) * x[i+l])
		}
	}
	return fold16(&acc) + tailBF16(w[n:], x[n:])
}

func tailBF16(w []uint16, x []float32) float32 {
	var s float32
	for i, v := range x {
		s += float32(bf2f(w[i]) * v)
	}
	return s
}

// axpyF16 adds a·v to acc, v F16 (attention's V rows).
func axpyF16(acc []float32, a float32, v []uint16) {
	v = v[:len(acc)]
	for i, h := range v {
		acc[i] += a * f16tab[h]
	}
}
