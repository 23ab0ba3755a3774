//go:build amd64 && !purego

#include "textflag.h"
#include "tile_amd64.h"

// The AVX-512 VNNI form of dotQ4_0x4AVX2 (dot_amd64.s): four Q4_0 rows
// against one Q8_0 activation, two blocks per step in 512-bit registers,
// VPDPBUSD doing the byte products and their sums of four in one
// instruction.
//
// Layout of a step (blocks b and b+1): the weight register holds
// [lo nibbles of b | lo of b+1 | hi of b | hi of b+1] (16 bytes each),
// which is what the loads give cheaply; the activation's 16-byte lanes are
// put in the same order once per step, for all four rows. The nibbles go
// in unsigned (0..15) and every int32 lane starts at −8·Σa of its four
// activation bytes (one VPDPBUSD of 0x08 bytes per step, shared), so a lane
// ends as Σ(q−8)·a over its four elements, exactly. Lanes 0–3 and 8–11 are
// block b, 4–7 and 12–15 block b+1; each is scaled by its block's
// d_w·d_a and added into the row's float accumulator. The sums come out
// in a different order than the one-row AVX2 form's, so rows agree with it
// to float32 rounding, not bit for bit (TestDotQ4_0VNNIMatchesPortable).

// q4vidx: for row r, the VPERMPS indices that spread the row's two scales
// (entries 2r and 2r+1 of the eight) over its lanes.
DATA q4vidx<>+0(SB)/4, $0
DATA q4vidx<>+4(SB)/4, $0
DATA q4vidx<>+8(SB)/4, $0
DATA q4vidx<>+12(SB)/4, $0
DATA q4vidx<>+16(SB)/4, $1
DATA q4vidx<>+20(SB)/4, $1
DATA q4vidx<>+24(SB)/4, $1
DATA q4vidx<>+28(SB)/4, $1
DATA q4vidx<>+32(SB)/4, $0
DATA q4vidx<>+36(SB)/4, $0
DATA q4vidx<>+40(SB)/4, $0
DATA q4vidx<>+44(SB)/4, $0
DATA q4vidx<>+48(SB)/4, $1
DATA q4vidx<>+52(SB)/4, $1
DATA q4vidx<>+56(SB)/4, $1
DATA q4vidx<>+60(SB)/4, $1
DATA q4vidx<>+64(SB)/4, $2
DATA q4vidx<>+68(SB)/4, $2
DATA q4vidx<>+72(SB)/4, $2
DATA q4vidx<>+76(SB)/4, $2
DATA q4vidx<>+80(SB)/4, $3
DATA q4vidx<>+84(SB)/4, $3
DATA q4vidx<>+88(SB)/4, $3
DATA q4vidx<>+92(SB)/4, $3
DATA q4vidx<>+96(SB)/4, $2
DATA q4vidx<>+100(SB)/4, $2
DATA q4vidx<>+104(SB)/4, $2
DATA q4vidx<>+108(SB)/4, $2
DATA q4vidx<>+112(SB)/4, $3
DATA q4vidx<>+116(SB)/4, $3
DATA q4vidx<>+120(SB)/4, $3
DATA q4vidx<>+124(SB)/4, $3
DATA q4vidx<>+128(SB)/4, $4
DATA q4vidx<>+132(SB)/4, $4
DATA q4vidx<>+136(SB)/4, $4
DATA q4vidx<>+140(SB)/4, $4
DATA q4vidx<>+144(SB)/4, $5
DATA q4vidx<>+148(SB)/4, $5
DATA q4vidx<>+152(SB)/4, $5
DATA q4vidx<>+156(SB)/4, $5
DATA q4vidx<>+160(SB)/4, $4
DATA q4vidx<>+164(SB)/4, $4
DATA q4vidx<>+168(SB)/4, $4
DATA q4vidx<>+172(SB)/4, $4
DATA q4vidx<>+176(SB)/4, $5
DATA q4vidx<>+180(SB)/4, $5
DATA q4vidx<>+184(SB)/4, $5
DATA q4vidx<>+188(SB)/4, $5
DATA q4vidx<>+192(SB)/4, $6
DATA q4vidx<>+196(SB)/4, $6
DATA q4vidx<>+200(SB)/4, $6
DATA q4vidx<>+204(SB)/4, $6
DATA q4vidx<>+208(SB)/4, $7
DATA q4vidx<>+212(SB)/4, $7
DATA q4vidx<>+216(SB)/4, $7
DATA q4vidx<>+220(SB)/4, $7
DATA q4vidx<>+224(SB)/4, $6
DATA q4vidx<>+228(SB)/4, $6
DATA q4vidx<>+232(SB)/4, $6
DATA q4vidx<>+236(SB)/4, $6
DATA q4vidx<>+240(SB)/4, $7
DATA q4vidx<>+244(SB)/4, $7
DATA q4vidx<>+248(SB)/4, $7
DATA q4vidx<>+252(SB)/4, $7
GLOBL q4vidx<>(SB), RODATA|NOPTR, $256

// PFD: the prefetch distance ahead of each row (dot_amd64.s says why 8192).
#define PFD 8192

// func dotQ4_0x4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// nb is even and at least 2.
TEXT ·dotQ4_0x4VNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	SHRQ $1, CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z15
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z14
	VMOVDQU32 q4vidx<>+0(SB), Z16
	VMOVDQU32 q4vidx<>+64(SB), Z17
	VMOVDQU32 q4vidx<>+128(SB), Z18
	VMOVDQU32 q4vidx<>+192(SB), Z19

q4vloop:
	// The activation, lanes reordered to [b lo, b+1 lo, b hi, b+1 hi],
	// and each int32 lane's −8·Σa.
	VMOVDQU64 (DI), Z12
	VSHUFI64X2 $0xD8, Z12, Z12, Z12
	VPXORD Z11, Z11, Z11
	VPDPBUSD Z12, Z14, Z11
	VPXORD Z13, Z13, Z13
	VPSUBD Z11, Z13, Z11

	// The eight scales f16(d_w)·d_a: rows 0..3 × blocks b, b+1.
	MOVWLZX (R8), AX
	VMOVD   AX, X8
	VPINSRW $1, 18(R8), X8, X8
	VPINSRW $2, (R9), X8, X8
	VPINSRW $3, 18(R9), X8, X8
	VPINSRW $4, (R10), X8, X8
	VPINSRW $5, 18(R10), X8, X8
	VPINSRW $6, (R11), X8, X8
	VPINSRW $7, 18(R11), X8, X8
	VCVTPH2PS X8, Y8
	VBROADCASTSD (DX), Y9
	VMULPS Y9, Y8, Y8

// Q4V adds row ptr's two blocks into acc, idx spreading its scales.
#define Q4V(ptr, idx, acc) \
	PREFETCHT0 PFD(ptr); \
	VMOVDQU 2(ptr), X4; \
	VINSERTI128 $1, 20(ptr), Y4, Y4; \
	VPSRLW $4, Y4, Y5; \
	VINSERTI64X4 $1, Y5, Z4, Z4; \
	VPANDD Z15, Z4, Z4; \
	VMOVDQA32 Z11, Z6; \
	VPDPBUSD Z12, Z4, Z6; \
	VCVTDQ2PS Z6, Z6; \
	VPERMPS Z8, idx, Z7; \
	VFMADD231PS Z7, Z6, acc

	Q4V(R8, Z16, Z0)
	Q4V(R9, Z17, Z1)
	Q4V(R10, Z18, Z2)
	Q4V(R11, Z19, Z3)
	ADDQ $36, R8
	ADDQ $36, R9
	ADDQ $36, R10
	ADDQ $36, R11
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  q4vloop

	MOVQ out+40(FP), R9

// Q4VSUM reduces acc (a 512-bit register whose low 256 bits are ylow)
// to out[off].
#define Q4VSUM(acc, ylow, off) \
	VEXTRACTF64X4 $1, acc, Y5; \
	VADDPS Y5, ylow, Y5; \
	VEXTRACTF128 $1, Y5, X6; \
	VADDPS X6, X5, X5; \
	VMOVHLPS X5, X5, X6; \
	VADDPS X6, X5, X5; \
	VMOVSHDUP X5, X6; \
	VADDSS X6, X5, X5; \
	MOVSS X5, off(R9)

	Q4VSUM(Z0, Y0, 0)
	Q4VSUM(Z1, Y1, 4)
	Q4VSUM(Z2, Y2, 8)
	Q4VSUM(Z3, Y3, 12)
	VZEROUPPER
	RET

// func dotQ4_0x4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)
//
// The prefill GEMM's tile: the four Q4_0 rows of dotQ4_0x4VNNI against
// four activation rows (qstride bytes of qs and dstride bytes of d apart)
// at once, so that each step unpacks the weights' nibbles and widens their
// scales once for four activations instead of once each. out[4j+r] is
// weight row r against activation row j. Every lane is computed as
// dotQ4_0x4VNNI computes it (the same −8·Σa start, the same f16(d_w)·d_a
// products, the same reduction), so each of the sixteen results is that
// kernel's, bit for bit. nb is even and at least 2.
//
// Registers: Z16–Z31 the sixteen accumulators (4j+r), Z0–Z3 the weight
// rows' nibbles, Z4–Z7 the rows' scale-spreading indices, Z8 the
// activation, Z9 its −8·Σa, Z10 the eight scales times the activation's,
// Z11 the weights' eight scales, Z12–Z13 temporaries, Z14 the 0x0F mask,
// Z15 the 0x08 bytes.
TEXT ·dotQ4_0x4x4VNNI(SB), NOSPLIT, $0-64
	TILE_ENTER
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z14
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z15
	VMOVDQU32 q4vidx<>+0(SB), Z4
	VMOVDQU32 q4vidx<>+64(SB), Z5
	VMOVDQU32 q4vidx<>+128(SB), Z6
	VMOVDQU32 q4vidx<>+192(SB), Z7

q44loop:
	// The weights' eight scales, rows 0..3 × blocks b, b+1.
	TILE_SCALES(18)

// Q44W unpacks row ptr's two blocks of nibbles into zw, in the lane order
// of Q4V.
#define Q44W(ptr, zw, yw, xw) \
	PREFETCHT0 PFD(ptr); \
	VMOVDQU 2(ptr), xw; \
	VINSERTI128 $1, 20(ptr), yw, yw; \
	VPSRLW $4, yw, Y12; \
	VINSERTI64X4 $1, Y12, zw, zw; \
	VPANDD Z14, zw, zw

	Q44W(R8, Z0, Y0, X0)
	Q44W(R9, Z1, Y1, X1)
	Q44W(R10, Z2, Y2, X2)
	Q44W(R11, Z3, Y3, X3)

// Q44A readies activation row j (its bytes at qp, its two scales at dp):
// lanes reordered into Z8, −8·Σa into Z9, the scales times the weights'
// into Y10.
#define Q44A(qp, dp) \
	VMOVDQU64 qp, Z8; \
	VSHUFI64X2 $0xD8, Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPDPBUSD Z8, Z15, Z9; \
	VPXORD Z12, Z12, Z12; \
	VPSUBD Z9, Z12, Z9; \
	VBROADCASTSD dp, Y10; \
	VMULPS Y10, Y11, Y10

	Q44A((DI), (DX))
	TILE_ROW(Z16, Z17, Z18, Z19)
	Q44A((DI)(R12*1), (DX)(BX*1))
	TILE_ROW(Z20, Z21, Z22, Z23)
	Q44A((DI)(R12*2), (DX)(BX*2))
	TILE_ROW(Z24, Z25, Z26, Z27)
	Q44A((R13), (SI))
	TILE_ROW(Z28, Z29, Z30, Z31)

	ADDQ $36, R8
	ADDQ $36, R9
	ADDQ $36, R10
	ADDQ $36, R11
	ADDQ $64, DI
	ADDQ $64, R13
	ADDQ $8, DX
	ADDQ $8, SI
	DECQ CX
	JNZ  q44loop

	MOVQ out+56(FP), R9

	TILE_STORE
	VZEROUPPER
	RET
