//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// vnniKTwin is one type's AVX-512 VNNI four-row dot, the AVX2 four-row
// dot it replaces, and the portable reference both must match bit for
// bit.
type vnniKTwin struct {
	dt   dtype.Type
	bb   int // bytes per super-block
	f16  int // offset of the block's f16 d
	vnni func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	avx2 func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	ref  qdot
}

func vnniKTwins(t testing.TB) []vnniKTwin {
	needCPU(t, haveVNNI, "AVX-512 F/BW/VL with VNNI")
	return []vnniKTwin{
		{dtype.Q3_K, q3KBytes, 108, dotQ3_Kx4VNNIAsm, dotQ3_Kx4Asm, dotQ3_KGo},
		{dtype.Q6_K, q6kBlock, 208, dotQ6_Kx4VNNIAsm, dotQ6_Kx4Asm, dotQ6_KGo},
	}
}

// checkVNNIK holds the VNNI four-row dot to the Go code on rows 0..3 of w
// (rb bytes apart) and fails on the first bit that differs.
func checkVNNIK(t *testing.T, c vnniKTwin, name string, w []byte, rb int, qs []int8, d, s []float32) {
	t.Helper()
	n := len(d) * c.bb
	got := [4]float32{1, 2, 3, 4}
	c.vnni(w, rb, qs, d, s, &got)
	for r := range 4 {
		want := c.ref(w[r*rb:r*rb+n], qs, d, s)
		if !sameF32(got[r], want) {
			t.Fatalf("%v %s row %d: %g (%#x), Go %g (%#x)", c.dt, name, r, got[r], math.Float32bits(got[r]), want, math.Float32bits(want))
		}
	}
}

// vnniKAct is an activation of nb super-blocks: qs, d, and the bsums
// quantizeQ8_K would store (which neither type reads).
func vnniKAct(nb int) (qs []int8, d, s []float32) {
	return make([]int8, nb*qkK), make([]float32, nb), make([]float32, nb*qkK/16)
}

func TestVNNIKDotsAreInstalled(t *testing.T) {
	for _, c := range vnniKTwins(t) {
		got := reflect.ValueOf(weightTypeOf(c.dt).q4).Pointer()
		if got != reflect.ValueOf(c.vnni).Pointer() {
			t.Errorf("%v: the four-row dot in the table is not the VNNI one", c.dt)
		}
	}
}

// On weights from the reference quantizer and activations from q8act, at
// one to seventeen super-blocks and the model's widths (1024, 3072), rows
// exactly a row apart and further.
func TestVNNIKDotsMatchPortable(t *testing.T) {
	for _, c := range vnniKTwins(t) {
		r := rand.New(rand.NewPCG(71, 72))
		for _, nb := range append(lowBlocks, 1024/qkK, 3072/qkK) {
			k := nb * qkK
			t.Run(fmt.Sprintf("%v k=%d", c.dt, k), func(t *testing.T) {
				rb := nb * c.bb
				w, _ := weights(t, r, c.dt, 4, k)
				pad := rb + 1 + r.IntN(3*c.bb)
				wp := make([]byte, 3*pad+rb)
				for row := range 4 {
					copy(wp[row*pad:], w[row*rb:row*rb+rb])
				}
				q := &q8act{}
				q.need(k)
				for _, scale := range []float64{1, 1e-3, 40, 1e-30, 1e30} {
					q.quantize(aqQ8_K, randFloats(r, k, scale), 1, k)
					qs, d, s := q.row(aqQ8_K, 0, k)
					checkVNNIK(t, c, fmt.Sprintf("scale %g", scale), w, rb, qs, d, s)
					checkVNNIK(t, c, fmt.Sprintf("scale %g, rows %d apart", scale, pad), wp, pad, qs, d, s)
				}
			})
		}
	}
}

// Every byte of the weight blocks random (hmask, packed bits, every scale
// pattern), half the time with f16 d of every kind (specialF16s: zeros,
// subnormals, the largest, infinities, NaNs), against the adversarial
// activations of lowbit_amd64_test.go: any bytes, all −128, all 127, the
// extremes mixed, scales of every kind (q6kExtremeDa: ±0, the largest,
// the smallest and subnormal, infinities, NaN) and of any bits; rows a
// random gap apart.
func TestVNNIKDotsAdversarial(t *testing.T) {
	for _, c := range vnniKTwins(t) {
		r := rand.New(rand.NewPCG(73, 74))
		for _, nb := range lowBlocks {
			qs, d, s := vnniKAct(nb)
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
									binary.LittleEndian.PutUint16(w[row*rb+b*c.bb+c.f16:], specialF16s[r.IntN(len(specialF16s))])
								}
							}
						}
						a.fill(r, qs, d)
						exactBsums(qs, s)
						checkVNNIK(t, c, fmt.Sprintf("trial %d, rows %d apart", trial, rb), w, rb, qs, d, s)
					}
				})
			}
		}
	}
}

// Q6_K's crafted blocks (q6k_amd64_test.go: the largest |sumi|, q = 63
// with scales ±127/−128, f16 d subnormal, largest, infinite, NaN, zero)
// against its crafted activations, every kind mixed block by block.
func TestVNNIKDotsQ6_KCrafted(t *testing.T) {
	c := vnniKTwins(t)[1]
	r := rand.New(rand.NewPCG(75, 76))
	for trial := range 300 {
		nb := 1 + r.IntN(20)
		rb := nb*q6kBlock + r.IntN(500)
		w := make([]byte, 3*rb+nb*q6kBlock)
		for row := range 4 {
			for b := range nb {
				q6kBlocks[r.IntN(len(q6kBlocks))].fill(r, w[row*rb+b*q6kBlock:][:q6kBlock])
			}
		}
		qs, d, s := vnniKAct(nb)
		for b := range nb {
			d[b] = q6kActs[r.IntN(len(q6kActs))].fill(r, qs[b*qkK:b*qkK+qkK])
		}
		checkVNNIK(t, c, fmt.Sprintf("trial %d, %d blocks", trial, nb), w, rb, qs, d, s)
	}
}

// The largest integer sums, where a packed word could saturate if the
// bounds in zvnni_k_amd64.s were wrong: every byte 0x00 (Q3_K: q = −4,
// scale −32; Q6_K: q = 0, scale 0), 0xff (q and the Q3_K scale at their
// maximum, Q6_K scale −1), 0x80 (Q6_K: q−32 = −32 and 0, scale −128),
// 0x88 or 0x7f, each f16 d one, against activations of −128, 127 and a
// mixture.
func TestVNNIKDotsExtremes(t *testing.T) {
	for _, c := range vnniKTwins(t) {
		for _, fill := range []byte{0x00, 0xff, 0x80, 0x88, 0x7f} {
			for _, v := range []int8{-128, 127, -1} {
				nb := 3
				rb := nb * c.bb
				w := make([]byte, 4*rb)
				for i := range w {
					w[i] = fill
				}
				for b := range 4 * nb {
					binary.LittleEndian.PutUint16(w[b*c.bb+c.f16:], 0x3c00)
				}
				qs, d, s := vnniKAct(nb)
				for i := range qs {
					qs[i] = v
					if v == -1 && i%3 == 0 {
						qs[i] = -128
					}
				}
				for i := range d {
					d[i] = float32(i + 1)
				}
				exactBsums(qs, s)
				checkVNNIK(t, c, fmt.Sprintf("bytes %#x, qs %d", fill, v), w, rb, qs, d, s)
			}
		}
	}
}

// No blocks clear out; slices too short for the blocks (or a negative
// row stride) panic in the wrapper, before the assembly could read past
// them.
func TestVNNIKDotsEdges(t *testing.T) {
	for _, c := range vnniKTwins(t) {
		out := [4]float32{1, 2, 3, 4}
		c.vnni(nil, 0, nil, nil, nil, &out)
		if out != [4]float32{} {
			t.Errorf("%v: no blocks gave %v", c.dt, out)
		}
		w4 := make([]byte, 8*c.bb)
		qs, d, s := vnniKAct(2)
		for name, f := range map[string]func(){
			"weights":         func() { c.vnni(w4[:8*c.bb-1], 2*c.bb, qs, d, s, new([4]float32)) },
			"negative stride": func() { c.vnni(w4, -c.bb, qs[:qkK], d[:1], s, new([4]float32)) },
			"activation":      func() { c.vnni(w4, 2*c.bb, qs[:2*qkK-1], d, s, new([4]float32)) },
		} {
			mustPanic(t, fmt.Sprintf("%v %s", c.dt, name), f)
		}
	}
}

// BenchmarkVNNIKDots times the four-row dots at k = 1024 and 3072, AVX2
// against AVX-512 VNNI, in weight bytes (four rows) per second.
func BenchmarkVNNIKDots(b *testing.B) {
	for _, c := range vnniKTwins(b) {
		for _, k := range []int{1024, 3072} {
			r := rand.New(rand.NewPCG(1, 2))
			w, _ := weights(b, r, c.dt, 4, k)
			rb := k / qkK * c.bb
			q := &q8act{}
			q.need(k)
			q.quantize(aqQ8_K, randFloats(r, k, 1), 1, k)
			qs, d, s := q.row(aqQ8_K, 0, k)
			for _, impl := range []struct {
				name string
				f    func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
			}{{"avx2", c.avx2}, {"vnni", c.vnni}} {
				b.Run(fmt.Sprintf("%v/k=%d/%s", c.dt, k, impl.name), func(b *testing.B) {
					var out [4]float32
					b.SetBytes(int64(4 * rb))
					for range b.N {
						impl.f(w, rb, qs, d, s, &out)
					}
				})
			}
		}
	}
}
