package dtype

// FP4 (E2M1) formats with power-of-two-ish shared scales
// (docs/formats.md#mxfp4, #nvfp4). Both index the same 16-entry table of
// doubled E2M1 values, which is why their scale decoders return half the
// nominal scale.

var kvaluesFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func dequantMXFP4(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+17, dst[32:] {
		blk := src[b : b+17]
		d := e8m0Half(blk[0])
		for j, q := range blk[1:17] {
			dst[j] = float32(kvaluesFP4[q&0xf]) * d
			dst[j+16] = float32(kvaluesFP4[q>>4]) * d
		}
	}
}

func dequantNVFP4(src []byte, dst []float32) {
	for b := 0; len(dst) > 0; b, dst = b+36, dst[64:] {
		blk := src[b : b+36]
		for s := range 4 {
			d := ue4m3Table[blk[s]]
			qs := blk[4+8*s : 4+8*s+8]
			y := dst[16*s : 16*s+16]
			for j, q := range qs {
				y[j] = float32(kvaluesFP4[q&0xf]) * d
				y[j+8] = float32(kvaluesFP4[q>>4]) * d
			}
		}
	}
}

// bestIndexFP4 is the table index whose scaled value is nearest x, the
// first on ties.
func bestIndexFP4(x, e float32) uint8 {
	best := 0
	bestErr := abs32(float32(float32(kvaluesFP4[0])*e) - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(kvaluesFP4[i])*e) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

func quantMXFP4(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+17, src[32:] {
		x, blk := src[:32], dst[b:b+17]
		var amax float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax = a
			}
		}
		// The exponent puts the largest value near the top of the E2M1
		// range (6 = 1.5*2^2): floor(log2(amax)) - 2, biased by 127.
		var e uint8
		if amax > 0 {
			e = uint8(int32(floor32(log2f(amax)) - 2 + 127))
		}
		d := e8m0Half(e)
		blk[0] = e
		for j := range 16 {
			blk[1+j] = bestIndexFP4(x[j], d) | bestIndexFP4(x[j+16], d)<<4
		}
	}
}

func quantNVFP4(src []float32, dst []byte) {
	for b := 0; len(src) > 0; b, src = b+36, src[64:] {
		blk := dst[b : b+36]
		for s := range 4 {
			x := src[16*s : 16*s+16]
			var amax float32
			for _, v := range x {
				if a := abs32(v); amax < a {
					amax = a
				}
			}
			ue := float32ToUE4M3(amax / 6)
			blk[s] = ue
			d := ue4m3Table[ue]
			for j := range 8 {
				blk[4+8*s+j] = bestIndexFP4(x[j], d) | bestIndexFP4(x[j+8], d)<<4
			}
		}
	}
}
