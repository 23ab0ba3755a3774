//go:build amd64 && !purego

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
)

// kTile is one K-quant weight type with a 4×4 tile: its super-block size
// and the offsets of its f16 scales in a super-block.
type kTile struct {
	dt  dtype.Type
	bb  int
	f16 []int
	ref qdot
}

func kTiles(t testing.TB) []kTile {
	all := []kTile{
		{dtype.Q4_K, q4KBytes, []int{0, 2}, dotQ4_KGo},
		{dtype.Q6_K, q6kBlock, []int{208}, dotQ6_KGo},
	}
	var have []kTile
	for _, c := range all {
		if weightTypeOf(c.dt).q44 != nil {
			have = append(have, c)
		}
	}
	needCPU(t, len(have) > 0, "K-quant 4×4 tile (AVX2)")
	return have
}

// tileSentinel fills out before a tile runs, so that a result it leaves
// unwritten shows.
const tileSentinel = 12345.678

// checkTile holds the tile at activation rows i..i+3 of q to the four-row
// dot, bit for bit (two NaNs agree), and fails on the first difference.
// With ref it also holds each pair to the portable one-row dot.
func checkTile(t *testing.T, c kTile, name string, w []byte, rb int, q *q8act, i, k int, ref bool) {
	t.Helper()
	wt := weightTypeOf(c.dt)
	var tile [16]float32
	for j := range tile {
		tile[j] = tileSentinel
	}
	wt.q44(w, rb, q, i, k, &tile)
	for j := range 4 {
		qs, d, s := q.row(aqQ8_K, i+j, k)
		var want [4]float32
		wt.q4(w, rb, qs, d, s, &want)
		for r := range 4 {
			got := tile[4*j+r]
			if !sameF32(got, want[r]) {
				t.Fatalf("%v %s, activation row %d, weight row %d: tile %g (%#x), four-row dot %g (%#x)",
					c.dt, name, i+j, r, got, math.Float32bits(got), want[r], math.Float32bits(want[r]))
			}
			if ref {
				if g := c.ref(w[r*rb:r*rb+rb], qs, d, s); !sameF32(got, g) {
					t.Fatalf("%v %s, activation row %d, weight row %d: tile %g, Go %g", c.dt, name, i+j, r, got, g)
				}
			}
		}
	}
}

// On model-like quantized weights and activations: one to seventeen
// super-blocks, activation rows of very different scales, tiles at
// activation rows 0, 4 and 5 of nine (the strides), rows exactly one row
// apart and further.
func TestKTileIsTheFourRowDot(t *testing.T) {
	for _, c := range kTiles(t) {
		r := rand.New(rand.NewPCG(61, 62))
		for _, k := range []int{256, 512, 1024, 4096 + 256} {
			t.Run(fmt.Sprintf("%v k=%d", c.dt, k), func(t *testing.T) {
				const m = 9
				x := randFloats(r, m*k, 1)
				for i := range k {
					x[2*k+i] *= 1e-6
					x[5*k+i] *= 1e4
					x[7*k+i] *= 1e-30
				}
				q := &q8act{}
				q.need(m * k)
				q.quantize(aqQ8_K, x, m, k)
				rb := k / qkK * c.bb
				w, _ := weights(t, r, c.dt, 4, k)
				padded := make([]byte, 4*(rb+96))
				for row := range 4 {
					copy(padded[row*(rb+96):], w[row*rb:row*rb+rb])
				}
				for _, i0 := range []int{0, 4, 5} {
					checkTile(t, c, fmt.Sprintf("i=%d", i0), w, rb, q, i0, k, true)
					checkTile(t, c, fmt.Sprintf("i=%d, rows %d bytes apart", i0, rb+96), padded, rb+96, q, i0, k, true)
				}
			})
		}
	}
}

// The adversarial cases: weight blocks of random bytes (every scale and
// minimum bit pattern; d and dmin any f16, the special ones half the
// time: subnormal, largest, infinite, NaN), activations of extreme
// scales and bytes, and bsums that quantizeQ8_K never writes.
func TestKTileAdversarial(t *testing.T) {
	f16s := specialF16s
	// Pairs at the int16 edges, to either side: the kernel takes the
	// ones inside, the four-row dot the others.
	edges := []float32{32767, -32768, 32767.9, -32768.9, 32768, -32769, 65535, 1e9, float32(math.Inf(1)), float32(math.NaN()), 0.5, -0.5}
	acts := append(adversarialQ8K(), []struct {
		name string
		fill q8KFill
	}{
		{"non-integer bsums in range", func(r *rand.Rand, qs []int8, d, bs []float32) {
			q8KRandomBytes(r, qs, d, bs)
			for i := range bs {
				bs[i] = float32(r.NormFloat64() * 5000)
			}
		}},
		{"pairs at the int16 edges", func(r *rand.Rand, qs []int8, d, bs []float32) {
			q8KRandomBytes(r, qs, d, bs)
			if r.IntN(2) == 0 {
				p := r.IntN(len(bs) / 2)
				bs[2*p], bs[2*p+1] = edges[r.IntN(len(edges))], 0
			}
		}},
	}...)
	for _, c := range kTiles(t) {
		r := rand.New(rand.NewPCG(63, 64))
		for _, nb := range []int{1, 2, 5} {
			const m = 9
			k := nb * qkK
			rb := nb*c.bb + 32
			w := make([]byte, 4*rb)
			q := &q8act{}
			q.need(m * k)
			for _, a := range acts {
				t.Run(fmt.Sprintf("%v %d blocks %s", c.dt, nb, a.name), func(t *testing.T) {
					for trial := range 24 {
						for i := range w {
							w[i] = byte(r.Uint32())
						}
						if trial%2 == 1 {
							for row := range 4 {
								for b := range nb {
									for _, o := range c.f16 {
										binary.LittleEndian.PutUint16(w[row*rb+b*c.bb+o:], f16s[r.IntN(len(f16s))])
									}
								}
							}
						}
						for j := range m {
							qs, d, bs := q.row(aqQ8_K, j, k)
							if j%3 == 1 { // rows of another kind among them: acts[0], "normal"
								acts[0].fill(r, qs, d, bs)
							} else {
								a.fill(r, qs, d, bs)
							}
						}
						for _, i0 := range []int{0, 4, 5} {
							checkTile(t, c, fmt.Sprintf("trial %d, i=%d", trial, i0), w, rb, q, i0, k, false)
						}
					}
				})
			}
		}
	}
}

// The largest integer sums: every weight at its extreme (Q4_K nibbles 15
// with scales and minimums 63; Q6_K q = 63 with scales −1, then q = 0,
// that is −32, with scales −128), the activations all −128, all 127, or
// mixed.
func TestKTileExtremes(t *testing.T) {
	for _, c := range kTiles(t) {
		const nb, m = 2, 4
		k, rb := nb*qkK, nb*c.bb
		w := make([]byte, 4*rb)
		q := &q8act{}
		q.need(m * k)
		for pattern, fill := range []byte{0xff, 0x00} {
			for i := range w {
				w[i] = fill
			}
			for b := range 4 * nb {
				blk := w[b*c.bb : b*c.bb+c.bb]
				if c.dt == dtype.Q6_K && fill == 0 {
					for i := 192; i < 208; i++ {
						blk[i] = 0x80 // scale −128
					}
				}
				for n, o := range c.f16 {
					binary.LittleEndian.PutUint16(blk[o:], []uint16{0x3c00, 0x3800}[n])
				}
			}
			for n, v := range []int8{-128, 127, -1} {
				for j := range m {
					qs, d, bs := q.row(aqQ8_K, j, k)
					for i := range qs {
						qs[i] = v
						if (v == -1 && i%3 == 0) || j == 3 {
							qs[i] = -128
						}
					}
					d[0], d[1] = 1, 3
					exactBsums(qs, bs)
				}
				checkTile(t, c, fmt.Sprintf("pattern %d, case %d", pattern, n), w, rb, q, 0, k, true)
			}
		}
	}
}

// The Q4_K kernel itself, not its fallback, computes quantized
// activations, and declines bsum pairs outside int16.
func TestDotQ4_Kx4x4VNNITakesQuantizedActivations(t *testing.T) {
	needCPU(t, haveVNNI, "AVX-512 VNNI")
	r := rand.New(rand.NewPCG(65, 66))
	const nb = 3
	k := nb * qkK
	w, _ := weights(t, r, dtype.Q4_K, 4, k)
	q := &q8act{}
	q.need(4 * k)
	q.quantize(aqQ8_K, randFloats(r, 4*k, 100), 4, k)
	var out [16]float32
	call := func() bool {
		return dotQ4_Kx4x4VNNI(unsafe.Pointer(&w[0]), nb*q4KBytes, unsafe.Pointer(&q.qs[0]), k,
			unsafe.Pointer(&q.d[0]), nb*4, unsafe.Pointer(&q.s[0]), nb*64, nb, &out)
	}
	if !call() {
		t.Fatal("the kernel declined quantized activations")
	}
	q.s[3*nb*16+16], q.s[3*nb*16+17] = 32768, 0 // row 3, super-block 1, pair 0
	if call() {
		t.Fatal("the kernel took a bsum pair of 32768")
	}
}

func BenchmarkGEMM_q4_k(b *testing.B) { benchGEMM(b, dtype.Q4_K) }
func BenchmarkGEMM_q6_k(b *testing.B) { benchGEMM(b, dtype.Q6_K) }
