// Shared by the 4×4 GEMM tiles of q4vnni_amd64.s and q8vnni_amd64.s (and
// TILE_ZERO by the x16 kernels of x16_amd64.s, whose accumulators are the
// same registers):
// sixteen accumulators Z16–Z31 (activation row j, weight row r in
// Z(16+4j+r)), the ready activation's bytes in Z8 and the start of its
// int32 lanes (the weights' offset times −Σa) in Z9, the eight scales
// f16(d_w)·d_a in Y10, temporaries Z12 and Z13.

// TILE_ENTER loads the tile's arguments (w, stride, qs, qstride, d,
// dstride, nb: the signature of dotQ4_0x4x4VNNI): weight rows 0..3 in
// R8–R11, activation rows 0..3 at DI, DI+R12, DI+2·R12, R13, their scales
// at DX, DX+BX, DX+2·BX, SI, the steps of two blocks in CX; then zeroes the
// accumulators.
#define TILE_ENTER \
	MOVQ w+0(FP), R8; \
	MOVQ stride+8(FP), AX; \
	MOVQ qs+16(FP), DI; \
	MOVQ qstride+24(FP), R12; \
	MOVQ d+32(FP), DX; \
	MOVQ dstride+40(FP), BX; \
	MOVQ nb+48(FP), CX; \
	SHRQ $1, CX; \
	LEAQ (R8)(AX*1), R9; \
	LEAQ (R9)(AX*1), R10; \
	LEAQ (R10)(AX*1), R11; \
	LEAQ (DI)(R12*2), R13; \
	ADDQ R12, R13; \
	LEAQ (DX)(BX*2), SI; \
	ADDQ BX, SI; \
	TILE_ZERO

// TILE_SCALES puts the weights' eight f16 scales (rows 0..3 × blocks b,
// b+1, the second off bytes after the first) into Y11 as float32.
#define TILE_SCALES(off) \
	MOVWLZX (R8), AX; \
	VMOVD   AX, X11; \
	VPINSRW $1, off(R8), X11, X11; \
	VPINSRW $2, (R9), X11, X11; \
	VPINSRW $3, off(R9), X11, X11; \
	VPINSRW $4, (R10), X11, X11; \
	VPINSRW $5, off(R10), X11, X11; \
	VPINSRW $6, (R11), X11, X11; \
	VPINSRW $7, off(R11), X11, X11; \
	VCVTPH2PS X11, Y11

// TILE_ZERO zeroes the accumulators.
#define TILE_ZERO \
	VPXORD Z16, Z16, Z16; \
	VMOVDQA64 Z16, Z17; \
	VMOVDQA64 Z16, Z18; \
	VMOVDQA64 Z16, Z19; \
	VMOVDQA64 Z16, Z20; \
	VMOVDQA64 Z16, Z21; \
	VMOVDQA64 Z16, Z22; \
	VMOVDQA64 Z16, Z23; \
	VMOVDQA64 Z16, Z24; \
	VMOVDQA64 Z16, Z25; \
	VMOVDQA64 Z16, Z26; \
	VMOVDQA64 Z16, Z27; \
	VMOVDQA64 Z16, Z28; \
	VMOVDQA64 Z16, Z29; \
	VMOVDQA64 Z16, Z30; \
	VMOVDQA64 Z16, Z31

// TILE_PAIR adds weight row zw (its scales spread over the lanes by the
// VPERMPS indices idx) against the ready activation into acc: the lanes'
// exact int32 sums, converted, times their block's scale.
#define TILE_PAIR(zw, idx, acc) \
	VMOVDQA32 Z9, Z12; \
	VPDPBUSD Z8, zw, Z12; \
	VCVTDQ2PS Z12, Z12; \
	VPERMPS Z10, idx, Z13; \
	VFMADD231PS Z13, Z12, acc

// TILE_ROW runs TILE_PAIR for the four weight rows Z0–Z3 (indices Z4–Z7)
// into accumulators a0..a3.
#define TILE_ROW(a0, a1, a2, a3) \
	TILE_PAIR(Z0, Z4, a0); \
	TILE_PAIR(Z1, Z5, a1); \
	TILE_PAIR(Z2, Z6, a2); \
	TILE_PAIR(Z3, Z7, a3)

// TILE_SUM reduces acc (whose low half is yacc) to out[off/4] at (R9):
// high half plus low, then as Q4VSUM.
#define TILE_SUM(acc, yacc, off) \
	VEXTRACTF64X4 $1, acc, Y5; \
	VADDPS Y5, yacc, Y5; \
	VEXTRACTF128 $1, Y5, X6; \
	VADDPS X6, X5, X5; \
	VMOVHLPS X5, X5, X6; \
	VADDPS X6, X5, X5; \
	VMOVSHDUP X5, X6; \
	VADDSS X6, X5, X5; \
	MOVSS X5, off(R9)

// TILE_STORE writes the sixteen sums to out at (R9).
#define TILE_STORE \
	TILE_SUM(Z16, Y16, 0); \
	TILE_SUM(Z17, Y17, 4); \
	TILE_SUM(Z18, Y18, 8); \
	TILE_SUM(Z19, Y19, 12); \
	TILE_SUM(Z20, Y20, 16); \
	TILE_SUM(Z21, Y21, 20); \
	TILE_SUM(Z22, Y22, 24); \
	TILE_SUM(Z23, Y23, 28); \
	TILE_SUM(Z24, Y24, 32); \
	TILE_SUM(Z25, Y25, 36); \
	TILE_SUM(Z26, Y26, 40); \
	TILE_SUM(Z27, Y27, 44); \
	TILE_SUM(Z28, Y28, 48); \
	TILE_SUM(Z29, Y29, 52); \
	TILE_SUM(Z30, Y30, 56); \
	TILE_SUM(Z31, Y31, 60)
