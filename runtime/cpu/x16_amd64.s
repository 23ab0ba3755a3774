//go:build amd64 && !purego

#include "textflag.h"
// TILE_ZERO: the accumulators Z16–Z31 are the 4×4 tiles'.
#include "tile_amd64.h"

// The x16 kernels (q4x16Go and q8x16Go in x16.go) in AVX-512 VNNI. The
// q4_0x16 one: a group of sixteen q4_0x16 weight rows against up to sixteen activation rows, one 512-bit
// lane per weight row. Per block, the group's nibbles are unpacked once
// (four 64-byte loads, dword j of every row: low nibbles elements
// 4j..4j+3, high nibbles 16+4j..16+4j+3) into eight registers; each
// activation row then starts its int32 lanes at its −8·Σq, adds eight
// VPDPBUSD of those registers against its quants' dwords broadcast from
// memory (a lane ends as the block's exact Σ(q_w − 8)·q_a), converts them,
// multiplies by f16(d_w)·d_a and adds into its accumulator: the Go twin's
// float steps in its order, each rounded (no FMA), so the results are its
// bits.
//
// Registers: Z0–Z3 the low nibbles of dwords 0..3, Z4–Z7 the high ones,
// Z8–Z11 temporaries, Z14 the block's sixteen scales, Z15 the 0x0F mask,
// Z16–Z31 the accumulators of activation rows 0..15. SI walks the weights,
// DI the block's records (R13 the row's), BX is a block's records in bytes
// (40·mc), R9 the group's outputs, R11 the output row stride in bytes.

// X16ROW adds the block's products with the activation record at R13
// into acc (t, u temporaries), then steps R13 to the next record.
#define X16ROW(acc, t, u) \
	VPBROADCASTD 36(R13), t; \
	VPDPBUSD.BCST 0(R13), Z0, t; \
	VPDPBUSD.BCST 4(R13), Z1, t; \
	VPDPBUSD.BCST 8(R13), Z2, t; \
	VPDPBUSD.BCST 12(R13), Z3, t; \
	VPDPBUSD.BCST 16(R13), Z4, t; \
	VPDPBUSD.BCST 20(R13), Z5, t; \
	VPDPBUSD.BCST 24(R13), Z6, t; \
	VPDPBUSD.BCST 28(R13), Z7, t; \
	VCVTDQ2PS t, t; \
	VMULPS.BCST 32(R13), Z14, u; \
	VMULPS u, t, t; \
	VADDPS t, acc, acc; \
	ADDQ $40, R13

// X16NIB unpacks the 64 bytes at off(SI) into lo (low nibbles) and hi.
#define X16NIB(off, lo, hi) \
	VMOVDQU64 off(SI), lo; \
	VPSRLW $4, lo, hi; \
	VPANDD Z15, lo, lo; \
	VPANDD Z15, hi, hi

// X16ROWN runs X16ROW for activation row n (0-based) and leaves the block
// after the last of the mc rows.
#define X16ROWN(n, acc, t, u) \
	X16ROW(acc, t, u); \
	CMPQ DX, $n+1; \
	JEQ  x16next

// X16PREFETCH asks for the block PFD bytes ahead (five lines cover its
// 288 bytes). Unless early, only passes of four rows or more run it: on
// the 2-core Zen 4 box, with weights from DRAM, the hints cost 1–3-row
// passes 10–15% (the hardware prefetcher keeps up there) and gain 4+-row
// passes 0–16% (most at 8–16 rows, K ≥ 2048); with the weights in L3 they
// change nothing.
#define X16PREFETCH \
	PREFETCHT0 PFD(SI); \
	PREFETCHT0 PFD+64(SI); \
	PREFETCHT0 PFD+128(SI); \
	PREFETCHT0 PFD+192(SI); \
	PREFETCHT0 PFD+256(SI)

// X16EARLY, where early is set, asks for the block PFD bytes ahead into L2
// (T2) at the start of every pass, decode's one-row passes too: on the
// 16-core Sapphire Rapids hosts the hardware prefetcher does not keep up
// there (Qwen3-0.6B-shape Q4_0 decode at 8 threads 154–163 → 209 tok/s,
// the Llama-3.2-1B shape 80–81 → 105–111; at 16 threads 221 → 249–260 and
// 128–131 → 165–166), while on the Zen 4 box the same hints cost its
// Qwen3 shape ~10% (90–110 → 86–90, three alternating runs each) and left
// its 1B shape within noise (45–48 → 47–51).
#define X16EARLY \
	CMPQ early+56(FP), $0; \
	JEQ  x16late; \
	PREFETCHT2 PFD(SI); \
	PREFETCHT2 PFD+64(SI); \
	PREFETCHT2 PFD+128(SI); \
	PREFETCHT2 PFD+192(SI); \
	PREFETCHT2 PFD+256(SI); \
x16late:

// PFD: the prefetch distance (dot_amd64.s says why 8192).
#define PFD 8192

// X16STORE stores acc at R10 after row n (0-based), the last of mc.
#define X16STORE(n, acc) \
	VMOVUPS acc, (R10); \
	CMPQ DX, $n+1; \
	JEQ  x16stored; \
	ADDQ R11, R10

// X16ROWS runs X16ROW for each of the pass's rows (the block's records
// from DI), pf, the kernel's prefetch, after the third.
#define X16ROWS(pf) \
	MOVQ DI, R13; \
	X16ROWN(0, Z16, Z8, Z9); \
	X16ROWN(1, Z17, Z10, Z11); \
	X16ROWN(2, Z18, Z8, Z9); \
	pf; \
	X16ROWN(3, Z19, Z10, Z11); \
	X16ROWN(4, Z20, Z8, Z9); \
	X16ROWN(5, Z21, Z10, Z11); \
	X16ROWN(6, Z22, Z8, Z9); \
	X16ROWN(7, Z23, Z10, Z11); \
	X16ROWN(8, Z24, Z8, Z9); \
	X16ROWN(9, Z25, Z10, Z11); \
	X16ROWN(10, Z26, Z8, Z9); \
	X16ROWN(11, Z27, Z10, Z11); \
	X16ROWN(12, Z28, Z8, Z9); \
	X16ROWN(13, Z29, Z10, Z11); \
	X16ROWN(14, Z30, Z8, Z9); \
	X16ROW(Z31, Z10, Z11)

// X16STORES stores the pass's rows' accumulators at the group's outputs
// (R9), row n at R9 + n·R11.
#define X16STORES \
	MOVQ R9, R10; \
	X16STORE(0, Z16); \
	X16STORE(1, Z17); \
	X16STORE(2, Z18); \
	X16STORE(3, Z19); \
	X16STORE(4, Z20); \
	X16STORE(5, Z21); \
	X16STORE(6, Z22); \
	X16STORE(7, Z23); \
	X16STORE(8, Z24); \
	X16STORE(9, Z25); \
	X16STORE(10, Z26); \
	X16STORE(11, Z27); \
	X16STORE(12, Z28); \
	X16STORE(13, Z29); \
	X16STORE(14, Z30); \
	VMOVUPS Z31, (R10)

// func q4x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int, early int)
//
// nb ≥ 1, ng ≥ 1, 1 ≤ mc ≤ 16; y[j·ldy + 16g + r] for row j, group g,
// weight row r of the group (ldy in floats); early ≠ 0: X16EARLY.
TEXT ·q4x16VNNI(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ ng+16(FP), R8
	MOVQ a+24(FP), R12
	MOVQ mc+32(FP), DX
	MOVQ y+40(FP), R9
	MOVQ ldy+48(FP), R11
	SHLQ $2, R11
	IMUL3Q $40, DX, BX
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z15

x16group:
	MOVQ nb+8(FP), CX
	MOVQ R12, DI
	TILE_ZERO

x16block:
	X16EARLY
	VCVTPH2PS (SI), Z14
	X16NIB(32, Z0, Z4)
	X16NIB(96, Z1, Z5)
	X16NIB(160, Z2, Z6)
	X16NIB(224, Z3, Z7)
	X16ROWS(X16PREFETCH)

x16next:
	ADDQ $288, SI
	ADDQ BX, DI
	DECQ CX
	JNZ  x16block

	X16STORES

x16stored:
	ADDQ $64, R9
	DECQ R8
	JNZ  x16group
	VZEROUPPER
	RET

// The q8_0x16 kernel (q8x16Go) is the same loop over 544-byte blocks: the
// eight dwords of a block's sixteen rows are loaded as they are (the
// flipped quants, q + 128) into Z0–Z7, and the records' −128·Σq start the
// lanes. X16ROW, X16ROWN and X16STORE serve it unchanged.

// Q8PREFETCH and Q8EARLY are X16PREFETCH and X16EARLY over a 544-byte
// block (nine lines), but Q8PREFETCH asks for L2 (T2), not L1: a T0 hint
// 8 KiB ahead holds an L1 fill buffer for a whole DRAM trip, and the
// 8-row passes of a verify pass, whose arithmetic per line is 8 rows',
// then wait on their loads. On the Zen 4 dev box (2 threads, alternating,
// 4 rounds) BenchmarkGEMVX16Cold's q8_0 m8 went from 23.5–25.4 to
// 27.6–31.4 GB/s and a Forward of 8 rows of the Qwen3-0.6B-shape Q8_0
// from 23.7–25.4 to 22.5–23.1 ms (one row 19.7–20.5); pp512 within its
// spread. The q4_0 kernel's 8-row passes, whose nibble unpacking makes
// them arithmetic-bound (21 GB/s either way), keep T0.
#define Q8PREFETCH \
	CMPQ early+56(FP), $0; \
	JNE  q8asked; \
	Q8L2; \
q8asked:

// Q8EARLY: where early is set, every pass asks at its block's start (and
// Q8PREFETCH then asks nothing: the same lines twice cost nine
// instructions a block).
#define Q8EARLY \
	CMPQ early+56(FP), $0; \
	JEQ  x16late; \
	Q8L2; \
x16late:

// Q8L2 asks L2 for the nine lines of the block PFD bytes ahead.
#define Q8L2 \
	PREFETCHT2 PFD(SI); \
	PREFETCHT2 PFD+64(SI); \
	PREFETCHT2 PFD+128(SI); \
	PREFETCHT2 PFD+192(SI); \
	PREFETCHT2 PFD+256(SI); \
	PREFETCHT2 PFD+320(SI); \
	PREFETCHT2 PFD+384(SI); \
	PREFETCHT2 PFD+448(SI); \
	PREFETCHT2 PFD+512(SI)

// func q8x16VNNI(w unsafe.Pointer, nb, ng int, a unsafe.Pointer, mc int, y unsafe.Pointer, ldy int, early int)
//
// As q4x16VNNI, over the q8_0x16 layout.
TEXT ·q8x16VNNI(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ ng+16(FP), R8
	MOVQ a+24(FP), R12
	MOVQ mc+32(FP), DX
	MOVQ y+40(FP), R9
	MOVQ ldy+48(FP), R11
	SHLQ $2, R11
	IMUL3Q $40, DX, BX

x16group:
	MOVQ nb+8(FP), CX
	MOVQ R12, DI
	TILE_ZERO

x16block:
	Q8EARLY
	VCVTPH2PS (SI), Z14
	VMOVDQU64 32(SI), Z0
	VMOVDQU64 96(SI), Z1
	VMOVDQU64 160(SI), Z2
	VMOVDQU64 224(SI), Z3
	VMOVDQU64 288(SI), Z4
	VMOVDQU64 352(SI), Z5
	VMOVDQU64 416(SI), Z6
	VMOVDQU64 480(SI), Z7
	X16ROWS(Q8PREFETCH)

x16next:
	ADDQ $544, SI
	ADDQ BX, DI
	DECQ CX
	JNZ  x16block

	X16STORES

x16stored:
	ADDQ $64, R9
	DECQ R8
	JNZ  x16group
	VZEROUPPER
	RET
