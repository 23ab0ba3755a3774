//go:build amd64 && !purego

#include "textflag.h"
#include "q8dot_amd64.h"

// AVX2 dot products. Each loops over whole blocks (or 16-element groups,
// two float32x8 accumulators) and returns the horizontal sum; callers
// handle tails. The integer dots use the sign trick llama.cpp uses:
// |w| (unsigned) times a·sign(w) (signed) with VPMADDUBSW, pairs summed
// to int32 with VPMADDWD. No saturation: |w| ≤ 8 (Q4_0) or ≤ 128 (Q8_0),
// |a| ≤ 127, so a pair sums to at most 2·128·127 < 2^15.
//
// The quantized dots follow ggml's AVX2 vec_dot_q4_0_q8_0/q8_0_q8_0: one
// 8-lane accumulator over blocks, lane l holding elements 4l..4l+3, and
// hsum_float_8's reduction order. The block's product is rounded before
// it is added (VMULPS, VADDPS; ggml fuses them) so that the portable Go
// twins (lanes8, hsum8 in quant.go) agree to the bit.

// HSUM8 and Q8DOT_BLOCK: q8dot_amd64.h.

// PFD is how far ahead of each row the weight dots prefetch:
// decode streams weights from DRAM (a mapped file, 4 KiB pages), and the
// hardware prefetchers alone kept one core at a third of llama.cpp's
// bandwidth. The other kernels' distances (q4vnni, q5, kquant, q6k) are
// the same. Measured on a 16-core Xeon host, Qwen3-0.6B-shape Q4_0
// decode, tok/s at 1 / 8 threads: no prefetch 14–19 / 84–88, 2048
// 25–29 / 121–144, 4096 31–35 / 152–191, 8192 34–36 / 178–188, 16384
// 34–35 / 167–168 (Q4_K alike: 8192 best at 8 threads). The 2-core
// development box measured 2048 and 4096 alike.
#define PFD 8192

// The float dots: sixteen lanes (two ymm accumulators, element i in lane
// i mod 16), each product rounded before it is added, folded and reduced
// as fold16 (quant.go). FDOT_STEP widens sixteen weights into Y2, Y3 with
// widen, then adds their products with x; wstep is the weights' bytes.
// It prefetches as the quantized dots do: the 4096×14336 GEMV on one
// thread of the development box went 8.0–8.5 → 9.5–9.7 GB/s (F16) and
// 7.2–7.5 → 9.7–10.0 (BF16). The four-row F32 dot measured no gain from
// it and has none.
#define FDOT_ENTER \
	MOVQ w+0(FP), SI; \
	MOVQ x+8(FP), DI; \
	MOVQ n+16(FP), CX; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1

#define FDOT_STEP(widen, wstep) \
	PREFETCHT0 PFD(SI); \
	widen; \
	VMULPS  (DI), Y2, Y2; \
	VMULPS  32(DI), Y3, Y3; \
	VADDPS  Y2, Y0, Y0; \
	VADDPS  Y3, Y1, Y1; \
	ADDQ $wstep, SI; \
	ADDQ $64, DI; \
	SUBQ $16, CX

#define FDOT_EXIT \
	VADDPS Y1, Y0, Y0; \
	HSUM8; \
	VZEROUPPER; \
	MOVSS X0, ret+24(FP); \
	RET

#define WIDEN_F16 VCVTPH2PS (SI), Y2; VCVTPH2PS 16(SI), Y3
#define WIDEN_BF16 VPMOVZXWD (SI), Y2; VPMOVZXWD 16(SI), Y3; VPSLLD $16, Y2, Y2; VPSLLD $16, Y3, Y3
#define WIDEN_F32 VMOVUPS (SI), Y2; VMOVUPS 32(SI), Y3

// func dotQ4_0AVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x08080808, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q4loop:
	TESTQ CX, CX
	JZ    q4done
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU 2(SI), X2
	VPSRLW  $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND   Y15, Y2, Y2
	VPSUBB  Y14, Y2, Y2
	VMOVDQU (DI), Y4
	VPSIGNB Y2, Y2, Y5
	VPSIGNB Y2, Y4, Y6
	VPMADDUBSW Y6, Y5, Y7
	VPMADDWD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VMULPS  Y7, Y1, Y7
	VADDPS  Y7, Y0, Y0
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q4loop

q4done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotQ8_0AVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q8loop:
	TESTQ CX, CX
	JZ    q8done
	Q8DOT_BLOCK
	DECQ CX
	JMP  q8loop

q8done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotF16AVX2(w, x unsafe.Pointer, n int) float32
// n is a multiple of 16.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	FDOT_ENTER
f16loop:
	TESTQ CX, CX
	JZ    f16done
	FDOT_STEP(WIDEN_F16, 32)
	JMP  f16loop
f16done:
	FDOT_EXIT

// func dotBF16AVX2(w, x unsafe.Pointer, n int) float32
// n is a multiple of 16; a bf16 is the high half of its float32.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	FDOT_ENTER
bf16loop:
	TESTQ CX, CX
	JZ    bf16done
	FDOT_STEP(WIDEN_BF16, 32)
	JMP  bf16loop
bf16done:
	FDOT_EXIT

// func dotF32AVX2(w, x unsafe.Pointer, n int) float32
// n is a multiple of 16.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	FDOT_ENTER
f32loop:
	TESTQ CX, CX
	JZ    f32done
	FDOT_STEP(WIDEN_F32, 64)
	JMP  f32loop
f32done:
	FDOT_EXIT

// The four-row forms below compute four rows of W against one activation
// in a pass: the activation is loaded once per block (or 16 elements) and
// the rows' accumulators form four independent dependency chains. Each
// row's arithmetic is the one-row form's, operation for operation, so
// every row's result is bit-identical to it. The rows lie stride bytes
// apart: row r at w + r·stride. The four results go to out[0..3].

// X4STORE reduces Y0..Y3 (HSUM8 each) into out[0..3] at R9.
#define X4STORE \
	VMOVAPS Y3, Y10; \
	VMOVAPS Y2, Y9; \
	VMOVAPS Y1, Y8; \
	HSUM8; \
	MOVSS X0, (R9); \
	VMOVAPS Y8, Y0; \
	HSUM8; \
	MOVSS X0, 4(R9); \
	VMOVAPS Y9, Y0; \
	HSUM8; \
	MOVSS X0, 8(R9); \
	VMOVAPS Y10, Y0; \
	HSUM8; \
	MOVSS X0, 12(R9); \
	VZEROUPPER


// func dotQ4_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// Q4_0 here takes the nibbles unsigned (0..15) against the signed
// activation and subtracts 8·Σa per lane, computed once per block for all
// four rows: Σ(q−8)·a = Σq·a − 8·Σa, the same exact int32 lane sums as the
// sign trick (no saturation: a pair is at most 2·15·128 < 2^15).
TEXT ·dotQ4_0x4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x08080808, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $1, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $2, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	MOVL $3, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9

q4x4loop:
	TESTQ CX, CX
	JZ    q4x4done
	VMOVDQU (DI), Y12
	VPMADDUBSW Y12, Y14, Y11
	VPMADDWD Y13, Y11, Y11
	// The four rows' f16(d_w)·d_a at once, lane r for row r (each the
	// one-row form's VMULSS, lane by lane).
	MOVWLZX (R8), AX
	VMOVD   AX, X6
	VPINSRW $1, (R9), X6, X6
	VPINSRW $2, (R10), X6, X6
	VPINSRW $3, (R11), X6, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS (DX), X10
	VMULPS  X10, X6, X6

// Q4SUM leaves row ptr's block in Y5 as float32 lane sums; Q4ACC scales
// them by Y10 (the row's broadcast scale) into acc.
#define Q4SUM(ptr) \
	PREFETCHT0 PFD(ptr); \
	VMOVDQU 2(ptr), X4; \
	VPSRLW  $4, X4, X5; \
	VINSERTI128 $1, X5, Y4, Y4; \
	VPAND   Y15, Y4, Y4; \
	VPMADDUBSW Y12, Y4, Y5; \
	VPMADDWD Y13, Y5, Y5; \
	VPSUBD  Y11, Y5, Y5; \
	VCVTDQ2PS Y5, Y5

#define Q4ACC(acc) \
	VMULPS  Y5, Y10, Y5; \
	VADDPS  Y5, acc, acc

	Q4SUM(R8)
	VBROADCASTSS X6, Y10
	Q4ACC(Y0)
	Q4SUM(R9)
	VPERMPS Y6, Y7, Y10
	Q4ACC(Y1)
	Q4SUM(R10)
	VPERMPS Y6, Y8, Y10
	Q4ACC(Y2)
	Q4SUM(R11)
	VPERMPS Y6, Y9, Y10
	Q4ACC(Y3)
	ADDQ $18, R8
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q4x4loop

q4x4done:
	MOVQ out+40(FP), R9
	X4STORE
	RET

// func dotQ8_0x4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
TEXT ·dotQ8_0x4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q8x4loop:
	TESTQ CX, CX
	JZ    q8x4done
	VMOVDQU (DI), Y12

#define Q8ROW(ptr, acc) \
	PREFETCHT0 PFD(ptr); \
	VMOVDQU 2(ptr), Y4; \
	VPSIGNB Y4, Y4, Y5; \
	VPSIGNB Y4, Y12, Y7; \
	VPMADDUBSW Y7, Y5, Y5; \
	VPMADDWD Y13, Y5, Y5; \
	VCVTDQ2PS Y5, Y5; \
	MOVWLZX (ptr), AX; \
	VMOVD   AX, X6; \
	VCVTPH2PS X6, X6; \
	VMULSS  (DX), X6, X6; \
	VBROADCASTSS X6, Y6; \
	VMULPS  Y5, Y6, Y5; \
	VADDPS  Y5, acc, acc

	Q8ROW(R8, Y0)
	Q8ROW(R9, Y1)
	Q8ROW(R10, Y2)
	Q8ROW(R11, Y3)
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q8x4loop

q8x4done:
	MOVQ out+40(FP), R9

	X4STORE
	RET

// func dotF32x4AVX2(w unsafe.Pointer, stride int, x unsafe.Pointer, n int, out *[4]float32)
// n is a multiple of 16. Row r keeps the one-row form's two accumulators
// (elements i mod 16 < 8 and ≥ 8), folded and reduced the same way.
TEXT ·dotF32x4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

f32x4loop:
	TESTQ CX, CX
	JZ    f32x4done
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9

#define F32ROW(ptr, a0, a1) \
	VMULPS  (ptr), Y8, Y10; \
	VMULPS  32(ptr), Y9, Y11; \
	VADDPS  Y10, a0, a0; \
	VADDPS  Y11, a1, a1

	F32ROW(R8, Y0, Y1)
	F32ROW(R9, Y2, Y3)
	F32ROW(R10, Y4, Y5)
	F32ROW(R11, Y6, Y7)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f32x4loop

f32x4done:
	MOVQ out+32(FP), R9
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y1
	VADDPS Y5, Y4, Y2
	VADDPS Y7, Y6, Y3
	X4STORE
	RET
