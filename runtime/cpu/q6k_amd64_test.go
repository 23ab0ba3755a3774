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

// q6kSame: the same bits, or both NaN (the Go code's h2f and F16C, and
// the operand order of a NaN-producing multiply, may pick other payloads).
func q6kSame(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// checkQ6K holds the one-row and four-row assembly to dotQ6_KGo on rows
// 0..3 of w (rb bytes apart, each nb blocks) against one activation.
func checkQ6K(t *testing.T, name string, w []byte, rb int, qs []int8, d []float32) {
	t.Helper()
	n := len(d) * q6kBlock
	var want [4]float32
	for j := range want {
		row := w[j*rb : j*rb+n]
		want[j] = dotQ6_KGo(row, qs, d, nil)
		if got := dotQ6_KAsm(row, qs, d, nil); !q6kSame(got, want[j]) {
			t.Errorf("%s row %d: asm %g (%#x), Go %g (%#x)", name, j, got, math.Float32bits(got), want[j], math.Float32bits(want[j]))
		}
	}
	var got [4]float32
	dotQ6_Kx4Asm(w, rb, qs, d, nil, &got)
	for j := range got {
		if !q6kSame(got[j], want[j]) {
			t.Errorf("%s four-row, row %d: asm %g (%#x), Go %g (%#x)", name, j, got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
		}
	}
}

// q6kExtremeDa are activation scales at the ends of float32: with the
// weight's f16 d they over- and underflow the scale product and sumi's.
var q6kExtremeDa = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1,
	math.MaxFloat32, -math.MaxFloat32, 1e30, 1e-30,
	math.SmallestNonzeroFloat32, 1e-40, -1e-42, 1.1754942e-38,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// q6kBlocks are the ways the test fills one weight super-block: its ql,
// qh and scale bits, and its f16 d.
var q6kBlocks = []struct {
	name string
	fill func(r *rand.Rand, blk []byte)
}{
	{"random bytes", func(r *rand.Rand, blk []byte) { q6kFill(r, blk) }},
	{"random bytes, finite d", func(r *rand.Rand, blk []byte) {
		q6kFill(r, blk)
		blk[209] &^= 0x40 // exponent below 31: no Inf or NaN
	}},
	{"largest |sumi|: q=0, scale −128", func(r *rand.Rand, blk []byte) {
		clear(blk[:192])
		for j := 192; j < 208; j++ {
			blk[j] = 0x80
		}
		binary.LittleEndian.PutUint16(blk[208:], uint16(r.Uint32()))
	}},
	{"q=63, scales ±127/−128", func(r *rand.Rand, blk []byte) {
		for j := range blk[:192] {
			blk[j] = 0xff
		}
		for j := 192; j < 208; j++ {
			blk[j] = []byte{0x7f, 0x80, 0x81}[r.IntN(3)]
		}
		binary.LittleEndian.PutUint16(blk[208:], 0x3c00) // 1
	}},
	{"f16 d subnormal", func(r *rand.Rand, blk []byte) {
		q6kFill(r, blk)
		binary.LittleEndian.PutUint16(blk[208:], uint16(r.IntN(0x400))|uint16(r.IntN(2))<<15)
	}},
	{"f16 d largest", func(r *rand.Rand, blk []byte) {
		q6kFill(r, blk)
		binary.LittleEndian.PutUint16(blk[208:], 0x7bff|uint16(r.IntN(2))<<15)
	}},
	{"f16 d Inf or NaN", func(r *rand.Rand, blk []byte) {
		q6kFill(r, blk)
		binary.LittleEndian.PutUint16(blk[208:], 0x7c00|uint16(r.IntN(0x400))|uint16(r.IntN(2))<<15)
	}},
	{"f16 d zero", func(r *rand.Rand, blk []byte) {
		q6kFill(r, blk)
		binary.LittleEndian.PutUint16(blk[208:], uint16(r.IntN(2))<<15)
	}},
}

func q6kFill(r *rand.Rand, b []byte) {
	for j := range b {
		b[j] = byte(r.Uint32())
	}
}

// q6kActs are the ways the test fills one activation super-block's qs
// (the full int8 range, −128 included, which quantizeQ8_K never makes)
// and d.
var q6kActs = []struct {
	name string
	fill func(r *rand.Rand, qs []int8) float32
}{
	{"random qs, d≈1/127", func(r *rand.Rand, qs []int8) float32 {
		for j := range qs {
			qs[j] = int8(r.Uint32())
		}
		return float32(r.NormFloat64() / 127)
	}},
	{"random qs, extreme d", func(r *rand.Rand, qs []int8) float32 {
		for j := range qs {
			qs[j] = int8(r.Uint32())
		}
		return q6kExtremeDa[r.IntN(len(q6kExtremeDa))]
	}},
	{"qs all −128", func(r *rand.Rand, qs []int8) float32 {
		for j := range qs {
			qs[j] = -128
		}
		return float32(r.NormFloat64())
	}},
	{"qs all 127", func(r *rand.Rand, qs []int8) float32 {
		for j := range qs {
			qs[j] = 127
		}
		return float32(r.NormFloat64())
	}},
	{"qs zero", func(r *rand.Rand, qs []int8) float32 {
		clear(qs)
		return float32(r.NormFloat64())
	}},
}

func TestDotQ6_KAsmMatchesGo(t *testing.T) {
	needCPU(t, haveAVX2, "AVX2")
	if wt := weightTypeOf(dtype.Q6_K); wt.q4 == nil {
		t.Fatal("no four-row Q6_K dot installed")
	}
	r := rand.New(rand.NewPCG(6, 6))
	t.Run("quantized weights and activations", func(t *testing.T) {
		for _, k := range []int{256, 512, 1024, 4096 + 256} {
			for _, scale := range []float64{1, 1e-30, 1e30} {
				rb := k / qkK * q6kBlock
				w, _ := weights(t, r, dtype.Q6_K, 4, k)
				q := &q8act{}
				q.need(k)
				q.quantize(aqQ8_K, randFloats(r, k, scale), 1, k)
				qs, d, s := q.row(aqQ8_K, 0, k)
				checkQ6K(t, fmt.Sprintf("k=%d scale %g", k, scale), w, rb, qs, d)
				// The dispatched forms are these.
				if got, want := dotQ6_K(w[:rb], qs, d, s), dotQ6_KGo(w[:rb], qs, d, s); !q6kSame(got, want) {
					t.Errorf("k=%d: dotQ6_K %g, Go %g", k, got, want)
				}
			}
		}
	})
	for _, wb := range q6kBlocks {
		for _, ab := range q6kActs {
			t.Run(wb.name+" against "+ab.name, func(t *testing.T) {
				for trial := range 40 {
					nb := 1 + r.IntN(17)
					// Rows further apart than their length: a gap of a few
					// blocks and an odd byte count between them.
					rb := nb*q6kBlock + r.IntN(3)*q6kBlock + r.IntN(64)
					w := make([]byte, 3*rb+nb*q6kBlock)
					q6kFill(r, w)
					for row := range 4 {
						for b := range nb {
							wb.fill(r, w[row*rb+b*q6kBlock:][:q6kBlock])
						}
					}
					qs, d := make([]int8, nb*qkK), make([]float32, nb)
					for b := range nb {
						d[b] = ab.fill(r, qs[b*qkK:b*qkK+qkK])
					}
					checkQ6K(t, fmt.Sprintf("trial %d, %d blocks, rb %d", trial, nb, rb), w, rb, qs, d)
				}
			})
		}
	}
	t.Run("blocks of every kind mixed", func(t *testing.T) {
		for trial := range 300 {
			nb := 1 + r.IntN(20)
			rb := nb*q6kBlock + r.IntN(500)
			w := make([]byte, 3*rb+nb*q6kBlock)
			for row := range 4 {
				for b := range nb {
					q6kBlocks[r.IntN(len(q6kBlocks))].fill(r, w[row*rb+b*q6kBlock:][:q6kBlock])
				}
			}
			qs, d := make([]int8, nb*qkK), make([]float32, nb)
			for b := range nb {
				d[b] = q6kActs[r.IntN(len(q6kActs))].fill(r, qs[b*qkK:b*qkK+qkK])
			}
			checkQ6K(t, fmt.Sprintf("trial %d", trial), w, rb, qs, d)
		}
	})
	t.Run("no blocks is zero", func(t *testing.T) {
		var out [4]float32
		out[2] = 7
		dotQ6_Kx4Asm(nil, 0, nil, nil, nil, &out)
		if got := dotQ6_KAsm(nil, nil, nil, nil); got != 0 || out != [4]float32{} {
			t.Errorf("one-row %g, four-row %v", got, out)
		}
	})
	t.Run("short slices panic before the assembly reads them", func(t *testing.T) {
		w, qs, d := make([]byte, 2*q6kBlock), make([]int8, 2*qkK), make([]float32, 2)
		w4 := make([]byte, 4*q6kBlock)
		for name, f := range map[string]func(){
			"weights":          func() { dotQ6_KAsm(w[:2*q6kBlock-1], qs, d, nil) },
			"activation":       func() { dotQ6_KAsm(w, qs[:2*qkK-1], d, nil) },
			"four-row weights": func() { dotQ6_Kx4Asm(w4[:4*q6kBlock-1], q6kBlock, qs, d[:1], nil, new([4]float32)) },
		} {
			mustPanic(t, name, f)
		}
	})
}

// FuzzDotQ6_K holds the assembly to dotQ6_KGo on arbitrary bytes: each
// 470 bytes of input are one super-block's weights (210), its activation
// qs (256) and the activation's d (4, any float32 bits), up to four blocks;
// a shorter input is repeated to fill one. The four-row form gets the
// weights as row 0 and three rotations of them as rows 1..3.
func FuzzDotQ6_K(f *testing.F) {
	if !haveAVX2 {
		f.Skip("no AVX2")
	}
	const per = q6kBlock + qkK + 4
	r := rand.New(rand.NewPCG(1, 6))
	zero := make([]byte, per)
	f.Add(zero)
	ext := make([]byte, 2*per)
	for b := range 2 {
		blk := ext[b*per:]
		for j := 192; j < 208; j++ {
			blk[j] = 0x80
		}
		binary.LittleEndian.PutUint16(blk[208:], 0x7bff)
		for j := range qkK {
			blk[q6kBlock+j] = 0x80
		}
		binary.LittleEndian.PutUint32(blk[q6kBlock+qkK:], math.Float32bits(math.MaxFloat32))
	}
	f.Add(ext)
	rnd := make([]byte, 3*per)
	q6kFill(r, rnd)
	f.Add(rnd)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		nb := max(1, min(len(b)/per, 4))
		for len(b) < nb*per {
			b = append(b[:len(b):len(b)], b...)
		}
		n := nb * q6kBlock
		rb := n + 13
		w := make([]byte, 3*rb+n)
		qs, d := make([]int8, nb*qkK), make([]float32, nb)
		for i := range nb {
			blk := b[i*per:]
			copy(w[i*q6kBlock:], blk[:q6kBlock])
			for j := range qkK {
				qs[i*qkK+j] = int8(blk[q6kBlock+j])
			}
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(blk[q6kBlock+qkK:]))
		}
		for row := 1; row < 4; row++ {
			for j := range n {
				w[row*rb+j] = w[(j+row*71)%n]
			}
		}
		checkQ6K(t, "fuzz", w, rb, qs, d)
	})
}
