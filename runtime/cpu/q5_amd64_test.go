//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// q5Kernels are the assembly dots of q5_amd64.s with their portable twins.
var q5Kernels = []struct {
	dt  dtype.Type
	bb  int // bytes per block
	asm qdot
	x4  func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	ref qdot
}{
	{dtype.Q4_1, 20, dotQ4_1Asm, dotQ4_1x4Asm, dotQ4_1Go},
	{dtype.Q5_0, 22, dotQ5_0Asm, dotQ5_0x4Asm, dotQ5_0Go},
	{dtype.Q5_1, 24, dotQ5_1Asm, dotQ5_1x4Asm, dotQ5_1Go},
}

// sameFloat is bit equality, except that any two NaNs agree: which NaN's
// payload an operation keeps depends on its operand order.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// checkQ5 holds the one-row and the four-row kernel of c to the portable
// dot, bit for bit, on rows 0..3 of w (rb bytes apart, nb blocks each).
func checkQ5(t *testing.T, name string, c int, w []byte, rb int, qs []int8, d, s []float32) {
	t.Helper()
	k := q5Kernels[c]
	nb := len(d)
	var got4 [4]float32
	k.x4(w, rb, qs, d, s, &got4)
	for r := range 4 {
		row := w[r*rb : r*rb+nb*k.bb]
		want := k.ref(row, qs, d, s)
		if got := k.asm(row, qs, d, s); !sameFloat(got, want) {
			t.Errorf("%v %s row %d: asm %g (%#x), Go %g (%#x)", k.dt, name, r, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if !sameFloat(got4[r], want) {
			t.Errorf("%v %s row %d: four-row asm %g (%#x), Go %g (%#x)", k.dt, name, r, got4[r], math.Float32bits(got4[r]), want, math.Float32bits(want))
		}
	}
}

// Real rows: random floats quantized by the reference quantizers, against
// a quantized random activation, its scale from f16-subnormal d (1e-5) to
// d near f16's largest (3e5) and past it (1e30: d = Inf); the four rows
// lie further apart than their length, as in a weight matrix with a larger
// stride.
func TestDotQ5TwinsMatchPortable(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(51, 52))
	for c, kern := range q5Kernels {
		wt := weightTypeOf(kern.dt)
		for _, k := range []int{32, 64, 96, 1024, 4096 + 32} {
			for _, scale := range []float64{1, 1e-5, 1e-3, 1e3, 3e5, 1e30} {
				name := fmt.Sprintf("k=%d scale=%g", k, scale)
				x := randFloats(r, k, scale)
				q := &q8act{}
				q.need(k)
				q.quantize(wt.aq, x, 1, k)
				qs, d, s := q.row(wt.aq, 0, k)
				rb := wt.rowBytes(k)
				stride := rb + 3*kern.bb + 5
				src, _ := weights(t, r, kern.dt, 4, k)
				w := make([]byte, 3*stride+rb)
				for j := range 4 {
					copy(w[j*stride:], src[j*rb:j*rb+rb])
				}
				checkQ5(t, name, c, w, stride, qs, d, s)
			}
		}
	}
}

// f16 bit patterns that test a block's scales at their edges.
var q5Halves = []uint16{
	0x0000, 0x8000, // ±0
	0x0001, 0x83ff, // subnormal
	0x0400,         // smallest normal
	0x3c00, 0xbc00, // ±1
	0x7bff, 0xfbff, // ±65504
	0x7c00, 0xfc00, // ±Inf
	0x7e00, 0x7c01, 0xfe01, // NaN, quiet and signalling
}

// Adversarial rows: random bytes for qs and qh, f16 d and m anywhere in
// f16 (finite, or in one trial of four from the edges above: subnormal,
// largest, Inf, NaN), against activations of any int8 (−128 included,
// which the quantizer never writes) with d and s anywhere in float32's
// finite range (or from its edges: 0, subnormal, 3e38, Inf, NaN).
func TestDotQ5AdversarialBlocks(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	r := rand.New(rand.NewPCG(53, 54))
	edges := []float32{0, 1e-45, 1e-40, 1e-20, 1, 3e4, 1e20, 3e38,
		float32(math.Inf(1)), float32(math.NaN())}
	for c, kern := range q5Kernels {
		for trial := range 400 {
			edge := trial%4 == 0
			half := func() uint16 {
				if edge {
					return q5Halves[r.IntN(len(q5Halves))]
				}
				return uint16(r.Uint32()) &^ 0x4000 // exponent below 31
			}
			scale := func() float32 {
				if edge {
					return edges[r.IntN(len(edges))] * float32(1-2*r.IntN(2))
				}
				// sign, exponent 2^-140..2^100, random mantissa
				return math.Float32frombits(r.Uint32()&0x807fffff | uint32(r.IntN(241)-140+127)<<23)
			}
			nb := 1 + r.IntN(9)
			rb := nb*kern.bb + r.IntN(3*kern.bb)
			w := make([]byte, 3*rb+nb*kern.bb)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			qs, d, s := make([]int8, nb*qk), make([]float32, nb), make([]float32, nb)
			for i := range qs {
				qs[i] = int8(r.Uint32())
				if trial%3 == 0 {
					qs[i] = [...]int8{-128, 127}[r.IntN(2)]
				}
			}
			for b := range nb {
				for r0 := range 4 {
					o := r0*rb + b*kern.bb
					binary.LittleEndian.PutUint16(w[o:], half())
					if kern.dt != dtype.Q5_0 {
						binary.LittleEndian.PutUint16(w[o+2:], half())
					}
				}
				d[b], s[b] = scale(), scale()
			}
			checkQ5(t, fmt.Sprintf("trial %d (%d blocks)", trial, nb), c, w, rb, qs, d, s)
		}
	}
}

// An empty row is zero in every form, as the portable dot's.
func TestDotQ5EmptyRow(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	for c := range q5Kernels {
		checkQ5(t, "k=0", c, nil, 0, nil, nil, nil)
	}
}

// FuzzDotQ5 holds the three kernels, one-row and four-row, to the Go code
// on arbitrary block bytes and activations: a is up to 4 blocks of the
// activation (32 qs bytes, then d's and s's float32 bits), w the weight
// bytes, the four rows taken from w at a stride of one block more than a
// row.
func FuzzDotQ5(f *testing.F) {
	if !haveAVX2 {
		f.Skip("no AVX2")
	}
	f.Add(make([]byte, 4*24*5), make([]byte, 40))
	seed := make([]byte, 2*40)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(append([]byte{0x00, 0x7c, 0x01, 0x7c}, seed...), seed)
	f.Fuzz(func(t *testing.T, wb, ab []byte) {
		nb := min(len(ab)/40, 4)
		if nb == 0 {
			return
		}
		qs, d, s := make([]int8, nb*qk), make([]float32, nb), make([]float32, nb)
		for i := range qs {
			qs[i] = int8(ab[i])
		}
		for b := range nb {
			d[b] = math.Float32frombits(binary.LittleEndian.Uint32(ab[nb*qk+8*b:]))
			s[b] = math.Float32frombits(binary.LittleEndian.Uint32(ab[nb*qk+8*b+4:]))
		}
		for c, kern := range q5Kernels {
			rb := (nb + 1) * kern.bb
			w := make([]byte, 4*rb)
			for i := range w { // wb repeated, shifted a byte each turn
				if len(wb) > 0 {
					w[i] = wb[i%len(wb)] + byte(i/len(wb))
				}
			}
			checkQ5(t, "fuzz", c, w, rb, qs, d, s)
		}
	})
}
