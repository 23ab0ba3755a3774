//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA+F16C attention pieces (attention.go has the portable twins and
// the contract of each; the exp piece is in expf_amd64.s). Every one handles whole groups of 8 (positions or
// elements); the Go wrappers in attn_amd64.go do the tails (the scores'
// by running the last eight positions again).

// func scoresF16AVX2(k, q unsafe.Pointer, hd, groups int, scale float32, out unsafe.Pointer) float32
//
// out[j] = scale · Σ_c k[j·hd+c]·q[c] for j < 8·groups (k in f16, q and
// out in f32, hd a multiple of 8); returns max_j out[j]. Eight positions
// at a time, one accumulator each (the FMA chains run side by side), the
// eight reduced into one vector by a tree of horizontal adds.
TEXT ·scoresF16AVX2(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), SI
	MOVQ q+8(FP), DX
	MOVQ hd+16(FP), BX
	MOVQ groups+24(FP), CX
	VBROADCASTSS scale+32(FP), Y10
	MOVQ out+40(FP), DI
	LEAQ (BX)(BX*1), R8  // bytes per row
	LEAQ (R8)(R8*2), R9  // three rows
	SHRQ $3, BX          // 8-element chunks per row
	MOVL $0xff800000, AX // -inf
	VMOVD AX, X11
	VBROADCASTSS X11, Y11

sgroup:
	MOVQ SI, R11
	LEAQ (SI)(R8*4), R12
	MOVQ DX, R13
	MOVQ BX, R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

schunk:
	VMOVUPS (R13), Y9
	VCVTPH2PS (R11), Y8
	VFMADD231PS Y9, Y8, Y0
	VCVTPH2PS (R11)(R8*1), Y8
	VFMADD231PS Y9, Y8, Y1
	VCVTPH2PS (R11)(R8*2), Y8
	VFMADD231PS Y9, Y8, Y2
	VCVTPH2PS (R11)(R9*1), Y8
	VFMADD231PS Y9, Y8, Y3
	VCVTPH2PS (R12), Y8
	VFMADD231PS Y9, Y8, Y4
	VCVTPH2PS (R12)(R8*1), Y8
	VFMADD231PS Y9, Y8, Y5
	VCVTPH2PS (R12)(R8*2), Y8
	VFMADD231PS Y9, Y8, Y6
	VCVTPH2PS (R12)(R9*1), Y8
	VFMADD231PS Y9, Y8, Y7
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $32, R13
	DECQ R14
	JNZ  schunk

	// Lane p of the result is the sum of Yp's eight lanes.
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y5, Y4, Y4
	VHADDPS Y7, Y6, Y6
	VHADDPS Y2, Y0, Y0
	VHADDPS Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS Y2, Y1, Y0
	VMULPS Y10, Y0, Y0
	VMOVUPS Y0, (DI)
	VMAXPS Y0, Y11, Y11
	LEAQ (SI)(R8*8), SI
	ADDQ $32, DI
	DECQ CX
	JNZ  sgroup

	VEXTRACTF128 $1, Y11, X1
	VMAXPS X1, X11, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	MOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func scaleRoundF16AVX2(p unsafe.Pointer, groups int, a float32)
//
// p[i] = f32(f16(p[i]·a)) for i < 8·groups, rounding to nearest even.
TEXT ·scaleRoundF16AVX2(SB), NOSPLIT, $0-20
	MOVQ p+0(FP), SI
	MOVQ groups+8(FP), CX
	VBROADCASTSS a+16(FP), Y15

rloop:
	VMULPS (SI), Y15, Y0
	VCVTPS2PH $0, Y0, X0
	VCVTPH2PS X0, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ  rloop
	VZEROUPPER
	RET

// func accF16AVX2(acc, p, v unsafe.Pointer, hdv, n int)
//
// acc[c] += Σ_j p[j]·v[j·hdv+c] for c < hdv (a multiple of 8), j < n ≥ 1;
// v in f16. Eight columns at a time, the rows in four interleaved
// accumulators (so four FMA chains overlap), added at the end.
TEXT ·accF16AVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), DX
	MOVQ v+16(FP), SI
	MOVQ hdv+24(FP), BX
	MOVQ n+32(FP), R10
	LEAQ (BX)(BX*1), R8 // bytes per row
	LEAQ (R8)(R8*2), R9 // three rows
	SHRQ $3, BX

achunk:
	VMOVUPS (DI), Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R11
	MOVQ DX, R12
	MOVQ R10, CX

arow4:
	CMPQ CX, $4
	JLT  arow1
	VBROADCASTSS (R12), Y4
	VCVTPH2PS (R11), Y5
	VFMADD231PS Y5, Y4, Y0
	VBROADCASTSS 4(R12), Y6
	VCVTPH2PS (R11)(R8*1), Y7
	VFMADD231PS Y7, Y6, Y1
	VBROADCASTSS 8(R12), Y8
	VCVTPH2PS (R11)(R8*2), Y9
	VFMADD231PS Y9, Y8, Y2
	VBROADCASTSS 12(R12), Y10
	VCVTPH2PS (R11)(R9*1), Y11
	VFMADD231PS Y11, Y10, Y3
	LEAQ (R11)(R8*4), R11
	ADDQ $16, R12
	SUBQ $4, CX
	JMP  arow4

arow1:
	TESTQ CX, CX
	JZ    adone
	VBROADCASTSS (R12), Y4
	VCVTPH2PS (R11), Y5
	VFMADD231PS Y5, Y4, Y0
	ADDQ R8, R11
	ADDQ $4, R12
	DECQ CX
	JMP  arow1

adone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	DECQ BX
	JNZ  achunk
	VZEROUPPER
	RET

// The AVX-512 pair pieces: two query heads (GQA) against the same f16 rows,
// each row widened once for both, so a batched decode step reads its KV
// cache once, not once a query head. Like the AVX2 pieces they fuse the
// multiply-adds and sum in their own order, so they agree with the
// portable pieces to float32 rounding of the terms (attention_test.go),
// not bit for bit: the portable order (one product rounded, then added,
// per element) would need twice the instructions of the FMA chains.

// HSUM8 reduces eight accumulators (lane p of the result is the sum of
// register p's eight lanes), as scoresF16AVX2 does; the result is in A0.
#define HSUM8(A0, A1, A2, A3, A4, A5, A6, A7) \
	VHADDPS A1, A0, A0; \
	VHADDPS A3, A2, A2; \
	VHADDPS A5, A4, A4; \
	VHADDPS A7, A6, A6; \
	VHADDPS A2, A0, A0; \
	VHADDPS A6, A4, A4; \
	VPERM2F128 $0x20, A4, A0, A1; \
	VPERM2F128 $0x31, A4, A0, A2; \
	VADDPS A2, A1, A0

// FOLD adds the high half of zmm Z into its low half, Y.
#define FOLD(Z, Y) \
	VEXTRACTF64X4 $1, Z, Y20; \
	VADDPS Y20, Y, Y

// SROW widens sixteen halves of one key row (at M) and adds their products
// with both heads' query chunks (Z16, Z17) into A (head 0) and B (head 1).
#define SROW(M, A, B) \
	VCVTPH2PS M, Z18; \
	VFMADD231PS Z16, Z18, A; \
	VFMADD231PS Z17, Z18, B

// func scoresF16x2AVX512(k, q0, q1 unsafe.Pointer, hd, groups int, scale float32, out0, out1 unsafe.Pointer, m *[2]float32)
//
// scoresF16AVX2 for two queries: out0[j], out1[j] for j < 8·groups (hd a
// multiple of 16), and m[0], m[1] their maxima. Eight keys at a time, one
// zmm accumulator per (key, head): sixteen FMA chains; each accumulator's
// halves added, then the eight reduced as scoresF16AVX2 reduces them.
TEXT ·scoresF16x2AVX512(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), SI
	MOVQ q0+8(FP), DX
	MOVQ q1+16(FP), R10
	MOVQ hd+24(FP), BX
	MOVQ groups+32(FP), CX
	VBROADCASTSS scale+40(FP), Y28
	MOVQ out0+48(FP), DI
	MOVQ out1+56(FP), AX
	LEAQ (BX)(BX*1), R8  // bytes per row
	LEAQ (R8)(R8*2), R9  // three rows
	SHRQ $4, BX          // 16-element chunks per row
	MOVL $0xff800000, R13 // -inf
	VMOVD R13, X29
	VBROADCASTSS X29, Y29
	VMOVAPS Y29, Y30

x2group:
	MOVQ SI, R11
	LEAQ (SI)(R8*4), R12
	XORQ R13, R13
	MOVQ BX, R14
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

x2chunk:
	// The group 8 KiB on, a quarter KiB a chunk (a group is eight rows,
	// 16·hd bytes, and hd/16 chunks): the rows stream from DRAM while
	// these are scored.
	PREFETCHT2 8192(SI)(R13*4)
	PREFETCHT2 8256(SI)(R13*4)
	PREFETCHT2 8320(SI)(R13*4)
	PREFETCHT2 8384(SI)(R13*4)
	VMOVUPS (DX)(R13*1), Z16
	VMOVUPS (R10)(R13*1), Z17
	SROW((R11), Z0, Z8)
	SROW((R11)(R8*1), Z1, Z9)
	SROW((R11)(R8*2), Z2, Z10)
	SROW((R11)(R9*1), Z3, Z11)
	SROW((R12), Z4, Z12)
	SROW((R12)(R8*1), Z5, Z13)
	SROW((R12)(R8*2), Z6, Z14)
	SROW((R12)(R9*1), Z7, Z15)
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $64, R13
	DECQ R14
	JNZ  x2chunk

	FOLD(Z0, Y0)
	FOLD(Z1, Y1)
	FOLD(Z2, Y2)
	FOLD(Z3, Y3)
	FOLD(Z4, Y4)
	FOLD(Z5, Y5)
	FOLD(Z6, Y6)
	FOLD(Z7, Y7)
	FOLD(Z8, Y8)
	FOLD(Z9, Y9)
	FOLD(Z10, Y10)
	FOLD(Z11, Y11)
	FOLD(Z12, Y12)
	FOLD(Z13, Y13)
	FOLD(Z14, Y14)
	FOLD(Z15, Y15)
	HSUM8(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	HSUM8(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15)
	VMULPS Y28, Y0, Y0
	VMULPS Y28, Y8, Y8
	VMOVUPS Y0, (DI)
	VMOVUPS Y8, (AX)
	VMAXPS Y0, Y29, Y29
	VMAXPS Y8, Y30, Y30
	LEAQ (SI)(R8*8), SI
	ADDQ $32, DI
	ADDQ $32, AX
	DECQ CX
	JNZ  x2group

	MOVQ m+64(FP), DI
	VMOVAPS Y29, Y2
	VEXTRACTF128 $1, Y2, X1
	VMAXPS X1, X2, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VMOVSS X0, (DI)
	VMOVAPS Y30, Y2
	VEXTRACTF128 $1, Y2, X1
	VMAXPS X1, X2, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0
	VMOVSS X0, 4(DI)
	VZEROUPPER
	RET

// AROW adds p0[j]·(row j's chunk at M) into A and p1[j]·(it) into B (the
// broadcast weights in Z16, Z17).
#define AROW(M, A, B) \
	VCVTPH2PS M, Z18; \
	VFMADD231PS Z16, Z18, A; \
	VFMADD231PS Z17, Z18, B

// func accF16x2AVX512(acc0, acc1, p0, p1, v unsafe.Pointer, cols, n, stride int)
//
// accF16AVX2 for two heads' weights: acc0[c] += Σ_j p0[j]·v[j·stride+c] and
// acc1 likewise with p1, for c < cols (a multiple of 16), j < n ≥ 1. 128
// columns at a time (eight zmm accumulators a head: sixteen FMA chains),
// the rows in order, one FMA per (row, column) and head; then the columns
// past the last 128, sixteen at a time. A column's sum is the same
// whichever block it falls in, so columns of a row may be done apart.
TEXT ·accF16x2AVX512(SB), NOSPLIT, $0-64
	MOVQ acc0+0(FP), DI
	MOVQ acc1+8(FP), AX
	MOVQ p0+16(FP), DX
	MOVQ p1+24(FP), R10
	MOVQ v+32(FP), SI
	MOVQ cols+40(FP), BX
	MOVQ n+48(FP), CX
	MOVQ stride+56(FP), R8
	SHLQ $1, R8 // bytes per row
	MOVQ R8, R13
	SHLQ $5, R13 // 32 rows on: where the row loops ask for lines

x2a128:
	CMPQ BX, $128
	JLT  x2a16
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS (AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	VMOVUPS 256(AX), Z12
	VMOVUPS 320(AX), Z13
	VMOVUPS 384(AX), Z14
	VMOVUPS 448(AX), Z15
	MOVQ SI, R11
	XORQ R12, R12

x2arow:
	PREFETCHT2 (R11)(R13*1)
	PREFETCHT2 64(R11)(R13*1)
	PREFETCHT2 128(R11)(R13*1)
	PREFETCHT2 192(R11)(R13*1)
	VBROADCASTSS (DX)(R12*4), Z16
	VBROADCASTSS (R10)(R12*4), Z17
	AROW((R11), Z0, Z8)
	AROW(32(R11), Z1, Z9)
	AROW(64(R11), Z2, Z10)
	AROW(96(R11), Z3, Z11)
	AROW(128(R11), Z4, Z12)
	AROW(160(R11), Z5, Z13)
	AROW(192(R11), Z6, Z14)
	AROW(224(R11), Z7, Z15)
	ADDQ R8, R11
	INCQ R12
	CMPQ R12, CX
	JLT  x2arow

	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, (AX)
	VMOVUPS Z9, 64(AX)
	VMOVUPS Z10, 128(AX)
	VMOVUPS Z11, 192(AX)
	VMOVUPS Z12, 256(AX)
	VMOVUPS Z13, 320(AX)
	VMOVUPS Z14, 384(AX)
	VMOVUPS Z15, 448(AX)
	ADDQ $512, DI
	ADDQ $512, AX
	ADDQ $256, SI
	SUBQ $128, BX
	JMP  x2a128

x2a16:
	CMPQ BX, $16
	JLT  x2adone
	VMOVUPS (DI), Z0
	VMOVUPS (AX), Z8
	MOVQ SI, R11
	XORQ R12, R12

x2arow16:
	PREFETCHT2 (R11)(R13*1)
	VBROADCASTSS (DX)(R12*4), Z16
	VBROADCASTSS (R10)(R12*4), Z17
	AROW((R11), Z0, Z8)
	ADDQ R8, R11
	INCQ R12
	CMPQ R12, CX
	JLT  x2arow16

	VMOVUPS Z0, (DI)
	VMOVUPS Z8, (AX)
	ADDQ $64, DI
	ADDQ $64, AX
	ADDQ $32, SI
	SUBQ $16, BX
	JMP  x2a16

x2adone:
	VZEROUPPER
	RET
