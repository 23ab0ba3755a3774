package dtype

import "encoding/binary"

// IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table of 16
// values (docs/formats.md#iq4_nl). IQ4_NL has one fp16 scale per 32
// elements; IQ4_XS shares one fp16 scale per 256 with a 6-bit scale per 32.
//
// The grid-based IQ1/IQ2/IQ3 types have no reference here (ErrNoReference).

var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4NL is the table value of the 4-bit index in q's low nibble: the
// CPU backend's IQ4_NL and IQ4_XS dot products share the table.
func IQ4NL(q byte) int8 { return kvaluesIQ4NL[q&0xf] }

func dequantIQ4_NL(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+18, dst[32:] {
		blk := src[b : b+18]
		d := f16At(blk, 0)
		for j, q := range blk[2:18] {
			dst[j] = d * float32(kvaluesIQ4NL[q&0xf])
			dst[j+16] = d * float32(kvaluesIQ4NL[q>>4])
		}
	}
}

func dequantIQ4_XS(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+136, dst[qkK:] {
		blk := src[b : b+136]
		d := f16At(blk, 0)
		sh := binary.LittleEndian.Uint16(blk[2:])
		sl, qs := blk[4:8], blk[8:136]
		for ib := range 8 {
			ls := int32(sl[ib/2]>>(4*(ib%2))&0xf) | int32(sh>>(2*ib)&3)<<4
			dl := d * float32(ls-32)
			q := qs[16*ib : 16*ib+16]
			y := dst[32*ib : 32*ib+32]
			for j := range 16 {
				y[j] = dl * float32(kvaluesIQ4NL[q[j]&0xf])
				y[j+16] = dl * float32(kvaluesIQ4NL[q[j]>>4])
			}
		}
	}
}

// bestIndexIQ4 is the index of the table value nearest x by bisection; on
// an exact tie between neighbours the upper one wins. Callers pass products
// (id*x); float32(x) keeps them from fusing into the subtractions below.
func bestIndexIQ4(x float32) uint8 {
	x = float32(x)
	v := &kvaluesIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Fit finds the scale of one 32-element group against the table,
// weighting by x²: a first guess from the largest magnitude, then (ntry > 0)
// 2*ntry+1 nudged guesses. It fills L and returns the scale, or 0 for an
// all-zero group (L untouched).
func iq4Fit(x []float32, L []uint8, ntry int) float32 {
	max, amax := absMaxSigned(x)
	if amax < groupMaxEps {
		return 0
	}
	v0 := float32(kvaluesIQ4NL[0])
	var d float32
	if ntry > 0 {
		d = -max / v0
	} else {
		d = max / v0
	}
	id := 1 / d
	var sumQX, sumQ2 float32
	for j, xv := range x {
		l := bestIndexIQ4(id * xv)
		L[j] = l
		q := float32(kvaluesIQ4NL[l])
		w := xv * xv
		sumQX += float32(float32(w*q) * xv)
		sumQ2 += float32(float32(w*q) * q)
	}
	d = 0
	if sumQ2 > 0 {
		d = sumQX / sumQ2
	}
	best := d * sumQX
	for itry := -ntry; itry <= ntry; itry++ {
		id = float32(int32(itry)+int32(kvaluesIQ4NL[0])) / max
		sumQX, sumQ2 = 0, 0
		for _, xv := range x {
			q := float32(kvaluesIQ4NL[bestIndexIQ4(id*xv)])
			w := xv * xv
			sumQX += float32(float32(w*q) * xv)
			sumQ2 += float32(float32(w*q) * q)
		}
		if sumQ2 > 0 && sumQX*sumQX > best*sumQ2 {
			d = sumQX / sumQ2
			best = d * sumQX
		}
	}
	return d
}

func packIQ4(L []uint8, qs []byte) {
	for i := 0; i < len(L)/32; i++ {
		for j := range 16 {
			qs[16*i+j] = L[32*i+j] | L[32*i+16+j]<<4
		}
	}
}

// quantIQ4_NL keeps the indices of the first guess (no nudged search). An
// all-zero block gets index 8 (value 1, nearest zero) everywhere; ggml's
// reference leaves whatever its scratch array held, so only the scale
// (zero) of such a block is comparable.
func quantIQ4_NL(src []float32, dst []byte) {
	var L [32]uint8
	for b := 0; len(src) > 0; b, src = b+18, src[32:] {
		x, blk := src[:32], dst[b:b+18]
		for j := range L {
			L[j] = 8
		}
		d := iq4Fit(x, L[:], -1)
		putF16(blk, 0, d)
		packIQ4(L[:], blk[2:18])
	}
}

func quantIQ4_XS(src []float32, dst []byte) {
	var L [qkK]uint8
	var scales [8]float32
	for b := 0; len(src) > 0; b, src = b+136, src[qkK:] {
		x, blk := src[:qkK], dst[b:b+136]
		var maxScale, amaxScale float32
		for ib := range 8 {
			s := iq4Fit(x[32*ib:32*ib+32], L[32*ib:32*ib+32], 7)
			scales[ib] = s
			if a := abs32(s); a > amaxScale {
				amaxScale, maxScale = a, s
			}
		}
		d := -maxScale / 32
		putF16(blk, 0, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		sl := blk[4:8]
		var sh uint16
		for ib := range 8 {
			l := clampInt(nearestInt(id*scales[ib]), -32, 31)
			dl := d * float32(l)
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, xv := range x[32*ib : 32*ib+32] {
				L[32*ib+j] = bestIndexIQ4(idl * xv)
			}
			l += 32
			if ib%2 == 0 {
				sl[ib/2] = uint8(l & 0xf)
			} else {
				sl[ib/2] |= uint8(l&0xf) << 4
			}
			sh |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(blk[2:], sh)
		packIQ4(L[:], blk[8:136])
	}
}
