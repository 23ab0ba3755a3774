//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// checkQuantizeQ8_K runs the assembly quantizer and the Go one on x and
// fails on any byte of qs or bit of d and bsums where they differ, or on a
// write past the super-blocks (the outputs carry one block of sentinel
// slack).
func checkQuantizeQ8_K(t *testing.T, name string, x []float32) {
	t.Helper()
	nb := len(x) / qkK
	var outs [2]struct {
		qs    []int8
		d, bs []float32
	}
	for i, f := range []func([]float32, []int8, []float32, []float32){quantizeQ8_KGo, quantizeQ8_KAsm} {
		o := &outs[i]
		o.qs, o.d, o.bs = make([]int8, nb*qkK+qkK), make([]float32, nb+1), make([]float32, nb*16+16)
		for j := range o.qs {
			o.qs[j] = 0x5a
		}
		for j := range o.d {
			o.d[j] = -7
		}
		for j := range o.bs {
			o.bs[j] = -7
		}
		f(x, o.qs[:nb*qkK], o.d[:nb], o.bs[:nb*16])
	}
	g, a := outs[0], outs[1]
	for j := range g.qs {
		if g.qs[j] != a.qs[j] {
			t.Errorf("%s: qs[%d] (super-block %d, x=%g %#x) = %d, Go %d", name, j, j/qkK,
				xAt(x, j), math.Float32bits(xAt(x, j)), a.qs[j], g.qs[j])
			return
		}
	}
	for b := range g.d {
		if math.Float32bits(g.d[b]) != math.Float32bits(a.d[b]) {
			t.Errorf("%s: d[%d] = %g (%#x), Go %g (%#x)", name, b, a.d[b], math.Float32bits(a.d[b]), g.d[b], math.Float32bits(g.d[b]))
			return
		}
	}
	for j := range g.bs {
		if math.Float32bits(g.bs[j]) != math.Float32bits(a.bs[j]) {
			t.Errorf("%s: bsums[%d] = %g (%#x), Go %g (%#x)", name, j, a.bs[j], math.Float32bits(a.bs[j]), g.bs[j], math.Float32bits(g.bs[j]))
			return
		}
	}
}

// placeTie puts +m and −m (m > 0, the block's largest magnitude) at two
// distinct random places, the negative one first when negFirst: the one
// that comes first decides the sign of iscale.
func placeTie(r *rand.Rand, xb []float32, m float32, negFirst bool) {
	i := r.IntN(len(xb) - 1)
	j := i + 1 + r.IntN(len(xb)-1-i)
	xb[i], xb[j] = m, -m
	if negFirst {
		xb[i], xb[j] = -m, m
	}
}

// The super-blocks the parity test mixes: each is one way a block's
// extreme, iscale, rounding or sums can go; the ones named "special" take
// the kernel's exit to the Go code.
var q8KBlocks = []struct {
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
	{"denormals", func(r *rand.Rand, xb []float32) { // iscale = ±Inf: products ±Inf or NaN
		for j := range xb {
			xb[j] = math.Float32frombits(r.Uint32() & 0x807fffff)
		}
	}},
	{"one denormal", func(r *rand.Rand, xb []float32) {
		clear(xb)
		xb[r.IntN(qkK)] = math.Float32frombits(1 + r.Uint32()&0x807ffffe)
	}},
	{"below 127/MaxFloat32", func(r *rand.Rand, xb []float32) { fillScaled(r, xb, 1e-38) }},
	{"around 127/MaxFloat32", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 127/math.MaxFloat32*(0.5+r.Float64()))
		xb[r.IntN(qkK)] = 0
	}},
	{"huge", func(r *rand.Rand, xb []float32) {
		for j := range xb {
			xb[j] = math.MaxFloat32 * float32(0.9+0.1*r.Float64()) * float32(1-2*r.IntN(2))
		}
	}},
	{"huge mixed", func(r *rand.Rand, xb []float32) { fillScaled(r, xb, 1e37) }},
	{"MaxFloat32 extreme", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1e30)
		xb[r.IntN(qkK)] = math.MaxFloat32 * float32(1-2*r.IntN(2))
	}},
	{"rounding ties", func(r *rand.Rand, xb []float32) { // mx −127: iscale 1, products on .5
		for j := range xb {
			xb[j] = float32(r.IntN(254)-127) + 0.5
		}
		xb[r.IntN(qkK)] = -127
	}},
	{"tie at the extreme, + first", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		placeTie(r, xb, 8+float32(r.Float64()), false)
	}},
	{"tie at the extreme, − first", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		placeTie(r, xb, 8+float32(r.Float64()), true)
	}},
	{"tie in one vector of 8", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		i := 8*r.IntN(qkK/8) + r.IntN(7)
		xb[i], xb[i+1] = 9, -9
		if r.IntN(2) == 0 {
			xb[i], xb[i+1] = -9, 9
		}
	}},
	{"many ties, both signs", func(r *rand.Rand, xb []float32) {
		m := float32(math.Ldexp(1+r.Float64(), r.IntN(200)-100))
		for j := range xb {
			switch r.IntN(4) {
			case 0:
				xb[j] = m
			case 1:
				xb[j] = -m
			default:
				xb[j] = m * float32(r.Float64()*2-1)
			}
		}
	}},
	{"tied denormals", func(r *rand.Rand, xb []float32) {
		clear(xb)
		placeTie(r, xb, math.Float32frombits(1+r.Uint32()&0x7ffffe), r.IntN(2) == 0)
	}},
	{"extreme first or last", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		xb[[]int{0, qkK - 1}[r.IntN(2)]] = 10 * float32(1-2*r.IntN(2))
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
			xb[r.IntN(qkK)] = math.Float32frombits(0x7f800001 | r.Uint32()&0x807fffff)
		}
	}},
	{"special Inf", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		xb[r.IntN(qkK)] = float32(math.Inf(1 - 2*r.IntN(2)))
	}},
	{"special NaN and Inf", func(r *rand.Rand, xb []float32) {
		fillScaled(r, xb, 1)
		xb[r.IntN(qkK)] = float32(math.Inf(-1))
		xb[r.IntN(qkK)] = float32(math.NaN())
	}},
	{"special all NaN", func(r *rand.Rand, xb []float32) {
		for j := range xb {
			xb[j] = float32(math.NaN())
		}
	}},
}

func TestQuantizeQ8_KAsmMatchesGo(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(8, 1))
	for _, c := range q8KBlocks {
		t.Run("every super-block "+c.name, func(t *testing.T) {
			for nb := 1; nb <= 20; nb++ {
				for range 3 {
					x := make([]float32, nb*qkK)
					for b := range nb {
						c.fill(r, x[b*qkK:b*qkK+qkK])
					}
					checkQuantizeQ8_K(t, fmt.Sprintf("%d super-blocks", nb), x)
				}
			}
		})
	}
	t.Run("super-blocks of every kind mixed", func(t *testing.T) {
		for trial := range 1000 {
			nb := 1 + r.IntN(20)
			x := make([]float32, nb*qkK+r.IntN(qkK)) // a tail both must ignore
			for b := range nb {
				q8KBlocks[r.IntN(len(q8KBlocks))].fill(r, x[b*qkK:b*qkK+qkK])
			}
			checkQuantizeQ8_K(t, fmt.Sprintf("trial %d, %d super-blocks", trial, nb), x)
		}
	})
	t.Run("less than a super-block does nothing", func(t *testing.T) {
		checkQuantizeQ8_K(t, "255 elements", make([]float32, qkK-1))
	})
}

// TestQuantizeQ8_KTieRule pins the rule both twins must share, not only
// their agreement: the first element of largest magnitude is the extreme,
// it quantizes to −127, and d = −mx/127 takes the opposite of its sign.
func TestQuantizeQ8_KTieRule(t *testing.T) {
	impls := []struct {
		name string
		f    func([]float32, []int8, []float32, []float32)
	}{{"go", quantizeQ8_KGo}, {"dispatched", quantizeQ8_K}}
	cases := []struct {
		name   string
		at     [2]int
		first  float32
		wantDs float64 // the sign of d
	}{
		{"+3 before −3 gives a negative d", [2]int{5, 200}, 3, -1},
		{"−3 before +3 gives a positive d", [2]int{5, 200}, -3, 1},
		{"+3 before −3 in one vector of 8", [2]int{16, 17}, 3, -1},
		{"−3 before +3 in one vector of 8", [2]int{16, 17}, -3, 1},
		{"−3 first and last", [2]int{0, qkK - 1}, -3, 1},
	}
	for _, impl := range impls {
		for _, c := range cases {
			t.Run(impl.name+": "+c.name, func(t *testing.T) {
				x := randFloats(rand.New(rand.NewPCG(3, 4)), qkK, 0.5)
				x[c.at[0]], x[c.at[1]] = c.first, -c.first
				qs, d, bs := make([]int8, qkK), make([]float32, 1), make([]float32, 16)
				impl.f(x, qs, d, bs)
				iscale := -127 / c.first
				if d[0] != 1/iscale || math.Signbit(float64(d[0])) != (c.wantDs < 0) {
					t.Errorf("d = %g, want 1/(−127/%g) = %g", d[0], c.first, 1/iscale)
				}
				if qs[c.at[0]] != -127 || qs[c.at[1]] != 127 {
					t.Errorf("q at the extremes = %d, %d; want −127, 127", qs[c.at[0]], qs[c.at[1]])
				}
			})
		}
	}
}

// FuzzQuantizeQ8_K holds the assembly to the Go code on arbitrary bit
// patterns, NaN payloads and infinities included. The input's floats are
// repeated to fill whole super-blocks, every other repetition negated, so
// that extremes tied in magnitude, of both signs and in both orders, are
// the rule rather than the exception.
func FuzzQuantizeQ8_K(f *testing.F) {
	if !haveAVX2 {
		f.Skip("no AVX2")
	}
	f.Add(make([]byte, 4))
	f.Add(binary.LittleEndian.AppendUint32(make([]byte, 4*qkK-4), 0x7fc00001))
	f.Add(binary.LittleEndian.AppendUint32(make([]byte, 4*qkK-4), 0x00000001))
	f.Add(binary.LittleEndian.AppendUint32(nil, 0xc0400000)) // −3, +3, −3, ...
	f.Add(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0x3f800000), 0x40000000))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := len(b) / 4
		if n == 0 || n > 8*qkK {
			return
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		nb := (n + qkK - 1) / qkK
		x := make([]float32, nb*qkK)
		for i := range x {
			x[i] = v[i%n]
			if i/n%2 == 1 {
				x[i] = -x[i]
			}
		}
		checkQuantizeQ8_K(t, "fuzz", x)
	})
}

// BenchmarkQuantizeQ8_K times the quantization every Q4_K, Q5_K and Q6_K
// GEMV and GEMM does of its activation, Go against AVX2.
func BenchmarkQuantizeQ8_K(b *testing.B) {
	impls := []struct {
		name string
		f    func([]float32, []int8, []float32, []float32)
	}{{"go", quantizeQ8_KGo}, {"avx2", quantizeQ8_KAsm}}
	for _, k := range []int{1024, 4096} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("k=%d/%s", k, impl.name), func(b *testing.B) {
				if impl.name == "avx2" && !haveAVX2 {
					b.Skip("no AVX2")
				}
				x := randFloats(rand.New(rand.NewPCG(1, 2)), k, 1)
				qs, d, bs := make([]int8, k), make([]float32, k/qkK), make([]float32, k/16)
				b.SetBytes(int64(4 * k))
				for range b.N {
					impl.f(x, qs, d, bs)
				}
			})
		}
	}
}
