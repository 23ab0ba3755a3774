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

// kTwin is one K-quant weight type's assembly dots and the Go reference.
type kTwin struct {
	dt  dtype.Type
	bb  int // bytes per super-block
	asm qdot
	x4  func(w []byte, rb int, qs []int8, d, s []float32, out *[4]float32)
	ref qdot
}

func kTwins(t testing.TB) []kTwin {
	needCPU(t, haveAVX2, "AVX2+FMA+F16C")
	return []kTwin{
		{dtype.Q4_K, q4KBytes, dotQ4_KAsm, dotQ4_Kx4Asm, dotQ4_KGo},
		{dtype.Q5_K, q5KBytes, dotQ5_KAsm, dotQ5_Kx4Asm, dotQ5_KGo},
	}
}

// sameF32 is bit equality, except that any two NaNs agree (their payloads
// depend on which operand a multiply saw first).
func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// checkK holds the one-row and the four-row assembly to the Go code on
// rows 0..3 of w (rb bytes apart) and fails on the first bit that differs.
func checkK(t *testing.T, c kTwin, name string, w []byte, rb int, qs []int8, d, bs []float32) {
	t.Helper()
	var got4 [4]float32
	c.x4(w, rb, qs, d, bs, &got4)
	for r := range 4 {
		row := w[r*rb : r*rb+rb]
		want := c.ref(row, qs, d, bs)
		if got := c.asm(row, qs, d, bs); !sameF32(got, want) {
			t.Fatalf("%v %s row %d: %g (%#x), Go %g (%#x)", c.dt, name, r, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if !sameF32(got4[r], want) {
			t.Fatalf("%v %s row %d of four: %g (%#x), Go %g (%#x)", c.dt, name, r, got4[r], math.Float32bits(got4[r]), want, math.Float32bits(want))
		}
	}
}

// exactBsums sets bs to what quantizeQ8_K stores: Σqs per 16, in float32.
func exactBsums(qs []int8, bs []float32) {
	for j := range bs {
		var s int32
		for _, v := range qs[16*j : 16*j+16] {
			s += int32(v)
		}
		bs[j] = float32(s)
	}
}

// On quantized model-like weights and activations, for one to seventeen
// super-blocks, with rows further apart than their length.
func TestDotKTwinsMatchPortable(t *testing.T) {
	for _, c := range kTwins(t) {
		r := rand.New(rand.NewPCG(41, 42))
		for _, k := range []int{256, 512, 1024, 4096 + 256} {
			t.Run(fmt.Sprintf("%v k=%d", c.dt, k), func(t *testing.T) {
				rb := k / qkK * c.bb
				w, _ := weights(t, r, c.dt, 5, k)
				q := &q8act{}
				q.need(k)
				for _, scale := range []float64{1, 1e-3, 40} {
					q.quantize(aqQ8_K, randFloats(r, k, scale), 1, k)
					qs, d, bs := q.row(aqQ8_K, 0, k)
					checkK(t, c, fmt.Sprintf("scale %g", scale), w[rb:], rb, qs, d, bs)
				}
			})
		}
	}
}

// The adversarial cases: every byte of the weight blocks random (all
// scale and minimum bit patterns, d and dmin any f16 including subnormals,
// infinities and NaNs), activations of extreme scales and bytes, and
// bsums that are not what quantizeQ8_K would store.
// q8KFill writes an activation (qs, d, bsums) for the K-quant tests.
type q8KFill func(r *rand.Rand, qs []int8, d, bs []float32)

// specialF16s are the f16 scales the adversarial tests plant in weight
// blocks: zeros, subnormals, the largest, infinities, NaNs, one.
var specialF16s = []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x8200, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe12, 0x3c00}

// q8KRandomBytes is an activation of any bytes (−128 included), normal
// scales and exact bsums.
func q8KRandomBytes(r *rand.Rand, qs []int8, d, bs []float32) {
	for i := range qs {
		qs[i] = int8(r.Uint32())
	}
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	exactBsums(qs, bs)
}

// adversarialQ8K is the activations the K-quant dots and tiles are held
// to their references on: quantized ones of extreme scales (a super-block
// of zeros half the time), random and extreme bytes, random d bits, and
// bsums quantizeQ8_K never writes (fractional, beyond int32, any bits).
func adversarialQ8K() []struct {
	name string
	fill q8KFill
} {
	quantized := func(scale float64) q8KFill {
		return func(r *rand.Rand, qs []int8, d, bs []float32) {
			x := randFloats(r, len(qs), scale)
			if r.IntN(2) == 0 { // one block all zeros: d = 0
				clear(x[:qkK])
			}
			quantizeQ8_K(x, qs, d, bs)
		}
	}
	return []struct {
		name string
		fill q8KFill
	}{
		{"normal", quantized(1)},
		{"tiny", quantized(1e-36)}, // d_a near float32's smallest normals
		{"huge", quantized(1e36)},  // d_a·f16(d)·sumi overflows
		{"subnormal", quantized(1e-43)},
		{"random qs, -128 included", q8KRandomBytes},
		{"extreme qs", func(r *rand.Rand, qs []int8, d, bs []float32) {
			for i := range qs {
				qs[i] = []int8{-128, 127, -127}[r.IntN(3)]
			}
			for i := range d {
				d[i] = math.Float32frombits(r.Uint32())
			}
			exactBsums(qs, bs)
		}},
		{"random d bits", func(r *rand.Rand, qs []int8, d, bs []float32) {
			q8KRandomBytes(r, qs, d, bs)
			for i := range d {
				d[i] = math.Float32frombits(r.Uint32())
			}
		}},
		{"inexact bsums", func(r *rand.Rand, qs []int8, d, bs []float32) {
			q8KRandomBytes(r, qs, d, bs)
			for i := range bs {
				switch r.IntN(4) {
				case 0:
					bs[i] += float32(r.Float64() - 0.5)
				case 1:
					bs[i] = float32(r.NormFloat64() * 3e9) // beyond int32
				case 2:
					bs[i] = math.Float32frombits(r.Uint32())
				}
			}
		}},
	}
}

func TestDotKTwinsAdversarial(t *testing.T) {
	f16s := specialF16s
	acts := adversarialQ8K()
	for _, c := range kTwins(t) {
		r := rand.New(rand.NewPCG(43, 44))
		for _, nb := range []int{1, 2, 5} {
			k := nb * qkK
			rb := nb*c.bb + 64
			w := make([]byte, 4*rb)
			qs, d, bs := make([]int8, k), make([]float32, nb), make([]float32, 16*nb)
			for _, a := range acts {
				t.Run(fmt.Sprintf("%v %d blocks %s", c.dt, nb, a.name), func(t *testing.T) {
					for trial := range 40 {
						for i := range w {
							w[i] = byte(r.Uint32())
						}
						if trial%2 == 1 { // the special f16 values for d and dmin
							for row := range 4 {
								for b := range nb {
									o := row*rb + b*c.bb
									binary.LittleEndian.PutUint16(w[o:], f16s[r.IntN(len(f16s))])
									binary.LittleEndian.PutUint16(w[o+2:], f16s[r.IntN(len(f16s))])
								}
							}
						}
						a.fill(r, qs, d, bs)
						checkK(t, c, fmt.Sprintf("trial %d", trial), w, rb, qs, d, bs)
					}
				})
			}
		}
	}
}

// The largest integer sums: every weight at its maximum, every scale and
// minimum 63, every activation −128 or 127, and their mixture.
func TestDotKTwinsExtremes(t *testing.T) {
	for _, c := range kTwins(t) {
		nb := 2
		rb := nb * c.bb
		w := make([]byte, 4*rb)
		for i := range w {
			w[i] = 0xff
		}
		for b := range 4 * nb {
			binary.LittleEndian.PutUint16(w[b*c.bb:], 0x3c00)   // d = 1
			binary.LittleEndian.PutUint16(w[b*c.bb+2:], 0x3800) // dmin = 0.5
		}
		qs, d, bs := make([]int8, nb*qkK), make([]float32, nb), make([]float32, 16*nb)
		for _, v := range []int8{-128, 127, -1} {
			for i := range qs {
				qs[i] = v
				if v == -1 && i%3 == 0 {
					qs[i] = -128
				}
			}
			d[0], d[1] = 1, 3
			exactBsums(qs, bs)
			checkK(t, c, fmt.Sprintf("qs %d", v), w, rb, qs, d, bs)
		}
	}
}

// A nil or empty activation dots to +0, as the Go loop's.
func TestDotKTwinsEmpty(t *testing.T) {
	for _, c := range kTwins(t) {
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

// FuzzDotQ4_K holds the Q4_K and Q5_K assembly, one row and four, to the
// Go code. wb is the weight bytes (as many whole Q4_K blocks as it holds,
// at most four; the Q5_K row reads the same bytes as its blocks, padded);
// ab the activation: qs bytes, then the d bits, then, where long enough,
// the bsums' bits (exact sums otherwise).
func FuzzDotQ4_K(f *testing.F) {
	twins := kTwins(f)
	f.Add(make([]byte, q4KBytes), make([]byte, qkK))
	f.Add(binary.LittleEndian.AppendUint16([]byte{0x00, 0x7c}, 0xfc00), []byte{0x80, 0x7f})
	seed := make([]byte, 2*q5KBytes)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed, seed)
	f.Fuzz(func(t *testing.T, wb, ab []byte) {
		nb := min(max(len(wb)/q4KBytes, 1), 4)
		k := nb * qkK
		qs, d, bs := make([]int8, k), make([]float32, nb), make([]float32, 16*nb)
		for i := range qs {
			if i < len(ab) {
				qs[i] = int8(ab[i])
			}
		}
		rest := ab[min(len(ab), k):]
		for i := range d {
			d[i] = 1
			if len(rest) >= 4 {
				d[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest))
				rest = rest[4:]
			}
		}
		exactBsums(qs, bs)
		for i := range bs {
			if len(rest) < 4 {
				break
			}
			bs[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest))
			rest = rest[4:]
		}
		for _, c := range twins {
			// Four rows: wb, then wb with each byte turned three ways.
			rb := nb * c.bb
			w := make([]byte, 4*rb)
			for r := range 4 {
				for i := range rb {
					var v byte
					if len(wb) > 0 {
						v = wb[i%len(wb)]
					}
					w[r*rb+i] = v ^ byte(r*0x5b) + byte(r*(i>>3))
				}
			}
			checkK(t, c, "fuzz", w, rb, qs, d, bs)
		}
	})
}

// BenchmarkDotK times the one-row and four-row dots on one 4096-wide row
// (four for x4), Go against AVX2, in weight bytes per second.
func BenchmarkDotK(b *testing.B) {
	const k = 4096
	for _, c := range kTwins(b) {
		r := rand.New(rand.NewPCG(1, 2))
		w, _ := weights(b, r, c.dt, 4, k)
		rb := k / qkK * c.bb
		q := &q8act{}
		q.need(k)
		q.quantize(aqQ8_K, randFloats(r, k, 1), 1, k)
		qs, d, bs := q.row(aqQ8_K, 0, k)
		var sink float32
		for _, impl := range []struct {
			name string
			f    qdot
		}{{"go", c.ref}, {"avx2", c.asm}} {
			b.Run(fmt.Sprintf("%v/%s", c.dt, impl.name), func(b *testing.B) {
				b.SetBytes(int64(rb))
				for range b.N {
					sink += impl.f(w, qs, d, bs)
				}
			})
		}
		b.Run(fmt.Sprintf("%v/avx2x4", c.dt), func(b *testing.B) {
			var out [4]float32
			b.SetBytes(int64(4 * rb))
			for range b.N {
				c.x4(w, rb, qs, d, bs, &out)
			}
			sink += out[0]
		})
		_ = sink
	}
}
