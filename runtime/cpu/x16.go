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
// #q8_0x16, #q4_kx16): Q4_0, Q8_0 or Q4_K rows interleaved sixteen at a
// time, so that a 512-bit register holds the same four bytes of sixteen
// rows and each int32 lane sums a whole 32-element block of one row. The plain tiles'
// lanes hold sums of four products, so every (weight row, activation
// row, block pair) paid a conversion, a scale spread and an FMA; here one
// conversion and one scale serve a block of sixteen rows.

const (
	x16Rows  = 16     // weight rows per group
	x16Rec   = qk + 8 // bytes of a Q8_0 activation record: 32 quants, float32 d, int32 bias·Σq
	x16MaxM  = 16     // activation rows per pass of the Q4_0 and Q8_0 kernels (their accumulators)
	x16KRec  = 288    // bytes of a Q8_K activation record: 256 quants, float32 d, 8 int16 sub-block sums, padding
	x16KMaxM = 8      // activation rows per pass of the Q4_K and Q6_K kernels
	x16K6Rec = 324    // bytes of a Q6_K activation record: 256 quants, float32 d, 16 int32 −32·Σq of each 16
	q4Block  = 18     // bytes of a Q4_0 block: f16 d, 16 bytes of nibbles
	q8Block  = 34     // bytes of a Q8_0 block: f16 d, 32 int8 quants
	q4KBlock = 144    // bytes of a Q4_K super-block: f16 d, f16 dmin, 12 bytes of scales, 128 of nibbles
	q6KBlock = 210    // bytes of a Q6_K super-block: 128 of low nibbles, 64 of high pairs, 16 int8 scales, f16 d
)

// x16Kernel is an x16 kernel: ng groups of w (each nb blocks) against one
// pass of mc ≤ maxM activation rows (a, their records), y[j·ldy + 16g +
// r] = weight row r of group g against activation row j.
type x16Kernel func(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int)

// x16Layout is one weight type's x16 layout: for each group of 16 rows
// and each block b in order, for each of the block's f16 fields (d; Q4_K's
// d and dmin) the 16 rows' values, then for each dword j of the rest of
// the block (quants; Q4_K's scales, then its nibbles; Q6_K's low nibbles,
// high pairs and scales) the bytes [4j:4j+4] of each row in turn, the
// quants XORed with flip. The kernels meet the quants as unsigned
// (VPDPBUSD), so a Q8_0 activation record carries bias·Σq_a, which starts
// each lane's integer sum: Q4_0's nibbles are q + 8 (bias −8), Q8_0's
// flipped int8 quants q + 128 (bias −128). Q4_K's nibbles are its
// unsigned q (its minimum is a term of its own; packRecsK), Q6_K's 6-bit
// quants q + 32 (its records carry −32·Σq of each 16; packRecsK6).
type x16Layout struct {
	dt     dtype.Type
	recipe string
	aq     actQuant // the activation's quantization
	bk     int      // elements of a block
	src    int      // bytes of a source block
	halves int      // its f16 fields, at hoff
	dwords int      // its dwords, at doff
	hoff   int
	doff   int
	flip   byte  // XORed into each quant byte (Q4_0, Q8_0)
	bias   int32 // a Q8_0 record's multiple of Σq_a
	rec    int   // bytes of an activation record
	maxM   int   // activation rows per pass of the kernel
	kernel x16Kernel
	native bool // kernel is an assembly twin (tests)
}

// block is the bytes of one block of a group: 16 rows' blocks.
func (l *x16Layout) block() int { return x16Rows * l.src }

var (
	x16Q4_0 = &x16Layout{dt: dtype.Q4_0, recipe: kernels.RepackRecipe(dtype.Q4_0), aq: aqQ8_0, bk: qk, src: q4Block,
		halves: 1, dwords: 4, doff: 2, bias: -8, rec: x16Rec, maxM: x16MaxM, kernel: q4x16Go}
	x16Q8_0 = &x16Layout{dt: dtype.Q8_0, recipe: kernels.RepackRecipe(dtype.Q8_0), aq: aqQ8_0, bk: qk, src: q8Block,
		halves: 1, dwords: 8, doff: 2, flip: 0x80, bias: -128, rec: x16Rec, maxM: x16MaxM, kernel: q8x16Go}
	x16Q4_K = &x16Layout{dt: dtype.Q4_K, recipe: kernels.RepackRecipe(dtype.Q4_K), aq: aqQ8_K, bk: qkK, src: q4KBlock,
		halves: 2, dwords: 35, doff: 4, rec: x16KRec, maxM: x16KMaxM, kernel: q4kx16Go}
	x16Q6_K = &x16Layout{dt: dtype.Q6_K, recipe: kernels.RepackRecipe(dtype.Q6_K), aq: aqQ8_K, bk: qkK, src: q6KBlock,
		halves: 1, hoff: 208, dwords: 52, rec: x16K6Rec, maxM: x16KMaxM, kernel: q6kx16Go}
	x16All = []*x16Layout{x16Q4_0, x16Q8_0, x16Q4_K, x16Q6_K}
)

// x16Of is the x16 layout of weight type dt, nil for a type without one.
func x16Of(dt dtype.Type) *x16Layout {
	for _, l := range x16All {
		if l.dt == dt {
			return l
		}
	}
	return nil
}

// x16ByRecipe is the x16 layout a repack recipe builds, nil for another
// recipe.
func x16ByRecipe(recipe string) *x16Layout {
	for _, l := range x16All {
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

// RepackQ4_Kx16 writes the Q4_K matrix src (rows of k elements, a
// multiple of 16 rows) into dst (the same size) in the q4_kx16 layout.
func RepackQ4_Kx16(dst, src []byte, k int) error { return x16Q4_K.repack(dst, src, k) }

// RepackQ6_Kx16 writes the Q6_K matrix src (rows of k elements, a
// multiple of 16 rows) into dst (the same size) in the q6_kx16 layout.
func RepackQ6_Kx16(dst, src []byte, k int) error { return x16Q6_K.repack(dst, src, k) }

func (l *x16Layout) repack(dst, src []byte, k int) error {
	name := "repack " + l.recipe[len("repack:"):]
	if k <= 0 || k%l.bk != 0 {
		return fmt.Errorf("cpu: %s: rows of %d elements are not whole blocks of %d: %w", name, k, l.bk, ErrUnsupported)
	}
	nb := k / l.bk
	rb, bb := nb*l.src, l.block()
	if len(src)%(x16Rows*rb) != 0 || len(dst) != len(src) {
		return fmt.Errorf("cpu: %s: %d bytes into %d are not whole groups of 16 rows of %d bytes: %w", name, len(src), len(dst), rb, ErrUnsupported)
	}
	for g := 0; g < len(src); g += x16Rows * rb {
		for b := range nb {
			out := dst[g+b*bb : g+b*bb+bb]
			for r := range x16Rows {
				blk := src[g+r*rb+b*l.src : g+r*rb+b*l.src+l.src]
				for f := range l.halves {
					out[32*f+2*r], out[32*f+2*r+1] = blk[l.hoff+2*f], blk[l.hoff+2*f+1]
				}
				for j := range l.dwords {
					o := 32*l.halves + 64*j + 4*r
					for e := range 4 {
						out[o+e] = blk[l.doff+4*j+e] ^ l.flip
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

// recs is the bytes of the records of m rows of k elements.
func (l *x16Layout) recs(m, k int) int { return m * (k / l.bk) * l.rec }

// pack writes the records of row i (of m) of q's activation into a: its
// pass is rows i − i%maxM .. min(m, that+maxM).
func (l *x16Layout) pack(a []byte, q *q8act, i, m, k int) {
	nb := k / l.bk
	c := i - i%l.maxM
	mc := min(l.maxM, m-c)
	base := c*nb*l.rec + (i-c)*l.rec
	qs, d, s := q.row(l.aq, i, k)
	switch l.dt {
	case dtype.Q4_K:
		packRecsK(a[base:], mc*l.rec, qs, d[:nb], s)
		return
	case dtype.Q6_K:
		packRecsK6(a[base:], mc*l.rec, qs, d[:nb], s)
		return
	}
	packRecs(a[base:], mc*l.rec, qs, d[:nb], l.bias)
}

// packRecsK writes one row's Q8_K records, record b at a[b·step:]: the
// 256 quants of super-block b, d[b], then the eight sums of its 32-element
// sub-blocks as int16 (bs holds the sums of 16, exact in float32).
func packRecsK(a []byte, step int, qs []int8, d, bs []float32) {
	for b := range d {
		rec := a[b*step : b*step+x16KRec]
		copy(rec[:qkK], unsafe.Slice((*byte)(unsafe.Pointer(&qs[b*qkK])), qkK))
		binary.LittleEndian.PutUint32(rec[256:], math.Float32bits(d[b]))
		for j := range 8 {
			binary.LittleEndian.PutUint16(rec[260+2*j:], uint16(int16(bs[16*b+2*j]+bs[16*b+2*j+1])))
		}
	}
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

// packRecsK6 writes one row's Q6_K records, record b at a[b·step:]: the
// 256 quants of super-block b, d[b], then −32·Σq of each 16 as int32 (the
// offset of Q6_K's unsigned quants; bs holds the sums of 16).
func packRecsK6(a []byte, step int, qs []int8, d, bs []float32) {
	for b := range d {
		rec := a[b*step : b*step+x16K6Rec]
		copy(rec[:qkK], unsafe.Slice((*byte)(unsafe.Pointer(&qs[b*qkK])), qkK))
		binary.LittleEndian.PutUint32(rec[256:], math.Float32bits(d[b]))
		for j := range 16 {
			binary.LittleEndian.PutUint32(rec[260+4*j:], uint32(-32*int32(bs[16*b+j])))
		}
	}
}

// q4kx16Go is the q4_kx16 kernel (x16Kernel; 2304 bytes a super-block,
// Q8_K records, mc ≤ 8): each output is dotQ4_KGo's, bit for bit (the
// same exact integer sums, the same float steps in the same order).
func q4kx16Go(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	const bb = x16Rows * q4KBlock
	for g := range ng {
		wg := w[g*nb*bb : (g+1)*nb*bb]
		for j := range mc {
			var acc, accm [x16Rows]float32
			for b := range nb {
				blk := wg[b*bb : b*bb+bb]
				rec := a[(b*mc+j)*x16KRec : (b*mc+j)*x16KRec+x16KRec]
				da := math.Float32frombits(binary.LittleEndian.Uint32(rec[256:]))
				for r := range x16Rows {
					var sc [12]byte
					for s := range 3 {
						copy(sc[4*s:4*s+4], blk[64+64*s+4*r:])
					}
					var sumi, summ int32
					for sub := range 8 {
						scale, m := dtype.ScaleMinK4(sub, sc[:])
						c, shift := sub/2, 4*(sub%2)
						var sum int32
						for dw := range 8 {
							q := blk[256+64*(8*c+dw)+4*r : 256+64*(8*c+dw)+4*r+4]
							for e, v := range q {
								sum += int32(v>>shift&0xf) * int32(int8(rec[32*sub+4*dw+e]))
							}
						}
						sumi += int32(scale) * sum
						summ += int32(m) * int32(int16(binary.LittleEndian.Uint16(rec[260+2*sub:])))
					}
					acc[r] += float32(float32(da*f16le(blk, 2*r)) * float32(sumi))
					accm[r] += float32(float32(da*f16le(blk, 32+2*r)) * float32(summ))
				}
			}
			for r := range x16Rows {
				y[j*ldy+x16Rows*g+r] = acc[r] - accm[r]
			}
		}
	}
}

// q6kx16Go is the q6_kx16 kernel (x16Kernel; 3360 bytes a super-block:
// the rows' d, then dwords 0..31 of their low nibbles, 32..47 of their
// high pairs, 48..51 of their scales; Q6_K records, mc ≤ 8): each output
// is dotQ6_KGo's, bit for bit.
func q6kx16Go(w []byte, nb, ng int, a []byte, mc int, y []float32, ldy int) {
	const bb = x16Rows * q6KBlock
	dw := func(blk []byte, i, r int) []byte { return blk[32+64*i+4*r : 32+64*i+4*r+4] }
	for g := range ng {
		wg := w[g*nb*bb : (g+1)*nb*bb]
		for j := range mc {
			var acc [x16Rows]float32
			for b := range nb {
				blk := wg[b*bb : b*bb+bb]
				rec := a[(b*mc+j)*x16K6Rec : (b*mc+j)*x16K6Rec+x16K6Rec]
				da := math.Float32frombits(binary.LittleEndian.Uint32(rec[256:]))
				for r := range x16Rows {
					var sumi int32
					for half := range 2 {
						for part := range 4 {
							var s [2]int32
							for i := range 2 { // the record's −32·Σq of each 16
								s[i] = int32(binary.LittleEndian.Uint32(rec[260+4*(8*half+2*part+i):]))
							}
							for l := range 32 {
								ql := dw(blk, 16*half+8*(part%2)+l/4, r)[l%4]
								qh := dw(blk, 32+8*half+l/4, r)[l%4]
								v := int32(ql>>(4*(part/2))&0xf | (qh>>(2*part)&3)<<4)
								s[l/16] += v * int32(int8(rec[128*half+32*part+l]))
							}
							sc := dw(blk, 48+2*half+part/2, r)
							sumi += s[0]*int32(int8(sc[2*(part%2)])) + s[1]*int32(int8(sc[2*(part%2)+1]))
						}
					}
					acc[r] += float32(float32(f16le(blk, 2*r)*da) * float32(sumi))
				}
			}
			copy(y[j*ldy+x16Rows*g:j*ldy+x16Rows*g+x16Rows], acc[:])
		}
	}
}
