//go:build amd64 && !purego

#include "textflag.h"

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
