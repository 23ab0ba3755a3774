//go:build amd64 && !purego

#include "textflag.h"

// AVX2 dot products of the low-bit K-quants (Q2_K, Q3_K) and the I-quants
// without a codebook (IQ4_XS, IQ4_NL) with their Q8_K or Q8_0 activation,
// bit-identical to dotQ2_KGo, dotQ3_KGo, dotIQ4_XSGo and dotIQ4_NLGo
// (lowbit.go). Block layouts: docs/formats.md#q2_k, #q3_k, #iq4_xs,
// #iq4_nl.
//
// The integer sums are exact in any order (int32 adds wrap and associate,
// as Go's do), so the SIMD only has to reach the same int32s; the float32
// steps are the Go code's, one rounding each: the two scales multiplied
// (VMULSS), the int32 converted to nearest (VCVTDQ2PS), the product, then
// the add, never fused. Each four-row form runs the one-row form's
// operations for row r in lane r, or on row r's own accumulator, so each
// of its rows is bit-identical to the one-row form.
//
// Q2_K and Q3_K, per 32 elements of group G = 4n+g (element 128n+32g+l is
// bits 2g..2g+1 of qs[32n+l]): the two sub-blocks of 16, 2G and 2G+1, land
// in the low and high 128-bit lanes of the VPMADDUBSW result. The 16
// scales are kept as int16, the even sub-blocks' in the low lane and the
// odd ones' in the high, word G of each lane for group G, so that one
// VPSHUFB (lbcast) spreads a group's two scales over its two lanes.
//	Q2_K: q is 0..3, unsigned: a pair of q·a is at most 2·3·128 = 768 in
//	magnitude; VPMADDWD by the scale (0..15) at most 2·768·15 per lane.
//	The minimum term is m_j·int32(bs_j): the bsums truncated as Go converts
//	them (VCVTTPS2DQ, Go's CVTTSS2SL: 0x80000000 for NaN and out of range),
//	multiplied and added in wrapping int32 (VPMULLD), as Go's are.
//	Q3_K: u = low2 | hbit<<2 is 0..7, unsigned, and q = u − 4, so
//	sumi = Σ_j sc_j·Σu·a − 4·Σ_j sc_j·A_j, A_j the sum of the activation
//	over sub-block j. A pair of u·a is at most 2·7·128 = 1792 in
//	magnitude; VPMADDWD by the signed scale (−32..31) at most 2·1792·32 per
//	lane. The 4·A_j (at most 4·16·128 = 8192, int16) depend on the
//	activation only and are made once per super-block for every row; one
//	VPMADDWD of them with the row's scales (at most 2·8192·32 per lane)
//	starts the row's lanes. |sumi| is at most 256·4·128·32 = 2^22, and
//	no partial sum passes 256·7·128·32 < 2^23.
//
// IQ4_XS and IQ4_NL: the table's values (−127..113) are signed, and the
// activation may be −128, so the sign trick of dot_amd64.s (|w| against
// a·sign(w)) would turn a = −128 to −128 where w < 0. Instead the weight is
// split into its positive and negative parts, T = P − N with P, N ≥ 0
// (two VPSHUFB lookups of the nibble, iq4pos and iq4neg): VPMADDUBSW(P, a)
// and VPMADDUBSW(N, a) are each exact (a pair at most 2·127·128 = 32512 <
// 2^15), and so is their int16 difference, whose true value, the pair of
// T·a, lies within ±32512 (VPSUBW wraps, the result does not).
//	IQ4_XS: VPMADDWD by the sub-block's scale (ls − 32, −32..31): at most
//	2·32512·32 < 2^21 per lane, a super-block's sumi below 2^27.
//	IQ4_NL: VPMADDWD by 1 gives lanes8's lane sums (elements 4l..4l+3), as
//	dotQ4_0AVX2 does; one 8-lane float accumulator, reduced as hsum8.
//
// Sub-block pairs of IQ4_XS: 32 bytes of qs hold sub-blocks 2p (low lane)
// and 2p+1 (high lane), low nibbles the elements 0..15, high ones 16..31.
// Rather than move the weights across lanes, the activation is laid out to
// match once per super-block, into 0(SP)..255(SP): at 64p the elements
// 0..15 of both sub-blocks, at 64p+32 their elements 16..31.

// lbcast<>+32G: the VPSHUFB indices that copy word G of each 128-bit lane
// into every word of that lane.
DATA lbcast<>+0(SB)/8, $0x0100010001000100
DATA lbcast<>+8(SB)/8, $0x0100010001000100
DATA lbcast<>+16(SB)/8, $0x0100010001000100
DATA lbcast<>+24(SB)/8, $0x0100010001000100
DATA lbcast<>+32(SB)/8, $0x0302030203020302
DATA lbcast<>+40(SB)/8, $0x0302030203020302
DATA lbcast<>+48(SB)/8, $0x0302030203020302
DATA lbcast<>+56(SB)/8, $0x0302030203020302
DATA lbcast<>+64(SB)/8, $0x0504050405040504
DATA lbcast<>+72(SB)/8, $0x0504050405040504
DATA lbcast<>+80(SB)/8, $0x0504050405040504
DATA lbcast<>+88(SB)/8, $0x0504050405040504
DATA lbcast<>+96(SB)/8, $0x0706070607060706
DATA lbcast<>+104(SB)/8, $0x0706070607060706
DATA lbcast<>+112(SB)/8, $0x0706070607060706
DATA lbcast<>+120(SB)/8, $0x0706070607060706
DATA lbcast<>+128(SB)/8, $0x0908090809080908
DATA lbcast<>+136(SB)/8, $0x0908090809080908
DATA lbcast<>+144(SB)/8, $0x0908090809080908
DATA lbcast<>+152(SB)/8, $0x0908090809080908
DATA lbcast<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA lbcast<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA lbcast<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA lbcast<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA lbcast<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA lbcast<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA lbcast<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA lbcast<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA lbcast<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA lbcast<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA lbcast<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA lbcast<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL lbcast<>(SB), RODATA|NOPTR, $256

// levenodd<>: bytes 0, 2, .., 14, then 1, 3, .., 15.
DATA levenodd<>+0(SB)/8, $0x0e0c0a0806040200
DATA levenodd<>+8(SB)/8, $0x0f0d0b0907050301
GLOBL levenodd<>(SB), RODATA|NOPTR, $16

// Bytes 0x03, 0x04, 0x0f, 0x20; words 1.
DATA lb03<>+0(SB)/8, $0x0303030303030303
DATA lb03<>+8(SB)/8, $0x0303030303030303
DATA lb03<>+16(SB)/8, $0x0303030303030303
DATA lb03<>+24(SB)/8, $0x0303030303030303
GLOBL lb03<>(SB), RODATA|NOPTR, $32

DATA lb04<>+0(SB)/8, $0x0404040404040404
DATA lb04<>+8(SB)/8, $0x0404040404040404
DATA lb04<>+16(SB)/8, $0x0404040404040404
DATA lb04<>+24(SB)/8, $0x0404040404040404
GLOBL lb04<>(SB), RODATA|NOPTR, $32

DATA lb0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lb0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lb0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lb0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL lb0f<>(SB), RODATA|NOPTR, $32

DATA lb20<>+0(SB)/8, $0x2020202020202020
DATA lb20<>+8(SB)/8, $0x2020202020202020
GLOBL lb20<>(SB), RODATA|NOPTR, $16

DATA lw01<>+0(SB)/8, $0x0001000100010001
DATA lw01<>+8(SB)/8, $0x0001000100010001
DATA lw01<>+16(SB)/8, $0x0001000100010001
DATA lw01<>+24(SB)/8, $0x0001000100010001
GLOBL lw01<>(SB), RODATA|NOPTR, $32

// Q3_K's high scale bits: dword k shifted right by 2k ([0, 2, 4, 6]).
DATA l3shift<>+0(SB)/8, $0x0000000200000000
DATA l3shift<>+8(SB)/8, $0x0000000600000004
GLOBL l3shift<>(SB), RODATA|NOPTR, $16

// iq4pos and iq4neg: for each index of the IQ4 table (dtype.IQ4NL), max(T, 0) and
// max(−T, 0) (in both lanes, for VPSHUFB).
//	T = −127 −104 −83 −65 −49 −35 −22 −10 | 1 13 25 38 53 69 89 113
DATA iq4pos<>+0(SB)/8, $0
DATA iq4pos<>+8(SB)/8, $0x7159453526190d01
DATA iq4pos<>+16(SB)/8, $0
DATA iq4pos<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4pos<>(SB), RODATA|NOPTR, $32

DATA iq4neg<>+0(SB)/8, $0x0a1623314153687f
DATA iq4neg<>+8(SB)/8, $0
DATA iq4neg<>+16(SB)/8, $0x0a1623314153687f
DATA iq4neg<>+24(SB)/8, $0
GLOBL iq4neg<>(SB), RODATA|NOPTR, $32

// IQ4_XS scales: dword i takes sub-block ib = 0, 2, 4, 6, 1, 3, 5, 7 (the
// even ones in the low lane, the odd in the high): scales_l >> 4ib, then
// masked by 0x0f; (scales_h << 4) >> 2ib, masked by 0x30.
DATA xsslo<>+0(SB)/8, $0x0000000800000000
DATA xsslo<>+8(SB)/8, $0x0000001800000010
DATA xsslo<>+16(SB)/8, $0x0000000c00000004
DATA xsslo<>+24(SB)/8, $0x0000001c00000014
GLOBL xsslo<>(SB), RODATA|NOPTR, $32

DATA xsshi<>+0(SB)/8, $0x0000000400000000
DATA xsshi<>+8(SB)/8, $0x0000000c00000008
DATA xsshi<>+16(SB)/8, $0x0000000600000002
DATA xsshi<>+24(SB)/8, $0x0000000e0000000a
GLOBL xsshi<>(SB), RODATA|NOPTR, $32

// Dwords 0x0f, 0x30, 0x20.
DATA xsd0f<>+0(SB)/8, $0x0000000f0000000f
DATA xsd0f<>+8(SB)/8, $0x0000000f0000000f
DATA xsd0f<>+16(SB)/8, $0x0000000f0000000f
DATA xsd0f<>+24(SB)/8, $0x0000000f0000000f
GLOBL xsd0f<>(SB), RODATA|NOPTR, $32

DATA xsd30<>+0(SB)/8, $0x0000003000000030
DATA xsd30<>+8(SB)/8, $0x0000003000000030
DATA xsd30<>+16(SB)/8, $0x0000003000000030
DATA xsd30<>+24(SB)/8, $0x0000003000000030
GLOBL xsd30<>(SB), RODATA|NOPTR, $32

DATA xsd20<>+0(SB)/8, $0x0000002000000020
DATA xsd20<>+8(SB)/8, $0x0000002000000020
DATA xsd20<>+16(SB)/8, $0x0000002000000020
DATA xsd20<>+24(SB)/8, $0x0000002000000020
GLOBL xsd20<>(SB), RODATA|NOPTR, $32

// LPFD is how far ahead the kernels prefetch each row, as dot_amd64.s's
// PFD (decode streams the weights from DRAM).
#define LPFD 8192

// ---- Shared pieces ----

// LSUM8 reduces the eight int32 lanes of Y0 into X0 (any order: exact).
#define LSUM8 \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDD  X1, X0, X0; \
	VPSHUFD $0x4E, X0, X1; \
	VPADDD  X1, X0, X0; \
	VPSHUFD $0xB1, X0, X1; \
	VPADDD  X1, X0, X0

// LSTEP: X10 += float32(f16(d) at off(w) · d_a) · float32(sumi in X0),
// each step rounded, as the Go code's one statement.
#define LSTEP(w, off) \
	MOVWLZX off(w), AX; \
	VMOVD   AX, X6; \
	VCVTPH2PS X6, X6; \
	VMULSS  (DX), X6, X6; \
	VCVTDQ2PS X0, X0; \
	VMULSS  X0, X6, X6; \
	VADDSS  X6, X10, X10

// LX4STEP: LSTEP for the four rows (R8..R11) at once, lane r for row r:
// Y0..Y3 hold the rows' int32 lanes, reduced pairwise within each 128-bit
// lane and then across, into lane r of X0.
#define LX4STEP(off) \
	VPHADDD Y1, Y0, Y0; \
	VPHADDD Y3, Y2, Y2; \
	VPHADDD Y2, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDD  X1, X0, X0; \
	MOVWLZX off(R8), AX; \
	VMOVD   AX, X6; \
	VPINSRW $1, off(R9), X6, X6; \
	VPINSRW $2, off(R10), X6, X6; \
	VPINSRW $3, off(R11), X6, X6; \
	VCVTPH2PS X6, X6; \
	VBROADCASTSS (DX), X9; \
	VMULPS  X9, X6, X6; \
	VCVTDQ2PS X0, X0; \
	VMULPS  X0, X6, X6; \
	VADDPS  X6, X10, X10

// LX4ENTER loads the four-row forms' arguments: rows at R8..R11, stride
// bytes apart; DI activation qs, DX its scales, CX the blocks.
#define LX4ENTER \
	MOVQ w+0(FP), R8; \
	MOVQ stride+8(FP), R12; \
	MOVQ qs+16(FP), DI; \
	MOVQ d+24(FP), DX; \
	MOVQ nb+32(FP), CX; \
	LEAQ (R8)(R12*1), R9; \
	LEAQ (R9)(R12*1), R10; \
	LEAQ (R10)(R12*1), R11

#define LX4NEXT(bytes) \
	ADDQ $bytes, R8; \
	ADDQ $bytes, R9; \
	ADDQ $bytes, R10; \
	ADDQ $bytes, R11

// ---- Q3_K (110 bytes: hmask[32], qs[64], scales[12], f16 d) ----
//
// Registers: Y4 hmask, Y5 the half's qs, Y6 −4·A, Y7 the 16 scales as
// int16, Y8 Y9 temporaries; Y13 0x0f bytes, Y14 0x04, Y15 0x03. Y0..Y3
// are free while Q3KACT runs.

#define Q3KCONST \
	VMOVDQU lb03<>(SB), Y15; \
	VMOVDQU lb04<>(SB), Y14; \
	VMOVDQU lb0f<>(SB), Y13

#define Q3KM4(G, dst) VPMADDUBSW (32*(G))(DI), Y14, dst

// Q3KACT: Y6 = −4·A_j for the super-block's activation, A_j the sum of
// sub-block j, in word G of the low lane for j = 2G and of the high lane
// for j = 2G+1: the pairs of 4·a of each group, summed pairwise by three
// rounds of VPHADDW (int16 sums of at most 4·16·128 = 8192 in magnitude).
#define Q3KACT \
	Q3KM4(0, Y0); \
	Q3KM4(1, Y1); \
	VPHADDW Y1, Y0, Y0; \
	Q3KM4(2, Y1); \
	Q3KM4(3, Y2); \
	VPHADDW Y2, Y1, Y1; \
	VPHADDW Y1, Y0, Y0; \
	Q3KM4(4, Y1); \
	Q3KM4(5, Y2); \
	VPHADDW Y2, Y1, Y1; \
	Q3KM4(6, Y2); \
	Q3KM4(7, Y3); \
	VPHADDW Y3, Y2, Y2; \
	VPHADDW Y2, Y1, Y1; \
	VPHADDW Y1, Y0, Y0; \
	VPXOR   Y6, Y6, Y6; \
	VPSUBW  Y0, Y6, Y6

// Q3KSCALES: Y7 = the 16 scales of the block at w, int16, in Y6's order:
// low nibbles of bytes 0..7, then their high nibbles; the two high bits
// of j in bits 2(j/4).. of byte 8 + j%4 (dword k of the broadcast bytes
// 8..11 shifted by 2k puts them in byte 4k + j%4 = j); minus 32; the
// even j to the low lane, the odd to the high.
#define Q3KSCALES(w) \
	VMOVQ   96(w), X8; \
	VPSRLW  $4, X8, X9; \
	VPUNPCKLQDQ X9, X8, X8; \
	VPAND   X13, X8, X8; \
	VPBROADCASTD 104(w), X9; \
	VPSRLVD l3shift<>(SB), X9, X9; \
	VPAND   X15, X9, X9; \
	VPSLLW  $4, X9, X9; \
	VPOR    X9, X8, X8; \
	VPSUBB  lb20<>(SB), X8, X8; \
	VPSHUFB levenodd<>(SB), X8, X8; \
	VPMOVSXBW X8, Y7

// Group G = 4n+g of a block (n the half, in Y5): u = qs>>2g & 3 | the
// high bit (bit 4n+g of hmask, Y4) moved to bit 2 by a word shift (hop
// $hsh: a shift of at most 5 right or 2 left brings bit 2 of each byte
// from the same byte, and the mask drops the rest). Q3KU builds u in Y8;
// Q3KU0 for g = 0 (no qs shift), Q3KUH for 4n+g = 2 (no hmask shift).
#define Q3KU(qsh, hop, hsh) \
	VPSRLW  $qsh, Y5, Y8; \
	VPAND   Y15, Y8, Y8; \
	hop     $hsh, Y4, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y8, Y8

#define Q3KU0(hop, hsh) \
	VPAND   Y15, Y5, Y8; \
	hop     $hsh, Y4, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y8, Y8

#define Q3KUH(qsh) \
	VPSRLW  $qsh, Y5, Y8; \
	VPAND   Y15, Y8, Y8; \
	VPAND   Y14, Y4, Y9; \
	VPOR    Y9, Y8, Y8

// Q3KDOT adds the pairs of u·a for group G, scaled by sub-blocks 2G (low
// lane) and 2G+1 (high), into acc.
#define Q3KDOT(G, acc) \
	VPMADDUBSW (32*(G))(DI), Y8, Y8; \
	VPSHUFB lbcast<>+(32*(G))(SB), Y7, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y8, acc, acc

// Q3KBLOCK sets acc to the eight int32 lane sums of the block at w,
// starting from −4·Σ_j sc_j·A_j, so that u·a becomes (u−4)·a.
#define Q3KBLOCK(w, acc) \
	PREFETCHT0 LPFD(w); \
	PREFETCHT0 (LPFD+64)(w); \
	Q3KSCALES(w); \
	VMOVDQU (w), Y4; \
	VPMADDWD Y6, Y7, acc; \
	VMOVDQU 32(w), Y5; \
	Q3KU0(VPSLLW, 2); \
	Q3KDOT(0, acc); \
	Q3KU(2, VPSLLW, 1); \
	Q3KDOT(1, acc); \
	Q3KUH(4); \
	Q3KDOT(2, acc); \
	Q3KU(6, VPSRLW, 1); \
	Q3KDOT(3, acc); \
	VMOVDQU 64(w), Y5; \
	Q3KU0(VPSRLW, 2); \
	Q3KDOT(4, acc); \
	Q3KU(2, VPSRLW, 3); \
	Q3KDOT(5, acc); \
	Q3KU(4, VPSRLW, 4); \
	Q3KDOT(6, acc); \
	Q3KU(6, VPSRLW, 5); \
	Q3KDOT(7, acc)

// ---- Q2_K (84 bytes: scales[16], qs[64], f16 d, f16 dmin) ----
//
// As kquant_amd64.s: each row's float state is [acc, accm] in X0..X3.
// Registers: Y4 the half's qs, Y5 the m_j·bs_j lanes, Y7 the 16 scales
// as int16 (even sub-blocks in the low lane, odd in the high, as
// Q3KSCALES), Y8 Y9 temporaries, Y10 the sumi lanes; X11 d_a broadcast,
// Y12 Y13 bs 0..7, 8..15 as int32 (truncated), Y14 0x03 bytes, Y15 0x0f.

#define Q2KCONST \
	VMOVDQU lb03<>(SB), Y14; \
	VMOVDQU lb0f<>(SB), Y15

// Q2KACT: X11 = d_a, Y12 Y13 = int32(bs) for the super-block at DX, bs.
#define Q2KACT(bs) \
	VBROADCASTSS (DX), X11; \
	VCVTTPS2DQ (bs), Y12; \
	VCVTTPS2DQ 32(bs), Y13

// Q2KGROUP adds group G = 4n+g (qs of half n in Y4) scaled by sub-blocks
// 2G (low lane) and 2G+1 (high) into Y10; Q2KGROUP0 for g = 0.
#define Q2KGROUP(G, qsh) \
	VPSRLW  $qsh, Y4, Y8; \
	VPAND   Y14, Y8, Y8; \
	Q2KDOT(G)

#define Q2KGROUP0(G) \
	VPAND   Y14, Y4, Y8; \
	Q2KDOT(G)

#define Q2KDOT(G) \
	VPMADDUBSW (32*(G))(DI), Y8, Y8; \
	VPSHUFB lbcast<>+(32*(G))(SB), Y7, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y8, Y10, Y10

// Q2KROW adds the block at w into acc: [sumi, summ] reduced, converted,
// times [d_a·f16(d), d_a·f16(dmin)] (dotQ2_KGo's two statements, a lane
// each).
#define Q2KROW(w, acc) \
	PREFETCHT0 LPFD(w); \
	PREFETCHT0 (LPFD+64)(w); \
	VPMOVZXBD (w), Y5; \
	VPSRLD  $4, Y5, Y5; \
	VPMULLD Y12, Y5, Y5; \
	VPMOVZXBD 8(w), Y8; \
	VPSRLD  $4, Y8, Y8; \
	VPMULLD Y13, Y8, Y8; \
	VPADDD  Y8, Y5, Y5; \
	VMOVDQU (w), X7; \
	VPAND   X15, X7, X7; \
	VPSHUFB levenodd<>(SB), X7, X7; \
	VPMOVZXBW X7, Y7; \
	VPXOR   Y10, Y10, Y10; \
	VMOVDQU 16(w), Y4; \
	Q2KGROUP0(0); \
	Q2KGROUP(1, 2); \
	Q2KGROUP(2, 4); \
	Q2KGROUP(3, 6); \
	VMOVDQU 48(w), Y4; \
	Q2KGROUP0(4); \
	Q2KGROUP(5, 2); \
	Q2KGROUP(6, 4); \
	Q2KGROUP(7, 6); \
	VPHADDD Y5, Y10, Y10; \
	VEXTRACTI128 $1, Y10, X8; \
	VPADDD  X8, X10, X10; \
	VPHADDD X10, X10, X10; \
	VCVTDQ2PS X10, X10; \
	VMOVD   80(w), X8; \
	VCVTPH2PS X8, X8; \
	VMULPS  X11, X8, X8; \
	VMULPS  X10, X8, X8; \
	VADDPS  X8, acc, acc

// Q2KRESULT: acc − accm into the low lane of acc.
#define Q2KRESULT(acc) \
	VMOVSHDUP acc, X4; \
	VSUBSS  X4, acc, acc

// ---- IQ4_XS (136 bytes: f16 d, scales_h[2], scales_l[4], qs[128]) ----
//
// Registers: Y4 Y5 Y7 Y8 Y9 temporaries, Y6 the eight scales as int16;
// Y13 iq4neg, Y14 iq4pos, Y15 0x0f bytes; 0(SP)..255(SP) the activation
// laid out by pairs of sub-blocks.

#define IQ4CONST \
	VMOVDQU lb0f<>(SB), Y15; \
	VMOVDQU iq4pos<>(SB), Y14; \
	VMOVDQU iq4neg<>(SB), Y13

#define XSACTPAIR(p) \
	VMOVDQU (64*(p))(DI), X8; \
	VINSERTI128 $1, (64*(p)+32)(DI), Y8, Y8; \
	VMOVDQU Y8, (64*(p))(SP); \
	VMOVDQU (64*(p)+16)(DI), X8; \
	VINSERTI128 $1, (64*(p)+48)(DI), Y8, Y8; \
	VMOVDQU Y8, (64*(p)+32)(SP)

#define XSACT \
	XSACTPAIR(0); XSACTPAIR(1); XSACTPAIR(2); XSACTPAIR(3)

// XSSCALES: Y6 = ls_ib − 32 in word p (and p+4) of the low lane for ib =
// 2p, of the high lane for ib = 2p+1: a dword per ib (scales_l >> 4ib &
// 0x0f | (scales_h >> 2ib & 3) << 4, in xsslo's order), packed to words.
#define XSSCALES(w) \
	VPBROADCASTD 4(w), Y8; \
	VPSRLVD xsslo<>(SB), Y8, Y8; \
	VPAND   xsd0f<>(SB), Y8, Y8; \
	VPBROADCASTD 2(w), Y9; \
	VPSLLD  $4, Y9, Y9; \
	VPSRLVD xsshi<>(SB), Y9, Y9; \
	VPAND   xsd30<>(SB), Y9, Y9; \
	VPOR    Y9, Y8, Y8; \
	VPSUBD  xsd20<>(SB), Y8, Y8; \
	VPACKSSDW Y8, Y8, Y6

// IQ4PN leaves in dst the pairs of T[idx]·a for the 32 nibble indices in
// idx (clobbered) and the activation at aop: P·a − N·a.
#define IQ4PN(idx, aop, dst) \
	VPSHUFB idx, Y14, dst; \
	VPSHUFB idx, Y13, idx; \
	VPMADDUBSW aop, dst, dst; \
	VPMADDUBSW aop, idx, idx; \
	VPSUBW  idx, dst, dst

// XSPAIR adds sub-blocks 2p and 2p+1 of the block at w, scaled, into acc.
#define XSPAIR(w, p, acc) \
	VMOVDQU (8+32*(p))(w), Y4; \
	VPSRLW  $4, Y4, Y5; \
	VPAND   Y15, Y4, Y4; \
	VPAND   Y15, Y5, Y5; \
	IQ4PN(Y4, (64*(p))(SP), Y7); \
	IQ4PN(Y5, (64*(p)+32)(SP), Y8); \
	VPSHUFB lbcast<>+(32*(p))(SB), Y6, Y9; \
	VPMADDWD Y9, Y7, Y7; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y7, acc, acc; \
	VPADDD  Y8, acc, acc

// XSBLOCK sets acc to the eight int32 lane sums of the block at w.
#define XSBLOCK(w, acc) \
	PREFETCHT0 LPFD(w); \
	PREFETCHT0 (LPFD+64)(w); \
	PREFETCHT0 (LPFD+128)(w); \
	XSSCALES(w); \
	VPXOR   acc, acc, acc; \
	XSPAIR(w, 0, acc); \
	XSPAIR(w, 1, acc); \
	XSPAIR(w, 2, acc); \
	XSPAIR(w, 3, acc)

// ---- IQ4_NL (18 bytes: f16 d, qs[16]) against Q8_0 ----
//
// NLSUM leaves in Y5 the float32 lane sums of the block at w against the
// activation in Y12 (lane l: elements 4l..4l+3; Y11 words of 1).
// Clobbers Y4.
#define NLSUM(w) \
	PREFETCHT0 LPFD(w); \
	VMOVDQU 2(w), X4; \
	VPSRLW  $4, X4, X5; \
	VINSERTI128 $1, X5, Y4, Y4; \
	VPAND   Y15, Y4, Y4; \
	IQ4PN(Y4, Y12, Y5); \
	VPMADDWD Y11, Y5, Y5; \
	VCVTDQ2PS Y5, Y5

// LHSUM8 reduces y (x its low half) into x as hsum8: high half + low,
// then (0+2)+(1+3). Clobbers t.
#define LHSUM8(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VADDPS  t, x, x; \
	VMOVHLPS x, x, t; \
	VADDPS  t, x, x; \
	VMOVSHDUP x, t; \
	VADDSS  t, x, x

// NLROW adds row w's block, times row r's scale (4r(SP)), into acc.
#define NLROW(w, r, acc) \
	NLSUM(w); \
	VBROADCASTSS (4*(r))(SP), Y6; \
	VMULPS  Y5, Y6, Y5; \
	VADDPS  Y5, acc, acc

// func dotQ3_KAVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotQ3_KAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	Q3KCONST
	VXORPS X10, X10, X10

q3kloop:
	TESTQ CX, CX
	JZ    q3kdone
	Q3KACT
	Q3KBLOCK(SI, Y0)
	LSUM8
	LSTEP(SI, 108)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q3kloop

q3kdone:
	VZEROUPPER
	MOVSS X10, ret+32(FP)
	RET

// func dotQ3_Kx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ3_Kx4AVX2(SB), NOSPLIT, $0-48
	LX4ENTER
	Q3KCONST
	VXORPS X10, X10, X10

q3kx4loop:
	TESTQ CX, CX
	JZ    q3kx4done
	Q3KACT
	Q3KBLOCK(R8, Y0)
	Q3KBLOCK(R9, Y1)
	Q3KBLOCK(R10, Y2)
	Q3KBLOCK(R11, Y3)
	LX4STEP(108)
	LX4NEXT(110)
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q3kx4loop

q3kx4done:
	MOVQ out+40(FP), R9
	VMOVUPS X10, (R9)
	VZEROUPPER
	RET

// func dotQ2_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32
TEXT ·dotQ2_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R8
	MOVQ nb+32(FP), CX
	Q2KCONST
	VXORPS X0, X0, X0

q2kloop:
	TESTQ CX, CX
	JZ    q2kdone
	Q2KACT(R8)
	Q2KROW(SI, X0)
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R8
	DECQ CX
	JMP  q2kloop

q2kdone:
	Q2KRESULT(X0)
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dotQ2_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ2_Kx4AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bs+32(FP), R13
	MOVQ nb+40(FP), CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	Q2KCONST
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3

q2kx4loop:
	TESTQ CX, CX
	JZ    q2kx4done
	Q2KACT(R13)
	Q2KROW(R8, X0)
	Q2KROW(R9, X1)
	Q2KROW(R10, X2)
	Q2KROW(R11, X3)
	LX4NEXT(84)
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R13
	DECQ CX
	JMP  q2kx4loop

q2kx4done:
	MOVQ out+48(FP), R9
	Q2KRESULT(X0)
	Q2KRESULT(X1)
	Q2KRESULT(X2)
	Q2KRESULT(X3)
	VMOVSS X0, (R9)
	VMOVSS X1, 4(R9)
	VMOVSS X2, 8(R9)
	VMOVSS X3, 12(R9)
	VZEROUPPER
	RET

// func dotIQ4_XSAVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotIQ4_XSAVX2(SB), NOSPLIT, $256-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	IQ4CONST
	VXORPS X10, X10, X10

xsloop:
	TESTQ CX, CX
	JZ    xsdone
	XSACT
	XSBLOCK(SI, Y0)
	LSUM8
	LSTEP(SI, 0)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  xsloop

xsdone:
	VZEROUPPER
	MOVSS X10, ret+32(FP)
	RET

// func dotIQ4_XSx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotIQ4_XSx4AVX2(SB), NOSPLIT, $256-48
	LX4ENTER
	IQ4CONST
	VXORPS X10, X10, X10

xsx4loop:
	TESTQ CX, CX
	JZ    xsx4done
	XSACT
	XSBLOCK(R8, Y0)
	XSBLOCK(R9, Y1)
	XSBLOCK(R10, Y2)
	XSBLOCK(R11, Y3)
	LX4STEP(0)
	LX4NEXT(136)
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  xsx4loop

xsx4done:
	MOVQ out+40(FP), R9
	VMOVUPS X10, (R9)
	VZEROUPPER
	RET

// func dotIQ4_NLAVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotIQ4_NLAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	IQ4CONST
	VMOVDQU lw01<>(SB), Y11
	VXORPS Y0, Y0, Y0

nlloop:
	TESTQ CX, CX
	JZ    nldone
	// dd = f16(d_w)·d_a, rounded, in every lane.
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU (DI), Y12
	NLSUM(SI)
	VMULPS  Y5, Y1, Y5
	VADDPS  Y5, Y0, Y0
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  nlloop

nldone:
	LHSUM8(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotIQ4_NLx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// The four rows' dd at once (VMULPS: lane r is the one-row form's VMULSS
// for row r), kept at 0(SP) for the rows to broadcast.
TEXT ·dotIQ4_NLx4AVX2(SB), NOSPLIT, $16-48
	LX4ENTER
	IQ4CONST
	VMOVDQU lw01<>(SB), Y11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

nlx4loop:
	TESTQ CX, CX
	JZ    nlx4done
	MOVWLZX (R8), AX
	VMOVD   AX, X6
	VPINSRW $1, (R9), X6, X6
	VPINSRW $2, (R10), X6, X6
	VPINSRW $3, (R11), X6, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS (DX), X7
	VMULPS  X7, X6, X6
	VMOVUPS X6, (SP)
	VMOVDQU (DI), Y12
	NLROW(R8, 0, Y0)
	NLROW(R9, 1, Y1)
	NLROW(R10, 2, Y2)
	NLROW(R11, 3, Y3)
	LX4NEXT(18)
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  nlx4loop

nlx4done:
	MOVQ out+40(FP), R9
	LHSUM8(Y0, X0, X4)
	LHSUM8(Y1, X1, X4)
	LHSUM8(Y2, X2, X4)
	LHSUM8(Y3, X3, X4)
	VMOVSS X0, (R9)
	VMOVSS X1, 4(R9)
	VMOVSS X2, 8(R9)
	VMOVSS X3, 12(R9)
	VZEROUPPER
	RET
