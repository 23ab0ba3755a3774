//go:build amd64 && !purego

#include "textflag.h"

// The 4×4 float tiles (ftile_amd64.go): weight rows 0..3 (rb bytes apart)
// against activation rows 0..3 of x (xs bytes apart), n elements (a
// multiple of 16, above 0). Z16+4j+r accumulates weight row r against
// activation row j in dotF32AVX2's sixteen lanes (element e in lane
// e mod 16): the product rounded (VMULPS, weight first), then added to the
// accumulator (VADDPS, accumulator first), never fused. Each is then folded
// as dotF32AVX2 folds Y0 (lanes 0..7) and Y1 (lanes 8..15) and reduced by
// HSUM8 into out[4j+r]: the same instructions on the same values, so the
// same bits, NaN payloads included.

// HSUM8 is dot_amd64.s's: Y0 into X0 as ggml's hsum_float_8.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVHLPS X0, X0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS  X1, X0, X0

// ROW multiplies the four widened weight vectors Z0..Z3 by activation
// row's sixteen floats at xa and adds the products to a0..a3.
#define ROW(xa, a0, a1, a2, a3) \
	VMOVUPS xa, Z8; \
	VMULPS  Z8, Z0, Z4; \
	VMULPS  Z8, Z1, Z5; \
	VMULPS  Z8, Z2, Z6; \
	VMULPS  Z8, Z3, Z7; \
	VADDPS  Z4, a0, a0; \
	VADDPS  Z5, a1, a1; \
	VADDPS  Z6, a2, a2; \
	VADDPS  Z7, a3, a3

// FOLD reduces accumulator z (its low half y) to out+off(AX).
#define FOLD(z, y, off) \
	VEXTRACTF64X4 $1, z, Y1; \
	VADDPS  Y1, y, Y0; \
	HSUM8; \
	MOVSS   X0, off(AX)

#define PROLOGUE \
	MOVQ w+0(FP), SI; \
	MOVQ rb+8(FP), R8; \
	MOVQ x+16(FP), DI; \
	MOVQ xs+24(FP), DX; \
	MOVQ n+32(FP), CX; \
	LEAQ (R8)(R8*2), R9; \
	LEAQ (DX)(DX*2), R10; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23; \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z26, Z26, Z26; \
	VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; \
	VPXORD Z29, Z29, Z29; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31

#define BODY \
	ROW((DI), Z16, Z17, Z18, Z19); \
	ROW((DI)(DX*1), Z20, Z21, Z22, Z23); \
	ROW((DI)(DX*2), Z24, Z25, Z26, Z27); \
	ROW((DI)(R10*1), Z28, Z29, Z30, Z31); \
	ADDQ $64, DI; \
	SUBQ $16, CX

#define EPILOGUE \
	MOVQ out+40(FP), AX; \
	FOLD(Z16, Y16, 0); \
	FOLD(Z17, Y17, 4); \
	FOLD(Z18, Y18, 8); \
	FOLD(Z19, Y19, 12); \
	FOLD(Z20, Y20, 16); \
	FOLD(Z21, Y21, 20); \
	FOLD(Z22, Y22, 24); \
	FOLD(Z23, Y23, 28); \
	FOLD(Z24, Y24, 32); \
	FOLD(Z25, Y25, 36); \
	FOLD(Z26, Y26, 40); \
	FOLD(Z27, Y27, 44); \
	FOLD(Z28, Y28, 48); \
	FOLD(Z29, Y29, 52); \
	FOLD(Z30, Y30, 56); \
	FOLD(Z31, Y31, 60); \
	VZEROUPPER

// func ftileF32AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)
TEXT ·ftileF32AVX512(SB), NOSPLIT, $0-48
	PROLOGUE

f32loop:
	VMOVUPS (SI), Z0
	VMOVUPS (SI)(R8*1), Z1
	VMOVUPS (SI)(R8*2), Z2
	VMOVUPS (SI)(R9*1), Z3
	ADDQ $64, SI
	BODY
	JNZ f32loop

	EPILOGUE
	RET

// func ftileF16AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)
TEXT ·ftileF16AVX512(SB), NOSPLIT, $0-48
	PROLOGUE

f16loop:
	VCVTPH2PS (SI), Z0
	VCVTPH2PS (SI)(R8*1), Z1
	VCVTPH2PS (SI)(R8*2), Z2
	VCVTPH2PS (SI)(R9*1), Z3
	ADDQ $32, SI
	BODY
	JNZ f16loop

	EPILOGUE
	RET

// func ftileBF16AVX512(w unsafe.Pointer, rb int, x unsafe.Pointer, xs, n int, out *[16]float32)
// A bf16 is the high half of its float32: zero-extend, shift up.
TEXT ·ftileBF16AVX512(SB), NOSPLIT, $0-48
	PROLOGUE

bf16loop:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD (SI)(R8*1), Z1
	VPMOVZXWD (SI)(R8*2), Z2
	VPMOVZXWD (SI)(R9*1), Z3
	VPSLLD $16, Z0, Z0
	VPSLLD $16, Z1, Z1
	VPSLLD $16, Z2, Z2
	VPSLLD $16, Z3, Z3
	ADDQ $32, SI
	BODY
	JNZ bf16loop

	EPILOGUE
	RET
