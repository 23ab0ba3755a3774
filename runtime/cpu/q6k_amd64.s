//go:build amd64 && !purego

#include "textflag.h"

// AVX2 Q6_K·Q8_K dot products, bit-identical to dotQ6_KGo (quant.go).
//
// Per super-block the Go code forms one int32, sumi = Σ_j sc_j·Σ(q−32)·a
// over the 16 sub-blocks of 16, and then one float32 step, acc +=
// float32(f16(d_w)·d_a)·float32(sumi). Integer sums are exact in any
// order, so only sumi has to match, and the float step is done as the Go
// code does it: the two scales multiplied and rounded, sumi converted
// (round to nearest), the product rounded, then added; no FMA.
//
// The integer part, per 32 elements of one ql/qh group (docs/formats.md#q6_k):
// q = ql nibble | 2 qh bits << 4 is 0..63, unsigned; VPMADDUBSW(q, a) is
// exact (a pair is at most 2·63·128 = 16128 < 2^15), so is VPMADDUBSW(32, a)
// (2·32·128), and so their difference, the pair sums of (q−32)·a, which lie
// in [−7936, 8192]. VPMADDWD with the sub-block's int8 scale widened to
// int16 gives int32 lane sums of at most 2·8192·128 = 2^21; a super-block's
// sumi is at most 256·32·128·128 = 2^27 in magnitude. Nothing saturates or
// wraps, whatever the bytes (a = −128 and scale −128 included).
//
// The 32 elements of a group are two sub-blocks, elements 0..15 in the low
// 128-bit lane of the VPMADDUBSW result and 16..31 in the high one; the
// scale vector for the group (VPSHUFB of the half's eight scales, widened
// and copied into both lanes, by q6kscale) holds sc[2g] in every word of
// the low lane and sc[2g+1] in the high.

// q6kscale: for group g (32 bytes at 32·g), the VPSHUFB indices that fill
// the low lane with word 2g (bytes 4g, 4g+1) and the high with word 2g+1.
DATA q6kscale<>+0(SB)/8, $0x0100010001000100
DATA q6kscale<>+8(SB)/8, $0x0100010001000100
DATA q6kscale<>+16(SB)/8, $0x0302030203020302
DATA q6kscale<>+24(SB)/8, $0x0302030203020302
DATA q6kscale<>+32(SB)/8, $0x0504050405040504
DATA q6kscale<>+40(SB)/8, $0x0504050405040504
DATA q6kscale<>+48(SB)/8, $0x0706070607060706
DATA q6kscale<>+56(SB)/8, $0x0706070607060706
DATA q6kscale<>+64(SB)/8, $0x0908090809080908
DATA q6kscale<>+72(SB)/8, $0x0908090809080908
DATA q6kscale<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kscale<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kscale<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kscale<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kscale<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kscale<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kscale<>(SB), RODATA|NOPTR, $128

// Q6KCONST loads the byte masks: Y15 = 0x0F, Y14 = 0x30, Y13 = 32.
#define Q6KCONST \
	MOVL $0x0F0F0F0F, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x30303030, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x20202020, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// Q6KGROUP adds group g's scaled (q−32)·a lane sums, q in Y7 and the
// activation at aoff(DI), into acc. Clobbers Y8, Y9.
#define Q6KGROUP(aoff, g, acc) \
	VPMADDUBSW aoff(DI), Y7, Y8; \
	VPMADDUBSW aoff(DI), Y13, Y9; \
	VPSUBW  Y9, Y8, Y8; \
	VPSHUFB q6kscale<>+(32*g)(SB), Y12, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD  Y8, acc, acc

// Q6KHALF adds half h (0 or 1: 128 elements; ql at 64h, qh at 128+32h,
// scales at 192+8h of the block at ptr; the activation at 128h(DI)) into
// acc. Element l of group g: g=0 ql[l]&15 | qh[l]&3<<4; g=1 ql[l+32]&15 |
// qh[l]>>2&3<<4; g=2 ql[l]>>4 | qh[l]>>4&3<<4; g=3 ql[l+32]>>4 | qh[l]>>6<<4.
// The word shifts move bits across bytes only where the masks drop them.
// Clobbers Y4..Y9, Y12.
#define Q6KHALF(ptr, h, acc) \
	VMOVDQU (64*h)(ptr), Y4; \
	VMOVDQU (64*h+32)(ptr), Y5; \
	VMOVDQU (128+32*h)(ptr), Y6; \
	VPMOVSXBW (192+8*h)(ptr), X12; \
	VINSERTI128 $1, X12, Y12, Y12; \
	VPAND   Y15, Y4, Y7; \
	VPSLLW  $4, Y6, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y7, Y7; \
	Q6KGROUP(128*h, 0, acc); \
	VPAND   Y15, Y5, Y7; \
	VPSLLW  $2, Y6, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y7, Y7; \
	Q6KGROUP(128*h+32, 1, acc); \
	VPSRLW  $4, Y4, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPAND   Y14, Y6, Y9; \
	VPOR    Y9, Y7, Y7; \
	Q6KGROUP(128*h+64, 2, acc); \
	VPSRLW  $4, Y5, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSRLW  $2, Y6, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y7, Y7; \
	Q6KGROUP(128*h+96, 3, acc)

// Q6KPFD is how far ahead the kernels prefetch each row (as dot_amd64.s's
// PFD: decode streams the weights from DRAM): four lines a block, the
// fifth that a block may touch being the next block's first.
#define Q6KPFD 8192

// Q6KBLOCK sets acc to the 8 int32 lane sums of the block at ptr.
#define Q6KBLOCK(ptr, acc) \
	PREFETCHT0 Q6KPFD(ptr); \
	PREFETCHT0 (Q6KPFD+64)(ptr); \
	PREFETCHT0 (Q6KPFD+128)(ptr); \
	PREFETCHT0 (Q6KPFD+192)(ptr); \
	VPXOR   acc, acc, acc; \
	Q6KHALF(ptr, 0, acc); \
	Q6KHALF(ptr, 1, acc)

// func dotQ6_KAVX2(w, qs, d unsafe.Pointer, nb int) float32
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	Q6KCONST
	VXORPS X10, X10, X10

q6kloop:
	TESTQ CX, CX
	JZ    q6kdone
	Q6KBLOCK(SI, Y0)
	// sumi: the eight lanes summed (exact, so in any order).
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD  X1, X0, X0
	// acc += float32(f16(d_w)·d_a) · float32(sumi), each step rounded.
	MOVWLZX 208(SI), AX
	VMOVD   AX, X6
	VCVTPH2PS X6, X6
	VMULSS  (DX), X6, X6
	VCVTDQ2PS X0, X0
	VMULSS  X0, X6, X6
	VADDSS  X6, X10, X10
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q6kloop

q6kdone:
	VZEROUPPER
	MOVSS X10, ret+32(FP)
	RET

// func dotQ6_Kx4AVX2(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// Four rows stride bytes apart, one block of each per iteration against
// the same activation block (L1-resident after the first row). The four
// sumis are reduced together into lanes 0..3 of X0, and the float step
// runs on the four lanes at once: lane r does exactly the one-row form's
// scalar operations for row r, so each row is bit-identical to it.
TEXT ·dotQ6_Kx4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R8
	MOVQ stride+8(FP), R12
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (R8)(R12*1), R9
	LEAQ (R9)(R12*1), R10
	LEAQ (R10)(R12*1), R11
	Q6KCONST
	VXORPS X10, X10, X10

q6kx4loop:
	TESTQ CX, CX
	JZ    q6kx4done
	Q6KBLOCK(R8, Y0)
	Q6KBLOCK(R9, Y1)
	Q6KBLOCK(R10, Y2)
	Q6KBLOCK(R11, Y3)
	// Lane r of X0 = row r's sumi: pairwise adds within each 128-bit
	// lane, then the two lanes added.
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	MOVWLZX 208(R8), AX
	VMOVD   AX, X6
	VPINSRW $1, 208(R9), X6, X6
	VPINSRW $2, 208(R10), X6, X6
	VPINSRW $3, 208(R11), X6, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS (DX), X9
	VMULPS  X9, X6, X6
	VCVTDQ2PS X0, X0
	VMULPS  X0, X6, X6
	VADDPS  X6, X10, X10
	ADDQ $210, R8
	ADDQ $210, R9
	ADDQ $210, R10
	ADDQ $210, R11
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JMP  q6kx4loop

q6kx4done:
	MOVQ out+40(FP), R9
	VMOVUPS X10, (R9)
	VZEROUPPER
	RET
