//go:build amd64 && !purego

#include "textflag.h"
#include "q8dot_amd64.h"

// func accQ8_0AVX2(acc, p, v unsafe.Pointer, hdv, n int)
//
// acc[c] += Σ_j p[j]·(q·d) for the Q8_0 value rows v_j (hdv/32 blocks of
// 34 bytes each, hdv a multiple of 32), j < n ≥ 1: accQ8Go with each
// element's product fused into its add. A block of 32 columns at a time in
// four ymm accumulators, the rows in order; each element widened as
// dequantize_row_q8_0 widens it (int8 to float32, times the block's f16
// scale) before it meets p[j].
TEXT ·accQ8_0AVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), DX
	MOVQ v+16(FP), SI
	MOVQ hdv+24(FP), R8
	MOVQ n+32(FP), R10
	SHRQ $5, R8          // blocks a row
	IMUL3Q $34, R8, R9   // bytes a row

q8ablk:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ SI, R11
	MOVQ DX, R12
	MOVQ R10, CX

q8arow:
	VBROADCASTSS (R12), Y4
	MOVWLZX (R11), AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VBROADCASTSS X5, Y5
	VPMOVSXBD 2(R11), Y6
	VCVTDQ2PS Y6, Y6
	VMULPS Y5, Y6, Y6
	VFMADD231PS Y4, Y6, Y0
	VPMOVSXBD 10(R11), Y7
	VCVTDQ2PS Y7, Y7
	VMULPS Y5, Y7, Y7
	VFMADD231PS Y4, Y7, Y1
	VPMOVSXBD 18(R11), Y8
	VCVTDQ2PS Y8, Y8
	VMULPS Y5, Y8, Y8
	VFMADD231PS Y4, Y8, Y2
	VPMOVSXBD 26(R11), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y5, Y9, Y9
	VFMADD231PS Y4, Y9, Y3
	ADDQ R9, R11
	ADDQ $4, R12
	DECQ CX
	JNZ  q8arow

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $34, SI
	DECQ R8
	JNZ  q8ablk
	VZEROUPPER
	RET

// SQ8OUT scales the dot in X0 (X14 the scale), stores it at (out) and
// folds it into the max mx.
#define SQ8OUT(out, mx) \
	VMULSS  X0, X14, X0; \
	MOVSS   X0, (out); \
	VMAXSS  mx, X0, mx

// func scoresQ8_0AVX2(k, qs, d unsafe.Pointer, nb, n int, scale float32, out unsafe.Pointer) float32
//
// out[j] = scale·(k_j·q) for n ≥ 1 Q8_0 key rows k_j (nb ≥ 1 blocks each,
// 34·nb bytes apart) against q quantized to Q8_0 (qs, d); returns the
// largest out[j]. Each dot is dotQ8_0AVX2's (dot_amd64.s), the same
// operations in the same order, so each score is scoresQ8's bit for bit:
// the loop over the keys moved into assembly (a call per key cost more
// than its four blocks). Q8DOT_BLOCK and HSUM8 are dotQ8_0AVX2's own
// (q8dot_amd64.h).
TEXT ·scoresQ8_0AVX2(SB), NOSPLIT, $0-60
	MOVQ k+0(FP), SI
	MOVQ nb+24(FP), R8
	MOVQ n+32(FP), R10
	MOVQ out+48(FP), R11
	VMOVSS scale+40(FP), X14
	MOVL $0xff800000, AX // −inf
	VMOVD AX, X15
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

sq8key:
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ R8, CX
	VXORPS Y0, Y0, Y0

sq8blk:
	Q8DOT_BLOCK
	DECQ CX
	JNZ  sq8blk

	HSUM8
	SQ8OUT(R11, X15)
	ADDQ $4, R11
	DECQ R10
	JNZ  sq8key

	VZEROUPPER
	MOVSS X15, ret+56(FP)
	RET

// func accQ8_0x2AVX512(acc0, acc1, p0, p1, v unsafe.Pointer, hdv, n int)
//
// accQ8_0AVX2 for two heads' weights over the same Q8_0 value rows (GQA):
// each row's elements widened once for both, sixteen at a time. Each
// element takes accQ8_0AVX2's operations (widened, times d, fused into
// its accumulator with p), so each head's result is that kernel's, bit for
// bit. hdv a multiple of 32, n ≥ 1.
TEXT ·accQ8_0x2AVX512(SB), NOSPLIT, $0-56
	MOVQ acc0+0(FP), DI
	MOVQ acc1+8(FP), BX
	MOVQ v+32(FP), SI
	MOVQ hdv+40(FP), R8
	MOVQ n+48(FP), R10
	SHRQ $5, R8
	IMUL3Q $34, R8, R9

q8x2blk:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS (BX), Z2
	VMOVUPS 64(BX), Z3
	MOVQ SI, R11
	MOVQ p0+16(FP), R12
	MOVQ p1+24(FP), R13
	MOVQ R10, CX

q8x2row:
	VBROADCASTSS (R12), Z4
	VBROADCASTSS (R13), Z5
	MOVWLZX (R11), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Z6
	VPMOVSXBD 2(R11), Z7
	VCVTDQ2PS Z7, Z7
	VMULPS Z6, Z7, Z7
	VFMADD231PS Z4, Z7, Z0
	VFMADD231PS Z5, Z7, Z2
	VPMOVSXBD 18(R11), Z8
	VCVTDQ2PS Z8, Z8
	VMULPS Z6, Z8, Z8
	VFMADD231PS Z4, Z8, Z1
	VFMADD231PS Z5, Z8, Z3
	ADDQ R9, R11
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  q8x2row

	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (BX)
	VMOVUPS Z3, 64(BX)
	ADDQ $128, DI
	ADDQ $128, BX
	ADDQ $34, SI
	DECQ R8
	JNZ  q8x2blk
	VZEROUPPER
	RET

// func scoresQ8_0x2AVX2(k, qs0, qs1, d0, d1 unsafe.Pointer, nb, n int, scale float32, out0, out1 unsafe.Pointer, m *[2]float32)
//
// scoresQ8_0AVX2 for two heads' queries over the same Q8_0 key rows (GQA):
// each key's block loaded, its signs taken and its scale widened once for
// both. Each head's dots take dotQ8_0AVX2's operations, so each score is
// scoresQ8's bit for bit; m gets the two maxima. nb, n ≥ 1.
TEXT ·scoresQ8_0x2AVX2(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), SI
	MOVQ nb+40(FP), R8
	MOVQ n+48(FP), R10
	MOVQ out0+64(FP), R11
	MOVQ out1+72(FP), R12
	VMOVSS scale+56(FP), X14
	MOVL $0xff800000, AX
	VMOVD AX, X15
	VMOVD AX, X12
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

sq82key:
	MOVQ qs0+8(FP), DI
	MOVQ qs1+16(FP), BX
	MOVQ d0+24(FP), DX
	MOVQ d1+32(FP), R9
	MOVQ R8, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8

sq82blk:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (R9), X1, X3
	VMULSS  (DX), X1, X1
	VBROADCASTSS X1, Y1
	VBROADCASTSS X3, Y3
	VMOVDQU 2(SI), Y2
	VPSIGNB Y2, Y2, Y5
	Q8DOT_HEAD((DI), Y1, Y0)
	Q8DOT_HEAD((BX), Y3, Y8)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, BX
	ADDQ $4, DX
	ADDQ $4, R9
	DECQ CX
	JNZ  sq82blk

	HSUM8
	SQ8OUT(R11, X15)
	VMOVAPS Y8, Y0
	HSUM8
	SQ8OUT(R12, X12)
	ADDQ $4, R11
	ADDQ $4, R12
	DECQ R10
	JNZ  sq82key

	MOVQ m+80(FP), AX
	MOVSS X15, (AX)
	MOVSS X12, 4(AX)
	VZEROUPPER
	RET
