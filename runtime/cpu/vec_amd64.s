//go:build amd64 && !purego

#include "textflag.h"

// Row pieces (vec.go has the portable twins and the contract of each).
// Each handles whole groups of 8 elements (or rows); the Go wrappers in
// vec_amd64.go do the tails. Every one is bit-identical to its twin: the
// same float operations on the same operands, in the same order per
// element.

// func f2hRowAVX2(dst, src unsafe.Pointer, groups int)
//
// dst[i] = f2h(src[i]) for i < 8·groups. VCVTPS2PH with imm 0 rounds to
// nearest even whatever MXCSR says, and agrees with f2h on every finite
// float32, ±Inf and ±0 (f32 subnormals convert exactly, to zero). On a NaN
// it keeps the sign and the top nine payload bits and sets the quiet bit;
// f2h (dtype.Float16bits) gives sign | 0x7e00 whatever the payload. Every
// NaN half comes out with the quiet bit set, so clearing the nine payload
// bits of the lanes whose h & 0x7fff > 0x7c00 makes them agree.
TEXT ·f2hRowAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVL $0x7fff7fff, AX
	VMOVD AX, X13
	VPBROADCASTD X13, X13
	MOVL $0x7c007c00, AX
	VMOVD AX, X14
	VPBROADCASTD X14, X14
	MOVL $0x01ff01ff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, X15

hloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VPAND X13, X0, X1
	VPCMPGTW X14, X1, X1 // NaN lanes
	VPAND X15, X1, X1
	VPANDN X0, X1, X0    // X0 &^ X1
	VMOVDQU X0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  hloop
	VZEROUPPER
	RET

// func rmsScales8AVX512(x unsafe.Pointer, stride, groups int, n, eps float64, sc *[8]float32)
//
// sc[r] = float32(1/sqrt(Σ_i float64(x[r·stride+i])²/n + eps)) for r < 8, i <
// 8·groups (stride in bytes), each row's squares added in order of i: lane
// r of one zmm of float64 is row r's running sum. Each 8×8 block of floats
// is transposed (so that register c holds element c of the eight rows),
// widened, squared (exact) and added, column by column. The adds are the
// only dependency chain: eight rows go at the latency of one. The scale's
// steps (VDIVPD, VADDPD, VSQRTPD, VDIVPD, VCVTPD2PS) are correctly rounded,
// as the scalar ones are.
TEXT ·rmsScales8AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ groups+16(FP), CX
	MOVQ sc+40(FP), DI
	LEAQ (BX)(BX*2), R8 // three rows
	VPXORQ Z16, Z16, Z16

sqloop:
	LEAQ (SI)(BX*4), R9
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(R8*1), Y3
	VMOVUPS (R9), Y4
	VMOVUPS (R9)(BX*1), Y5
	VMOVUPS (R9)(BX*2), Y6
	VMOVUPS (R9)(R8*1), Y7

	// Per 128-bit lane: a0 b0 a1 b1 (low), a2 b2 a3 b3 (high).
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// Rows 0-3 (Y0-Y3) and 4-7 (Y4-Y7) of elements c | c+4.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	// Element c of the eight rows: Y8+c.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	VCVTPS2PD Y8, Z0
	VCVTPS2PD Y9, Z1
	VCVTPS2PD Y10, Z2
	VCVTPS2PD Y11, Z3
	VCVTPS2PD Y12, Z4
	VCVTPS2PD Y13, Z5
	VCVTPS2PD Y14, Z6
	VCVTPS2PD Y15, Z7
	VMULPD Z0, Z0, Z0
	VMULPD Z1, Z1, Z1
	VMULPD Z2, Z2, Z2
	VMULPD Z3, Z3, Z3
	VMULPD Z4, Z4, Z4
	VMULPD Z5, Z5, Z5
	VMULPD Z6, Z6, Z6
	VMULPD Z7, Z7, Z7
	VADDPD Z0, Z16, Z16
	VADDPD Z1, Z16, Z16
	VADDPD Z2, Z16, Z16
	VADDPD Z3, Z16, Z16
	VADDPD Z4, Z16, Z16
	VADDPD Z5, Z16, Z16
	VADDPD Z6, Z16, Z16
	VADDPD Z7, Z16, Z16

	ADDQ $32, SI
	DECQ CX
	JNZ  sqloop

	VBROADCASTSD n+24(FP), Z1
	VDIVPD Z1, Z16, Z16
	VBROADCASTSD eps+32(FP), Z2
	VADDPD Z2, Z16, Z16
	VSQRTPD Z16, Z16
	MOVQ $0x3ff0000000000000, AX // 1.0
	VMOVQ AX, X3
	VBROADCASTSD X3, Z3
	VDIVPD Z16, Z3, Z16
	VCVTPD2PS Z16, Y16
	VMOVUPS Y16, (DI)
	VZEROUPPER
	RET

// func scaleMulAVX2(dst, x, w unsafe.Pointer, groups int, scale float32)
//
// dst[i] = x[i]·scale·w[i] for i < 8·groups: two VMULPS, in that order.
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ groups+24(FP), CX
	VBROADCASTSS scale+32(FP), Y15

smloop:
	VMULPS (SI), Y15, Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNZ  smloop
	VZEROUPPER
	RET

// func addRowAVX2(dst, src unsafe.Pointer, groups int)
//
// dst[i] += src[i] for i < 8·groups.
TEXT ·addRowAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX

arloop:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  arloop
	VZEROUPPER
	RET

// func rotateNeoXAVX2(x, cs unsafe.Pointer, h, groups int)
//
// For i < 8·groups: (x[i], x[i+h]) ← (x[i]·c − x[i+h]·s, x[i]·s + x[i+h]·c),
// c = cs[i], s = cs[h+i]; each product rounded, then the sum.
TEXT ·rotateNeoXAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ cs+8(FP), DX
	MOVQ h+16(FP), BX
	MOVQ groups+24(FP), CX
	SHLQ $2, BX

nxloop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (DX), Y2
	VMOVUPS (DX)(BX*1), Y3
	VMULPS Y2, Y0, Y4 // x0·c
	VMULPS Y3, Y1, Y5 // x1·s
	VSUBPS Y5, Y4, Y4
	VMULPS Y3, Y0, Y6 // x0·s
	VMULPS Y2, Y1, Y7 // x1·c
	VADDPS Y7, Y6, Y6
	VMOVUPS Y4, (SI)
	VMOVUPS Y6, (SI)(BX*1)
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  nxloop
	VZEROUPPER
	RET

// func rotatePairsAVX2(x, cs unsafe.Pointer, groups int)
//
// For 2i < 8·groups: (x[2i], x[2i+1]) ← (x0·c − x1·s, x1·c + x0·s), (c, s) =
// (cs[2i], cs[2i+1]): cos and sin spread to both lanes of their pair, the
// pair swapped, and VADDSUBPS subtracting in the even lanes, adding in the
// odd (x1·c + x0·s is x0·s + x1·c: an add commutes exactly).
TEXT ·rotatePairsAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ cs+8(FP), DX
	MOVQ groups+16(FP), CX

prloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	VMOVSLDUP Y1, Y2        // c c
	VMOVSHDUP Y1, Y3        // s s
	VPERMILPS $0xb1, Y0, Y4 // x1 x0
	VMULPS Y2, Y0, Y5
	VMULPS Y3, Y4, Y6
	VADDSUBPS Y6, Y5, Y5
	VMOVUPS Y5, (SI)
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ  prloop
	VZEROUPPER
	RET

// func argmaxAVX2(x unsafe.Pointer, groups int, best *[32]float32, idx *[32]int32)
//
// For each of 32 lanes l (four registers of eight), the largest of x[32j +
// l] over j < groups and the first index that holds it: a lane takes a
// value only when it is greater (ordered: a NaN never is), so it keeps the
// first of equals. A lane that saw nothing greater than −Inf keeps −Inf and
// index l. The caller reduces the lanes.
TEXT ·argmaxAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ best+16(FP), DI
	MOVQ idx+24(FP), DX
	MOVL $0xff800000, AX // -inf
	VMOVD AX, X0
	VBROADCASTSS X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	MOVL $32, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	VMOVDQU argidx<>+0(SB), Y4
	VMOVDQU argidx<>+32(SB), Y5
	VMOVDQU argidx<>+64(SB), Y6
	VMOVDQU argidx<>+96(SB), Y7
	VMOVDQA Y4, Y9
	VMOVDQA Y5, Y10
	VMOVDQA Y6, Y11
	VMOVDQA Y7, Y12

amloop:
	VMOVUPS (SI), Y13
	VCMPPS $0x1e, Y0, Y13, Y14 // x > best (GT_OQ)
	VBLENDVPS Y14, Y13, Y0, Y0
	VBLENDVPS Y14, Y9, Y4, Y4
	VMOVUPS 32(SI), Y13
	VCMPPS $0x1e, Y1, Y13, Y14
	VBLENDVPS Y14, Y13, Y1, Y1
	VBLENDVPS Y14, Y10, Y5, Y5
	VMOVUPS 64(SI), Y13
	VCMPPS $0x1e, Y2, Y13, Y14
	VBLENDVPS Y14, Y13, Y2, Y2
	VBLENDVPS Y14, Y11, Y6, Y6
	VMOVUPS 96(SI), Y13
	VCMPPS $0x1e, Y3, Y13, Y14
	VBLENDVPS Y14, Y13, Y3, Y3
	VBLENDVPS Y14, Y12, Y7, Y7
	VPADDD Y8, Y9, Y9
	VPADDD Y8, Y10, Y10
	VPADDD Y8, Y11, Y11
	VPADDD Y8, Y12, Y12
	ADDQ $128, SI
	DECQ CX
	JNZ  amloop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVDQU Y4, (DX)
	VMOVDQU Y5, 32(DX)
	VMOVDQU Y6, 64(DX)
	VMOVDQU Y7, 96(DX)
	VZEROUPPER
	RET

DATA argidx<>+0(SB)/4, $0
DATA argidx<>+4(SB)/4, $1
DATA argidx<>+8(SB)/4, $2
DATA argidx<>+12(SB)/4, $3
DATA argidx<>+16(SB)/4, $4
DATA argidx<>+20(SB)/4, $5
DATA argidx<>+24(SB)/4, $6
DATA argidx<>+28(SB)/4, $7
DATA argidx<>+32(SB)/4, $8
DATA argidx<>+36(SB)/4, $9
DATA argidx<>+40(SB)/4, $10
DATA argidx<>+44(SB)/4, $11
DATA argidx<>+48(SB)/4, $12
DATA argidx<>+52(SB)/4, $13
DATA argidx<>+56(SB)/4, $14
DATA argidx<>+60(SB)/4, $15
DATA argidx<>+64(SB)/4, $16
DATA argidx<>+68(SB)/4, $17
DATA argidx<>+72(SB)/4, $18
DATA argidx<>+76(SB)/4, $19
DATA argidx<>+80(SB)/4, $20
DATA argidx<>+84(SB)/4, $21
DATA argidx<>+88(SB)/4, $22
DATA argidx<>+92(SB)/4, $23
DATA argidx<>+96(SB)/4, $24
DATA argidx<>+100(SB)/4, $25
DATA argidx<>+104(SB)/4, $26
DATA argidx<>+108(SB)/4, $27
DATA argidx<>+112(SB)/4, $28
DATA argidx<>+116(SB)/4, $29
DATA argidx<>+120(SB)/4, $30
DATA argidx<>+124(SB)/4, $31
GLOBL argidx<>(SB), RODATA|NOPTR, $128

// func prefetchT2(p unsafe.Pointer, lines int)
//
// PREFETCHT2 on each of lines cache lines from p: a hint, which never
// faults.
TEXT ·prefetchT2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JZ   pf2done

pf2loop:
	PREFETCHT2 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  pf2loop

pf2done:
	RET
