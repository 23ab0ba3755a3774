//go:build amd64 && !purego

#include "textflag.h"

// Q4_K·Q8_K and Q5_K·Q8_K in AVX2, bit-identical to dotQ4_KGo/dotQ5_KGo
// (quant.go). Per super-block of 256 the Go code forms two exact int32
// sums, sumi = Σ_j sc_j·Σ q·a and summ = Σ_j m_j·int32(bs[2j]+bs[2j+1]),
// then does float32 steps in a fixed order. Here the sums are SIMD and
// exact, so their order does not matter (int32 addition wraps and
// associates, as Go's does): VPMADDUBSW takes the unsigned 4- or 5-bit
// weights (≤ 31) against the signed activation bytes, a pair at most
// 2·31·128 = 7936 < 2^15, so it never saturates; VPMADDWD with the
// sub-block's 6-bit scale widens to int32. The float steps are the Go
// code's, one lane each of a two-lane vector ([sumi, summ] → [acc, accm]),
// every operation rounded as Go rounds it: float32(d_a·f16(d)) is one
// multiply, float32(sumi) a round-to-nearest conversion.
//
// The bsum pairs are added in float32 and truncated (VCVTTPS2DQ is Go's
// CVTTSS2SL, 0x80000000 for NaN and out of range) so that even bsums that
// are not the exact integers quantizeQ8_K stores give Go's answer.
//
// The products are rounded before they are added (quant.go's explicit
// float32 conversions keep the Go compiler from fusing them at any
// GOAMD64 level or on arm64).

#define KACC(x, y, acc) VMULPS x, y, y; VADDPS y, acc, acc

// kscale<>+32j: a VPSHUFB control that spreads byte j of each 128-bit lane
// into every 16-bit word, zero-extended (0x80 zeroes the high byte).
DATA kscale<>+0(SB)/8, $0x8000800080008000
DATA kscale<>+8(SB)/8, $0x8000800080008000
DATA kscale<>+16(SB)/8, $0x8000800080008000
DATA kscale<>+24(SB)/8, $0x8000800080008000
DATA kscale<>+32(SB)/8, $0x8001800180018001
DATA kscale<>+40(SB)/8, $0x8001800180018001
DATA kscale<>+48(SB)/8, $0x8001800180018001
DATA kscale<>+56(SB)/8, $0x8001800180018001
DATA kscale<>+64(SB)/8, $0x8002800280028002
DATA kscale<>+72(SB)/8, $0x8002800280028002
DATA kscale<>+80(SB)/8, $0x8002800280028002
DATA kscale<>+88(SB)/8, $0x8002800280028002
DATA kscale<>+96(SB)/8, $0x8003800380038003
DATA kscale<>+104(SB)/8, $0x8003800380038003
DATA kscale<>+112(SB)/8, $0x8003800380038003
DATA kscale<>+120(SB)/8, $0x8003800380038003
DATA kscale<>+128(SB)/8, $0x8004800480048004
DATA kscale<>+136(SB)/8, $0x8004800480048004
DATA kscale<>+144(SB)/8, $0x8004800480048004
DATA kscale<>+152(SB)/8, $0x8004800480048004
DATA kscale<>+160(SB)/8, $0x8005800580058005
DATA kscale<>+168(SB)/8, $0x8005800580058005
DATA kscale<>+176(SB)/8, $0x8005800580058005
DATA kscale<>+184(SB)/8, $0x8005800580058005
DATA kscale<>+192(SB)/8, $0x8006800680068006
DATA kscale<>+200(SB)/8, $0x8006800680068006
DATA kscale<>+208(SB)/8, $0x8006800680068006
DATA kscale<>+216(SB)/8, $0x8006800680068006
DATA kscale<>+224(SB)/8, $0x8007800780078007
DATA kscale<>+232(SB)/8, $0x8007800780078007
DATA kscale<>+240(SB)/8, $0x8007800780078007
DATA kscale<>+248(SB)/8, $0x8007800780078007
GLOBL kscale<>(SB), RODATA|NOPTR, $256

DATA kmask0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kmask0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kmask0f<>(SB), RODATA|NOPTR, $32

DATA kmask10<>+0(SB)/8, $0x1010101010101010
DATA kmask10<>+8(SB)/8, $0x1010101010101010
DATA kmask10<>+16(SB)/8, $0x1010101010101010
DATA kmask10<>+24(SB)/8, $0x1010101010101010
GLOBL kmask10<>(SB), RODATA|NOPTR, $32

DATA kmask3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA kmask3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL kmask3f<>(SB), RODATA|NOPTR, $16

DATA kmask30<>+0(SB)/8, $0x3030303030303030
DATA kmask30<>+8(SB)/8, $0x3030303030303030
GLOBL kmask30<>(SB), RODATA|NOPTR, $16

// Shift counts [0, 4, 0, 0] for VPSRLVD: [C, C>>4].
DATA kshift04<>+0(SB)/8, $0x0000000400000000
DATA kshift04<>+8(SB)/8, $0
GLOBL kshift04<>(SB), RODATA|NOPTR, $16

// Prefetch distance ahead of each row, as dot_amd64.s's PFD for Q4_0
// (decode streams the weights from DRAM); three lines cover a super-block
// of 144 or 176 bytes. Into L2 only (T2), as the VNNI dots: on the dev
// box (Zen 4, 2 threads) the Qwen3-0.6B-shape Q4_K_M mix decoded at 60–61
// tok/s with T0 and 67–71 with T2.
#define KPFD0 8192
#define KPFD1 8256
#define KPFD2 8320

// Register use, shared by every macro below:
//	SI.. row pointers, DI activation qs, DX activation d, R8 bsums
//	X0..X3   [acc, accm] of rows 0..3
//	Y4..Y11  the row's temporaries (Y10: sumi lanes, Y5: summ lanes)
//	Y12      int32 bsum pairs of the super-block, lane j = pair j
//	X13      the super-block's d_a, broadcast
//	Y14      0x10 bytes (Q5_K's fifth bit), Y15 0x0f bytes

// KPAIRS: Y12 lane j = int32(bs[2j]+bs[2j+1]), truncated as Go converts.
// VHADDPS leaves [p0 p1 p4 p5 | p2 p3 p6 p7]; VPERMQ puts them in order.
#define KPAIRS \
	VMOVUPS (R8), Y12; \
	VHADDPS 32(R8), Y12, Y12; \
	VCVTTPS2DQ Y12, Y12; \
	VPERMQ $0xD8, Y12, Y12

// KSCALES unpacks the 12 scale bytes at 4(w) (dtype.ScaleMinK4, docs/formats.md
// #q4_k) as dwords A, B, C = bytes 0-3, 4-7, 8-11:
//	sc0-3 = A & 0x3f                        m0-3 = B & 0x3f
//	sc4-7 = C & 0x0f | (A>>6 & 3)<<4        m4-7 = C>>4 & 0x0f | (B>>6 & 3)<<4
// and leaves Y4 = the eight scale bytes in every qword (for kscale) and
// Y5 = m_j·pair_j in lane j (int32, wrapping as Go's int32 multiply).
#define KSCALES(w) \
	VMOVQ 4(w), X4; \
	VPAND kmask3f<>(SB), X4, X5; \
	VPSRLD $2, X4, X4; \
	VPAND kmask30<>(SB), X4, X4; \
	VPBROADCASTD 12(w), X6; \
	VPSRLVD kshift04<>(SB), X6, X6; \
	VPAND X15, X6, X6; \
	VPOR X4, X6, X6; \
	VPUNPCKLDQ X6, X5, X5; \
	VPBROADCASTQ X5, Y4; \
	VPSRLDQ $8, X5, X5; \
	VPMOVZXBD X5, Y5; \
	VPMULLD Y12, Y5, Y5

// KMUL: Y6 and Y7 hold the weights of sub-blocks j and j+1 (32 bytes
// each); Y10 += sc_j·(Y6·a[ao0..]) + sc_j+1·(Y7·a[ao1..]) in int32 lanes.
#define KMUL(ao0, ao1, ko0, ko1) \
	VPMADDUBSW ao0(DI), Y6, Y6; \
	VPMADDUBSW ao1(DI), Y7, Y7; \
	VPSHUFB kscale<>+ko0(SB), Y4, Y8; \
	VPSHUFB kscale<>+ko1(SB), Y4, Y9; \
	VPMADDWD Y8, Y6, Y6; \
	VPMADDWD Y9, Y7, Y7; \
	VPADDD Y6, Y10, Y10; \
	VPADDD Y7, Y10, Y10

// KQ4PAIR: the 32 bytes at qo(w) hold sub-block j in the low nibbles and
// j+1 in the high ones.
#define KQ4PAIR(w, qo, ao0, ao1, ko0, ko1) \
	VMOVDQU qo(w), Y6; \
	VPSRLW $4, Y6, Y7; \
	VPAND Y15, Y6, Y6; \
	VPAND Y15, Y7, Y7; \
	KMUL(ao0, ao1, ko0, ko1)

// KQ5PAIR: KQ4PAIR plus bit j (j+1) of qh (Y11) moved to bit 4 by a word
// shift (op0 $n0, op1 $n1) and the 0x10 mask; a word shift of at most 4
// brings bit 4 of each byte from the same byte.
#define KQ5PAIR(w, qo, ao0, ao1, ko0, ko1, op0, n0, op1, n1) \
	VMOVDQU qo(w), Y6; \
	VPSRLW $4, Y6, Y7; \
	VPAND Y15, Y6, Y6; \
	VPAND Y15, Y7, Y7; \
	op0 $n0, Y11, Y8; \
	op1 $n1, Y11, Y9; \
	VPAND Y14, Y8, Y8; \
	VPAND Y14, Y9, Y9; \
	VPOR Y8, Y6, Y6; \
	VPOR Y9, Y7, Y7; \
	KMUL(ao0, ao1, ko0, ko1)

// KFINISH reduces Y10 (sumi) and Y5 (summ) to [sumi, summ], converts them
// (round to nearest), and adds [d_a·f16(d), d_a·f16(dmin)] times them into
// acc: the Go code's two statements, a lane each.
#define KFINISH(w, acc) \
	VPHADDD Y5, Y10, Y10; \
	VEXTRACTI128 $1, Y10, X11; \
	VPADDD X11, X10, X10; \
	VPHADDD X10, X10, X10; \
	VCVTDQ2PS X10, X10; \
	VMOVD (w), X11; \
	VCVTPH2PS X11, X11; \
	VMULPS X13, X11, X11; \
	KACC(X10, X11, acc)

#define KPREFETCH(w) \
	PREFETCHT2 KPFD0(w); \
	PREFETCHT2 KPFD1(w); \
	PREFETCHT2 KPFD2(w)

// Q4KROW: one Q4_K super-block (144 bytes: d, dmin, scales[12], qs[128])
// of the row at w into acc.
#define Q4KROW(w, acc) \
	KPREFETCH(w); \
	KSCALES(w); \
	VPXOR Y10, Y10, Y10; \
	KQ4PAIR(w, 16, 0, 32, 0, 32); \
	KQ4PAIR(w, 48, 64, 96, 64, 96); \
	KQ4PAIR(w, 80, 128, 160, 128, 160); \
	KQ4PAIR(w, 112, 192, 224, 192, 224); \
	KFINISH(w, acc)

// Q5KROW: one Q5_K super-block (176 bytes: d, dmin, scales[12], qh[32],
// qs[128]); bit j of qh[l] is the fifth bit of element l of sub-block j.
#define Q5KROW(w, acc) \
	KPREFETCH(w); \
	KSCALES(w); \
	VPXOR Y10, Y10, Y10; \
	VMOVDQU 16(w), Y11; \
	KQ5PAIR(w, 48, 0, 32, 0, 32, VPSLLW, 4, VPSLLW, 3); \
	KQ5PAIR(w, 80, 64, 96, 64, 96, VPSLLW, 2, VPSLLW, 1); \
	KQ5PAIR(w, 112, 128, 160, 128, 160, VPSRLW, 0, VPSRLW, 1); \
	KQ5PAIR(w, 144, 192, 224, 192, 224, VPSRLW, 2, VPSRLW, 3); \
	KFINISH(w, acc)

// KRESULT: acc − accm of acc's lanes into the low lane of acc.
#define KRESULT(acc) \
	VMOVSHDUP acc, X4; \
	VSUBSS X4, acc, acc

// The four-row forms (the last two functions below): rows at
// w + r·stride, r = 0..3, against one activation. Each row runs the
// one-row form's operations on its own accumulator, so each result is
// bit-identical to it; the rows share the bsum pairs and d_a, and give the
// core four independent chains. (Every macro is defined before the first
// TEXT: go vet's asmdecl reads a #define after one as part of its body.)

// KX4START loads the arguments, the row pointers (SI, R10, R11, R12) and
// clears the accumulators.
#define KX4START \
	MOVQ w+0(FP), SI; \
	MOVQ stride+8(FP), BX; \
	MOVQ qs+16(FP), DI; \
	MOVQ d+24(FP), DX; \
	MOVQ bs+32(FP), R8; \
	MOVQ nb+40(FP), CX; \
	LEAQ (SI)(BX*1), R10; \
	LEAQ (R10)(BX*1), R11; \
	LEAQ (R11)(BX*1), R12; \
	VXORPS X0, X0, X0; \
	VXORPS X1, X1, X1; \
	VXORPS X2, X2, X2; \
	VXORPS X3, X3, X3; \
	VMOVDQU kmask0f<>(SB), Y15

#define KX4STORE \
	MOVQ out+48(FP), R9; \
	KRESULT(X0); \
	KRESULT(X1); \
	KRESULT(X2); \
	KRESULT(X3); \
	VMOVSS X0, (R9); \
	VMOVSS X1, 4(R9); \
	VMOVSS X2, 8(R9); \
	VMOVSS X3, 12(R9); \
	VZEROUPPER

// func dotQ4_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS X0, X0, X0
	VMOVDQU kmask0f<>(SB), Y15

q4kloop:
	TESTQ CX, CX
	JZ    q4kdone
	VBROADCASTSS (DX), X13
	KPAIRS
	Q4KROW(SI, X0)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R8
	DECQ CX
	JMP  q4kloop

q4kdone:
	KRESULT(X0)
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dotQ5_KAVX2(w, qs, d, bs unsafe.Pointer, nb int) float32
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bs+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS X0, X0, X0
	VMOVDQU kmask0f<>(SB), Y15
	VMOVDQU kmask10<>(SB), Y14

q5kloop:
	TESTQ CX, CX
	JZ    q5kdone
	VBROADCASTSS (DX), X13
	KPAIRS
	Q5KROW(SI, X0)
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R8
	DECQ CX
	JMP  q5kloop

q5kdone:
	KRESULT(X0)
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dotQ4_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ4_Kx4AVX2(SB), NOSPLIT, $0-56
	KX4START

q4kx4loop:
	TESTQ CX, CX
	JZ    q4kx4done
	VBROADCASTSS (DX), X13
	KPAIRS
	Q4KROW(SI, X0)
	Q4KROW(R10, X1)
	Q4KROW(R11, X2)
	Q4KROW(R12, X3)
	ADDQ $144, SI
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R8
	DECQ CX
	JMP  q4kx4loop

q4kx4done:
	KX4STORE
	RET

// func dotQ5_Kx4AVX2(w unsafe.Pointer, stride int, qs, d, bs unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ5_Kx4AVX2(SB), NOSPLIT, $0-56
	KX4START
	VMOVDQU kmask10<>(SB), Y14

q5kx4loop:
	TESTQ CX, CX
	JZ    q5kx4done
	VBROADCASTSS (DX), X13
	KPAIRS
	Q5KROW(SI, X0)
	Q5KROW(R10, X1)
	Q5KROW(R11, X2)
	Q5KROW(R12, X3)
	ADDQ $176, SI
	ADDQ $176, R10
	ADDQ $176, R11
	ADDQ $176, R12
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $64, R8
	DECQ CX
	JMP  q5kx4loop

q5kx4done:
	KX4STORE
	RET
