package dtype_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/internal/llamacpp"
)

// These tests hold our reference conversions to llama.cpp's, bit for bit.

// scaleFields lists the byte offsets of the fp16 scales inside each block,
// so random blocks can be given finite scales (docs/formats.md).
var scaleFields = map[dtype.Type][]int{
	dtype.Q4_0: {0}, dtype.Q5_0: {0}, dtype.Q8_0: {0}, dtype.IQ4_NL: {0}, dtype.Q1_0: {0}, dtype.Q2_0: {0},
	dtype.Q4_1: {0, 2}, dtype.Q5_1: {0, 2}, dtype.Q8_1: {0, 2},
	dtype.Q2_K: {80, 82}, dtype.Q3_K: {108}, dtype.Q4_K: {0, 2}, dtype.Q5_K: {0, 2}, dtype.Q6_K: {208},
	dtype.IQ4_XS: {0},
}

// randomFiniteHalf is any finite binary16 value (subnormals included).
func randomFiniteHalf(r *rand.Rand) uint16 {
	return uint16(r.IntN(2))<<15 | uint16(r.IntN(31))<<10 | uint16(r.IntN(1024))
}

func randomBlocks(r *rand.Rand, t dtype.Type, nblocks int, finite bool) []byte {
	bb := t.BlockBytes()
	src := make([]byte, nblocks*bb)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	if !finite {
		return src
	}
	for b := range nblocks {
		blk := src[b*bb : (b+1)*bb]
		for _, off := range scaleFields[t] {
			binary.LittleEndian.PutUint16(blk[off:], randomFiniteHalf(r))
		}
		switch t {
		case dtype.Q8_K:
			f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
			binary.LittleEndian.PutUint32(blk, math.Float32bits(f))
		case dtype.F16:
			binary.LittleEndian.PutUint16(blk, randomFiniteHalf(r))
		case dtype.BF16:
			if blk[1]&0x7f == 0x7f && blk[0]&0x80 != 0 { // exponent all ones
				blk[1] &^= 1
			}
		}
	}
	return src
}

// sameBits compares float32 bit patterns; with nanAny, any two NaNs match
// (which NaN payload survives an operation is up to the instruction set).
func firstDiff(a, b []float32, nanAny bool) int {
	for i := range a {
		x, y := math.Float32bits(a[i]), math.Float32bits(b[i])
		if x == y {
			continue
		}
		if nanAny && a[i] != a[i] && b[i] != b[i] {
			continue
		}
		return i
	}
	return -1
}

func TestDequantizeIsBitIdenticalToGGML(t *testing.T) {
	l := llamacpp.Require(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, ty := range dtype.All() {
		if !dtype.CanDequantize(ty) {
			continue
		}
		for _, finite := range []bool{true, false} {
			name := fmt.Sprintf("%v with finite scales", ty)
			if !finite {
				name = fmt.Sprintf("%v with random bytes", ty)
			}
			t.Run(name, func(t *testing.T) {
				nblocks := max(64, 4096/ty.BlockSize())
				src := randomBlocks(r, ty, nblocks, finite)
				n := nblocks * ty.BlockSize()
				ours := make([]float32, n)
				if err := dtype.Dequantize(ty, src, ours); err != nil {
					t.Fatal(err)
				}
				theirs, err := l.Dequantize(ty, src, n)
				if ty == dtype.Q8_1 {
					// ggml has no to_float for Q8_1; its values are
					// those of the Q8_0 block with the same d and quants.
					q8 := make([]byte, 0, nblocks*34)
					for b := range nblocks {
						blk := src[b*36 : (b+1)*36]
						q8 = append(append(q8, blk[0:2]...), blk[4:36]...)
					}
					theirs, err = l.Dequantize(dtype.Q8_0, q8, n)
				}
				if err != nil {
					t.Skipf("no llama.cpp oracle: %v", err)
				}
				if i := firstDiff(ours, theirs, !finite); i >= 0 {
					b := i / ty.BlockSize()
					bb := ty.BlockBytes()
					t.Fatalf("element %d (block %d % x): ours %g (%#08x), ggml %g (%#08x)", i, b,
						src[b*bb:(b+1)*bb], ours[i], math.Float32bits(ours[i]), theirs[i], math.Float32bits(theirs[i]))
				}
			})
		}
	}
}

// TestEveryHalfWidensLikeGGML covers all 65536 binary16 patterns, NaN
// payloads included, for both F16 and BF16.
func TestEveryHalfWidensLikeGGML(t *testing.T) {
	l := llamacpp.Require(t)
	src := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	for _, ty := range []dtype.Type{dtype.F16, dtype.BF16} {
		ours := make([]float32, 1<<16)
		if err := dtype.Dequantize(ty, src, ours); err != nil {
			t.Fatal(err)
		}
		theirs, err := l.Dequantize(ty, src, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(ours, theirs, false); i >= 0 {
			t.Errorf("%v %#04x: ours %#08x, ggml %#08x", ty, i, math.Float32bits(ours[i]), math.Float32bits(theirs[i]))
		}
	}
}

// halfEdgeCases are float32 values around every binary16 rounding boundary
// (the halfway points and their neighbours), specials and random bits.
func halfEdgeCases(r *rand.Rand) []float32 {
	var out []float32
	for h := range 1 << 15 {
		lo := dtype.Float16frombits(uint16(h))
		hi := dtype.Float16frombits(uint16(h + 1))
		if lo != lo || hi != hi || math.IsInf(float64(lo), 0) {
			continue
		}
		mid := math.Float32bits(float32((float64(lo) + float64(hi)) / 2))
		for _, b := range []uint32{mid - 1, mid, mid + 1, math.Float32bits(lo)} {
			out = append(out, math.Float32frombits(b), -math.Float32frombits(b))
		}
	}
	for _, b := range []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0x7fffffff, 0x00000001, 0x807fffff, 0x477fefff, 0x477ff000, 0x47800000} {
		out = append(out, math.Float32frombits(b))
	}
	for range 1 << 18 {
		out = append(out, math.Float32frombits(r.Uint32()))
	}
	return out
}

func TestFloat32NarrowsLikeGGML(t *testing.T) {
	l := llamacpp.Require(t)
	src := halfEdgeCases(rand.New(rand.NewPCG(3, 4)))
	for _, ty := range []dtype.Type{dtype.F16, dtype.BF16} {
		ours := make([]byte, 2*len(src))
		if err := dtype.Quantize(ty, src, ours); err != nil {
			t.Fatal(err)
		}
		theirs, err := l.QuantizeRef(ty, src)
		if err != nil {
			t.Fatal(err)
		}
		for i := range src {
			a, b := binary.LittleEndian.Uint16(ours[2*i:]), binary.LittleEndian.Uint16(theirs[2*i:])
			if a != b {
				t.Errorf("%v of %g (%#08x): ours %#04x, ggml %#04x", ty, src[i], math.Float32bits(src[i]), a, b)
				break
			}
		}
	}
}

// distributions are the kinds of rows the quantizers are tested on.
var distributions = []struct {
	name string
	gen  func(r *rand.Rand, x []float32)
}{
	{"gaussian", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
	}},
	{"uniform", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(2*r.Float64() - 1)
		}
	}},
	{"small weights", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(0.02 * r.NormFloat64())
		}
	}},
	{"half zeros", func(r *rand.Rand, x []float32) {
		for i := range x {
			if r.IntN(2) == 0 {
				x[i] = float32(r.NormFloat64())
			}
		}
	}},
	{"zero runs", func(r *rand.Rand, x []float32) {
		for i := range x {
			if i/16%3 != 0 {
				x[i] = float32(r.NormFloat64())
			}
		}
	}},
	{"outliers", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if r.IntN(50) == 0 {
				x[i] *= 100
			}
		}
	}},
	{"positive", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(math.Abs(r.NormFloat64())) + 0.5
		}
	}},
	{"negative", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = -float32(math.Abs(r.NormFloat64())) - 0.5
		}
	}},
	{"constant", func(r *rand.Rand, x []float32) {
		c := float32(r.NormFloat64())
		for i := range x {
			x[i] = c
		}
	}},
	{"tiny", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(1e-6 * r.NormFloat64())
		}
	}},
	{"large", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(1e4 * r.NormFloat64())
		}
	}},
	{"integers", func(r *rand.Rand, x []float32) {
		for i := range x {
			x[i] = float32(r.IntN(17) - 8)
		}
	}},
	{"all zero", func(r *rand.Rand, x []float32) {}},
}

func TestQuantizeIsByteIdenticalToGGML(t *testing.T) {
	l := llamacpp.Require(t)
	r := rand.New(rand.NewPCG(5, 6))
	const n = 8 * 256
	for _, ty := range dtype.All() {
		if !dtype.CanQuantize(ty) || ty == dtype.F32 {
			continue
		}
		for _, d := range distributions {
			t.Run(fmt.Sprintf("%v of %s rows", ty, d.name), func(t *testing.T) {
				x := make([]float32, n)
				d.gen(r, x)
				bb, bs := ty.BlockBytes(), ty.BlockSize()
				ours := make([]byte, n/bs*bb)
				if err := dtype.Quantize(ty, x, ours); err != nil {
					t.Fatal(err)
				}
				theirs, err := l.QuantizeRef(ty, x)
				if err != nil {
					t.Fatal(err)
				}
				for b := 0; b < n/bs; b++ {
					o, g := ours[b*bb:(b+1)*bb], theirs[b*bb:(b+1)*bb]
					if ty == dtype.IQ4_NL && allTiny(x[b*bs:(b+1)*bs]) {
						// ggml leaves its scratch indices in an all-zero
						// block; only the (zero) scale is defined.
						o, g = o[:2], g[:2]
					}
					for i := range o {
						if o[i] != g[i] {
							t.Fatalf("block %d byte %d: ours %#02x, ggml %#02x\nours %x\nggml %x\ninput %v",
								b, i, o[i], g[i], o, g, x[b*bs:(b+1)*bs])
						}
					}
				}
			})
		}
	}
}

func allTiny(x []float32) bool {
	for _, v := range x {
		if math.Abs(float64(v)) >= 1e-15 {
			return false
		}
	}
	return true
}
