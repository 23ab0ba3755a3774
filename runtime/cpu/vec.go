package cpu

import "math"

// Row pieces that several kernels share, in their portable forms. On amd64
// (vec_amd64.go) assembly twins replace them at init; each twin is held by
// vec_test.go to the form here, bit for bit.
//
//   - f2hRow: dst[i] = f2h(src[i]), the F16 KV writes and F16 stores.
//   - rmsScales: rmsnorm's scales of several rows at once, each row's sum
//     of squares in float64 and in element order (ggml's order).
//   - scaleMul: dst[i] = x[i]·scale·w[i], rmsnorm's output.
//   - rotateNeoX, rotatePairs: RoPE on one head.
//   - argmaxF32: the index of a row's largest value.
//   - addRow: dst[i] += src[i], the residual add.
//   - prefetchL2: a hint that b will be read soon (no-op in Go).
var (
	f2hRow      = f2hRowGo
	rmsScales   = rmsScalesGo
	scaleMul    = scaleMulGo
	rotateNeoX  = rotateNeoXGo
	rotatePairs = rotatePairsGo
	argmaxF32   = argmaxF32Go
	addRow      = addRowGo
	prefetchL2  = func([]byte) {}
)

func addRowGo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

func f2hRowGo(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f2h(v)
	}
}

// rmsScalesGo sets sc[r] = rmsScale(Σ_i float64(x[r·stride+i])², n, eps)
// for i < n, the squares added in order of i. Each product is exact in
// float64 (two 24-bit significands), so only the order of the additions
// decides the sum: a twin that keeps each row's order may sum several rows
// side by side. The scale's division, square root and rounding to float32
// are correctly rounded, in a vector too.
func rmsScalesGo(sc []float32, x []float32, n, stride int, eps float32) {
	for r := range sc {
		var s float64
		for _, v := range x[r*stride : r*stride+n] {
			s += float64(v) * float64(v)
		}
		sc[r] = rmsScale(s, n, eps)
	}
}

// rmsScale is 1/sqrt(ss/n + eps) in float64, rounded to float32: the scale
// of a row whose squares sum to ss.
func rmsScale(ss float64, n int, eps float32) float32 {
	return float32(1 / math.Sqrt(ss/float64(n)+float64(eps)))
}

// scaleMulGo sets dst[i] = x[i]·scale·w[i], rounded after each product
// (dst may be x).
func scaleMulGo(dst, x, w []float32, scale float32) {
	dst, w = dst[:len(x)], w[:len(x)]
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

// rotateNeoXGo turns the pairs (x[i], x[i+h]) of one head, i < h = len(cs)/2,
// by (cos, sin) = (cs[i], cs[h+i]) (ropeCfg.cache's split table). Each
// product is rounded before the sum: the conversions forbid a fused
// multiply-add, which the compiler may use at GOAMD64=v3 and on arm64.
func rotateNeoXGo(x, cs []float32) {
	h := len(cs) / 2
	x0s, x1s, c, s := x[:h], x[h:2*h], cs[:h], cs[h:2*h]
	for i := range x0s {
		x0, x1 := x0s[i], x1s[i]
		x0s[i] = float32(x0*c[i]) - float32(x1*s[i])
		x1s[i] = float32(x0*s[i]) + float32(x1*c[i])
	}
}

// rotatePairsGo turns the pairs (x[2i], x[2i+1]) of one head, 2i <
// len(cs), by (cos, sin) = (cs[2i], cs[2i+1]) (the interleaved table).
func rotatePairsGo(x, cs []float32) {
	x = x[:len(cs)]
	for i := 0; i+1 < len(cs); i += 2 {
		c, s := cs[i], cs[i+1]
		x0, x1 := x[i], x[i+1]
		x[i] = float32(x0*c) - float32(x1*s)
		x[i+1] = float32(x0*s) + float32(x1*c)
	}
}

// argmaxF32Go is the index of the largest value of x, the lowest among
// equals (−0 equals +0); NaNs never win, and a row of NaNs and −Infs gives
// 0.
func argmaxF32Go(x []float32) int {
	best, bv := 0, float32(math.Inf(-1))
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}
