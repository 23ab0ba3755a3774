#include "textflag.h"

// func sumAVX2(p *uint64, steps int) uint64
// Four 32-byte loads a 128-byte step, each added into an accumulator of its
// own (Y0-Y3), so the loads are independent; the four are folded at the end.
TEXT ·sumAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ steps+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

loop:
	VPADDQ 0(SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ  loop

	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET
