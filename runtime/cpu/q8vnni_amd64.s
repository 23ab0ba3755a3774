//go:build amd64 && !purego

#include "textflag.h"
#include "tile_amd64.h"

// The prefill GEMM's 4×4 tile for Q8_0 weights in AVX-512 VNNI: four
// weight rows against four Q8_0 activation rows, two blocks per step in
// 512-bit registers (lanes 0–7 block b, 8–15 block b+1, the order both
// rows' bytes already have). VPDPBUSD multiplies unsigned by signed bytes,
// so the signed weights go in with their sign bit flipped (w+128, 0..255)
// and every int32 lane starts at −128·Σa of its four activation bytes
// (one VPDPBUSD of 0x80 bytes per activation row and step): a lane ends as
// Σw·a over its four elements, exactly. Each lane is then scaled by its
// block's f16(d_w)·d_a and fused into the pair's float accumulator, so the
// results agree with dotQ8_0's lanes to float32 rounding, not bit for bit
// (TestDotQ8_0x4x4MatchesPortable).

// q8vidx: for weight row r, the VPERMPS indices that spread the row's two
// scales (entries 2r and 2r+1 of the eight) over its lanes.
DATA q8vidx<>+0(SB)/4, $0
DATA q8vidx<>+4(SB)/4, $0
DATA q8vidx<>+8(SB)/4, $0
DATA q8vidx<>+12(SB)/4, $0
DATA q8vidx<>+16(SB)/4, $0
DATA q8vidx<>+20(SB)/4, $0
DATA q8vidx<>+24(SB)/4, $0
DATA q8vidx<>+28(SB)/4, $0
DATA q8vidx<>+32(SB)/4, $1
DATA q8vidx<>+36(SB)/4, $1
DATA q8vidx<>+40(SB)/4, $1
DATA q8vidx<>+44(SB)/4, $1
DATA q8vidx<>+48(SB)/4, $1
DATA q8vidx<>+52(SB)/4, $1
DATA q8vidx<>+56(SB)/4, $1
DATA q8vidx<>+60(SB)/4, $1
DATA q8vidx<>+64(SB)/4, $2
DATA q8vidx<>+68(SB)/4, $2
DATA q8vidx<>+72(SB)/4, $2
DATA q8vidx<>+76(SB)/4, $2
DATA q8vidx<>+80(SB)/4, $2
DATA q8vidx<>+84(SB)/4, $2
DATA q8vidx<>+88(SB)/4, $2
DATA q8vidx<>+92(SB)/4, $2
DATA q8vidx<>+96(SB)/4, $3
DATA q8vidx<>+100(SB)/4, $3
DATA q8vidx<>+104(SB)/4, $3
DATA q8vidx<>+108(SB)/4, $3
DATA q8vidx<>+112(SB)/4, $3
DATA q8vidx<>+116(SB)/4, $3
DATA q8vidx<>+120(SB)/4, $3
DATA q8vidx<>+124(SB)/4, $3
DATA q8vidx<>+128(SB)/4, $4
DATA q8vidx<>+132(SB)/4, $4
DATA q8vidx<>+136(SB)/4, $4
DATA q8vidx<>+140(SB)/4, $4
DATA q8vidx<>+144(SB)/4, $4
DATA q8vidx<>+148(SB)/4, $4
DATA q8vidx<>+152(SB)/4, $4
DATA q8vidx<>+156(SB)/4, $4
DATA q8vidx<>+160(SB)/4, $5
DATA q8vidx<>+164(SB)/4, $5
DATA q8vidx<>+168(SB)/4, $5
DATA q8vidx<>+172(SB)/4, $5
DATA q8vidx<>+176(SB)/4, $5
DATA q8vidx<>+180(SB)/4, $5
DATA q8vidx<>+184(SB)/4, $5
DATA q8vidx<>+188(SB)/4, $5
DATA q8vidx<>+192(SB)/4, $6
DATA q8vidx<>+196(SB)/4, $6
DATA q8vidx<>+200(SB)/4, $6
DATA q8vidx<>+204(SB)/4, $6
DATA q8vidx<>+208(SB)/4, $6
DATA q8vidx<>+212(SB)/4, $6
DATA q8vidx<>+216(SB)/4, $6
DATA q8vidx<>+220(SB)/4, $6
DATA q8vidx<>+224(SB)/4, $7
DATA q8vidx<>+228(SB)/4, $7
DATA q8vidx<>+232(SB)/4, $7
DATA q8vidx<>+236(SB)/4, $7
DATA q8vidx<>+240(SB)/4, $7
DATA q8vidx<>+244(SB)/4, $7
DATA q8vidx<>+248(SB)/4, $7
DATA q8vidx<>+252(SB)/4, $7
GLOBL q8vidx<>(SB), RODATA|NOPTR, $256

#define PFD8 8192

// Q84W loads row ptr's two blocks of bytes into zw, sign bits flipped,
// and asks for both cache lines of the step PFD8 ahead into L2 (T2). One
// line a 68-byte step left a line in sixteen to a demand miss, and T0's
// L1 fills cost more than they gave: the dev box's (Zen 4, 2 threads)
// Qwen3-0.6B-shape Q8_0 decode went 27–30 tok/s (T0, one line) → 30–32
// (T2, one line) → 44–57 (T2, two lines), T0 with two lines 29–30.
#define Q84W(ptr, zw, yw) \
	PREFETCHT2 PFD8(ptr); \
	PREFETCHT2 PFD8+64(ptr); \
	VMOVDQU 2(ptr), yw; \
	VINSERTI64X4 $1, 36(ptr), zw, zw; \
	VPXORD Z14, zw, zw

// Q8V_CONSTS loads the tile's constants: Z14 the 0x80 bytes, Z4–Z7 the
// rows' scale-spreading indices.
#define Q8V_CONSTS \
	MOVL $0x80808080, AX; \
	VPBROADCASTD AX, Z14; \
	VMOVDQU32 q8vidx<>+0(SB), Z4; \
	VMOVDQU32 q8vidx<>+64(SB), Z5; \
	VMOVDQU32 q8vidx<>+128(SB), Z6; \
	VMOVDQU32 q8vidx<>+192(SB), Z7

// Q8V_WEIGHTS readies a step's weights: the eight scales (rows 0..3 ×
// blocks b, b+1) in Y11, the four rows' bytes in Z0–Z3.
#define Q8V_WEIGHTS \
	TILE_SCALES(34); \
	Q84W(R8, Z0, Y0); \
	Q84W(R9, Z1, Y1); \
	Q84W(R10, Z2, Y2); \
	Q84W(R11, Z3, Y3)

// func dotQ8_0x4x4VNNI(w unsafe.Pointer, stride int, qs unsafe.Pointer, qstride int, d unsafe.Pointer, dstride int, nb int, out *[16]float32)
//
// out[4j+r] is weight row r against activation row j; nb is even and at
// least 2. Registers as dotQ4_0x4x4VNNI's, with Z14 the 0x80 bytes: the
// sign flip, and (read unsigned, 128) the multiplier of −128·Σa.
TEXT ·dotQ8_0x4x4VNNI(SB), NOSPLIT, $0-64
	TILE_ENTER
	Q8V_CONSTS

q84loop:
	Q8V_WEIGHTS

// Q84A readies activation row j (its bytes at qp, its two scales at dp):
// the bytes in Z8, −128·Σa in Z9, the scales times the weights' in Y10.
#define Q84A(qp, dp) \
	VMOVDQU64 qp, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPDPBUSD Z8, Z14, Z9; \
	VPXORD Z12, Z12, Z12; \
	VPSUBD Z9, Z12, Z9; \
	VBROADCASTSD dp, Y10; \
	VMULPS Y10, Y11, Y10

	Q84A((DI), (DX))
	TILE_ROW(Z16, Z17, Z18, Z19)
	Q84A((DI)(R12*1), (DX)(BX*1))
	TILE_ROW(Z20, Z21, Z22, Z23)
	Q84A((DI)(R12*2), (DX)(BX*2))
	TILE_ROW(Z24, Z25, Z26, Z27)
	Q84A((R13), (SI))
	TILE_ROW(Z28, Z29, Z30, Z31)

	ADDQ $68, R8
	ADDQ $68, R9
	ADDQ $68, R10
	ADDQ $68, R11
	ADDQ $64, DI
	ADDQ $64, R13
	ADDQ $8, DX
	ADDQ $8, SI
	DECQ CX
	JNZ  q84loop

	MOVQ out+56(FP), R9

	TILE_STORE
	VZEROUPPER
	RET

// func dotQ8_0x4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// The decode GEMV's four-row dot: dotQ8_0x4x4VNNI's first activation row
// alone (the same registers, the same operations in the same order), so
// each result is that tile's, bit for bit, and a verify or prefill row
// that the tile computes equals the decode step's. nb is even and at
// least 2. Before this the four-row Q8_0 dot was AVX2 (dot_amd64.s), one
// block a step with a scalar scale per row: the dev box's Qwen3-0.6B-shape
// Q8_0 decode reached 48% of its read bandwidth against llama.cpp's 70%.
TEXT ·dotQ8_0x4VNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), AX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	SHRQ $1, CX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	VPXORD Z16, Z16, Z16
	VMOVDQA64 Z16, Z17
	VMOVDQA64 Z16, Z18
	VMOVDQA64 Z16, Z19
	Q8V_CONSTS

q8x4vloop:
	Q8V_WEIGHTS
	Q84A((DI), (DX))
	TILE_ROW(Z16, Z17, Z18, Z19)
	ADDQ $68, R8
	ADDQ $68, R9
	ADDQ $68, R10
	ADDQ $68, R11
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNZ  q8x4vloop

	MOVQ out+40(FP), R9
	TILE_SUM(Z16, Y16, 0)
	TILE_SUM(Z17, Y17, 4)
	TILE_SUM(Z18, Y18, 8)
	TILE_SUM(Z19, Y19, 12)
	VZEROUPPER
	RET
