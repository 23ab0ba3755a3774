// Shared by the 4×4 GEMM tiles of q4vnni_amd64.s and q8vnni_amd64.s:
// sixteen accumulators Z16–Z31 (activation row j, weight row r in
// Z(16+4j+r)), the ready activation's bytes in Z8 and the start of its
// int32 lanes (the weights' offset times −Σa) in Z9, the eight scales
// f16(d_w)·d_a in Y10, temporaries Z12 and Z13.

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
