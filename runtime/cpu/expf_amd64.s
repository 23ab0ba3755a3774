//go:build amd64 && !purego

#include "textflag.h"

// float32 exp, eight lanes at a time, and what uses it: the softmax's
// exponentials (attention) and the SiLU gate. EXPF is Cephes' expf: the
// argument clamped to [−87.3, 88.37] (the clamps take it as their second
// operand, so a NaN stays NaN), n = floor(x·log2(e) + ½), r = x − n·ln2 in
// two parts, a degree-6 polynomial for e^r, scaled by 2^n through the
// exponent bits. Within 2 ulp of the exact value over the range.

// expc holds EXPF's constants, eight lanes each: the low clamp, log2(e),
// ½, ln 2 in two parts (C1 + C2), Cephes' expf polynomial p0..p4 (p5 is
// ½), 1, the exponent bias 127, the high clamp and the sign bit.
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
DATA expc<>+384(SB)/4, $0x42b0c0a5
DATA expc<>+388(SB)/4, $0x42b0c0a5
DATA expc<>+392(SB)/4, $0x42b0c0a5
DATA expc<>+396(SB)/4, $0x42b0c0a5
DATA expc<>+400(SB)/4, $0x42b0c0a5
DATA expc<>+404(SB)/4, $0x42b0c0a5
DATA expc<>+408(SB)/4, $0x42b0c0a5
DATA expc<>+412(SB)/4, $0x42b0c0a5
DATA expc<>+416(SB)/4, $0x80000000
DATA expc<>+420(SB)/4, $0x80000000
DATA expc<>+424(SB)/4, $0x80000000
DATA expc<>+428(SB)/4, $0x80000000
DATA expc<>+432(SB)/4, $0x80000000
DATA expc<>+436(SB)/4, $0x80000000
DATA expc<>+440(SB)/4, $0x80000000
DATA expc<>+444(SB)/4, $0x80000000
GLOBL expc<>(SB), RODATA|NOPTR, $448

// Offsets of the constants in expc.
#define EXP_LO 0
#define EXP_LOG2E 32
#define EXP_HALF 64
#define EXP_C1 96
#define EXP_C2 128
#define EXP_P0 160
#define EXP_P1 192
#define EXP_P2 224
#define EXP_P3 256
#define EXP_P4 288
#define EXP_ONE 320
#define EXP_BIAS 352
#define EXP_HI 384
#define EXP_SIGN 416

#define EXPC(off) expc<>+off(SB)

// EXPF: Y0 = e^Y0, with Y13 the low clamp and Y12 the high one loaded;
// clobbers Y1, Y2, Y3.
#define EXPF \
	VMAXPS Y0, Y13, Y0; \
	VMINPS Y0, Y12, Y0; \
	VMOVUPS EXPC(EXP_HALF), Y1; \
	VFMADD231PS EXPC(EXP_LOG2E), Y0, Y1; \
	VROUNDPS $1, Y1, Y1; \
	VFNMADD231PS EXPC(EXP_C1), Y1, Y0; \
	VFNMADD231PS EXPC(EXP_C2), Y1, Y0; \
	VMOVUPS EXPC(EXP_P0), Y2; \
	VFMADD213PS EXPC(EXP_P1), Y0, Y2; \
	VFMADD213PS EXPC(EXP_P2), Y0, Y2; \
	VFMADD213PS EXPC(EXP_P3), Y0, Y2; \
	VFMADD213PS EXPC(EXP_P4), Y0, Y2; \
	VFMADD213PS EXPC(EXP_HALF), Y0, Y2; \
	VMULPS Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VADDPS EXPC(EXP_ONE), Y2, Y2; \
	VCVTTPS2DQ Y1, Y1; \
	VPADDD EXPC(EXP_BIAS), Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y2, Y0

// func expSumAVX2(s unsafe.Pointer, groups int, m float32) float32
//
// s[i] = exp(s[i] − m) for i < 8·groups; returns their sum.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-28
	MOVQ s+0(FP), SI
	MOVQ groups+8(FP), CX
	VBROADCASTSS m+16(FP), Y15
	VXORPS Y14, Y14, Y14
	VMOVUPS EXPC(EXP_LO), Y13
	VMOVUPS EXPC(EXP_HI), Y12

eloop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	EXPF
	VMOVUPS Y0, (SI)
	VADDPS Y0, Y14, Y14
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

// func siluMulAVX2(x, y unsafe.Pointer, groups int)
//
// x[i] = x[i]/(1 + e^−x[i]) · y[i] for i < 8·groups (y may be x's own
// slice only if the caller wants silu(x)·x).
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ groups+16(FP), CX
	VMOVUPS EXPC(EXP_LO), Y13
	VMOVUPS EXPC(EXP_HI), Y12
	VMOVUPS EXPC(EXP_SIGN), Y11
	VMOVUPS EXPC(EXP_ONE), Y10

sloop:
	VMOVUPS (DI), Y4
	VXORPS Y11, Y4, Y0
	EXPF
	VADDPS Y10, Y0, Y0
	VDIVPS Y0, Y4, Y4
	VMULPS (SI), Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  sloop
	VZEROUPPER
	RET
