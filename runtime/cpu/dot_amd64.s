//go:build amd64 && !purego

#include "textflag.h"

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

// HSUM8 reduces Y0 into X0 as ggml's hsum_float_8: high half + low half,
// then (0+2, 1+3), then their sum.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVHLPS X0, X0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS  X1, X0, X0

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
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU 2(SI), Y2
	VMOVDQU (DI), Y4
	VPSIGNB Y2, Y2, Y5
	VPSIGNB Y2, Y4, Y6
	VPMADDUBSW Y6, Y5, Y7
	VPMADDWD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VMULPS  Y7, Y1, Y7
	VADDPS  Y7, Y0, Y0
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
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
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

f16loop:
	TESTQ CX, CX
	JZ    f16done
	VCVTPH2PS (SI), Y2
	VCVTPH2PS 16(SI), Y3
	VMULPS  (DI), Y2, Y2
	VMULPS  32(DI), Y3, Y3
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f16loop

f16done:
	VADDPS Y1, Y0, Y0
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF32AVX2(w, x unsafe.Pointer, n int) float32
// n is a multiple of 16.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

f32loop:
	TESTQ CX, CX
	JZ    f32done
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMULPS  (DI), Y2, Y2
	VMULPS  32(DI), Y3, Y3
	VADDPS  Y2, Y0, Y0
	VADDPS  Y3, Y1, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  f32loop

f32done:
	VADDPS Y1, Y0, Y0
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
