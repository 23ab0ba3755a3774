//go:build amd64 && !purego

#include "textflag.h"

// AVX2 dot products of Q4_1, Q5_0 and Q5_1 rows with a Q8_1 (Q4_1, Q5_1)
// or Q8_0 (Q5_0) activation, bit-identical to dotQ4_1Go, dotQ5_0Go and
// dotQ5_1Go (quant.go). Block layouts: docs/formats.md#q4_1, #q5_0, #q5_1.
//
// The shape is dotQ4_0AVX2's (dot_amd64.s): a block's 32 weights sit in
// one register, the 16 low nibbles in the low half and the 16 high ones in
// the high half, so VPMADDUBSW then VPMADDWD leaves lane l with the exact
// int32 sum of elements 4l..4l+3, lanes8's grouping; the lanes are scaled
// by dd = f16(d_w)·d_a (VMULSS) with VMULPS and added with VADDPS, not
// fused, into one 8-lane accumulator reduced as hsum8.
//
// The weights go in unsigned (0..15, or 0..31 with the fifth bit) against
// the signed activation. Q4_1 and Q5_1 are unsigned already; Q5_0's −16
// is taken off per pair of int16 products, Σ(q−16)·a = Σq·a − 16·Σa, with
// a second VPMADDUBSW of 16 against the activation. None of it saturates
// or rounds, for any int8 activation, −128 included (the sign trick of
// dotQ4_0AVX2 would turn −128 to −128): a pair of q·a is at most
// 2·31·128 < 2^15, and of (q−16)·a at most 2·16·128.
//
// Q4_1 and Q5_1 add f16(m)·s per block (VMULSS) into a scalar kept apart,
// in block order, and add it to the reduced lanes at the end.
//
// Q5's fifth bits: qh (32 bits, little-endian) is broadcast, byte i of the
// register gets byte i/8 of qh (VPSHUFB), and comparing it under the mask
// 1<<(i%8) gives 0xFF where bit i is set, ggml's bytes_from_bits_32; and
// with 0x10 that is the bit in place. Bit j goes to element j, bit j+16 to
// element j+16: the low and high halves of the register.

// q5shuf: byte i of the register takes byte i/8 of the broadcast qh.
DATA q5shuf<>+0x00(SB)/8, $0x0000000000000000
DATA q5shuf<>+0x08(SB)/8, $0x0101010101010101
DATA q5shuf<>+0x10(SB)/8, $0x0202020202020202
DATA q5shuf<>+0x18(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32

// q5bits: byte i is 1<<(i%8).
DATA q5bits<>+0x00(SB)/8, $0x8040201008040201
DATA q5bits<>+0x08(SB)/8, $0x8040201008040201
DATA q5bits<>+0x10(SB)/8, $0x8040201008040201
DATA q5bits<>+0x18(SB)/8, $0x8040201008040201
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// HSUM8 reduces Y0 into X0 as hsum8 (and dot_amd64.s's HSUM8).
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVHLPS X0, X0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS  X1, X0, X0

// BCAST8 sets Y to the byte b in every byte (AX clobbered).
#define BCAST8(b, X, Y) \
	MOVL $b, AX; \
	VMOVD AX, X; \
	VPBROADCASTD X, Y

// NIBBLES leaves the 16 bytes at ptr split in Y: low nibbles in the low
// half, high nibbles in the high half (Y15 = 0x0F bytes; T clobbered).
#define NIBBLES(ptr, X, Y, T) \
	VMOVDQU ptr, X; \
	VPSRLW  $4, X, T; \
	VINSERTI128 $1, T, Y, Y; \
	VPAND   Y15, Y, Y

// QHBITS leaves in Y 0x10 in byte i where bit i of the uint32 at ptr is
// set, 0 elsewhere (SHUF = q5shuf, BITS = q5bits, Y14 = 0x10 bytes).
#define QHBITS(ptr, Y, SHUF, BITS) \
	VPBROADCASTD ptr, Y; \
	VPSHUFB SHUF, Y, Y; \
	VPAND   BITS, Y, Y; \
	VPCMPEQB BITS, Y, Y; \
	VPAND   Y14, Y, Y

// DDX leaves f16(d_w at ptr)·d_a[0 at DX] in the low lane of X.
#define DDX(ptr, X) \
	MOVWLZX ptr, AX; \
	VMOVD   AX, X; \
	VCVTPH2PS X, X; \
	VMULSS  (DX), X, X

// func dotQ4_1AVX2(w, qs, d, s unsafe.Pointer, nb int) float32
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ s+24(FP), BX
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X7, X7, X7
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x00010001, X13, Y13)

q41loop:
	TESTQ CX, CX
	JZ    q41done
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	VMULSS  (BX), X6, X6
	VADDSS  X6, X7, X7
	DDX((SI), X1)
	VBROADCASTSS X1, Y1
	NIBBLES(4(SI), X2, Y2, X3)
	VPMADDUBSW (DI), Y2, Y5
	VPMADDWD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VMULPS  Y5, Y1, Y5
	VADDPS  Y5, Y0, Y0
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP  q41loop

q41done:
	HSUM8
	VADDSS X7, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dotQ5_0AVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x10101010, X14, Y14)
	BCAST8(0x00010001, X13, Y13)
	VMOVDQU q5shuf<>(SB), Y12
	VMOVDQU q5bits<>(SB), Y11

q50loop:
	TESTQ CX, CX
	JZ    q50done
	DDX((SI), X1)
	VBROADCASTSS X1, Y1
	QHBITS(2(SI), Y3, Y12, Y11)
	NIBBLES(6(SI), X2, Y2, X4)
	VPOR    Y3, Y2, Y2
	VMOVDQU (DI), Y4
	VPMADDUBSW Y4, Y2, Y5
	VPMADDUBSW Y4, Y14, Y6
	VPSUBW  Y6, Y5, Y5
	VPMADDWD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VMULPS  Y5, Y1, Y5
	VADDPS  Y5, Y0, Y0
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q50loop

q50done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotQ5_1AVX2(w, qs, d, s unsafe.Pointer, nb int) float32
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ s+24(FP), BX
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X7, X7, X7
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x10101010, X14, Y14)
	BCAST8(0x00010001, X13, Y13)
	VMOVDQU q5shuf<>(SB), Y12
	VMOVDQU q5bits<>(SB), Y11

q51loop:
	TESTQ CX, CX
	JZ    q51done
	MOVWLZX 2(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	VMULSS  (BX), X6, X6
	VADDSS  X6, X7, X7
	DDX((SI), X1)
	VBROADCASTSS X1, Y1
	QHBITS(4(SI), Y3, Y12, Y11)
	NIBBLES(8(SI), X2, Y2, X4)
	VPOR    Y3, Y2, Y2
	VPMADDUBSW (DI), Y2, Y5
	VPMADDWD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VMULPS  Y5, Y1, Y5
	VADDPS  Y5, Y0, Y0
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP  q51loop

q51done:
	HSUM8
	VADDSS X7, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// The four-row forms: rows w, w+stride, w+2·stride, w+3·stride against one
// activation, loaded once per block, each row with its own accumulator
// (four independent dependency chains) and each row's arithmetic the
// one-row form's, operation for operation, so each result is bit-identical
// to it. Per block, the four rows' dd = f16(d_w)·d_a are made at once in
// X6 (lane r for row r, each lane the one-row form's VMULSS), copied to
// both halves of Y6 and picked out with VPERMILPS; for Q4_1 and Q5_1 the
// four f16(m)·s go the same way into X11's lane r, each lane summed in
// block order as the one-row form's scalar.

// PFD is how far ahead of each row the weights are prefetched, as in
// dot_amd64.s (decode streams weights from DRAM).
#define PFD 8192

// ROWS4 sets R9, R10, R11 to rows 1..3 from R8 and the stride in R12.
#define ROWS4 \
	LEAQ (R8)(R12*1), R9; \
	LEAQ (R9)(R12*1), R10; \
	LEAQ (R10)(R12*1), R11

// HALVES4(off, X) loads the four rows' f16 at off into X's lanes 0..3 and
// widens them to float32.
#define HALVES4(off, X) \
	MOVWLZX off(R8), AX; \
	VMOVD   AX, X; \
	VPINSRW $1, off(R9), X, X; \
	VPINSRW $2, off(R10), X, X; \
	VPINSRW $3, off(R11), X, X; \
	VCVTPH2PS X, X

// DD4 leaves the four rows' dd in both halves of Y6 (X10 clobbered).
#define DD4 \
	HALVES4(0, X6); \
	VBROADCASTSS (DX), X10; \
	VMULPS  X10, X6, X6; \
	VINSERTF128 $1, X6, Y6, Y6

// SUMMS4 adds the four rows' f16(m)·s into X11's lanes (X5, X10 clobbered).
#define SUMMS4 \
	HALVES4(2, X5); \
	VBROADCASTSS (BX), X10; \
	VMULPS  X10, X5, X5; \
	VADDPS  X5, X11, X11

// ACC4(sel, acc) scales the lane sums in Y5 by row sel's dd and adds them.
#define ACC4(sel, acc) \
	VPERMILPS $sel, Y6, Y10; \
	VMULPS  Y5, Y10, Y5; \
	VADDPS  Y5, acc, acc

// STORE4 reduces Y0..Y3 into out[0..3] at R9; STORE4M adds lane r of X11
// (row r's f16(m)·s sum) after row r's reduction, as hsum8(&acc) + summs.
#define STORE4 \
	VMOVAPS Y3, Y10; \
	VMOVAPS Y2, Y9; \
	VMOVAPS Y1, Y8; \
	HSUM8; \
	VMOVSS X0, (R9); \
	VMOVAPS Y8, Y0; \
	HSUM8; \
	VMOVSS X0, 4(R9); \
	VMOVAPS Y9, Y0; \
	HSUM8; \
	VMOVSS X0, 8(R9); \
	VMOVAPS Y10, Y0; \
	HSUM8; \
	VMOVSS X0, 12(R9); \
	VZEROUPPER

#define STORE4M \
	VMOVAPS Y3, Y10; \
	VMOVAPS Y2, Y9; \
	VMOVAPS Y1, Y8; \
	HSUM8; \
	VADDSS  X11, X0, X0; \
	VMOVSS X0, (R9); \
	VMOVAPS Y8, Y0; \
	HSUM8; \
	VPERMILPS $0x55, X11, X12; \
	VADDSS  X12, X0, X0; \
	VMOVSS X0, 4(R9); \
	VMOVAPS Y9, Y0; \
	HSUM8; \
	VPERMILPS $0xAA, X11, X12; \
	VADDSS  X12, X0, X0; \
	VMOVSS X0, 8(R9); \
	VMOVAPS Y10, Y0; \
	HSUM8; \
	VPERMILPS $0xFF, X11, X12; \
	VADDSS  X12, X0, X0; \
	VMOVSS X0, 12(R9); \
	VZEROUPPER

// func dotQ4_1x4AVX2(w unsafe.Pointer, stride int, qs, d, s unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ4_1x4AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ s+32(FP), BX
	MOVQ nb+40(FP), CX
	ROWS4
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS X11, X11, X11
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x00010001, X13, Y13)

q41x4loop:
	TESTQ CX, CX
	JZ    q41x4done
	VMOVDQU (DI), Y12
	DD4
	SUMMS4

#define Q41SUM(ptr) \
	PREFETCHT0 PFD(ptr); \
	NIBBLES(4(ptr), X5, Y5, X4); \
	VPMADDUBSW Y12, Y5, Y5; \
	VPMADDWD Y13, Y5, Y5; \
	VCVTDQ2PS Y5, Y5

	Q41SUM(R8)
	ACC4(0x00, Y0)
	Q41SUM(R9)
	ACC4(0x55, Y1)
	Q41SUM(R10)
	ACC4(0xAA, Y2)
	Q41SUM(R11)
	ACC4(0xFF, Y3)
	ADDQ $20, R8
	ADDQ $20, R9
	ADDQ $20, R10
	ADDQ $20, R11
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP  q41x4loop

q41x4done:
	MOVQ out+48(FP), R9
	STORE4M
	RET

// Q5SUM leaves row ptr's block (qh at hoff, qs at qoff) in Y5 as int16
// pair sums; Q5FIN makes them float32 lane sums. Q5_0 takes its −16 off
// between the two (VPSUBW of Y7, the block's 16·a pair sums).
#define Q5SUM(ptr, hoff, qoff) \
	PREFETCHT0 PFD(ptr); \
	QHBITS(hoff(ptr), Y4, Y9, Y8); \
	NIBBLES(qoff(ptr), X5, Y5, X10); \
	VPOR    Y4, Y5, Y5; \
	VPMADDUBSW Y12, Y5, Y5

#define Q5FIN \
	VPMADDWD Y13, Y5, Y5; \
	VCVTDQ2PS Y5, Y5

// func dotQ5_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ5_0x4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	ROWS4
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x10101010, X14, Y14)
	BCAST8(0x00010001, X13, Y13)
	VMOVDQU q5shuf<>(SB), Y9
	VMOVDQU q5bits<>(SB), Y8

q50x4loop:
	TESTQ CX, CX
	JZ    q50x4done
	VMOVDQU (DI), Y12
	VPMADDUBSW Y12, Y14, Y7
	DD4
	Q5SUM(R8, 2, 6)
	VPSUBW  Y7, Y5, Y5
	Q5FIN
	ACC4(0x00, Y0)
	Q5SUM(R9, 2, 6)
	VPSUBW  Y7, Y5, Y5
	Q5FIN
	ACC4(0x55, Y1)
	Q5SUM(R10, 2, 6)
	VPSUBW  Y7, Y5, Y5
	Q5FIN
	ACC4(0xAA, Y2)
	Q5SUM(R11, 2, 6)
	VPSUBW  Y7, Y5, Y5
	Q5FIN
	ACC4(0xFF, Y3)
	ADDQ $22, R8
	ADDQ $22, R9
	ADDQ $22, R10
	ADDQ $22, R11
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q50x4loop

q50x4done:
	MOVQ out+40(FP), R9
	STORE4
	RET

// func dotQ5_1x4AVX2(w unsafe.Pointer, stride int, qs, d, s unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ5_1x4AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ s+32(FP), BX
	MOVQ nb+40(FP), CX
	ROWS4
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS X11, X11, X11
	BCAST8(0x0F0F0F0F, X15, Y15)
	BCAST8(0x10101010, X14, Y14)
	BCAST8(0x00010001, X13, Y13)
	VMOVDQU q5shuf<>(SB), Y9
	VMOVDQU q5bits<>(SB), Y8

q51x4loop:
	TESTQ CX, CX
	JZ    q51x4done
	VMOVDQU (DI), Y12
	DD4
	SUMMS4
	Q5SUM(R8, 4, 8)
	Q5FIN
	ACC4(0x00, Y0)
	Q5SUM(R9, 4, 8)
	Q5FIN
	ACC4(0x55, Y1)
	Q5SUM(R10, 4, 8)
	Q5FIN
	ACC4(0xAA, Y2)
	Q5SUM(R11, 4, 8)
	Q5FIN
	ACC4(0xFF, Y3)
	ADDQ $24, R8
	ADDQ $24, R9
	ADDQ $24, R10
	ADDQ $24, R11
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP  q51x4loop

q51x4done:
	MOVQ out+48(FP), R9
	STORE4M
	RET
