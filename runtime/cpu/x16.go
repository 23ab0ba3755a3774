package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/akunu-dev/akunu/compiler/dtype"
	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/runtime/device"
)

// The x16 weight layouts and their kernels (docs/formats.md#q4_0x16,
// #q8_0x16): Q4_0 or Q8_0 rows interleaved sixteen at a time, so that a
// 512-bit register holds the same four bytes of sixteen rows and each
// int32 lane sums a whole 32-element block of one row. The plain tiles'
// lanes hold sums of four products, so every (weight row, activation
// row, block pair) paid a conversion, a scale spread and an FMA; here one
// conversion and one scale serve a block of sixteen rows.

const (
	x16Rows = 16     // weight rows per group
	x16Rec  = qk + 8 // bytes of one activation record: 32 quants, float32 d, int32 bias·Σq
	x16MaxM = 16     // activation rows per pass of the kernels (their accumulators)
	q4Block = 18     // bytes of a Q4_0 block: f16 d, 16 bytes of nibbles
	q8Block = 34     // bytes of a Q8_0 block: f16 d, 32 int8 quants
)

// x16Kernel is an x16 kernel: ng groups of w (each nb blocks) against one
// pass of mc ≤ 16 activation rows (a, their records), y[j·ldy + 16g + r]
// = weight row r of group g against activation row j.
type x16Kernel func(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int)

// x16Layout is one weight type's x16 layout: for each group of 16 rows
// and each block b in order, the 16 rows' f16 scales of block b, then for
// dword j = 0 .. dwords−1 the bytes qs[4j:4j+4] of block b of each row in
// turn, each XORed with flip. The kernels meet those bytes as unsigned
// (VPDPBUSD), so the activation record carries bias·Σq_a, which starts
// each lane's integer sum: Q4_0's nibbles are q + 8 (bias −8), Q8_0's
// flipped int8 quants q + 128 (bias −128).
type x16Layout struct {
	dt     dtype.Type
	recipe string
	src    int   // bytes of a source block: f16 d, then the quants
	dwords int   // dwords of quants in a source block
	flip   byte  // XORed into each quant byte
	bias   int32 // the record's multiple of Σq_a
	kernel x16Kernel
	native bool // kernel is an assembly twin (tests)
}

// block is the bytes of one block of a group: 16 rows' blocks.
func (l *x16Layout) block() int { return x16Rows * l.src }

var (
	x16Q4_0 = &x16Layout{dt: dtype.Q4_0, recipe: kernels.RepackRecipe(dtype.Q4_0), src: q4Block, dwords: 4, bias: -8, kernel: q4x16Go}
	x16Q8_0 = &x16Layout{dt: dtype.Q8_0, recipe: kernels.RepackRecipe(dtype.Q8_0), src: q8Block, dwords: 8, flip: 0x80, bias: -128, kernel: q8x16Go}
)

// x16Of is the x16 layout of weight type dt, nil for a type without one.
func x16Of(dt dtype.Type) *x16Layout {
	for _, l := range []*x16Layout{x16Q4_0, x16Q8_0} {
		if l.dt == dt {
			return l
		}
	}
	return nil
}

// x16ByRecipe is the x16 layout a repack recipe builds, nil for another
// recipe.
func x16ByRecipe(recipe string) *x16Layout {
	for _, l := range []*x16Layout{x16Q4_0, x16Q8_0} {
		if recipe != "" && l.recipe == recipe {
			return l
		}
	}
	return nil
}

// RepackQ4_0x16 writes the Q4_0 matrix src (rows of k elements, a
// multiple of 16 rows) into dst (the same size) in the q4_0x16 layout.
func RepackQ4_0x16(dst, src []byte, k int) error { return x16Q4_0.repack(dst, src, k) }

// RepackQ8_0x16 writes the Q8_0 matrix src (rows of k elements, a
// multiple of 16 rows) into dst (the same size) in the q8_0x16 layout.
func RepackQ8_0x16(dst, src []byte, k int) error { return x16Q8_0.repack(dst, src, k) }

func (l *x16Layout) repack(dst, src []byte, k int) error {
	name := "repack " + l.recipe[len("repack:"):]
	if k <= 0 || k%qk != 0 {
		return fmt.Errorf("cpu: %s: rows of %d elements are not whole blocks of %d: %w", name, k, qk, ErrUnsupported)
	}
	nb := k / qk
	rb, bb := nb*l.src, l.block()
	if len(src)%(x16Rows*rb) != 0 || len(dst) != len(src) {
		return fmt.Errorf("cpu: %s: %d bytes into %d are not whole groups of 16 rows of %d bytes: %w", name, len(src), len(dst), rb, ErrUnsupported)
	}
	for g := 0; g < len(src); g += x16Rows * rb {
		for b := range nb {
			out := dst[g+b*bb : g+b*bb+bb]
			for r := range x16Rows {
				blk := src[g+r*rb+b*l.src : g+r*rb+b*l.src+l.src]
				out[2*r], out[2*r+1] = blk[0], blk[1]
				for j := range l.dwords {
					o := 32 + 64*j + 4*r
					for e := range 4 {
						out[o+e] = blk[2+4*j+e] ^ l.flip
					}
				}
			}
		}
	}
	return nil
}

// derive is Derive's repack:<layout>: each source (a weight of rows of k
// elements, whole groups of 16 rows) repacked on its own into the next
// bytes of the result, so a fused weight's parts may be listed as they
// are (repacking the concatenation gives the same bytes).
func (l *x16Layout) derive(b *Backend, srcs []device.Buffer, size, k int) (device.Buffer, error) {
	if k <= 0 {
		return device.Buffer{}, fmt.Errorf("cpu: %s: the plan gives no row length: %w", l.recipe, ErrUnsupported)
	}
	if len(srcs) == 0 || size <= 0 {
		return device.Buffer{}, fmt.Errorf("cpu: %s: no sources: %w", l.recipe, ErrUnsupported)
	}
	data := Alloc(size)
	off := 0
	for i, s := range srcs {
		src := b.bytes(s)
		if src == nil || off+len(src) > size {
			return device.Buffer{}, fmt.Errorf("cpu: %s: sources of %d+ bytes for %d", l.recipe, off+len(src), size)
		}
		if err := l.repack(data[off:off+len(src)], src, k); err != nil {
			return device.Buffer{}, fmt.Errorf("%w (source %d)", err, i)
		}
		off += len(src)
	}
	if off != size {
		return device.Buffer{}, fmt.Errorf("cpu: %s: sources give %d of %d bytes", l.recipe, off, size)
	}
	return b.add(data), nil
}

// The x16 kernels meet the activation quantized as the plain Q4_0 and
// Q8_0 ones do (quantizeRow, Q8_0), then packed into records, one per
// (block, row) of each pass of up to 16 rows: the 32 quants, d as
// float32, and bias·Σq (exact in int32), which starts the lanes' integer
// sums so that the unsigned weight bytes give Σ q_w·q_a. A pass's records
// are block major (block b of its mc rows are records b·mc .. b·mc+mc−1),
// so the kernel finds every row's record at a constant step from the
// block's.

// x16Recs is the bytes of the records of m rows of k elements.
func x16Recs(m, k int) int { return m * (k / qk) * x16Rec }

// pack writes the records of row i (of m) of q's Q8_0 activation into a:
// its pass is rows i&^15 .. min(m, that+16).
func (l *x16Layout) pack(a []byte, q *q8act, i, m, k int) {
	nb := k / qk
	c := i &^ (x16MaxM - 1)
	mc := min(x16MaxM, m-c)
	base := c*nb*x16Rec + (i-c)*x16Rec
	qs, d, _ := q.row(aqQ8_0, i, k)
	packRecs(a[base:], mc*x16Rec, qs, d[:nb], l.bias)
}

// packRecs writes one row's records, record b at a[b·step:]: the quants
// of block b, d[b], bias·Σ of the quants. packRecsGo unless an AVX2 twin,
// bit-identical (integer sums), replaced it at init (quant_amd64.go).
var packRecs = packRecsGo

func packRecsGo(a []byte, step int, qs []int8, d []float32, bias int32) {
	for b := range d {
		rec := a[b*step : b*step+x16Rec]
		blk := qs[b*qk : b*qk+qk]
		copy(rec[:qk], unsafe.Slice((*byte)(unsafe.Pointer(&blk[0])), qk))
		binary.LittleEndian.PutUint32(rec[32:], math.Float32bits(d[b]))
		binary.LittleEndian.PutUint32(rec[36:], uint32(bias*sum32(rec[:qk])))
	}
}

// sum32 is the sum of 32 bytes taken as int8, eight at a time: each byte
// biased to unsigned (x ^ 0x80 is x + 128), pairs added into 16-bit lanes,
// the four lanes of the four words summed at the end. The packing ran a
// byte loop here and took an eighth of a batched decode step.
func sum32(b []byte) int32 {
	_ = b[31]
	var t uint64
	for i := 0; i < 32; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:]) ^ 0x8080808080808080
		t += x&0x00FF00FF00FF00FF + x>>8&0x00FF00FF00FF00FF // four lanes ≤ 510 each, ≤ 2040 after four words
	}
	return int32(t*0x0001000100010001>>48) - 32*128
}

// x16Early is the assembly twin's early argument: 1 where each of its
// passes prefetches its weights into L2 ahead (set at init on Intel CPUs;
// q4x16_amd64.go).
var x16Early int

// q4x16Go is the q4_0x16 kernel (x16Kernel; 288 bytes a block). It
// defines the float order its twin keeps, and q8x16Go's: per output,
// blocks in order, acc += float32(isum)·float32(d_w·d_a), each product
// rounded before the add (the conversions forbid a fused multiply-add).
func q4x16Go(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	const bb = x16Rows * q4Block
	var isum [x16Rows]int32
	for g := range ng {
		wg := w[g*nb*bb : (g+1)*nb*bb]
		for j := range mc {
			var acc [x16Rows]float32
			for b := range nb {
				blk := wg[b*bb : b*bb+bb]
				rec := a[(b*mc+j)*x16Rec : (b*mc+j)*x16Rec+x16Rec]
				m8 := int32(binary.LittleEndian.Uint32(rec[32+4:]))
				for r := range isum {
					isum[r] = m8
				}
				for dw := range 4 {
					lo, hi := rec[4*dw:4*dw+4], rec[16+4*dw:16+4*dw+4]
					nib := blk[32+64*dw : 32+64*dw+64]
					for r := range isum {
						s := isum[r]
						for e, q := range nib[4*r : 4*r+4] {
							s += int32(q&0xf)*int32(int8(lo[e])) + int32(q>>4)*int32(int8(hi[e]))
						}
						isum[r] = s
					}
				}
				da := math.Float32frombits(binary.LittleEndian.Uint32(rec[32:]))
				for r, s := range isum {
					dd := float32(f16le(blk, 2*r) * da)
					acc[r] += float32(float32(s) * dd)
				}
			}
			copy(y[j*ldy+x16Rows*g:j*ldy+x16Rows*g+x16Rows], acc[:])
		}
	}
}

// q8x16Go is the q8_0x16 kernel (x16Kernel; 544 bytes a block): q4x16Go's
// steps, the weight bytes q + 128 against the quants, the record's
// −128·Σq_a starting each sum.
func q8x16Go(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	const bb = x16Rows * q8Block
	var isum [x16Rows]int32
	for g := range ng {
		wg := w[g*nb*bb : (g+1)*nb*bb]
		for j := range mc {
			var acc [x16Rows]float32
			for b := range nb {
				blk := wg[b*bb : b*bb+bb]
				rec := a[(b*mc+j)*x16Rec : (b*mc+j)*x16Rec+x16Rec]
				m := int32(binary.LittleEndian.Uint32(rec[32+4:]))
				for r := range isum {
					isum[r] = m
				}
				for dw := range 8 {
					qa := rec[4*dw : 4*dw+4]
					qw := blk[32+64*dw : 32+64*dw+64]
					for r := range isum {
						s := isum[r]
						for e, q := range qw[4*r : 4*r+4] {
							s += int32(q) * int32(int8(qa[e]))
						}
						isum[r] = s
					}
				}
				da := math.Float32frombits(binary.LittleEndian.Uint32(rec[32:]))
				for r, s := range isum {
					dd := float32(f16le(blk, 2*r) * da)
					acc[r] += float32(float32(s) * dd)
				}
			}
			copy(y[j*ldy+x16Rows*g:j*ldy+x16Rows*g+x16Rows], acc[:])
		}
	}
}
