//go:build amd64 && !purego

#include "textflag.h"

// The prefill GEMM's 4×4 tile for Q4_K (AVX-512 F/BW/VL and VNNI): four
// Q4_K weight rows against four Q8_K activation rows, each of the sixteen
// results bit-identical to dotQ4_Kx4AVX2 (kquant_amd64.s) and so to
// dotQ4_KGo. The speed is in sharing: each super-block's weights are
// unpacked and its scales spread once for four activation rows, and each
// activation load serves four weight rows.
//
// Per super-block the Go code forms, for each (weight row r, activation
// row j) pair, two exact int32 sums and then four float32 steps. Integer
// sums are exact in any order, so this kernel computes them however is
// fastest, with the sixteen pairs in the sixteen lanes of a vector at the
// end (lane 4j+r, the order of out), and does the float steps on all
// sixteen lanes at once: each lane gets the Go code's operations in its
// order, every one rounded (VMULPS, VCVTDQ2PS, VADDPS; no FMA).
//
// sumi = Σ_s sc_s·Σ q·a over the eight sub-blocks s of 32 (layout:
// docs/formats.md#q4_k). A 64-byte chunk c holds sub-blocks 2c and 2c+1:
// the 32 packed bytes broadcast to both halves, the upper half shifted
// right by 4, masked to nibbles, line up with 64 contiguous activation
// bytes. VPMADDUBSW (unsigned nibble ≤ 15, signed byte) gives word pair
// sums of at most 2·15·128 = 3840 in magnitude, far from saturating at
// 2^15; VPDPWSSD multiplies them by the sub-block's scale (≤ 63, a word)
// and adds pairs into int32 lanes, at most 2·3840·63 = 483840 per
// instruction and 4·483840 per lane per super-block. The whole sumi is at
// most 256·15·128·63 = 30965760 < 2^31: nothing saturates or wraps, and
// neither does Go's int32.
//
// summ = Σ_s m_s·int32(bs[2s]+bs[2s+1]): the bsum pairs are added in
// float32 and truncated (VCVTTPS2DQ, Go's CVTTSS2SL) as in the Go code.
// Quantized activations make pairs of at most 32·128 in magnitude; this
// kernel takes them as int16 words (VPDPWSSD against the minimums, ≤ 63,
// at most 8·63·2^15 < 2^24 in all, exact). Where a pair falls outside
// int16 (bsums that quantizeQ8_K never writes: NaN, huge, non-integer
// sums that round out of range) it stops and returns false, and the
// caller computes the tile with the four-row dot instead, so the result
// stays the Go code's for any bytes.
//
// Registers in the super-block loop:
//	Z16–Z31  the sixteen int32 sumi accumulators, Z(16+4j+r)
//	Z0–Z3    weight rows' unpacked chunk, Z4–Z7 their scale words
//	Z8       the activation chunk, Z9–Z10 products
//	Z11      acc, Z12 accm (float32, lane 4j+r), Z13 d_a·f16(d)
//	Z14      0x0F bytes
//	K1 words 16–31, K2 qwords 4–7, K3 qwords 2,3,6,7, K4 odd dwords
//	R8–R11 the weight rows, DI/R13 activation rows 0 and 3 (R12 apart),
//	DX the activation scales (BX apart), SI the bsums, CX the count,
//	AX scratch; 0(SP) the four rows' unpacked scales and minimums.

// ktsc<>+64c: VPSHUFB control giving the scale words of chunk c from a
// row's unpacked scales (bytes 0–7) in every 128-bit lane: word w is
// scale 2c for w < 16, 2c+1 above, zero-extended.
DATA ktsc<>+0(SB)/8, $0x8000800080008000
DATA ktsc<>+8(SB)/8, $0x8000800080008000
DATA ktsc<>+16(SB)/8, $0x8000800080008000
DATA ktsc<>+24(SB)/8, $0x8000800080008000
DATA ktsc<>+32(SB)/8, $0x8001800180018001
DATA ktsc<>+40(SB)/8, $0x8001800180018001
DATA ktsc<>+48(SB)/8, $0x8001800180018001
DATA ktsc<>+56(SB)/8, $0x8001800180018001
DATA ktsc<>+64(SB)/8, $0x8002800280028002
DATA ktsc<>+72(SB)/8, $0x8002800280028002
DATA ktsc<>+80(SB)/8, $0x8002800280028002
DATA ktsc<>+88(SB)/8, $0x8002800280028002
DATA ktsc<>+96(SB)/8, $0x8003800380038003
DATA ktsc<>+104(SB)/8, $0x8003800380038003
DATA ktsc<>+112(SB)/8, $0x8003800380038003
DATA ktsc<>+120(SB)/8, $0x8003800380038003
DATA ktsc<>+128(SB)/8, $0x8004800480048004
DATA ktsc<>+136(SB)/8, $0x8004800480048004
DATA ktsc<>+144(SB)/8, $0x8004800480048004
DATA ktsc<>+152(SB)/8, $0x8004800480048004
DATA ktsc<>+160(SB)/8, $0x8005800580058005
DATA ktsc<>+168(SB)/8, $0x8005800580058005
DATA ktsc<>+176(SB)/8, $0x8005800580058005
DATA ktsc<>+184(SB)/8, $0x8005800580058005
DATA ktsc<>+192(SB)/8, $0x8006800680068006
DATA ktsc<>+200(SB)/8, $0x8006800680068006
DATA ktsc<>+208(SB)/8, $0x8006800680068006
DATA ktsc<>+216(SB)/8, $0x8006800680068006
DATA ktsc<>+224(SB)/8, $0x8007800780078007
DATA ktsc<>+232(SB)/8, $0x8007800780078007
DATA ktsc<>+240(SB)/8, $0x8007800780078007
DATA ktsc<>+248(SB)/8, $0x8007800780078007
GLOBL ktsc<>(SB), RODATA|NOPTR, $256

// Scale unpacking (KSCALES in kquant_amd64.s, four rows at once): per
// 128-bit lane the dwords [A, C, B, C] are shifted by [0, 0, 0, 4] and
// masked by [3f, 0f, 3f, 0f] bytes, then or'ed with [., A, ., B]>>2 masked
// by [0, 30, 0, 30] bytes.
DATA ktpshift<>+0(SB)/8, $0
DATA ktpshift<>+8(SB)/8, $0x0000000400000000
DATA ktpshift<>+16(SB)/8, $0
DATA ktpshift<>+24(SB)/8, $0x0000000400000000
DATA ktpshift<>+32(SB)/8, $0
DATA ktpshift<>+40(SB)/8, $0x0000000400000000
DATA ktpshift<>+48(SB)/8, $0
DATA ktpshift<>+56(SB)/8, $0x0000000400000000
GLOBL ktpshift<>(SB), RODATA|NOPTR, $64

DATA ktpmask<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL ktpmask<>(SB), RODATA|NOPTR, $8

DATA ktqmask<>+0(SB)/8, $0x3030303000000000
GLOBL ktqmask<>(SB), RODATA|NOPTR, $8

// ktdd<>: VPERMW indices taking d of row L%4 into word L and its dmin
// into word 16+L, from the rows' first 16 bytes (one row a 128-bit lane).
DATA ktdd<>+0(SB)/8, $0x0018001000080000
DATA ktdd<>+8(SB)/8, $0x0018001000080000
DATA ktdd<>+16(SB)/8, $0x0018001000080000
DATA ktdd<>+24(SB)/8, $0x0018001000080000
DATA ktdd<>+32(SB)/8, $0x0019001100090001
DATA ktdd<>+40(SB)/8, $0x0019001100090001
DATA ktdd<>+48(SB)/8, $0x0019001100090001
DATA ktdd<>+56(SB)/8, $0x0019001100090001
GLOBL ktdd<>(SB), RODATA|NOPTR, $64

// ktda<>: VPERMD indices spreading activation row j's scale over lanes
// 4j..4j+3.
DATA ktda<>+0(SB)/8, $0
DATA ktda<>+8(SB)/8, $0
DATA ktda<>+16(SB)/8, $0x0000000100000001
DATA ktda<>+24(SB)/8, $0x0000000100000001
DATA ktda<>+32(SB)/8, $0x0000000200000002
DATA ktda<>+40(SB)/8, $0x0000000200000002
DATA ktda<>+48(SB)/8, $0x0000000300000003
DATA ktda<>+56(SB)/8, $0x0000000300000003
GLOBL ktda<>(SB), RODATA|NOPTR, $64

// ktpe<>, ktpo<>: VPERMT2PS indices taking the even (odd) bsums of two
// activation rows: lanes 0–7 the first row's, 8–15 the second's.
DATA ktpe<>+0(SB)/8, $0x0000000200000000
DATA ktpe<>+8(SB)/8, $0x0000000600000004
DATA ktpe<>+16(SB)/8, $0x0000000a00000008
DATA ktpe<>+24(SB)/8, $0x0000000e0000000c
DATA ktpe<>+32(SB)/8, $0x0000001200000010
DATA ktpe<>+40(SB)/8, $0x0000001600000014
DATA ktpe<>+48(SB)/8, $0x0000001a00000018
DATA ktpe<>+56(SB)/8, $0x0000001e0000001c
GLOBL ktpe<>(SB), RODATA|NOPTR, $64

DATA ktpo<>+0(SB)/8, $0x0000000300000001
DATA ktpo<>+8(SB)/8, $0x0000000700000005
DATA ktpo<>+16(SB)/8, $0x0000000b00000009
DATA ktpo<>+24(SB)/8, $0x0000000f0000000d
DATA ktpo<>+32(SB)/8, $0x0000001300000011
DATA ktpo<>+40(SB)/8, $0x0000001700000015
DATA ktpo<>+48(SB)/8, $0x0000001b00000019
DATA ktpo<>+56(SB)/8, $0x0000001f0000001d
GLOBL ktpo<>(SB), RODATA|NOPTR, $64

// ktmm<>: VPERMD indices gathering every row's minimums 0–3 (dword 2 of
// its lane) into each 128-bit lane; ktmm<>+64 the same for minimums 4–7.
DATA ktmm<>+0(SB)/8, $0x0000000600000002
DATA ktmm<>+8(SB)/8, $0x0000000e0000000a
DATA ktmm<>+16(SB)/8, $0x0000000600000002
DATA ktmm<>+24(SB)/8, $0x0000000e0000000a
DATA ktmm<>+32(SB)/8, $0x0000000600000002
DATA ktmm<>+40(SB)/8, $0x0000000e0000000a
DATA ktmm<>+48(SB)/8, $0x0000000600000002
DATA ktmm<>+56(SB)/8, $0x0000000e0000000a
DATA ktmm<>+64(SB)/8, $0x0000000700000003
DATA ktmm<>+72(SB)/8, $0x0000000f0000000b
DATA ktmm<>+80(SB)/8, $0x0000000700000003
DATA ktmm<>+88(SB)/8, $0x0000000f0000000b
DATA ktmm<>+96(SB)/8, $0x0000000700000003
DATA ktmm<>+104(SB)/8, $0x0000000f0000000b
DATA ktmm<>+112(SB)/8, $0x0000000700000003
DATA ktmm<>+120(SB)/8, $0x0000000f0000000b
GLOBL ktmm<>(SB), RODATA|NOPTR, $128

// ktmw<>: VPSHUFB controls making dword r of each 128-bit lane the words
// [m(r, 2t), m(r, 2t+1)] from ktmm's gathering: +0 for even t, +64 odd.
DATA ktmw<>+0(SB)/8, $0x8005800480018000
DATA ktmw<>+8(SB)/8, $0x800d800c80098008
DATA ktmw<>+16(SB)/8, $0x8005800480018000
DATA ktmw<>+24(SB)/8, $0x800d800c80098008
DATA ktmw<>+32(SB)/8, $0x8005800480018000
DATA ktmw<>+40(SB)/8, $0x800d800c80098008
DATA ktmw<>+48(SB)/8, $0x8005800480018000
DATA ktmw<>+56(SB)/8, $0x800d800c80098008
DATA ktmw<>+64(SB)/8, $0x8007800680038002
DATA ktmw<>+72(SB)/8, $0x800f800e800b800a
DATA ktmw<>+80(SB)/8, $0x8007800680038002
DATA ktmw<>+88(SB)/8, $0x800f800e800b800a
DATA ktmw<>+96(SB)/8, $0x8007800680038002
DATA ktmw<>+104(SB)/8, $0x800f800e800b800a
DATA ktmw<>+112(SB)/8, $0x8007800680038002
DATA ktmw<>+120(SB)/8, $0x800f800e800b800a
GLOBL ktmw<>(SB), RODATA|NOPTR, $128

// The int16 range check: p+0x8000 has no bit of 0xFFFF0000 set.
DATA kt8000<>+0(SB)/4, $0x00008000
GLOBL kt8000<>(SB), RODATA|NOPTR, $4

DATA ktffff<>+0(SB)/4, $0xffff0000
GLOBL ktffff<>(SB), RODATA|NOPTR, $4

// ktr2<>, ktr4<>: the VPERMT2Q/VPERMT2D indices of the reduction's second
// and fourth levels (KTR2, KTR4).
DATA ktr2<>+0(SB)/8, $2
DATA ktr2<>+8(SB)/8, $3
DATA ktr2<>+16(SB)/8, $8
DATA ktr2<>+24(SB)/8, $9
DATA ktr2<>+32(SB)/8, $6
DATA ktr2<>+40(SB)/8, $7
DATA ktr2<>+48(SB)/8, $12
DATA ktr2<>+56(SB)/8, $13
GLOBL ktr2<>(SB), RODATA|NOPTR, $64

DATA ktr4<>+0(SB)/8, $0x0000001000000001
DATA ktr4<>+8(SB)/8, $0x0000001200000003
DATA ktr4<>+16(SB)/8, $0x0000001400000005
DATA ktr4<>+24(SB)/8, $0x0000001600000007
DATA ktr4<>+32(SB)/8, $0x0000001800000009
DATA ktr4<>+40(SB)/8, $0x0000001a0000000b
DATA ktr4<>+48(SB)/8, $0x0000001c0000000d
DATA ktr4<>+56(SB)/8, $0x0000001e0000000f
GLOBL ktr4<>(SB), RODATA|NOPTR, $64

// KTW unpacks chunk c of the row at wp into zw: the 32 bytes at
// 16+32c, low nibbles (sub-block 2c) in the lower half, high nibbles
// (2c+1) in the upper.
#define KTW(c, wp, zw) \
	VBROADCASTI64X4 (16+32*c)(wp), zw; \
	VPSRLW $4, zw, K1, zw; \
	VPANDD Z14, zw, zw

// KTS makes zs the scale words of chunk c for the row whose unpacked
// scales are at off(SP).
#define KTS(c, off, zs) \
	VBROADCASTI32X4 off(SP), zs; \
	VPSHUFB ktsc<>+(64*c)(SB), zs, zs

// KTP4 adds the activation chunk in Z8 against the four rows into
// a0..a3; op is VPMADDWD for the first chunk (which sets them) and
// VPDPWSSD after.
#define KTP4(op, a0, a1, a2, a3) \
	VPMADDUBSW Z8, Z0, Z9; \
	op Z4, Z9, a0; \
	VPMADDUBSW Z8, Z1, Z10; \
	op Z5, Z10, a1; \
	VPMADDUBSW Z8, Z2, Z9; \
	op Z6, Z9, a2; \
	VPMADDUBSW Z8, Z3, Z10; \
	op Z7, Z10, a3

#define KTCHUNK(op, c) \
	KTW(c, R8, Z0); \
	KTW(c, R9, Z1); \
	KTW(c, R10, Z2); \
	KTW(c, R11, Z3); \
	KTS(c, 0, Z4); \
	KTS(c, 16, Z5); \
	KTS(c, 32, Z6); \
	KTS(c, 48, Z7); \
	VMOVDQU64 (64*c)(DI), Z8; \
	KTP4(op, Z16, Z17, Z18, Z19); \
	VMOVDQU64 (64*c)(DI)(R12*1), Z8; \
	KTP4(op, Z20, Z21, Z22, Z23); \
	VMOVDQU64 (64*c)(DI)(R12*2), Z8; \
	KTP4(op, Z24, Z25, Z26, Z27); \
	VMOVDQU64 (64*c)(R13), Z8; \
	KTP4(op, Z28, Z29, Z30, Z31)

// The reduction of the sixteen accumulators to one vector whose lane p
// is the sum of Z(16+p)'s lanes: four levels, each adding pairs u, v
// into u so that blocks of u's sum and v's sum alternate (256, 128, 64,
// then 32 bits), which leaves pair p in lane p.
#define KTR1(u, v) \
	VPBLENDMQ v, u, K2, Z0; \
	VSHUFI64X2 $0x4E, v, u, Z1; \
	VPADDD Z1, Z0, u

#define KTR2(u, v) \
	VPBLENDMQ v, u, K3, Z0; \
	VPERMT2Q v, Z10, u; \
	VPADDD Z0, u, u

#define KTR3(u, v) \
	VPUNPCKLQDQ v, u, Z0; \
	VPUNPCKHQDQ v, u, Z1; \
	VPADDD Z1, Z0, u

#define KTR4(u, v) \
	VPBLENDMD v, u, K4, Z0; \
	VPERMT2D v, Z10, u; \
	VPADDD Z0, u, u

// func dotQ4_Kx4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, bs unsafe.Pointer, bstride int, nb int, out *[16]float32) bool
//
// Weight rows at w + r·stride, activation rows j at qs + j·qstride (their
// scales at d + j·dstride, bsums at bs + j·bstride); out[4j+r]. nb ≥ 1.
// It returns false, out unwritten, where a bsum pair is not an int16.
TEXT ·dotQ4_Kx4x4VNNI(SB), NOSPLIT, $64-81
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), AX
	MOVQ qs+16(FP), DI
	MOVQ qstride+24(FP), R12
	MOVQ d+32(FP), DX
	MOVQ dstride+40(FP), BX
	MOVQ bs+48(FP), SI
	MOVQ nb+64(FP), CX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	LEAQ (DI)(R12*2), R13
	ADDQ R12, R13
	MOVL $0xFFFF0000, AX
	KMOVD AX, K1
	MOVL $0xF0, AX
	KMOVW AX, K2
	MOVL $0xCC, AX
	KMOVW AX, K3
	MOVL $0xAAAA, AX
	KMOVW AX, K4
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z14
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12

ktq4loop:
	// The four rows' first 16 bytes (d, dmin, scales[12]), a row a lane.
	VMOVDQU (R8), X0
	VINSERTI32X4 $1, (R9), Z0, Z0
	VINSERTI32X4 $2, (R10), Z0, Z0
	VINSERTI32X4 $3, (R11), Z0, Z0

	// Scales and minimums: lane r = [sc 0–7, m 0–7] of row r, to 0(SP).
	VPSHUFD $0xED, Z0, Z1
	VPSRLVD ktpshift<>(SB), Z1, Z1
	VPANDQ.BCST ktpmask<>(SB), Z1, Z1
	VPSHUFD $0xA5, Z0, Z2
	VPSRLD $2, Z2, Z2
	VPTERNLOGQ.BCST $0xF8, ktqmask<>(SB), Z2, Z1
	VMOVDQU64 Z1, (SP)

	// Z3 = d_a (lane 4j+r: row j's), Z13 = d_a·f16(d), Z5 = d_a·f16(dmin).
	VMOVDQU64 ktdd<>(SB), Z2
	VPERMW Z0, Z2, Z2
	VCVTPH2PS Y2, Z4
	VEXTRACTI64X4 $1, Z2, Y2
	VCVTPH2PS Y2, Z5
	VMOVSS (DX), X3
	VINSERTPS $0x10, (DX)(BX*1), X3, X3
	VINSERTPS $0x20, (DX)(BX*2), X3, X3
	LEAQ (DX)(BX*2), AX
	VINSERTPS $0x30, (AX)(BX*1), X3, X3
	VMOVDQU64 ktda<>(SB), Z2
	VPERMD Z3, Z2, Z3
	VMULPS Z4, Z3, Z13
	VMULPS Z5, Z3, Z5

	// The bsum pairs of rows 0,1 (Z8) and 2,3 (Z9): lanes 0–7 the first
	// row's pairs, 8–15 the second's, int32 as Go converts.
	MOVQ bstride+56(FP), AX
	VMOVDQU64 ktpe<>(SB), Z6
	VMOVDQU64 ktpo<>(SB), Z7
	VMOVUPS (SI), Z8
	VMOVAPS Z8, Z9
	VPERMT2PS (SI)(AX*1), Z6, Z8
	VPERMT2PS (SI)(AX*1), Z7, Z9
	VADDPS Z9, Z8, Z8
	VCVTTPS2DQ Z8, Z8
	VMOVUPS (SI)(AX*2), Z9
	VMOVAPS Z9, Z10
	LEAQ (AX)(AX*2), AX
	VPERMT2PS (SI)(AX*1), Z6, Z9
	VPERMT2PS (SI)(AX*1), Z7, Z10
	VADDPS Z10, Z9, Z9
	VCVTTPS2DQ Z9, Z9
	VPADDD.BCST kt8000<>(SB), Z8, Z6
	VPADDD.BCST kt8000<>(SB), Z9, Z7
	VPORD Z7, Z6, Z6
	VPTESTMD.BCST ktffff<>(SB), Z6, K5
	KORTESTW K5, K5
	JNZ ktq4bail

	// Z8: lane j = row j's eight pairs as words. summ, lane 4j+r, is
	// Σ_t VPDPWSSD of [p(j,2t), p(j,2t+1)] (VPSHUFD of dword t) with
	// [m(r,2t), m(r,2t+1)].
	VPMOVDW Z8, Y8
	VPMOVDW Z9, Y9
	VINSERTI64X4 $1, Y9, Z8, Z8
	VMOVDQU64 ktmm<>(SB), Z6
	VPERMD Z1, Z6, Z6
	VMOVDQU64 ktmm<>+64(SB), Z7
	VPERMD Z1, Z7, Z7
	VPSHUFD $0x00, Z8, Z9
	VPSHUFB ktmw<>(SB), Z6, Z10
	VPMADDWD Z10, Z9, Z2
	VPSHUFD $0x55, Z8, Z9
	VPSHUFB ktmw<>+64(SB), Z6, Z10
	VPDPWSSD Z10, Z9, Z2
	VPSHUFD $0xAA, Z8, Z9
	VPSHUFB ktmw<>(SB), Z7, Z10
	VPDPWSSD Z10, Z9, Z2
	VPSHUFD $0xFF, Z8, Z9
	VPSHUFB ktmw<>+64(SB), Z7, Z10
	VPDPWSSD Z10, Z9, Z2

	// accm += float32(float32(d_a·f16(dmin))·float32(summ))
	VCVTDQ2PS Z2, Z2
	VMULPS Z2, Z5, Z5
	VADDPS Z5, Z12, Z12

	KTCHUNK(VPMADDWD, 0)
	KTCHUNK(VPDPWSSD, 1)
	KTCHUNK(VPDPWSSD, 2)
	KTCHUNK(VPDPWSSD, 3)

	KTR1(Z16, Z24)
	KTR1(Z17, Z25)
	KTR1(Z18, Z26)
	KTR1(Z19, Z27)
	KTR1(Z20, Z28)
	KTR1(Z21, Z29)
	KTR1(Z22, Z30)
	KTR1(Z23, Z31)
	VMOVDQU64 ktr2<>(SB), Z10
	KTR2(Z16, Z20)
	KTR2(Z17, Z21)
	KTR2(Z18, Z22)
	KTR2(Z19, Z23)
	KTR3(Z16, Z18)
	KTR3(Z17, Z19)
	VMOVDQU64 ktr4<>(SB), Z10
	KTR4(Z16, Z17)

	// acc += float32(float32(d_a·f16(d))·float32(sumi))
	VCVTDQ2PS Z16, Z16
	VMULPS Z16, Z13, Z16
	VADDPS Z16, Z11, Z11

	ADDQ $144, R8
	ADDQ $144, R9
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $256, DI
	ADDQ $256, R13
	ADDQ $4, DX
	ADDQ $64, SI
	DECQ CX
	JNZ  ktq4loop

	VSUBPS Z12, Z11, Z11
	MOVQ out+72(FP), AX
	VMOVUPS Z11, (AX)
	MOVB $1, ret+80(FP)
	VZEROUPPER
	RET

ktq4bail:
	MOVB $0, ret+80(FP)
	VZEROUPPER
	RET

// The Q6_K tile: four Q6_K weight rows against four Q8_K activation rows,
// each result bit-identical to dotQ6_Kx4AVX2 (q6k_amd64.s) and so to
// dotQ6_KGo. Per pair the Go code forms sumi = Σ_g sc_g·Σ(q−32)·a over the
// sixteen sub-blocks of 16 (sc_g int8), then one float32 step, acc +=
// float32(float32(f16(d)·d_a)·float32(sumi)), here in lane 4j+r as above.
//
// The integer part runs with the activation unsigned and the weight
// signed: VPMADDUBSW(a+128, q−32), a+128 one XOR per activation chunk
// shared by four weight rows, q−32 made while unpacking. That gives
// U = Σ_g sc_g·Σ(a+128)(q−32) = sumi + C, where C = 128·Σ_g sc_g·Σ(q−32)
// depends on the weight row alone; C comes from VPMADDUBSW(128, q−32) with
// the same scales, once per row, and is subtracted from the row's four
// accumulators before the reduction. Magnitudes: a pair of (a+128)(q−32)
// is at most 2·255·32 = 16320 (no saturation); VPDPWSSD with |sc| ≤ 128
// adds at most 2·16320·128 = 4177920 to a lane per chunk; U is at most
// 256·255·32·128 = 267386880 and C 256·128·32·128 = 134217728, so every
// lane and partial sum of U − C stays below 2^31, and sumi itself is at
// most 256·32·128·128 = 2^27, as in the Go code: all exact.
//
// A 64-byte chunk c (0..3) is half c/2, groups 2(c%2) and 2(c%2)+1
// (docs/formats.md#q6_k): the half's 64 ql bytes (low nibbles for even c,
// high for odd) and its 32 qh bytes broadcast to both halves, the two bits
// shifted to bits 4–5 by a word shift per half (VPSLLVW/VPSRLVW), masked,
// then 0xE0 added (bits 4–7 become hi−2 mod 16, so the byte is q−32 in
// two's complement) and the nibble merged in (VPTERNLOGD). Each 128-bit
// lane of the chunk is one sub-block, scale 4c+ℓ: the scales are widened
// to words once per super-block (on the stack) and spread by VPBROADCASTQ
// and VPSHUFB.
//
// Registers in the chunks: Z0–Z3 the rows' q−32, Z4–Z7 their scale words,
// Z8 the activation+128, Z9 products, Z10/Z12/Z14/Z15 the rows' C, Z11
// acc, Z13 0x80 bytes, Z16–Z31 the accumulators; 0(SP) the rows' scale
// words (32 bytes a row), 128(SP) f16(d)·d_a.

DATA kq6se<>+0(SB)/8, $0x0004000400040004
DATA kq6se<>+8(SB)/8, $0x0004000400040004
DATA kq6se<>+16(SB)/8, $0x0004000400040004
DATA kq6se<>+24(SB)/8, $0x0004000400040004
DATA kq6se<>+32(SB)/8, $0x0002000200020002
DATA kq6se<>+40(SB)/8, $0x0002000200020002
DATA kq6se<>+48(SB)/8, $0x0002000200020002
DATA kq6se<>+56(SB)/8, $0x0002000200020002
GLOBL kq6se<>(SB), RODATA|NOPTR, $64

DATA kq6so<>+0(SB)/8, $0
DATA kq6so<>+8(SB)/8, $0
DATA kq6so<>+16(SB)/8, $0
DATA kq6so<>+24(SB)/8, $0
DATA kq6so<>+32(SB)/8, $0x0002000200020002
DATA kq6so<>+40(SB)/8, $0x0002000200020002
DATA kq6so<>+48(SB)/8, $0x0002000200020002
DATA kq6so<>+56(SB)/8, $0x0002000200020002
GLOBL kq6so<>(SB), RODATA|NOPTR, $64

DATA kq6e0<>+0(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+8(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+16(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+24(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+32(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+40(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+48(SB)/8, $0xe0e0e0e0e0e0e0e0
DATA kq6e0<>+56(SB)/8, $0xe0e0e0e0e0e0e0e0
GLOBL kq6e0<>(SB), RODATA|NOPTR, $64

DATA kq630<>+0(SB)/4, $0x30303030
GLOBL kq630<>(SB), RODATA|NOPTR, $4

DATA kq60f<>+0(SB)/4, $0x0f0f0f0f
GLOBL kq60f<>(SB), RODATA|NOPTR, $4

// kq6sc<>: VPSHUFB control giving 128-bit lane ℓ word ℓ of its qword.
DATA kq6sc<>+0(SB)/8, $0x0100010001000100
DATA kq6sc<>+8(SB)/8, $0x0100010001000100
DATA kq6sc<>+16(SB)/8, $0x0302030203020302
DATA kq6sc<>+24(SB)/8, $0x0302030203020302
DATA kq6sc<>+32(SB)/8, $0x0504050405040504
DATA kq6sc<>+40(SB)/8, $0x0504050405040504
DATA kq6sc<>+48(SB)/8, $0x0706070607060706
DATA kq6sc<>+56(SB)/8, $0x0706070607060706
GLOBL kq6sc<>(SB), RODATA|NOPTR, $64

// Q6WE and Q6WO make zw the q−32 bytes of chunk c of the row at wp (Z9
// scratch), for even c (low nibbles; qh bits 0–1 and 2–3 shifted left by
// 4 and 2) and odd c (high nibbles; bits 4–5 and 6–7 shifted right by 0
// and 2).
#define Q6WE(c, wp, zw) \
	VMOVDQU64 (64*(c/2))(wp), zw; \
	VBROADCASTI64X4 (128+32*(c/2))(wp), Z9; \
	VPSLLVW kq6se<>(SB), Z9, Z9; \
	Q6WMERGE(zw)

#define Q6WO(c, wp, zw) \
	VMOVDQU64 (64*(c/2))(wp), zw; \
	VBROADCASTI64X4 (128+32*(c/2))(wp), Z9; \
	VPSRLW $4, zw, zw; \
	VPSRLVW kq6so<>(SB), Z9, Z9; \
	Q6WMERGE(zw)

// Q6WMERGE: zw = its low nibbles | (Z9 & 0x30) + 0xE0 above them.
#define Q6WMERGE(zw) \
	VPANDD.BCST kq630<>(SB), Z9, Z9; \
	VPADDB kq6e0<>(SB), Z9, Z9; \
	VPTERNLOGD.BCST $0xE4, kq60f<>(SB), Z9, zw

#define Q6S(c, r, zs) \
	VPBROADCASTQ (32*r+8*c)(SP), zs; \
	VPSHUFB kq6sc<>(SB), zs, zs

// Q6P adds the activation chunk in Z8 against row zw (scale words zs)
// into acc.
#define Q6P(op, zw, zs, acc) \
	VPMADDUBSW zw, Z8, Z9; \
	op zs, Z9, acc

#define Q6CHUNK(op, c, unpack) \
	unpack(c, R8, Z0); \
	unpack(c, R9, Z1); \
	unpack(c, R10, Z2); \
	unpack(c, R11, Z3); \
	Q6S(c, 0, Z4); \
	Q6S(c, 1, Z5); \
	Q6S(c, 2, Z6); \
	Q6S(c, 3, Z7); \
	VPMADDUBSW Z0, Z13, Z9; \
	op Z4, Z9, Z10; \
	VPMADDUBSW Z1, Z13, Z9; \
	op Z5, Z9, Z12; \
	VPMADDUBSW Z2, Z13, Z9; \
	op Z6, Z9, Z14; \
	VPMADDUBSW Z3, Z13, Z9; \
	op Z7, Z9, Z15; \
	VPXORD (64*c)(DI), Z13, Z8; \
	Q6P(op, Z0, Z4, Z16); \
	Q6P(op, Z1, Z5, Z17); \
	Q6P(op, Z2, Z6, Z18); \
	Q6P(op, Z3, Z7, Z19); \
	VPXORD (64*c)(DI)(R12*1), Z13, Z8; \
	Q6P(op, Z0, Z4, Z20); \
	Q6P(op, Z1, Z5, Z21); \
	Q6P(op, Z2, Z6, Z22); \
	Q6P(op, Z3, Z7, Z23); \
	VPXORD (64*c)(DI)(R12*2), Z13, Z8; \
	Q6P(op, Z0, Z4, Z24); \
	Q6P(op, Z1, Z5, Z25); \
	Q6P(op, Z2, Z6, Z26); \
	Q6P(op, Z3, Z7, Z27); \
	VPXORD (64*c)(R13), Z13, Z8; \
	Q6P(op, Z0, Z4, Z28); \
	Q6P(op, Z1, Z5, Z29); \
	Q6P(op, Z2, Z6, Z30); \
	Q6P(op, Z3, Z7, Z31)

// func dotQ6_Kx4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)
//
// Weight rows at w + r·stride, activation rows j at qs + j·qstride (their
// scales at d + j·dstride); out[4j+r]. nb ≥ 1.
TEXT ·dotQ6_Kx4x4VNNI(SB), NOSPLIT, $192-64
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), AX
	MOVQ qs+16(FP), DI
	MOVQ qstride+24(FP), R12
	MOVQ d+32(FP), DX
	MOVQ dstride+40(FP), BX
	MOVQ nb+48(FP), CX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	LEAQ (DI)(R12*2), R13
	ADDQ R12, R13
	MOVL $0xF0, AX
	KMOVW AX, K2
	MOVL $0xCC, AX
	KMOVW AX, K3
	MOVL $0xAAAA, AX
	KMOVW AX, K4
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Z11, Z11, Z11

ktq6loop:
	// The rows' sixteen int8 scales, widened to words, to 0(SP).
	VMOVDQU 192(R8), X0
	VINSERTI32X4 $1, 192(R9), Z0, Z0
	VINSERTI32X4 $2, 192(R10), Z0, Z0
	VINSERTI32X4 $3, 192(R11), Z0, Z0
	VPMOVSXBW Y0, Z1
	VEXTRACTI64X4 $1, Z0, Y0
	VPMOVSXBW Y0, Z2
	VMOVDQU64 Z1, (SP)
	VMOVDQU64 Z2, 64(SP)

	// f16(d)·d_a, lane 4j+r, to 128(SP).
	MOVWLZX 208(R8), AX
	VMOVD AX, X3
	VPINSRW $1, 208(R9), X3, X3
	VPINSRW $2, 208(R10), X3, X3
	VPINSRW $3, 208(R11), X3, X3
	VCVTPH2PS X3, X3
	VSHUFF32X4 $0, Z3, Z3, Z3
	VMOVSS (DX), X4
	VINSERTPS $0x10, (DX)(BX*1), X4, X4
	VINSERTPS $0x20, (DX)(BX*2), X4, X4
	LEAQ (DX)(BX*2), AX
	VINSERTPS $0x30, (AX)(BX*1), X4, X4
	VMOVDQU64 ktda<>(SB), Z2
	VPERMD Z4, Z2, Z4
	VMULPS Z4, Z3, Z3
	VMOVUPS Z3, 128(SP)

	Q6CHUNK(VPMADDWD, 0, Q6WE)
	Q6CHUNK(VPDPWSSD, 1, Q6WO)
	Q6CHUNK(VPDPWSSD, 2, Q6WE)
	Q6CHUNK(VPDPWSSD, 3, Q6WO)

	// sumi = U − C, then the reduction as for Q4_K.
	VPSUBD Z10, Z16, Z16
	VPSUBD Z10, Z20, Z20
	VPSUBD Z10, Z24, Z24
	VPSUBD Z10, Z28, Z28
	VPSUBD Z12, Z17, Z17
	VPSUBD Z12, Z21, Z21
	VPSUBD Z12, Z25, Z25
	VPSUBD Z12, Z29, Z29
	VPSUBD Z14, Z18, Z18
	VPSUBD Z14, Z22, Z22
	VPSUBD Z14, Z26, Z26
	VPSUBD Z14, Z30, Z30
	VPSUBD Z15, Z19, Z19
	VPSUBD Z15, Z23, Z23
	VPSUBD Z15, Z27, Z27
	VPSUBD Z15, Z31, Z31
	KTR1(Z16, Z24)
	KTR1(Z17, Z25)
	KTR1(Z18, Z26)
	KTR1(Z19, Z27)
	KTR1(Z20, Z28)
	KTR1(Z21, Z29)
	KTR1(Z22, Z30)
	KTR1(Z23, Z31)
	VMOVDQU64 ktr2<>(SB), Z10
	KTR2(Z16, Z20)
	KTR2(Z17, Z21)
	KTR2(Z18, Z22)
	KTR2(Z19, Z23)
	KTR3(Z16, Z18)
	KTR3(Z17, Z19)
	VMOVDQU64 ktr4<>(SB), Z10
	KTR4(Z16, Z17)

	// acc += float32(float32(f16(d)·d_a)·float32(sumi))
	VCVTDQ2PS Z16, Z16
	VMULPS 128(SP), Z16, Z16
	VADDPS Z16, Z11, Z11

	ADDQ $210, R8
	ADDQ $210, R9
	ADDQ $210, R10
	ADDQ $210, R11
	ADDQ $256, DI
	ADDQ $256, R13
	ADDQ $4, DX
	DECQ CX
	JNZ  ktq6loop

	MOVQ out+56(FP), AX
	VMOVUPS Z11, (AX)
	VZEROUPPER
	RET
