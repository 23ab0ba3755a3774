//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// checkQuantizeQ8_0 runs the assembly quantizer and the Go one on x and
// fails on any byte of qs or bit of d and s where they differ, or on a
// write past the blocks (the outputs carry one block of sentinel slack).
func checkQuantizeQ8_0(t *testing.T, name string, x []float32) {
	t.Helper()
	nb := len(x) / qk
	for _, withS := range []bool{false, true} {
		var outs [2]struct {
			qs   []int8
			d, s []float32
		}
		for i, f := range []func([]float32, []int8, []float32, []float32){quantizeQ8_0Go, quantizeQ8_0Asm} {
			o := &outs[i]
			o.qs, o.d, o.s = make([]int8, nb*qk+qk), make([]float32, nb+1), make([]float32, nb+1)
			for j := range o.qs {
				o.qs[j] = 0x5a
			}
			for j := range o.d {
				o.d[j], o.s[j] = -7, -7
			}
			s := o.s[:0]
			if withS {
				s = o.s[:nb]
			}
			f(x, o.qs[:nb*qk], o.d[:nb], s)
		}
		g, a := outs[0], outs[1]
		for j := range g.qs {
			if g.qs[j] != a.qs[j] {
				t.Errorf("%s (s=%v): qs[%d] (block %d, x=%g %#x) = %d, Go %d", name, withS, j, j/qk,
					xAt(x, j), math.Float32bits(xAt(x, j)), a.qs[j], g.qs[j])
				return
			}
		}
		for b := range g.d {
			if math.Float32bits(g.d[b]) != math.Float32bits(a.d[b]) {
				t.Errorf("%s (s=%v): d[%d] = %g (%#x), Go %g (%#x)", name, withS, b, a.d[b], math.Float32bits(a.d[b]), g.d[b], math.Float32bits(g.d[b]))
				return
			}
			if math.Float32bits(g.s[b]) != math.Float32bits(a.s[b]) {
				t.Errorf("%s (s=%v): s[%d] = %g (%#x), Go %g (%#x)", name, withS, b, a.s[b], math.Float32bits(a.s[b]), g.s[b], math.Float32bits(g.s[b]))
				return
			}
		}
	}
}

func xAt(x []float32, j int) float32 {
	if j < len(x) {
		return x[j]
	}
	return 0
}

// The blocks the parity test mixes: each is one way a block's amax, id,
// rounding or f16 scales can go, and the ones named "special" take the
// kernel's exits to the Go code.
var q8Blocks = []struct {
	name string
	fill func(r *rand.Rand, xb []float32)
}{
	{"normal", func(r *rand.Rand, xb []float32) { fillScaled(r, xb, 1) }},
	{"random scale", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, math.Pow(2, float64(r.IntN(270)-150)))
	}},
	{"zeros", func(r *rand.Rand, xb []float32) { clear(xb) }},
	{"signed zeros", func(r *rand.Rand, xb []float32) {
		for j := range xb {
			xb[j] = math.Float32frombits(uint32(r.IntN(2)) << 31)
		}
	}},
	{"denormals", func(r *rand.Rand, xb []float32) { // id = +Inf: x·id is ±Inf or NaN
		for j := range xb {
			xb[j] = math.Float32frombits(r.Uint32() & 0x807fffff)
		}
	}},
	{"one denormal", func(r *rand.Rand, xb []float32) {
		clear(xb)
		xb[r.IntN(qk)] = math.Float32frombits(1 + r.Uint32()&0x807ffffe)
	}},
	{"below 127/MaxFloat32", func(r *rand.Rand, xb []float32) { fillScaled(r, xb, 1e-38) }},
	{"around 127/MaxFloat32", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 127/math.MaxFloat32*(0.5+r.Float64()))
		xb[r.IntN(qk)] = 0
	}},
	{"huge", func(r *rand.Rand, xb []float32) { // db·Σq overflows f16 and float32
		for j := range xb {
			xb[j] = math.MaxFloat32 * float32(0.9+0.1*r.Float64())
		}
	}},
	{"huge mixed", func(r *rand.Rand, xb []float32) { fillScaled(r, xb, 1e37) }},
	{"ties", func(r *rand.Rand, xb []float32) { // amax 127: id 1, x·id on .5
		for j := range xb {
			xb[j] = float32(r.IntN(254)-127) + 0.5
		}
		xb[0] = 127
	}},
	{"f16 boundaries", func(r *rand.Rand, xb []float32) { // d near f16's subnormal, normal and max
		e := []float64{127 * 6.1e-5, 127 * 5.96e-8, 127 * 65504, 127 * 65520, 127 * 3e-8}[r.IntN(5)]
		fillScaled(r, xb, 0.3)
		xb[r.IntN(qk)] = float32(e * (1 + 1e-3*(r.Float64()-0.5)))
	}},
	{"random bits", func(r *rand.Rand, xb []float32) { // finite ones; the special ones below
		for j := range xb {
			v := r.Uint32()
			if v&0x7f800000 == 0x7f800000 {
				v &^= 0x00800000
			}
			xb[j] = math.Float32frombits(v)
		}
	}},
	{"special NaN", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		for range 1 + r.IntN(3) {
			xb[r.IntN(qk)] = math.Float32frombits(0x7f800001 | r.Uint32()&0x807fffff)
		}
	}},
	{"special Inf", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		xb[r.IntN(qk)] = float32(math.Inf(1 - 2*r.IntN(2)))
	}},
	{"special NaN and Inf", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		xb[r.IntN(qk)] = float32(math.Inf(-1))
		xb[r.IntN(qk)] = float32(math.NaN())
	}},
}

func fillScaled(r *rand.Rand, xb []float32, scale float64) {
	for j := range xb {
		xb[j] = float32(r.NormFloat64() * scale)
	}
}

func TestQuantizeQ8_0AsmMatchesGo(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(8, 0))
	for _, c := range q8Blocks {
		t.Run("every block "+c.name, func(t *testing.T) {
			for nb := 1; nb <= 70; nb++ {
				x := make([]float32, nb*qk)
				for b := range nb {
					c.fill(r, x[b*qk:b*qk+qk])
				}
				checkQuantizeQ8_0(t, fmt.Sprintf("%d blocks", nb), x)
			}
		})
	}
	t.Run("blocks of every kind mixed", func(t *testing.T) {
		for trial := range 2000 {
			nb := 1 + r.IntN(70)
			x := make([]float32, nb*qk+r.IntN(qk)) // a tail both must ignore
			for b := range nb {
				q8Blocks[r.IntN(len(q8Blocks))].fill(r, x[b*qk:b*qk+qk])
			}
			checkQuantizeQ8_0(t, fmt.Sprintf("trial %d, %d blocks", trial, nb), x)
		}
	})
	t.Run("less than a block does nothing", func(t *testing.T) {
		checkQuantizeQ8_0(t, "31 elements", make([]float32, qk-1))
	})
}

// FuzzQuantizeQ8_0 holds the assembly to the Go code on arbitrary bit
// patterns, NaN payloads and infinities included.
func FuzzQuantizeQ8_0(f *testing.F) {
	if !haveAVX2 {
		f.Skip("no AVX2")
	}
	f.Add(make([]byte, 4*qk))
	f.Add(binary.LittleEndian.AppendUint32(make([]byte, 4*qk-4), 0x7fc00001))
	f.Add(binary.LittleEndian.AppendUint32(make([]byte, 4*qk-4), 0x00000001))
	f.Fuzz(func(t *testing.T, b []byte) {
		x := make([]float32, len(b)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		checkQuantizeQ8_0(t, "fuzz", x)
	})
}

// BenchmarkQuantizeQ8_0 times the quantization every quantized GEMV and
// GEMM does of its activation, Go against AVX2, without and with Q8_1's s.
func BenchmarkQuantizeQ8_0(b *testing.B) {
	impls := []struct {
		name string
		f    func([]float32, []int8, []float32, []float32)
	}{{"go", quantizeQ8_0Go}, {"avx2", quantizeQ8_0Asm}}
	for _, k := range []int{1024, 4096} {
		for _, q81 := range []bool{false, true} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("k=%d/s=%v/%s", k, q81, impl.name), func(b *testing.B) {
					if impl.name == "avx2" && !haveAVX2 {
						b.Skip("no AVX2")
					}
					x := randFloats(rand.New(rand.NewPCG(1, 2)), k, 1)
					qs, d := make([]int8, k), make([]float32, k/qk)
					var s []float32
					if q81 {
						s = make([]float32, k/qk)
					}
					b.SetBytes(int64(4 * k))
					for range b.N {
						impl.f(x, qs, d, s)
					}
				})
			}
		}
	}
}
