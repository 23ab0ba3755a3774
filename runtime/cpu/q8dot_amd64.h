// Shared by dot_amd64.s and attnq8_amd64.s, so that the Q8_0 dot of a
// weight row and of a cached key are the same operations (the scores are
// the GEMV's dots bit for bit).

// HSUM8 reduces Y0 into X0 as ggml's hsum_float_8: high half + low half,
// then (0+2, 1+3), then their sum.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVHLPS X0, X0, X1; \
	VADDPS  X1, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS  X1, X0, X0

// Q8DOT_HEAD adds one activation's product with the block whose bytes
// are in Y2 (|bytes| in Y5) into acc: the activation's 32 bytes at qp,
// the two scales' product broadcast in ys, Y13 the 16-bit ones.
#define Q8DOT_HEAD(qp, ys, acc) \
	VMOVDQU qp, Y4; \
	VPSIGNB Y2, Y4, Y6; \
	VPMADDUBSW Y6, Y5, Y7; \
	VPMADDWD Y13, Y7, Y7; \
	VCVTDQ2PS Y7, Y7; \
	VMULPS  Y7, ys, Y7; \
	VADDPS  Y7, acc, acc

// Q8DOT_BLOCK adds one Q8_0 block's product into Y0 (ggml's AVX2
// vec_dot_q8_0_q8_0, the product rounded before the add): the weight or
// key block at SI (f16 scale, 32 bytes), the activation's 32 bytes at DI
// and its scale at DX; then steps all three.
#define Q8DOT_BLOCK \
	MOVWLZX (SI), AX; \
	VMOVD   AX, X1; \
	VCVTPH2PS X1, X1; \
	VMULSS  (DX), X1, X1; \
	VBROADCASTSS X1, Y1; \
	VMOVDQU 2(SI), Y2; \
	VPSIGNB Y2, Y2, Y5; \
	Q8DOT_HEAD((DI), Y1, Y0); \
	ADDQ $34, SI; \
	ADDQ $32, DI; \
	ADDQ $4, DX
