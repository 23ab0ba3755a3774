//go:build amd64 && !purego

#include "textflag.h"

// quantizeQ8_0AVX2 is quantizeQ8_0Go's per-block loop, one block of 32 at
// a time, with the same float32 operations in the same order, so every
// byte and scale agrees with it bit for bit:
//
//   - amax is an integer max of the |x| bit patterns: for non-negative
//     floats that order is the float order, and it puts NaN above +Inf, so
//     one unsigned compare finds a block that is not all finite. The kernel
//     stops before such a block and returns its index; Go's max (NaN
//     propagating, payload and all) and f2h then say what it gets.
//   - db = amax/127 and id = 127/amax (0 when amax is 0) in scalar DIVSS, as
//     the Go code computes them.
//   - q = cvtt((x·id + 1.5·2^23) − 1.5·2^23): VMULPS, VADDPS, VSUBPS,
//     VCVTTPS2DQ are CVTTSS2SL's semantics lane by lane, out-of-range and
//     NaN lanes (id = +Inf when amax < 127/MaxFloat32) becoming 0x80000000.
//     Go's int8() keeps the low byte; VPSLLD/VPSRAD by 24 do the same, and
//     then the saturating packs are exact.
//   - d and s are rounded to f16 and back with VCVTPS2PH (imm 0: nearest
//     even) and VCVTPH2PS: f2h and h2f on every non-NaN float32, and no
//     NaN reaches them here (amax finite, db·Σq at worst ±Inf).

// Dword order that undoes the packs' lane interleaving: after VPACKSSDW,
// VPACKSSWB the dwords hold elements 0-3, 8-11, 16-19, 24-27, 4-7, 12-15,
// 20-23, 28-31.
DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// QROUND quantizes the eight lanes of R in place: R·id (Y2), rounded by the
// magic (Y14), truncated to int32, then sign-extended from its low byte.
#define QROUND(R) \
	VMULPS  Y2, R, R; \
	VADDPS  Y14, R, R; \
	VSUBPS  Y14, R, R; \
	VCVTTPS2DQ R, R; \
	VPSLLD  $24, R, R; \
	VPSRAD  $24, R, R

// func quantizeQ8_0AVX2(x, qs, d, s unsafe.Pointer, nb int) int
//
// s may be nil (Q8_0). Returns the number of blocks done: nb, or the index
// of the first block holding a NaN or an infinity.
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ s+24(FP), R8
	MOVQ nb+32(FP), CX
	XORQ AX, AX
	MOVL $0x7fffffff, BX
	VMOVD BX, X15
	VPBROADCASTD X15, Y15         // |x| mask
	MOVL $0x4b400000, BX          // roundMagic, 1.5·2^23
	VMOVD BX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x42fe0000, BX          // 127
	VMOVD BX, X12
	VMOVDQU q8perm<>(SB), Y13

loop:
	CMPQ AX, CX
	JGE  done
	VPAND 0(SI), Y15, Y0
	VPAND 32(SI), Y15, Y1
	VPAND 64(SI), Y15, Y2
	VPAND 96(SI), Y15, Y3
	VPMAXUD Y1, Y0, Y0
	VPMAXUD Y3, Y2, Y2
	VPMAXUD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	VMOVD X0, BX                  // amax's bits
	CMPL BX, $0x7f800000
	JAE  done                     // NaN or ±Inf: the Go code's block

	VDIVSS X12, X0, X1            // db = amax/127
	VXORPS X2, X2, X2             // id = 0 when amax = 0
	TESTL BX, BX
	JZ   scaled
	VDIVSS X0, X12, X2            // id = 127/amax

scaled:
	VBROADCASTSS X2, Y2
	VCVTPS2PH $0, X1, X3
	VCVTPH2PS X3, X3
	VMOVSS X3, (DX)(AX*4)         // d[b] = h2f(f2h(db))

	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	QROUND(Y4)
	QROUND(Y5)
	QROUND(Y6)
	QROUND(Y7)

	TESTQ R8, R8
	JZ   pack
	VPADDD Y5, Y4, Y8
	VPADDD Y7, Y6, Y9
	VPADDD Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPADDD X9, X8, X8
	VPSHUFD $0xb1, X8, X9
	VPADDD X9, X8, X8             // Σq, exact: |Σq| ≤ 32·128
	VCVTDQ2PS X8, X8
	VMULSS X8, X1, X8             // db·Σq
	VCVTPS2PH $0, X8, X8
	VCVTPH2PS X8, X8
	VMOVSS X8, (R8)(AX*4)         // s[b] = h2f(f2h(db·Σq))

pack:
	VPACKSSDW Y5, Y4, Y4
	VPACKSSDW Y7, Y6, Y6
	VPACKSSWB Y6, Y4, Y4
	VPERMD Y4, Y13, Y4
	VMOVDQU Y4, (DI)

	ADDQ $128, SI
	ADDQ $32, DI
	INCQ AX
	JMP  loop

done:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func packRecsAVX2(a unsafe.Pointer, step int, qs, d unsafe.Pointer, nb int, bias int)
//
// packRecsGo (x16.go): for each block b < nb, at a + b·step the 32 quants,
// d[b], and bias·Σq. The sum: the bytes biased to unsigned (x ^ 0x80 is x +
// 128), VPSADBW against zero into four qword sums, those added, 32·128
// taken off. Integers throughout, so exact.
TEXT ·packRecsAVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), DI
	MOVQ step+8(FP), BX
	MOVQ qs+16(FP), SI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	MOVQ bias+40(FP), R8
	MOVL $0x80808080, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y14, Y14, Y14

packloop:
	VMOVDQU (SI), Y0
	VMOVDQU Y0, (DI)
	MOVL (DX), AX
	MOVL AX, 32(DI)
	VPXOR Y15, Y0, Y1
	VPSADBW Y14, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDQ X2, X1, X1
	VPSHUFD $0x4e, X1, X2
	VPADDQ X2, X1, X1
	VMOVD X1, AX
	SUBL $4096, AX // 32·128
	IMULL R8, AX
	MOVL AX, 36(DI)
	ADDQ $32, SI
	ADDQ $4, DX
	ADDQ BX, DI
	DECQ CX
	JNZ  packloop
	VZEROUPPER
	RET
