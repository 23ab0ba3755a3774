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

// The q4_0x16 weight layout and its kernels (docs/formats.md#q4_0x16):
// Q4_0 rows interleaved sixteen at a time, so that a 512-bit register
// holds the same four bytes of sixteen rows and each int32 lane sums a
// whole 32-element block of one row. The plain Q4_0 tile's lanes hold sums
// of four products, so every (weight row, activation row, block pair)
// paid a conversion, a scale spread and an FMA; here one conversion and
// one scale serve a block of sixteen rows.

var recipeQ4_0x16 = kernels.RepackRecipe(dtype.Q4_0)

const (
	x16Rows  = 16               // weight rows per group
	x16Block = 32 + 4*x16Rows*4 // bytes of one block of a group: 16 f16 scales, then 4 × 16 dwords of nibbles
	x16Rec   = qk + 8           // bytes of one activation record: 32 quants, float32 d, int32 −8·Σq
	x16MaxM  = 16               // activation rows per pass of the kernel (its accumulators)
	q4Block  = 18               // bytes of a Q4_0 block: f16 d, 16 bytes of nibbles
)

// RepackQ4_0x16 writes the Q4_0 matrix src (rows of k elements, a
// multiple of 16 rows) into dst (the same size) in the q4_0x16 layout:
// for each group of 16 rows and each block b in order, the 16 rows'
// scales of block b, then for dword j = 0..3 the bytes qs[4j:4j+4] of
// block b of each row in turn.
func RepackQ4_0x16(dst, src []byte, k int) error {
	if k <= 0 || k%qk != 0 {
		return fmt.Errorf("cpu: repack q4_0x16: rows of %d elements are not whole blocks of %d: %w", k, qk, ErrUnsupported)
	}
	rb := k / qk * q4Block
	if len(src)%(x16Rows*rb) != 0 || len(dst) != len(src) {
		return fmt.Errorf("cpu: repack q4_0x16: %d bytes into %d are not whole groups of 16 rows of %d bytes: %w", len(src), len(dst), rb, ErrUnsupported)
	}
	nb := k / qk
	for g := 0; g < len(src); g += x16Rows * rb {
		for b := range nb {
			out := dst[g+b*x16Block : g+b*x16Block+x16Block]
			for r := range x16Rows {
				blk := src[g+r*rb+b*q4Block : g+r*rb+b*q4Block+q4Block]
				out[2*r], out[2*r+1] = blk[0], blk[1]
				for j := range 4 {
					copy(out[32+64*j+4*r:32+64*j+4*r+4], blk[2+4*j:2+4*j+4])
				}
			}
		}
	}
	return nil
}

// deriveQ4_0x16 is Derive's repack:q4_0x16: each source (a Q4_0 weight of
// rows of k elements, whole groups of 16 rows) repacked on its own into
// the next bytes of the result, so a fused weight's parts may be listed
// as they are (repacking the concatenation gives the same bytes).
func (b *Backend) deriveQ4_0x16(srcs []device.Buffer, size, k int) (device.Buffer, error) {
	if k <= 0 {
		return device.Buffer{}, fmt.Errorf("cpu: %s: the plan gives no row length: %w", recipeQ4_0x16, ErrUnsupported)
	}
	if len(srcs) == 0 || size <= 0 {
		return device.Buffer{}, fmt.Errorf("cpu: %s: no sources: %w", recipeQ4_0x16, ErrUnsupported)
	}
	data := Alloc(size)
	off := 0
	for i, s := range srcs {
		src := b.bytes(s)
		if src == nil || off+len(src) > size {
			return device.Buffer{}, fmt.Errorf("cpu: %s: sources of %d+ bytes for %d", recipeQ4_0x16, off+len(src), size)
		}
		if err := RepackQ4_0x16(data[off:off+len(src)], src, k); err != nil {
			return device.Buffer{}, fmt.Errorf("%w (source %d)", err, i)
		}
		off += len(src)
	}
	if off != size {
		return device.Buffer{}, fmt.Errorf("cpu: %s: sources give %d of %d bytes", recipeQ4_0x16, off, size)
	}
	return b.add(data), nil
}

// The x16 kernels meet the activation quantized as the plain Q4_0 ones
// do (quantizeRow, Q8_0), then packed into records, one per (block, row)
// of each pass of up to 16 rows: the 32 quants, d as float32, and
// −8·Σq (exact in int32), which starts the lanes' integer sums so that
// the unsigned nibbles give Σ(q_w − 8)·q_a. A pass's records are block
// major (block b of its mc rows are records b·mc .. b·mc+mc−1), so the
// kernel finds every row's record at a constant step from the block's.

// x16Recs is the bytes of the records of m rows of k elements.
func x16Recs(m, k int) int { return m * (k / qk) * x16Rec }

// packX16 writes the records of row i (of m) of q's Q8_0 activation into
// a: its pass is rows i&^15 .. min(m, that+16).
func packX16(a []byte, q *q8act, i, m, k int) {
	nb := k / qk
	c := i &^ (x16MaxM - 1)
	mc := min(x16MaxM, m-c)
	base := c*nb*x16Rec + (i-c)*x16Rec
	qs, d, _ := q.row(aqQ8_0, i, k)
	packRecs(a[base:], mc*x16Rec, qs, d[:nb])
}

// packRecs writes one row's records, record b at a[b·step:]: the quants
// of block b, d[b], −8·Σ of the quants. packRecsGo unless an AVX2 twin,
// bit-identical (integer sums), replaced it at init (quant_amd64.go).
var packRecs = packRecsGo

func packRecsGo(a []byte, step int, qs []int8, d []float32) {
	for b := range d {
		rec := a[b*step : b*step+x16Rec]
		blk := qs[b*qk : b*qk+qk]
		copy(rec[:qk], unsafe.Slice((*byte)(unsafe.Pointer(&blk[0])), qk))
		binary.LittleEndian.PutUint32(rec[32:], math.Float32bits(d[b]))
		binary.LittleEndian.PutUint32(rec[36:], uint32(-8*sum32(rec[:qk])))
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

// q4x16 is the dispatched kernel: q4x16Go unless the AVX-512 VNNI twin,
// bit-identical to it, replaced it at init (q4x16_amd64.go).
var q4x16 = q4x16Go

// q4x16Native reports that q4x16 is an assembly twin (tests).
var q4x16Native bool

// x16Early is the assembly twin's early argument: 1 where each of its
// passes prefetches its weights into L2 ahead (set at init on Intel CPUs;
// q4x16_amd64.go).
var x16Early int

// q4x16Go is the x16 kernel: ng groups of w (each nb blocks, x16Block
// bytes a block) against one pass of mc ≤ 16 activation rows (a, their
// records), y[j·ldy + 16g + r] = weight row r of group g against
// activation row j. It defines the float order its twin keeps: per
// output, blocks in order, acc += float32(isum)·float32(d_w·d_a), each
// product rounded before the add (the conversions forbid a fused
// multiply-add).
func q4x16Go(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	var isum [x16Rows]int32
	for g := range ng {
		wg := w[g*nb*x16Block : (g+1)*nb*x16Block]
		for j := range mc {
			var acc [x16Rows]float32
			for b := range nb {
				blk := wg[b*x16Block : b*x16Block+x16Block]
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
