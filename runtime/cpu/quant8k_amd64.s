//go:build amd64 && !purego

#include "textflag.h"

// quantizeQ8_KAVX2 is quantizeQ8_KGo's per-super-block loop, 256 elements
// at a time, with the same float32 operations in the same order, so every
// byte, scale and sum agrees with it bit for bit:
//
//   - amax is an integer max of the |x| bit patterns: for non-negative
//     floats that order is the float order, and it puts NaN above +Inf, so
//     one unsigned compare finds a super-block that is not all finite. The
//     kernel stops before such a block and returns its index; the Go code's
//     comparisons (a NaN never wins a strict >) then say what it gets.
//   - mx is the first element whose |x| bits equal amax's, sign and all:
//     Go's strict > keeps the first of the tied extremes, so a block with
//     +a and −a takes the sign of whichever comes first.
//   - amax = 0 (every x ±0) gives d = +0, zero qs and zero bsums.
//   - iscale = −127/mx and d = 1/iscale in scalar DIVSS, as Go computes them.
//   - q = min(127, cvtt((iscale·x + 1.5·2^23) − 1.5·2^23)): VMULPS, VADDPS,
//     VSUBPS, VCVTTPS2DQ are CVTTSS2SL's semantics lane by lane, the ±Inf
//     and NaN lanes (iscale = ±Inf when |mx| < 127/MaxFloat32) becoming
//     0x80000000; VPMINSD is Go's min on int32, and VPSLLD/VPSRAD by 24
//     keep the low byte as Go's int8() does, so the saturating packs are
//     exact.
//   - bsums: integer sums of 16, exact in any order, then VCVTDQ2PS (exact,
//     |Σ| ≤ 16·128), Go's float32(sum).

// Dword order that undoes the packs' lane interleaving (as q8perm in
// quant_amd64.s): after VPACKSSDW, VPACKSSWB the dwords hold elements 0-3,
// 8-11, 16-19, 24-27, 4-7, 12-15, 20-23, 28-31.
DATA q8kperm<>+0(SB)/4, $0
DATA q8kperm<>+4(SB)/4, $4
DATA q8kperm<>+8(SB)/4, $1
DATA q8kperm<>+12(SB)/4, $5
DATA q8kperm<>+16(SB)/4, $2
DATA q8kperm<>+20(SB)/4, $6
DATA q8kperm<>+24(SB)/4, $3
DATA q8kperm<>+28(SB)/4, $7
GLOBL q8kperm<>(SB), RODATA|NOPTR, $32

// AMAX folds the |x| bits of the eight elements at off(SI) into A.
#define AMAX(off, A) \
	VPAND   off(SI), Y15, Y4; \
	VPMAXUD Y4, A, A

// QROUNDK finishes the eight products iscale·x in R: rounded by the magic
// (Y14), truncated to int32, clamped to 127 from above (Y12), then
// sign-extended from its low byte.
#define QROUNDK(R) \
	VADDPS     Y14, R, R; \
	VSUBPS     Y14, R, R; \
	VCVTTPS2DQ R, R; \
	VPMINSD    Y12, R, R; \
	VPSLLD     $24, R, R; \
	VPSRAD     $24, R, R

// QCHUNK quantizes the 32 elements at off(SI) into the 32 bytes at
// qoff(DI), and leaves in H the pairwise sums of their two groups of 16
// (VPHADDD of the two: lanes 0-1 and 4-5 the first group's, 2-3 and 6-7
// the second's).
#define QCHUNK(off, qoff, H) \
	VMULPS    off(SI), Y3, Y4; \
	VMULPS    off+32(SI), Y3, Y5; \
	VMULPS    off+64(SI), Y3, Y6; \
	VMULPS    off+96(SI), Y3, Y7; \
	QROUNDK(Y4); \
	QROUNDK(Y5); \
	QROUNDK(Y6); \
	QROUNDK(Y7); \
	VPADDD    Y5, Y4, Y0; \
	VPADDD    Y7, Y6, Y1; \
	VPHADDD   Y1, Y0, H; \
	VPACKSSDW Y5, Y4, Y4; \
	VPACKSSDW Y7, Y6, Y6; \
	VPACKSSWB Y6, Y4, Y4; \
	VPERMD    Y4, Y13, Y4; \
	VMOVDQU   Y4, qoff(DI)

// QHALF quantizes the 128 elements at off(SI) (eight groups of 16) and
// stores their eight bsums at boff(R8): two more VPHADDDs leave each
// group's sum split between the two 128-bit halves, which one add joins.
#define QHALF(off, qoff, boff) \
	QCHUNK(off, qoff, Y8); \
	QCHUNK(off+128, qoff+32, Y9); \
	QCHUNK(off+256, qoff+64, Y10); \
	QCHUNK(off+384, qoff+96, Y11); \
	VPHADDD    Y9, Y8, Y8; \
	VPHADDD    Y11, Y10, Y10; \
	VPERM2I128 $0x20, Y10, Y8, Y0; \
	VPERM2I128 $0x31, Y10, Y8, Y1; \
	VPADDD     Y1, Y0, Y0; \
	VCVTDQ2PS  Y0, Y0; \
	VMOVUPS    Y0, boff(R8)

// func quantizeQ8_KAVX2(x, qs, d, bsums unsafe.Pointer, nb int) int
//
// Returns the number of super-blocks done: nb, or the index of the first
// one holding a NaN or an infinity.
TEXT ·quantizeQ8_KAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsums+24(FP), R8
	MOVQ nb+32(FP), CX
	XORQ AX, AX
	MOVL $0x7fffffff, BX
	VMOVD BX, X15
	VPBROADCASTD X15, Y15         // |x| mask
	MOVL $0x4b400000, BX          // roundMagic, 1.5·2^23
	VMOVD BX, X14
	VPBROADCASTD X14, Y14
	MOVL $127, BX                 // the int32 clamp
	VMOVD BX, X12
	VPBROADCASTD X12, Y12
	VMOVDQU q8kperm<>(SB), Y13

loop:
	CMPQ AX, CX
	JGE  done
	VPAND 0(SI), Y15, Y0
	VPAND 32(SI), Y15, Y1
	VPAND 64(SI), Y15, Y2
	VPAND 96(SI), Y15, Y3
	AMAX(128, Y0)
	AMAX(160, Y1)
	AMAX(192, Y2)
	AMAX(224, Y3)
	AMAX(256, Y0)
	AMAX(288, Y1)
	AMAX(320, Y2)
	AMAX(352, Y3)
	AMAX(384, Y0)
	AMAX(416, Y1)
	AMAX(448, Y2)
	AMAX(480, Y3)
	AMAX(512, Y0)
	AMAX(544, Y1)
	AMAX(576, Y2)
	AMAX(608, Y3)
	AMAX(640, Y0)
	AMAX(672, Y1)
	AMAX(704, Y2)
	AMAX(736, Y3)
	AMAX(768, Y0)
	AMAX(800, Y1)
	AMAX(832, Y2)
	AMAX(864, Y3)
	AMAX(896, Y0)
	AMAX(928, Y1)
	AMAX(960, Y2)
	AMAX(992, Y3)
	VPMAXUD Y1, Y0, Y0
	VPMAXUD Y3, Y2, Y2
	VPMAXUD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0            // amax's bits in every dword
	VMOVD X0, BX
	CMPL BX, $0x7f800000
	JAE  done                     // NaN or ±Inf: the Go code's block
	TESTL BX, BX
	JZ   zero

	// mx: the first element whose |x| is amax. One is there, so the scan
	// ends inside the block.
	VPBROADCASTD X0, Y0
	MOVQ SI, R9

find:
	VPAND     (R9), Y15, Y4
	VPCMPEQD  Y0, Y4, Y4
	VMOVMSKPS Y4, R10
	ADDQ      $32, R9
	TESTL     R10, R10
	JZ        find
	BSFL      R10, R10
	VMOVSS    -32(R9)(R10*4), X1  // mx

	MOVL $0xc2fe0000, BX          // −127
	VMOVD BX, X2
	VDIVSS X1, X2, X2             // iscale = −127/mx
	MOVL $0x3f800000, BX          // 1
	VMOVD BX, X1
	VDIVSS X2, X1, X1             // d = 1/iscale
	VMOVSS X1, (DX)(AX*4)
	VBROADCASTSS X2, Y3

	QHALF(0, 0, 0)
	QHALF(512, 128, 32)
	JMP next

zero:
	VPXOR   Y0, Y0, Y0
	MOVL    $0, (DX)(AX*4)
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 0(R8)
	VMOVDQU Y0, 32(R8)

next:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $64, R8
	INCQ AX
	JMP  loop

done:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET
