//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA+F16C attention pieces (attention.go has the portable twins and
// the contract of each). Every one handles whole groups of 8 (positions or
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

// expc holds expSumAVX2's constants, eight lanes each: the clamp, log2(e),
// ½, ln 2 in two parts (C1 + C2), Cephes' expf polynomial p0..p4 (p5 is
// ½), 1, and the exponent bias 127.
DATA expc<>+0(SB)/4, $0xc2aeac50
DATA expc<>+4(SB)/4, $0xc2aeac50
DATA expc<>+8(SB)/4, $0xc2aeac50
DATA expc<>+12(SB)/4, $0xc2aeac50
DATA expc<>+16(SB)/4, $0xc2aeac50
DATA expc<>+20(SB)/4, $0xc2aeac50
DATA expc<>+24(SB)/4, $0xc2aeac50
DATA expc<>+28(SB)/4, $0xc2aeac50
DATA expc<>+32(SB)/4, $0x3fb8aa3b
DATA expc<>+36(SB)/4, $0x3fb8aa3b
DATA expc<>+40(SB)/4, $0x3fb8aa3b
DATA expc<>+44(SB)/4, $0x3fb8aa3b
DATA expc<>+48(SB)/4, $0x3fb8aa3b
DATA expc<>+52(SB)/4, $0x3fb8aa3b
DATA expc<>+56(SB)/4, $0x3fb8aa3b
DATA expc<>+60(SB)/4, $0x3fb8aa3b
DATA expc<>+64(SB)/4, $0x3f000000
DATA expc<>+68(SB)/4, $0x3f000000
DATA expc<>+72(SB)/4, $0x3f000000
DATA expc<>+76(SB)/4, $0x3f000000
DATA expc<>+80(SB)/4, $0x3f000000
DATA expc<>+84(SB)/4, $0x3f000000
DATA expc<>+88(SB)/4, $0x3f000000
DATA expc<>+92(SB)/4, $0x3f000000
DATA expc<>+96(SB)/4, $0x3f318000
DATA expc<>+100(SB)/4, $0x3f318000
DATA expc<>+104(SB)/4, $0x3f318000
DATA expc<>+108(SB)/4, $0x3f318000
DATA expc<>+112(SB)/4, $0x3f318000
DATA expc<>+116(SB)/4, $0x3f318000
DATA expc<>+120(SB)/4, $0x3f318000
DATA expc<>+124(SB)/4, $0x3f318000
DATA expc<>+128(SB)/4, $0xb95e8083
DATA expc<>+132(SB)/4, $0xb95e8083
DATA expc<>+136(SB)/4, $0xb95e8083
DATA expc<>+140(SB)/4, $0xb95e8083
DATA expc<>+144(SB)/4, $0xb95e8083
DATA expc<>+148(SB)/4, $0xb95e8083
DATA expc<>+152(SB)/4, $0xb95e8083
DATA expc<>+156(SB)/4, $0xb95e8083
DATA expc<>+160(SB)/4, $0x39506967
DATA expc<>+164(SB)/4, $0x39506967
DATA expc<>+168(SB)/4, $0x39506967
DATA expc<>+172(SB)/4, $0x39506967
DATA expc<>+176(SB)/4, $0x39506967
DATA expc<>+180(SB)/4, $0x39506967
DATA expc<>+184(SB)/4, $0x39506967
DATA expc<>+188(SB)/4, $0x39506967
DATA expc<>+192(SB)/4, $0x3ab743ce
DATA expc<>+196(SB)/4, $0x3ab743ce
DATA expc<>+200(SB)/4, $0x3ab743ce
DATA expc<>+204(SB)/4, $0x3ab743ce
DATA expc<>+208(SB)/4, $0x3ab743ce
DATA expc<>+212(SB)/4, $0x3ab743ce
DATA expc<>+216(SB)/4, $0x3ab743ce
DATA expc<>+220(SB)/4, $0x3ab743ce
DATA expc<>+224(SB)/4, $0x3c088908
DATA expc<>+228(SB)/4, $0x3c088908
DATA expc<>+232(SB)/4, $0x3c088908
DATA expc<>+236(SB)/4, $0x3c088908
DATA expc<>+240(SB)/4, $0x3c088908
DATA expc<>+244(SB)/4, $0x3c088908
DATA expc<>+248(SB)/4, $0x3c088908
DATA expc<>+252(SB)/4, $0x3c088908
DATA expc<>+256(SB)/4, $0x3d2aa9c1
DATA expc<>+260(SB)/4, $0x3d2aa9c1
DATA expc<>+264(SB)/4, $0x3d2aa9c1
DATA expc<>+268(SB)/4, $0x3d2aa9c1
DATA expc<>+272(SB)/4, $0x3d2aa9c1
DATA expc<>+276(SB)/4, $0x3d2aa9c1
DATA expc<>+280(SB)/4, $0x3d2aa9c1
DATA expc<>+284(SB)/4, $0x3d2aa9c1
DATA expc<>+288(SB)/4, $0x3e2aaaaa
DATA expc<>+292(SB)/4, $0x3e2aaaaa
DATA expc<>+296(SB)/4, $0x3e2aaaaa
DATA expc<>+300(SB)/4, $0x3e2aaaaa
DATA expc<>+304(SB)/4, $0x3e2aaaaa
DATA expc<>+308(SB)/4, $0x3e2aaaaa
DATA expc<>+312(SB)/4, $0x3e2aaaaa
DATA expc<>+316(SB)/4, $0x3e2aaaaa
DATA expc<>+320(SB)/4, $0x3f800000
DATA expc<>+324(SB)/4, $0x3f800000
DATA expc<>+328(SB)/4, $0x3f800000
DATA expc<>+332(SB)/4, $0x3f800000
DATA expc<>+336(SB)/4, $0x3f800000
DATA expc<>+340(SB)/4, $0x3f800000
DATA expc<>+344(SB)/4, $0x3f800000
DATA expc<>+348(SB)/4, $0x3f800000
DATA expc<>+352(SB)/4, $0x0000007f
DATA expc<>+356(SB)/4, $0x0000007f
DATA expc<>+360(SB)/4, $0x0000007f
DATA expc<>+364(SB)/4, $0x0000007f
DATA expc<>+368(SB)/4, $0x0000007f
DATA expc<>+372(SB)/4, $0x0000007f
DATA expc<>+376(SB)/4, $0x0000007f
DATA expc<>+380(SB)/4, $0x0000007f
GLOBL expc<>(SB), RODATA|NOPTR, $384

#define EXPC(name) expc<>+name(SB)

// func expSumAVX2(s unsafe.Pointer, groups int, m float32) float32
//
// s[i] = exp(s[i] − m) for i < 8·groups; returns their sum. exp is
// Cephes' expf: x clamped to ≥ −87.3 (below, e^x leaves float32's normal
// range, and its weight is nothing next to the maximum's e^0 = 1),
// n = floor(x·log2(e) + ½), r = x − n·ln2 in two parts, a degree-6
// polynomial for e^r, scaled by 2^n through the exponent bits. A NaN
// stays NaN (the clamp takes x as its second operand). Within 2 ulp of
// the exact value (TestAttentionPiecesMatchPortable).
TEXT ·expSumAVX2(SB), NOSPLIT, $0-28
	MOVQ s+0(FP), SI
	MOVQ groups+8(FP), CX
	VBROADCASTSS m+16(FP), Y15
	VXORPS Y14, Y14, Y14
	VMOVUPS EXPC(0), Y13

eloop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VMAXPS Y0, Y13, Y0
	VMOVUPS EXPC(64), Y1
	VFMADD231PS EXPC(32), Y0, Y1
	VROUNDPS $1, Y1, Y1
	VFNMADD231PS EXPC(96), Y1, Y0
	VFNMADD231PS EXPC(128), Y1, Y0
	VMOVUPS EXPC(160), Y2
	VFMADD213PS EXPC(192), Y0, Y2
	VFMADD213PS EXPC(224), Y0, Y2
	VFMADD213PS EXPC(256), Y0, Y2
	VFMADD213PS EXPC(288), Y0, Y2
	VFMADD213PS EXPC(64), Y0, Y2
	VMULPS Y0, Y0, Y3
	VFMADD213PS Y0, Y3, Y2
	VADDPS EXPC(320), Y2, Y2
	VCVTTPS2DQ Y1, Y1
	VPADDD EXPC(352), Y1, Y1
	VPSLLD $23, Y1, Y1
	VMULPS Y1, Y2, Y2
	VMOVUPS Y2, (SI)
	VADDPS Y2, Y14, Y14
	ADDQ $32, SI
	DECQ CX
	JNZ  eloop

	VEXTRACTF128 $1, Y14, X1
	VADDPS X1, X14, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, ret+24(FP)
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
