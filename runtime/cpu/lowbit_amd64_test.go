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

// lowTwin is one low-bit weight type's assembly dots and its portable
// reference (lowbit.go).
type lowTwin struct {
	dt     dtype.Type
	bs, bb int      // elements and bytes per block
	aq     actQuant // the activation's form
	f16s   []int    // offsets of the block's f16 scales
	asm    qdot
	x4     func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	ref    qdot
}

func lowTwins(t testing.TB) []lowTwin {
	needCPU(t, haveAVX2, "AVX2+FMA+F16C")
	return []lowTwin{
		{dtype.Q3_K, qkK, q3KBytes, aqQ8_K, []int{108}, dotQ3_KAsm, dotQ3_Kx4Asm, dotQ3_KGo},
		{dtype.Q2_K, qkK, q2KBytes, aqQ8_K, []int{80, 82}, dotQ2_KAsm, dotQ2_Kx4Asm, dotQ2_KGo},
		{dtype.IQ4_XS, qkK, iq4XSBytes, aqQ8_K, []int{0}, dotIQ4_XSAsm, dotIQ4_XSx4Asm, dotIQ4_XSGo},
		{dtype.IQ4_NL, qk, iq4NLBytes, aqQ8_0, []int{0}, dotIQ4_NLAsm, dotIQ4_NLx4Asm, dotIQ4_NLGo},
	}
}

// lowAct is an activation of nb blocks in c's form: qs, one d a block,
// and for Q8_K the bsums (exact unless a test says otherwise).
func (c lowTwin) lowAct(nb int) (qs []int8, d, s []float32) {
	qs, d = make([]int8, nb*c.bs), make([]float32, nb)
	if c.aq == aqQ8_K {
		s = make([]float32, nb*c.bs/16)
	}
	return qs, d, s
}

// checkLow holds the one-row and the four-row assembly to the Go code on
// rows 0..3 of w (rb bytes apart, each exactly its blocks long for the
// one-row forms) and fails on the first bit that differs.
func checkLow(t *testing.T, c lowTwin, name string, w []byte, rb int, qs []int8, d, s []float32) {
	t.Helper()
	n := len(d) * c.bb
	var got4 [4]float32
	c.x4(w, rb, qs, d, s, &got4)
	for r := range 4 {
		row := w[r*rb : r*rb+n]
		want := c.ref(row, qs, d, s)
		if got := c.asm(row, qs, d, s); !sameF32(got, want) {
			t.Fatalf("%v %s row %d: %g (%#x), Go %g (%#x)", c.dt, name, r, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if !sameF32(got4[r], want) {
			t.Fatalf("%v %s row %d of four: %g (%#x), Go %g (%#x)", c.dt, name, r, got4[r], math.Float32bits(got4[r]), want, math.Float32bits(want))
		}
	}
}

// lowBlocks are the numbers of blocks every test runs: one, a few, and
// more than a prefetch distance's worth of Q2_K.
var lowBlocks = []int{1, 2, 3, 17}

// On weights from the reference quantizers and activations from q8act,
// for one to seventeen blocks; the dispatched dots are the assembly.
func TestLowbitTwinsMatchPortable(t *testing.T) {
	for _, c := range lowTwins(t) {
		wt := weightTypeOf(c.dt)
		if wt.q == nil || wt.q4 == nil {
			t.Fatalf("%v: no assembly installed", c.dt)
		}
		r := rand.New(rand.NewPCG(61, 62))
		for _, nb := range append(lowBlocks, 3072/c.bs) {
			k := nb * c.bs
			t.Run(fmt.Sprintf("%v k=%d", c.dt, k), func(t *testing.T) {
				rb := nb * c.bb
				w, _ := weights(t, r, c.dt, 4, k)
				// The same rows further apart than their length.
				pad := rb + 1 + r.IntN(3*c.bb)
				wp := make([]byte, 3*pad+rb)
				for row := range 4 {
					copy(wp[row*pad:], w[row*rb:row*rb+rb])
				}
				q := &q8act{}
				q.need(k)
				for _, scale := range []float64{1, 1e-3, 40, 1e-30, 1e30} {
					q.quantize(c.aq, randFloats(r, k, scale), 1, k)
					qs, d, s := q.row(c.aq, 0, k)
					checkLow(t, c, fmt.Sprintf("scale %g", scale), w, rb, qs, d, s)
					checkLow(t, c, fmt.Sprintf("scale %g, rows %d apart", scale, pad), wp, pad, qs, d, s)
					got, want := wt.q(w[:rb], qs, d, s), c.ref(w[:rb], qs, d, s)
					var got4 [4]float32
					wt.q4(w, rb, qs, d, s, &got4)
					if !sameF32(got, want) || !sameF32(got4[0], want) {
						t.Fatalf("dispatched: %g and %g, Go %g", got, got4[0], want)
					}
				}
			})
		}
	}
}

// lowActs are the adversarial activations: any bytes (−128 included,
// which q8act never makes), all −128, all 127, the three extremes mixed,
// with scales of every kind (q6kExtremeDa: zeros, the largest, the
// smallest and subnormal, infinities, NaN).
var lowActs = []struct {
	name string
	fill func(r *rand.Rand, qs []int8, d []float32)
}{
	{"random bytes", func(r *rand.Rand, qs []int8, d []float32) {
		for i := range qs {
			qs[i] = int8(r.Uint32())
		}
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
	}},
	{"random bytes, extreme d", func(r *rand.Rand, qs []int8, d []float32) {
		for i := range qs {
			qs[i] = int8(r.Uint32())
		}
		for i := range d {
			d[i] = q6kExtremeDa[r.IntN(len(q6kExtremeDa))]
		}
	}},
	{"all −128", func(r *rand.Rand, qs []int8, d []float32) {
		for i := range qs {
			qs[i] = -128
		}
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
	}},
	{"all 127", func(r *rand.Rand, qs []int8, d []float32) {
		for i := range qs {
			qs[i] = 127
		}
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
	}},
	{"−128, 127, −127 mixed, d any bits", func(r *rand.Rand, qs []int8, d []float32) {
		for i := range qs {
			qs[i] = []int8{-128, 127, -127}[r.IntN(3)]
		}
		for i := range d {
			d[i] = math.Float32frombits(r.Uint32())
		}
	}},
}

// Every byte of the weight blocks random (all scale and minimum bits,
// hmask, nibbles), half the time with f16 scales of every kind
// (specialF16s: zeros, subnormals, the largest, infinities, NaNs), against
// the adversarial activations; rows a random gap apart.
func TestLowbitTwinsAdversarial(t *testing.T) {
	for _, c := range lowTwins(t) {
		r := rand.New(rand.NewPCG(63, 64))
		for _, nb := range lowBlocks {
			qs, d, s := c.lowAct(nb)
			for _, a := range lowActs {
				t.Run(fmt.Sprintf("%v %d blocks %s", c.dt, nb, a.name), func(t *testing.T) {
					for trial := range 30 {
						rb := nb*c.bb + r.IntN(2*c.bb)
						w := make([]byte, 3*rb+nb*c.bb)
						for i := range w {
							w[i] = byte(r.Uint32())
						}
						if trial%2 == 1 {
							for row := range 4 {
								for b := range nb {
									for _, o := range c.f16s {
										binary.LittleEndian.PutUint16(w[row*rb+b*c.bb+o:], specialF16s[r.IntN(len(specialF16s))])
									}
								}
							}
						}
						a.fill(r, qs, d)
						if s != nil {
							exactBsums(qs, s)
						}
						checkLow(t, c, fmt.Sprintf("trial %d, rows %d apart", trial, rb), w, rb, qs, d, s)
					}
				})
			}
		}
	}
}

// Q2_K reads the bsums, and converts them as Go does: fractions, values
// beyond int32, any bits (NaN, infinities) give the Go code's answer.
func TestLowbitQ2_KInexactBsums(t *testing.T) {
	c := lowTwins(t)[1]
	r := rand.New(rand.NewPCG(65, 66))
	for _, nb := range lowBlocks {
		qs, d, s := c.lowAct(nb)
		rb := nb * c.bb
		w := make([]byte, 4*rb)
		for trial := range 40 {
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			lowActs[0].fill(r, qs, d)
			exactBsums(qs, s)
			for i := range s {
				switch r.IntN(4) {
				case 0:
					s[i] += float32(r.Float64() - 0.5)
				case 1:
					s[i] = float32(r.NormFloat64() * 3e9)
				case 2:
					s[i] = math.Float32frombits(r.Uint32())
				}
			}
			checkLow(t, c, fmt.Sprintf("%d blocks, trial %d", nb, trial), w, rb, qs, d, s)
		}
	}
}

// The largest integer sums, where a VPMADDUBSW could saturate if the
// bounds in lowbit_amd64.s were wrong: every byte 0x00 (Q3_K: q = −4 and
// scale −32; IQ4: T = −127, IQ4_XS's scale −32) or 0xff (q and scales at
// their maximum, T = 113), each f16 scale 1, against activations of −128,
// 127 and a mixture.
func TestLowbitTwinsExtremes(t *testing.T) {
	for _, c := range lowTwins(t) {
		for _, fill := range []byte{0x00, 0xff, 0x88} {
			for _, v := range []int8{-128, 127, -1} {
				nb := 3
				rb := nb * c.bb
				w := make([]byte, 4*rb)
				for i := range w {
					w[i] = fill
				}
				for b := range 4 * nb {
					for _, o := range c.f16s {
						binary.LittleEndian.PutUint16(w[b*c.bb+o:], 0x3c00)
					}
				}
				qs, d, s := c.lowAct(nb)
				for i := range qs {
					qs[i] = v
					if v == -1 && i%3 == 0 {
						qs[i] = -128
					}
				}
				for i := range d {
					d[i] = float32(i + 1)
				}
				if s != nil {
					exactBsums(qs, s)
				}
				checkLow(t, c, fmt.Sprintf("bytes %#x, qs %d", fill, v), w, rb, qs, d, s)
			}
		}
	}
}

// No blocks dot to +0, and the four-row forms clear out.
func TestLowbitTwinsEmpty(t *testing.T) {
	for _, c := range lowTwins(t) {
		if got := c.asm(nil, nil, nil, nil); math.Float32bits(got) != 0 {
			t.Errorf("%v: %g", c.dt, got)
		}
		out := [4]float32{1, 2, 3, 4}
		c.x4(nil, 0, nil, nil, nil, &out)
		if out != [4]float32{} {
			t.Errorf("%v four rows: %v", c.dt, out)
		}
	}
}

// A slice too short for the blocks panics in the wrapper, before the
// assembly could read past it.
func TestLowbitTwinsShortSlices(t *testing.T) {
	for _, c := range lowTwins(t) {
		w, w4 := make([]byte, 2*c.bb), make([]byte, 4*c.bb)
		qs, d, s := c.lowAct(2)
		cases := map[string]func(){
			"weights":             func() { c.asm(w[:2*c.bb-1], qs, d, s) },
			"activation":          func() { c.asm(w, qs[:2*c.bs-1], d, s) },
			"four-row weights":    func() { c.x4(w4[:4*c.bb-1], c.bb, qs[:c.bs], d[:1], s, new([4]float32)) },
			"four-row negative":   func() { c.x4(w4, -c.bb, qs, d, s, new([4]float32)) },
			"four-row activation": func() { c.x4(w4, c.bb, qs[:c.bs-1], d[:1], s, new([4]float32)) },
		}
		if c.dt == dtype.Q2_K { // the only one that reads the bsums
			cases["bsums"] = func() { c.asm(w, qs, d, s[:len(s)-1]) }
		}
		for name, f := range cases {
			mustPanic(t, fmt.Sprintf("%v %s", c.dt, name), f)
		}
	}
}

// BenchmarkLowbitDots times each type's dots at k = 1024 and 3072, Go
// against AVX2, one row and four (the Go four-row is four one-row calls),
// in weight bytes per second.
func BenchmarkLowbitDots(b *testing.B) {
	for _, c := range lowTwins(b) {
		for _, k := range []int{1024, 3072} {
			r := rand.New(rand.NewPCG(1, 2))
			w, _ := weights(b, r, c.dt, 4, k)
			rb := k / c.bs * c.bb
			q := &q8act{}
			q.need(k)
			q.quantize(c.aq, randFloats(r, k, 1), 1, k)
			qs, d, s := q.row(c.aq, 0, k)
			var sink float32
			for _, impl := range []struct {
				name string
				f    qdot
			}{{"go", c.ref}, {"avx2", c.asm}} {
				b.Run(fmt.Sprintf("%v/k=%d/%s", c.dt, k, impl.name), func(b *testing.B) {
					b.SetBytes(int64(rb))
					for range b.N {
						sink += impl.f(w[:rb], qs, d, s)
					}
				})
			}
			b.Run(fmt.Sprintf("%v/k=%d/go-x4", c.dt, k), func(b *testing.B) {
				b.SetBytes(int64(4 * rb))
				for range b.N {
					for row := range 4 {
						sink += c.ref(w[row*rb:row*rb+rb], qs, d, s)
					}
				}
			})
			b.Run(fmt.Sprintf("%v/k=%d/avx2-x4", c.dt, k), func(b *testing.B) {
				var out [4]float32
				b.SetBytes(int64(4 * rb))
				for range b.N {
					c.x4(w, rb, qs, d, s, &out)
				}
				sink += out[0]
			})
			_ = sink
		}
	}
}
