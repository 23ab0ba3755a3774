package dtype

import (
	"encoding/binary"
	"math"
)

// Reference K-quant quantizers, matching ggml's quantize_row_<type>_ref byte
// for byte. The searches below (a weighted least-squares fit of scale and
// minimum over a few candidate grids) are sensitive to every rounding, so
// the order of float32 operations follows the reference exactly and every
// product feeding a sum is rounded with an explicit conversion.

// groupMaxEps is the magnitude under which a group counts as all zero.
const groupMaxEps = float32(1e-15)

// nearestInt rounds to the nearest integer, ties to even, for |f| < 2^22:
// adding 1.5*2^23 leaves the integer in the low mantissa bits. The
// float32(f) conversion is not redundant: once inlined, it stops the caller's
// product (nearestInt(a*b)) from fusing with this addition.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

func clampInt(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

// makeQKX2 fits x ≈ scale*L + min with L in [0, nmax] and min ≤ 0,
// minimizing the weighted error (absolute if useMad, else squared) over the
// starting grid and nstep+1 nudged ones. It fills L (Laux is scratch) and
// returns the scale and -min.
func makeQKX2(nmax int32, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, negMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L[:n])
		return 0, -lo
	}
	iscale := float32(nmax) / (hi - lo)
	scale = 1 / iscale
	errOf := func(diff float32) float32 {
		if useMad {
			return abs32(diff)
		}
		return float32(diff * diff)
	}
	var bestErr float32
	for i := range n {
		l := nearestInt(iscale * (x[i] - lo))
		L[i] = uint8(clampInt(l, 0, nmax))
		diff := float32(scale*float32(L[i])) + lo - x[i]
		bestErr += float32(weights[i] * errOf(diff))
	}
	if nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := clampInt(nearestInt(iscale*(x[i]-lo)), 0, nmax)
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curErr float32
			for i := range n {
				diff := float32(thisScale*float32(Laux[i])) + thisMin - x[i]
				curErr += float32(weights[i] * errOf(diff))
			}
			if curErr < bestErr {
				copy(L[:n], Laux[:n])
				bestErr, scale, lo = curErr, thisScale, thisMin
			}
		}
	}
	return scale, -lo
}

// makeQX fits x ≈ scale*(L-nmax) with L-nmax in [-nmax, nmax-1], weighting
// by x² (rmseType 1, no qw), trying 18 nudged grids around -nmax/max.
func makeQX(nmax int32, x []float32, L []int8) float32 {
	n := len(x)
	max, amax := absMaxSigned(x)
	if amax < groupMaxEps {
		clear(L[:n])
		return 0
	}
	iscale := float32(-nmax) / max
	var sumLX, sumL2 float32
	for i := range n {
		l := clampInt(nearestInt(iscale*x[i]), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := x[i] * x[i]
		fl := float32(l)
		sumLX += float32(float32(w*x[i]) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / max
		sumLX, sumL2 = 0, 0
		for i := range n {
			l := clampInt(nearestInt(iscale*x[i]), -nmax, nmax-1)
			w := x[i] * x[i]
			fl := float32(l)
			sumLX += float32(float32(w*x[i]) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			for i := range n {
				L[i] = int8(nmax + clampInt(nearestInt(iscale*x[i]), -nmax, nmax-1))
			}
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

// makeQ3 is makeQX's cousin for Q3_K: one grid, then up to five rounds of
// coordinate descent that move single quants while the weighted fit
// improves. L ends in [0, 2*nmax).
func makeQ3(nmax int32, x []float32, L []int8) float32 {
	n := len(x)
	max, amax := absMaxSigned(x)
	if amax < groupMaxEps {
		clear(L[:n])
		return 0
	}
	iscale := float32(-nmax) / max
	var sumLX, sumL2 float32
	for i := range n {
		l := clampInt(nearestInt(iscale*x[i]), -nmax, nmax-1)
		L[i] = int8(l)
		w := x[i] * x[i]
		fl := float32(l)
		sumLX += float32(float32(w*x[i]) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i := range n {
			w := x[i] * x[i]
			li := float32(L[i])
			slx := sumLX - float32(float32(w*x[i])*li)
			if slx > 0 {
				sl2 := sumL2 - float32(float32(w*li)*li)
				nl := clampInt(nearestInt(x[i]*sl2/slx), -nmax, nmax-1)
				if nl != int32(L[i]) {
					fl := float32(nl)
					slx += float32(float32(w*x[i]) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && slx*slx*sumL2 > sumLX*sumLX*sl2 {
						L[i] = int8(nl)
						sumLX, sumL2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range n {
		L[i] += int8(nmax)
	}
	if sumL2 > 0 {
		return sumLX / sumL2
	}
	return 0
}

// packQ2 stores 2-bit values L (256 of them) as Q2_K and Q3_K do: byte l of
// each 32-byte group holds elements l, l+32, l+64, l+96 of a 128 chunk.
func packQ2(L []uint8, qs []byte) {
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func quantQ2_K(src []float32, dst []byte) {
	var L [qkK]uint8
	var laux [16]uint8
	var weights [16]float32
	var mins, scales [16]float32
	const q4scale = float32(15)
	for b := 0; len(src) > 0; b, src = b+84, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+84]
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2(3, xs, weights[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		sc := blk[0:16]
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				sc[j] = uint8(nearestInt(iscale * scales[j]))
			}
			putF16(blk, 80, maxScale/q4scale)
		} else {
			clear(sc)
			putF16(blk, 80, 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
			}
			putF16(blk, 82, maxMin/q4scale)
		} else {
			putF16(blk, 82, 0)
		}
		dAll, mAll := f16At(blk, 80), f16At(blk, 82)
		for j := range 16 {
			d := dAll * float32(sc[j]&0xf)
			if d == 0 {
				continue
			}
			dm := float32(mAll * float32(sc[j]>>4))
			for ii := range 16 {
				L[16*j+ii] = uint8(clampInt(nearestInt((x[16*j+ii]+dm)/d), 0, 3))
			}
		}
		packQ2(L[:], blk[16:80])
	}
}

func quantQ3_K(src []float32, dst []byte) {
	var L [qkK]int8
	var scales [16]float32
	for b := 0; len(src) > 0; b, src = b+110, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+110]
		hmask, qs, sc := blk[0:32], blk[32:96], blk[96:108]
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range 16 {
				l := int8(nearestInt(iscale * scales[j]))
				l = max(-32, min(31, l)) + 32
				if j < 8 {
					sc[j] = uint8(l) & 0xf
				} else {
					sc[j-8] |= (uint8(l) & 0xf) << 4
				}
				l >>= 4
				sc[j%4+8] |= uint8(l) << (2 * (j / 4))
			}
			putF16(blk, 108, 1/iscale)
		} else {
			putF16(blk, 108, 0)
		}
		dAll := f16At(blk, 108)
		for j := range 16 {
			d := dAll * float32(Q3KScale(j, sc))
			if d == 0 {
				continue
			}
			for ii := range 16 {
				L[16*j+ii] = int8(clampInt(nearestInt(x[16*j+ii]/d), -4, 3) + 4)
			}
		}
		// The high bit of quant j goes to bit j/32 of hmask[j%32].
		clear(hmask)
		var lo [qkK]uint8
		for j := range qkK {
			v := uint8(L[j])
			if v > 3 {
				hmask[j%32] |= 1 << (j / 32)
				v -= 4
			}
			lo[j] = v
		}
		packQ2(lo[:], qs)
	}
}

// quantKScaleMin fits each 32-element sub-block with makeQKX2 (weights
// sqrt(mean x²)+|x|), then quantizes the eight scales and minimums to six
// bits against fp16 super-block scales, packs them, and requantizes every
// element against the rounded scales. Shared by Q4_K (nmax 15) and Q5_K (31).
func quantKScaleMin(x []float32, blk []byte, L *[qkK]uint8, nmax int32, rmin float32, nstep int) {
	var laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := blk[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | lm&0xf<<4
			sc[j-4] |= ls >> 4 << 6
			sc[j] |= lm >> 4 << 6
		}
	}
	putF16(blk, 0, maxScale/63)
	putF16(blk, 2, maxMin/63)
	dAll, mAll := f16At(blk, 0), f16At(blk, 2)
	for j := range 8 {
		s, m := ScaleMinK4(j, sc)
		d := dAll * float32(s)
		if d == 0 {
			continue
		}
		dm := float32(mAll * float32(m))
		for ii := range 32 {
			L[32*j+ii] = uint8(clampInt(nearestInt((x[32*j+ii]+dm)/d), 0, nmax))
		}
	}
}

func quantQ4_K(src []float32, dst []byte) {
	var L [qkK]uint8
	for b := 0; len(src) > 0; b, src = b+144, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+144]
		quantKScaleMin(x, blk, &L, 15, -1, 20)
		q := blk[16:144]
		for j := 0; j < qkK; j += 64 {
			for l := range 32 {
				q[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

func quantQ5_K(src []float32, dst []byte) {
	var L [qkK]uint8
	for b := 0; len(src) > 0; b, src = b+176, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+176]
		quantKScaleMin(x, blk, &L, 31, -0.5, 15)
		qh, ql := blk[16:48], blk[48:176]
		clear(qh)
		// Sub-block pair n/64 keeps its high bits in bits 2*(n/64) and
		// 2*(n/64)+1 of qh[j].
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < qkK; n += 64 {
			for j := range 32 {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				ql[n/2+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

func quantQ6_K(src []float32, dst []byte) {
	var L [qkK]int8
	var scales [16]float32
	for b := 0; len(src) > 0; b, src = b+210, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+210]
		var maxScale, maxAbs float32
		for ib := range 16 {
			s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32(s); a > maxAbs {
				maxAbs, maxScale = a, s
			}
		}
		if maxAbs < groupMaxEps {
			clear(blk)
			continue
		}
		iscale := -128 / maxScale
		putF16(blk, 208, 1/iscale)
		sc := blk[192:208]
		for ib := range 16 {
			sc[ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
		}
		dAll := f16At(blk, 208)
		for j := range 16 {
			d := dAll * float32(int8(sc[j]))
			if d == 0 {
				continue
			}
			for ii := range 16 {
				L[16*j+ii] = int8(clampInt(nearestInt(x[16*j+ii]/d), -32, 31) + 32)
			}
		}
		for half := range 2 {
			ql := blk[half*64 : half*64+64]
			qh := blk[128+half*32 : 128+half*32+32]
			Lh := L[half*128 : half*128+128]
			for l := range 32 {
				q1, q2, q3, q4 := uint8(Lh[l]), uint8(Lh[l+32]), uint8(Lh[l+64]), uint8(Lh[l+96])
				ql[l] = q1&0xf | q3&0xf<<4
				ql[l+32] = q2&0xf | q4&0xf<<4
				qh[l] = q1>>4 | q2>>4<<2 | q3>>4<<4 | q4>>4<<6
			}
		}
	}
}

func quantQ8_K(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+292, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+292]
		max, amax := absMaxSigned(x)
		if amax == 0 {
			// ggml leaves bsums untouched here; zero them so the
			// output is deterministic.
			clear(blk)
			continue
		}
		iscale := -127 / max
		qs := blk[4 : 4+qkK]
		for j, v := range x {
			qs[j] = uint8(int8(min(127, nearestInt(iscale*v))))
		}
		for j := range 16 {
			var sum int32
			for _, q := range qs[16*j : 16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[4+qkK+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1/iscale))
	}
}
