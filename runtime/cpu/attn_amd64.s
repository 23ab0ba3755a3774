//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA+F16C attention pieces (attention.go has the portable twins and
// the contract of each; the exp piece is in expf_amd64.s). Every one handles whole groups of 8 (positions or
// elements); the Go wrappers in attn_amd64.go do the tails.

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
