//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 VNNI four-row dots of Q3_K and Q6_K against one Q8_K activation
// (F, BW, VL and VNNI), each row bit-identical to dotQ3_KGo (lowbit.go)
// and dotQ6_KGo (quant.go). They replace dotQ3_Kx4AVX2 (lowbit_amd64.s)
// and dotQ6_Kx4AVX2 (q6k_amd64.s), which document the same formats in
// 256-bit registers; block layouts: docs/formats.md#q3_k, #q6_k.
//
// Per super-block the Go code forms one int32 per row, sumi = Σ_j sc_j·Σ
// q·a over the sixteen sub-blocks j of 16 elements, then one float32
// step, acc += float32(float32(f16(d_w)·d_a)·float32(sumi)). Integer sums
// are exact in any order (no partial sum below can wrap, and Go's int32
// adds do not either), so the kernel forms the four sumis however is
// fastest and does the float step as the Go code does, on lane r for row
// r: the scale product rounded (VMULPS), sumi converted to nearest
// (VCVTDQ2PS), the product rounded, then added (VADDPS); no FMA.
//
// A super-block is four chunks of 64 elements; chunk k meets the 64
// activation bytes at 64k, and its 128-bit lane ℓ is sub-block 4k+ℓ. Each
// row's chunk is unpacked to 64 unsigned bytes u (Q6_K: q, 0..63; Q3_K:
// u = q + 4, 0..7) and VPDPBUSD adds each four products u·a into a dword
// lane that starts at −c·Σa over the same four activation bytes (c = 32
// for Q6_K, 4 for Q3_K; made once per chunk with one VPDPBUSD of c-bytes,
// shared by the four rows), so that it ends as Σ(u−c)·a = Σ q·a exactly
// (VPDPBUSD adds in int32 and does not saturate; the start is at most
// 4·32·128 = 16384 in magnitude, Σ u·a at most 4·63·128 = 32256):
//	Q6_K: q−32 in −32..31 and a in −128..127: a lane ends in
//	[−4·32·127, 4·32·128] = [−16256, 16384].
//	Q3_K: q in −4..3: a lane ends in [−2032, 2048].
// Two rows' lanes are packed to words (VPACKSSDW: they fit int16, so
// nothing saturates): lane ℓ holds row r's four sums of sub-block 4k+ℓ in
// words 0–3 and row r+1's in words 4–7. VPDPWSSD against the rows' scales
// (words: Q6_K's int8, −128..127; Q3_K's 6-bit minus 32, −32..31; spread
// by VPERMW from a table made once a super-block) adds per dword at most
// 2·16384·128 = 2^22 per chunk, 2^24 over the four: the accumulator's
// dwords 0–1 of each lane are row r's, 2–3 row r+1's, and all of a row's
// add to its sumi, at most 256·32·128·128 = 2^27 in magnitude (Q3_K:
// 256·4·128·32 = 2^22). Nothing overflows, whatever the bytes.
//
// Q6_K's q of chunk k (half h = k/2): the 64 ql bytes at 64h, low nibbles
// for even k and high for odd, merged (VPTERNLOGD) with bits 4–5 from the
// 32 qh bytes at 128+32h, broadcast to both 256-bit halves and moved by a
// word shift per half (even k: qh<<4, qh<<2; odd: qh, qh>>2); a mask made
// once for both chunks of a half clears the bits that would land in bits
// 6–7 (see the Q6_K section).
//
// Q3_K's u of chunk k (half n = k/2, groups g = 2(k%2) and g+1 in the two
// 256-bit halves): the 32 qs bytes at 32+32n, broadcast and shifted right
// by 2g (low half) and 2g+2 (high), masked to 0x03, give the two low bits;
// hmask bit 4n+g (resp. g+1), tested into a mask register (VPTESTMB),
// adds 4 where it is set (a masked VPADDB). The 16 scales of four rows are unpacked at once, a row a 128-bit
// lane: byte j the low nibble of scales[j] (j < 8) or the high nibble of
// scales[j−8], or'ed with bits 2(j/4)..2(j/4)+1 of scales[8+j%4] moved to
// bits 4–5 (a dword rotate, VPROLVD), minus 32.
//
// The loop takes two super-blocks a step (and the last of an odd count
// alone): their eight sumis are reduced together and their float steps
// run on eight lanes, the first super-block's added before the second's,
// as the Go code adds them.
//
// Registers in the super-block loop (both kernels):
//	Z0–Z7     the rows' packed bits (Q6_K: ql, qh; Q3_K: qs, hmask)
//	Z8–Z15    unpacked u and the rows' dword sums (and scratch)
//	Z16       the first super-block's partly reduced sums (ZMERGE)
//	Z17       shift counts (Q3_K: Z30 its hmask bits)
//	Z18       the activation chunk, Z19 its −c·Σa lanes
//	Z20–Z23   VPERMW indices of chunks 0–3, Z24–Z25 the scale words of
//	          rows 0,1 and 2,3
//	Z26–Z27   the scaled word sums of rows 0,1 and 2,3
//	Z28–Z30   byte constants, X31 the four rows' float32 accumulators
//	R8–R11 the rows, DI the activation, DX its scales, CX the count of
//	pairs; AX, BX, R12 scratch.

// zkperm<>+64k: the VPERMW indices of chunk k: word 8ℓ+m of the result is
// table word 4k+ℓ for m < 4 (the first row's scale of sub-block 4k+ℓ) and
// 16+4k+ℓ above (the second row's).
DATA zkperm<>+0(SB)/8, $0x0000000000000000
DATA zkperm<>+8(SB)/8, $0x0010001000100010
DATA zkperm<>+16(SB)/8, $0x0001000100010001
DATA zkperm<>+24(SB)/8, $0x0011001100110011
DATA zkperm<>+32(SB)/8, $0x0002000200020002
DATA zkperm<>+40(SB)/8, $0x0012001200120012
DATA zkperm<>+48(SB)/8, $0x0003000300030003
DATA zkperm<>+56(SB)/8, $0x0013001300130013
DATA zkperm<>+64(SB)/8, $0x0004000400040004
DATA zkperm<>+72(SB)/8, $0x0014001400140014
DATA zkperm<>+80(SB)/8, $0x0005000500050005
DATA zkperm<>+88(SB)/8, $0x0015001500150015
DATA zkperm<>+96(SB)/8, $0x0006000600060006
DATA zkperm<>+104(SB)/8, $0x0016001600160016
DATA zkperm<>+112(SB)/8, $0x0007000700070007
DATA zkperm<>+120(SB)/8, $0x0017001700170017
DATA zkperm<>+128(SB)/8, $0x0008000800080008
DATA zkperm<>+136(SB)/8, $0x0018001800180018
DATA zkperm<>+144(SB)/8, $0x0009000900090009
DATA zkperm<>+152(SB)/8, $0x0019001900190019
DATA zkperm<>+160(SB)/8, $0x000a000a000a000a
DATA zkperm<>+168(SB)/8, $0x001a001a001a001a
DATA zkperm<>+176(SB)/8, $0x000b000b000b000b
DATA zkperm<>+184(SB)/8, $0x001b001b001b001b
DATA zkperm<>+192(SB)/8, $0x000c000c000c000c
DATA zkperm<>+200(SB)/8, $0x001c001c001c001c
DATA zkperm<>+208(SB)/8, $0x000d000d000d000d
DATA zkperm<>+216(SB)/8, $0x001d001d001d001d
DATA zkperm<>+224(SB)/8, $0x000e000e000e000e
DATA zkperm<>+232(SB)/8, $0x001e001e001e001e
DATA zkperm<>+240(SB)/8, $0x000f000f000f000f
DATA zkperm<>+248(SB)/8, $0x001f001f001f001f
GLOBL zkperm<>(SB), RODATA|NOPTR, $256

// zq6sh<>: Q6_K's qh word shifts, +0 for even chunks (VPSLLVW: 4 in the
// low 256 bits, 2 in the high), +64 for odd ones (VPSRLVW: 0, 2).
DATA zq6sh<>+0(SB)/8, $0x0004000400040004
DATA zq6sh<>+8(SB)/8, $0x0004000400040004
DATA zq6sh<>+16(SB)/8, $0x0004000400040004
DATA zq6sh<>+24(SB)/8, $0x0004000400040004
DATA zq6sh<>+32(SB)/8, $0x0002000200020002
DATA zq6sh<>+40(SB)/8, $0x0002000200020002
DATA zq6sh<>+48(SB)/8, $0x0002000200020002
DATA zq6sh<>+56(SB)/8, $0x0002000200020002
DATA zq6sh<>+64(SB)/8, $0x0000000000000000
DATA zq6sh<>+72(SB)/8, $0x0000000000000000
DATA zq6sh<>+80(SB)/8, $0x0000000000000000
DATA zq6sh<>+88(SB)/8, $0x0000000000000000
DATA zq6sh<>+96(SB)/8, $0x0002000200020002
DATA zq6sh<>+104(SB)/8, $0x0002000200020002
DATA zq6sh<>+112(SB)/8, $0x0002000200020002
DATA zq6sh<>+120(SB)/8, $0x0002000200020002
GLOBL zq6sh<>(SB), RODATA|NOPTR, $128

// zq6hm<>: Q6_K's qh mask, 0x33 bytes in the low 256 bits, 0xCC in the
// high.
DATA zq6hm<>+0(SB)/8, $0x3333333333333333
DATA zq6hm<>+8(SB)/8, $0x3333333333333333
DATA zq6hm<>+16(SB)/8, $0x3333333333333333
DATA zq6hm<>+24(SB)/8, $0x3333333333333333
DATA zq6hm<>+32(SB)/8, $0xcccccccccccccccc
DATA zq6hm<>+40(SB)/8, $0xcccccccccccccccc
DATA zq6hm<>+48(SB)/8, $0xcccccccccccccccc
DATA zq6hm<>+56(SB)/8, $0xcccccccccccccccc
GLOBL zq6hm<>(SB), RODATA|NOPTR, $64

// zq3qs<>: Q3_K's qs word shifts (VPSRLVW), +0 for even chunks (0 in the
// low 256 bits, 2 in the high), +64 for odd ones (4, 6).
DATA zq3qs<>+0(SB)/8, $0x0000000000000000
DATA zq3qs<>+8(SB)/8, $0x0000000000000000
DATA zq3qs<>+16(SB)/8, $0x0000000000000000
DATA zq3qs<>+24(SB)/8, $0x0000000000000000
DATA zq3qs<>+32(SB)/8, $0x0002000200020002
DATA zq3qs<>+40(SB)/8, $0x0002000200020002
DATA zq3qs<>+48(SB)/8, $0x0002000200020002
DATA zq3qs<>+56(SB)/8, $0x0002000200020002
DATA zq3qs<>+64(SB)/8, $0x0004000400040004
DATA zq3qs<>+72(SB)/8, $0x0004000400040004
DATA zq3qs<>+80(SB)/8, $0x0004000400040004
DATA zq3qs<>+88(SB)/8, $0x0004000400040004
DATA zq3qs<>+96(SB)/8, $0x0006000600060006
DATA zq3qs<>+104(SB)/8, $0x0006000600060006
DATA zq3qs<>+112(SB)/8, $0x0006000600060006
DATA zq3qs<>+120(SB)/8, $0x0006000600060006
GLOBL zq3qs<>(SB), RODATA|NOPTR, $128

// zq3hb<>+64k: the hmask bits of chunk k, 2k in the low 256 bits and
// 2k+1 in the high (VPTESTMB).
DATA zq3hb<>+0(SB)/8, $0x0101010101010101
DATA zq3hb<>+8(SB)/8, $0x0101010101010101
DATA zq3hb<>+16(SB)/8, $0x0101010101010101
DATA zq3hb<>+24(SB)/8, $0x0101010101010101
DATA zq3hb<>+32(SB)/8, $0x0202020202020202
DATA zq3hb<>+40(SB)/8, $0x0202020202020202
DATA zq3hb<>+48(SB)/8, $0x0202020202020202
DATA zq3hb<>+56(SB)/8, $0x0202020202020202
DATA zq3hb<>+64(SB)/8, $0x0404040404040404
DATA zq3hb<>+72(SB)/8, $0x0404040404040404
DATA zq3hb<>+80(SB)/8, $0x0404040404040404
DATA zq3hb<>+88(SB)/8, $0x0404040404040404
DATA zq3hb<>+96(SB)/8, $0x0808080808080808
DATA zq3hb<>+104(SB)/8, $0x0808080808080808
DATA zq3hb<>+112(SB)/8, $0x0808080808080808
DATA zq3hb<>+120(SB)/8, $0x0808080808080808
DATA zq3hb<>+128(SB)/8, $0x1010101010101010
DATA zq3hb<>+136(SB)/8, $0x1010101010101010
DATA zq3hb<>+144(SB)/8, $0x1010101010101010
DATA zq3hb<>+152(SB)/8, $0x1010101010101010
DATA zq3hb<>+160(SB)/8, $0x2020202020202020
DATA zq3hb<>+168(SB)/8, $0x2020202020202020
DATA zq3hb<>+176(SB)/8, $0x2020202020202020
DATA zq3hb<>+184(SB)/8, $0x2020202020202020
DATA zq3hb<>+192(SB)/8, $0x4040404040404040
DATA zq3hb<>+200(SB)/8, $0x4040404040404040
DATA zq3hb<>+208(SB)/8, $0x4040404040404040
DATA zq3hb<>+216(SB)/8, $0x4040404040404040
DATA zq3hb<>+224(SB)/8, $0x8080808080808080
DATA zq3hb<>+232(SB)/8, $0x8080808080808080
DATA zq3hb<>+240(SB)/8, $0x8080808080808080
DATA zq3hb<>+248(SB)/8, $0x8080808080808080
GLOBL zq3hb<>(SB), RODATA|NOPTR, $256

// Q3_K's scale unpacking, per 128-bit lane (a row's bytes 94..109): zq3slo
// the VPSHUFB indices of scales[0..7] twice; zq3slsh the word shifts that
// take the high nibbles of the second copy (VPSRLVW: 0 for words 0–3, 4
// for 4–7); zq3shi the VPSHUFB indices of scales[8..11] in every dword;
// zq3srot the dword rotations moving bits 2k..2k+1 of each byte of dword
// k to bits 4–5 (left 4, 2, 0, and 30 for right 2); zq320 the 32
// subtracted from each 6-bit scale; zq330, zq30f the masks.
DATA zq3slo<>+0(SB)/8, $0x0908070605040302
DATA zq3slo<>+8(SB)/8, $0x0908070605040302
DATA zq3slo<>+16(SB)/8, $0x0908070605040302
DATA zq3slo<>+24(SB)/8, $0x0908070605040302
DATA zq3slo<>+32(SB)/8, $0x0908070605040302
DATA zq3slo<>+40(SB)/8, $0x0908070605040302
DATA zq3slo<>+48(SB)/8, $0x0908070605040302
DATA zq3slo<>+56(SB)/8, $0x0908070605040302
GLOBL zq3slo<>(SB), RODATA|NOPTR, $64

DATA zq3slsh<>+0(SB)/8, $0x0000000000000000
DATA zq3slsh<>+8(SB)/8, $0x0004000400040004
DATA zq3slsh<>+16(SB)/8, $0x0000000000000000
DATA zq3slsh<>+24(SB)/8, $0x0004000400040004
DATA zq3slsh<>+32(SB)/8, $0x0000000000000000
DATA zq3slsh<>+40(SB)/8, $0x0004000400040004
DATA zq3slsh<>+48(SB)/8, $0x0000000000000000
DATA zq3slsh<>+56(SB)/8, $0x0004000400040004
GLOBL zq3slsh<>(SB), RODATA|NOPTR, $64

DATA zq3shi<>+0(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+8(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+16(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+24(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+32(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+40(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+48(SB)/8, $0x0d0c0b0a0d0c0b0a
DATA zq3shi<>+56(SB)/8, $0x0d0c0b0a0d0c0b0a
GLOBL zq3shi<>(SB), RODATA|NOPTR, $64

DATA zq3srot<>+0(SB)/8, $0x0000000200000004
DATA zq3srot<>+8(SB)/8, $0x0000001e00000000
DATA zq3srot<>+16(SB)/8, $0x0000000200000004
DATA zq3srot<>+24(SB)/8, $0x0000001e00000000
DATA zq3srot<>+32(SB)/8, $0x0000000200000004
DATA zq3srot<>+40(SB)/8, $0x0000001e00000000
DATA zq3srot<>+48(SB)/8, $0x0000000200000004
DATA zq3srot<>+56(SB)/8, $0x0000001e00000000
GLOBL zq3srot<>(SB), RODATA|NOPTR, $64

DATA zq320<>+0(SB)/8, $0x2020202020202020
DATA zq320<>+8(SB)/8, $0x2020202020202020
DATA zq320<>+16(SB)/8, $0x2020202020202020
DATA zq320<>+24(SB)/8, $0x2020202020202020
DATA zq320<>+32(SB)/8, $0x2020202020202020
DATA zq320<>+40(SB)/8, $0x2020202020202020
DATA zq320<>+48(SB)/8, $0x2020202020202020
DATA zq320<>+56(SB)/8, $0x2020202020202020
GLOBL zq320<>(SB), RODATA|NOPTR, $64

DATA zq330<>+0(SB)/4, $0x30303030
GLOBL zq330<>(SB), RODATA|NOPTR, $4

DATA zq30f<>+0(SB)/4, $0x0f0f0f0f
GLOBL zq30f<>(SB), RODATA|NOPTR, $4

// ZPFD is how far ahead the kernels prefetch each row, as dot_amd64.s's
// PFD (decode streams the weights from DRAM), but into L2 (PREFETCHT2)
// where the AVX2 kernels prefetch into L1 (T0). Measured on the 2-core
// development box (Zen 4), Qwen3-0.6B-shape Q3_K_M decode at 2 threads,
// where these two dots are 60% of the time, tok/s: T0 45–48, T1 62–65,
// T2 63–67 (4096, 8192, 12288 and 16384 ahead alike), none 40–44; the
// AVX2 dots with T2 instead of T0 went 48–49 → 58–62. With T0 the dots
// wait on memory: their time a token was four to five times what the
// same calls take with the weights in cache. On the GPU machine's 16-core
// Xeon host one short run (tg64, 2, 8 and 16 threads, Q3_K_M and Q4_K_M
// mixes) put T0 and T2 within its run-to-run spread (±10%), T0 ahead in
// five of six Q3_K_M pairs: the hint is still to settle per CPU there.
// The same change in the Q4_K dots (kquant_amd64.s, still T0) took the
// Q4_K_M mix's decode on the Zen 4 box from 58 to 67 tok/s at 2 threads.
#define ZPFD 8192

// ZENTER loads the arguments: rows at R8..R11, stride bytes apart; DI the
// activation's qs, DX its scales, CX the blocks; the VPERMW indices.
#define ZENTER \
	MOVQ w+0(FP), R8; \
	MOVQ stride+8(FP), R12; \
	MOVQ qs+16(FP), DI; \
	MOVQ d+24(FP), DX; \
	MOVQ nb+32(FP), CX; \
	LEAQ (R8)(R12*1), R9; \
	LEAQ (R9)(R12*1), R10; \
	LEAQ (R10)(R12*1), R11; \
	VMOVDQU64 zkperm<>+0(SB), Z20; \
	VMOVDQU64 zkperm<>+64(SB), Z21; \
	VMOVDQU64 zkperm<>+128(SB), Z22; \
	VMOVDQU64 zkperm<>+192(SB), Z23; \
	VPXORD Z31, Z31, Z31

#define ZNEXT(bytes) \
	ADDQ $bytes, R8; \
	ADDQ $bytes, R9; \
	ADDQ $bytes, R10; \
	ADDQ $bytes, R11; \
	ADDQ $256, DI; \
	ADDQ $4, DX

// ZCHUNK adds chunk k of the four rows, unpacked in u0..u3, into Z26
// (rows 0, 1) and Z27 (rows 2, 3): the lanes' Σ(u−c)·a in x0..x3 (each
// starting from Z19 = −c·Σa, Z28 holding c in every byte), packed two
// rows to a register and multiplied by the scale words that idx spreads
// from Z24 and Z25. op is VPMADDWD for chunk 0 (which sets Z26, Z27) and
// VPDPWSSD after.
#define ZCHUNK(k, idx, op, u0, u1, u2, u3, x0, x1, x2, x3) \
	VMOVDQU64 (64*k)(DI), Z18; \
	VPXORD Z19, Z19, Z19; \
	VPDPBUSD Z18, Z28, Z19; \
	VPXORD x0, x0, x0; \
	VPSUBD Z19, x0, Z19; \
	VMOVDQA64 Z19, x0; \
	VPDPBUSD Z18, u0, x0; \
	VMOVDQA64 Z19, x1; \
	VPDPBUSD Z18, u1, x1; \
	VMOVDQA64 Z19, x2; \
	VPDPBUSD Z18, u2, x2; \
	VMOVDQA64 Z19, x3; \
	VPDPBUSD Z18, u3, x3; \
	VPACKSSDW x1, x0, x0; \
	VPERMW Z24, idx, x1; \
	op x1, x0, Z26; \
	VPACKSSDW x3, x2, x2; \
	VPERMW Z25, idx, x3; \
	op x3, x2, Z27

// ZMERGE adds the 256-bit halves of Z26 and Z27 into w: lanes [rows 0,1
// low, rows 0,1 high, rows 2,3 low, rows 2,3 high], each lane's dwords
// [r r r' r'] (r, r' = 0, 1 or 2, 3). Clobbers Z0, Z1.
#define ZMERGE(w) \
	VSHUFI64X2 $0x44, Z27, Z26, Z0; \
	VSHUFI64X2 $0xEE, Z27, Z26, Z1; \
	VPADDD Z1, Z0, w

// ZF16 packs the f16 d at off of the four rows into reg (row r in bits
// 16r..16r+15), on the integer side. Clobbers BX.
#define ZF16(off, reg) \
	MOVWLZX off(R8), reg; \
	MOVWLZX off(R9), BX; \
	SHLQ $16, BX; \
	ORQ BX, reg; \
	MOVWLZX off(R10), BX; \
	SHLQ $32, BX; \
	ORQ BX, reg; \
	MOVWLZX off(R11), BX; \
	SHLQ $48, BX; \
	ORQ BX, reg

// ZSTEP reduces Z26 and Z27 to the four rows' sumis (lane r of X1) and
// does the float step, X31 += float32(f16(d) at off(row)·d_a)·float32(sumi),
// lane r for row r: the 128-bit lanes added pairwise, leaving
// [r0 r0 r1 r1 | r2 r2 r3 r3] in Y1, then adjacent dwords.
#define ZSTEP(off) \
	ZMERGE(Z0); \
	VSHUFI64X2 $0x88, Z0, Z0, Z1; \
	VSHUFI64X2 $0xDD, Z0, Z0, Z2; \
	VPADDD Y2, Y1, Y1; \
	VPSRLQ $32, Y1, Y2; \
	VPADDD Y2, Y1, Y1; \
	VPMOVQD Y1, X1; \
	ZF16(off, AX); \
	VMOVQ AX, X2; \
	VCVTPH2PS X2, X2; \
	VBROADCASTSS (DX), X3; \
	VMULPS X3, X2, X2; \
	VCVTDQ2PS X1, X1; \
	VMULPS X1, X2, X2; \
	VADDPS X2, X31, X31

// ZSTEP2 is ZSTEP for two super-blocks at once: the first's sums merged
// (ZMERGE) in Z16, the second's in Z26 and Z27, the rows and DX at the
// second (the first's d at off−bb, its d_a at −4(DX)). Lanes 0–3 of Y1
// get the first's sumis, 4–7 the second's; the float steps run on the
// eight lanes, and the first's are added before the second's.
#define ZSTEP2(off, bb) \
	ZMERGE(Z0); \
	VSHUFI64X2 $0x88, Z0, Z16, Z1; \
	VSHUFI64X2 $0xDD, Z0, Z16, Z2; \
	VPADDD Z2, Z1, Z1; \
	VPSRLQ $32, Z1, Z2; \
	VPADDD Z2, Z1, Z1; \
	VPMOVQD Z1, Y1; \
	ZF16(off-bb, AX); \
	ZF16(off, R12); \
	VMOVQ AX, X2; \
	VPINSRQ $1, R12, X2, X2; \
	VCVTPH2PS X2, Y2; \
	VBROADCASTSS -4(DX), Y3; \
	VBROADCASTSS (DX), Y4; \
	VBLENDPS $0xF0, Y4, Y3, Y3; \
	VMULPS Y3, Y2, Y2; \
	VCVTDQ2PS Y1, Y1; \
	VMULPS Y1, Y2, Y2; \
	VADDPS X2, X31, X31; \
	VEXTRACTF128 $1, Y2, X2; \
	VADDPS X2, X31, X31

#define ZDONE \
	MOVQ out+40(FP), AX; \
	VMOVUPS X31, (AX); \
	VZEROUPPER; \
	RET

// ---- Q6_K (210 bytes: ql[128], qh[64], scales[16], f16 d) ----
//
// Z28 0x20 bytes (c), Z29 the qh mask (0x33 bytes in the low 256 bits,
// 0xCC in the high), Z30 0x0F bytes, Z17 the even chunks' qh shifts
// (zq6sh); Z0–Z3 the rows' ql of the half, Z4–Z7 their masked
// qh; u in Z8–Z11, sums in Z12–Z15.
//
// The qh mask makes one AND serve both chunks of a half: the low half
// keeps bits 0–1 and 4–5 (the even and odd chunks' bits there), the high
// half 2–3 and 6–7. After each chunk's word shift (4 and 2 left; 0 and 2
// right) the wanted pair sits at bits 4–5 of every byte and bits 6–7 are
// cleared bits (the other pair's neighbour, or the next byte's bits 0–1 in
// the high half's right shift); whatever lands in bits 0–3 is replaced by
// the nibble, so VPTERNLOGD (0x0F ? nibble : qh) finishes u.

// Q6VLOAD loads half h of the four rows and masks their qh.
#define Q6VLOAD(h) \
	VMOVDQU64 (64*h)(R8), Z0; \
	VMOVDQU64 (64*h)(R9), Z1; \
	VMOVDQU64 (64*h)(R10), Z2; \
	VMOVDQU64 (64*h)(R11), Z3; \
	VBROADCASTI64X4 (128+32*h)(R8), Z4; \
	VBROADCASTI64X4 (128+32*h)(R9), Z5; \
	VBROADCASTI64X4 (128+32*h)(R10), Z6; \
	VBROADCASTI64X4 (128+32*h)(R11), Z7; \
	VPANDD Z29, Z4, Z4; \
	VPANDD Z29, Z5, Z5; \
	VPANDD Z29, Z6, Z6; \
	VPANDD Z29, Z7, Z7

// Q6VE: u = the even chunk's q of a row (ql low nibbles, qh bits 0–1 in
// the low half and 2–3 in the high moved to bits 4–5). Q6VO: the odd
// chunk's (ql high nibbles, qh bits 4–5 and 6–7); it consumes ql.
#define Q6VE(ql, qh, u) \
	VPSLLVW Z17, qh, u; \
	VPTERNLOGD $0xD8, Z30, ql, u

#define Q6VO(ql, qh, u) \
	VPSRLW $4, ql, ql; \
	VPSRLVW zq6sh<>+64(SB), qh, u; \
	VPTERNLOGD $0xD8, Z30, ql, u

#define Q6VEVEN \
	Q6VE(Z0, Z4, Z8); \
	Q6VE(Z1, Z5, Z9); \
	Q6VE(Z2, Z6, Z10); \
	Q6VE(Z3, Z7, Z11)

#define Q6VODD \
	Q6VO(Z0, Z4, Z8); \
	Q6VO(Z1, Z5, Z9); \
	Q6VO(Z2, Z6, Z10); \
	Q6VO(Z3, Z7, Z11)

#define Q6VCHUNK(k, idx, op) ZCHUNK(k, idx, op, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)

// Q6VSB adds one super-block of the four rows into Z26 and Z27.
#define Q6VSB \
	PREFETCHT2 ZPFD(R8); \
	PREFETCHT2 (ZPFD+64)(R8); \
	PREFETCHT2 (ZPFD+128)(R8); \
	PREFETCHT2 (ZPFD+192)(R8); \
	PREFETCHT2 ZPFD(R9); \
	PREFETCHT2 (ZPFD+64)(R9); \
	PREFETCHT2 (ZPFD+128)(R9); \
	PREFETCHT2 (ZPFD+192)(R9); \
	PREFETCHT2 ZPFD(R10); \
	PREFETCHT2 (ZPFD+64)(R10); \
	PREFETCHT2 (ZPFD+128)(R10); \
	PREFETCHT2 (ZPFD+192)(R10); \
	PREFETCHT2 ZPFD(R11); \
	PREFETCHT2 (ZPFD+64)(R11); \
	PREFETCHT2 (ZPFD+128)(R11); \
	PREFETCHT2 (ZPFD+192)(R11); \
	VMOVDQU32 192(R8), X24; \
	VINSERTI32X4 $1, 192(R9), Y24, Y24; \
	VPMOVSXBW Y24, Z24; \
	VMOVDQU32 192(R10), X25; \
	VINSERTI32X4 $1, 192(R11), Y25, Y25; \
	VPMOVSXBW Y25, Z25; \
	Q6VLOAD(0); \
	Q6VEVEN; \
	Q6VCHUNK(0, Z20, VPMADDWD); \
	Q6VODD; \
	Q6VCHUNK(1, Z21, VPDPWSSD); \
	Q6VLOAD(1); \
	Q6VEVEN; \
	Q6VCHUNK(2, Z22, VPDPWSSD); \
	Q6VODD; \
	Q6VCHUNK(3, Z23, VPDPWSSD)

// ---- Q3_K (110 bytes: hmask[32], qs[64], scales[12], f16 d) ----
//
// Z28 0x04 bytes (c, and the hmask bit's weight), Z29 0x03, K1 the hmask
// bits; Z0–Z3 the rows' qs of the half, Z4–Z7 their hmask; u in Z12–Z15,
// sums in Z8–Z11.

// Q3VSCALES makes Z24 (rows 0, 1) and Z25 (rows 2, 3) the rows' sixteen
// scales as words. The 16 bytes at 94 of each row (the last two qs bytes,
// scales[12], f16 d: all inside the block) go to a 128-bit lane each,
// scales[i] at byte 2+i.
#define Q3VSCALES \
	VMOVDQU32 94(R8), X8; \
	VINSERTI32X4 $1, 94(R9), Z8, Z8; \
	VINSERTI32X4 $2, 94(R10), Z8, Z8; \
	VINSERTI32X4 $3, 94(R11), Z8, Z8; \
	VPSHUFB zq3slo<>(SB), Z8, Z9; \
	VPSRLVW zq3slsh<>(SB), Z9, Z9; \
	VPSHUFB zq3shi<>(SB), Z8, Z8; \
	VPROLVD zq3srot<>(SB), Z8, Z8; \
	VPANDD.BCST zq330<>(SB), Z8, Z8; \
	VPTERNLOGD.BCST $0xD8, zq30f<>(SB), Z9, Z8; \
	VPSUBB zq320<>(SB), Z8, Z8; \
	VPMOVSXBW Y8, Z24; \
	VEXTRACTI64X4 $1, Z8, Y8; \
	VPMOVSXBW Y8, Z25

// Q3VU: u of a chunk of a row (qs, hm: its broadcast qs half and hmask;
// Z17 the chunk's qs shifts, Z30 its hmask bits) into u: the two low bits,
// and 4 added to the bytes whose hmask bit is set (K1).
#define Q3VU(qs, hm, u) \
	VPSRLVW Z17, qs, u; \
	VPANDD Z29, u, u; \
	VPTESTMB Z30, hm, K1; \
	VPADDB Z28, u, K1, u

// Q3VCHUNKU unpacks a chunk of the four rows, its qs shifts at qsh and its
// hmask bits at hb.
#define Q3VCHUNKU(qsh, hb) \
	VMOVDQU64 zq3qs<>+qsh(SB), Z17; \
	VMOVDQU64 zq3hb<>+hb(SB), Z30; \
	Q3VU(Z0, Z4, Z12); \
	Q3VU(Z1, Z5, Z13); \
	Q3VU(Z2, Z6, Z14); \
	Q3VU(Z3, Z7, Z15)

#define Q3VCHUNK(k, idx, op) ZCHUNK(k, idx, op, Z12, Z13, Z14, Z15, Z8, Z9, Z10, Z11)

#define Q3VLOADQS(off) \
	VBROADCASTI64X4 off(R8), Z0; \
	VBROADCASTI64X4 off(R9), Z1; \
	VBROADCASTI64X4 off(R10), Z2; \
	VBROADCASTI64X4 off(R11), Z3

// Q3VSB adds one super-block of the four rows into Z26 and Z27.
#define Q3VSB \
	PREFETCHT2 ZPFD(R8); \
	PREFETCHT2 (ZPFD+64)(R8); \
	PREFETCHT2 ZPFD(R9); \
	PREFETCHT2 (ZPFD+64)(R9); \
	PREFETCHT2 ZPFD(R10); \
	PREFETCHT2 (ZPFD+64)(R10); \
	PREFETCHT2 ZPFD(R11); \
	PREFETCHT2 (ZPFD+64)(R11); \
	Q3VSCALES; \
	VBROADCASTI64X4 (R8), Z4; \
	VBROADCASTI64X4 (R9), Z5; \
	VBROADCASTI64X4 (R10), Z6; \
	VBROADCASTI64X4 (R11), Z7; \
	Q3VLOADQS(32); \
	Q3VCHUNKU(0, 0); \
	Q3VCHUNK(0, Z20, VPMADDWD); \
	Q3VCHUNKU(64, 64); \
	Q3VCHUNK(1, Z21, VPDPWSSD); \
	Q3VLOADQS(64); \
	Q3VCHUNKU(0, 128); \
	Q3VCHUNK(2, Z22, VPDPWSSD); \
	Q3VCHUNKU(64, 192); \
	Q3VCHUNK(3, Z23, VPDPWSSD)

// func dotQ6_Kx4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// nb ≥ 1: pairs of super-blocks, then the last of an odd count (SI).
TEXT ·dotQ6_Kx4VNNI(SB), NOSPLIT, $0-48
	ZENTER
	MOVL $0x20202020, AX
	VPBROADCASTD AX, Z28
	VMOVDQU64 zq6hm<>(SB), Z29
	MOVL $0x0F0F0F0F, AX
	VPBROADCASTD AX, Z30
	VMOVDQU64 zq6sh<>+0(SB), Z17
	MOVQ CX, SI
	SHRQ $1, CX
	JZ   zq6tail

zq6pairs:
	Q6VSB
	ZMERGE(Z16)
	ZNEXT(210)
	Q6VSB
	ZSTEP2(208, 210)
	ZNEXT(210)
	DECQ CX
	JNZ  zq6pairs

zq6tail:
	TESTQ $1, SI
	JZ    zq6done
	Q6VSB
	ZSTEP(208)

zq6done:
	ZDONE

// func dotQ3_Kx4VNNI(w unsafe.Pointer, stride int, qs, d unsafe.Pointer, nb int, out *[4]float32)
//
// nb ≥ 1: pairs of super-blocks, then the last of an odd count (SI).
TEXT ·dotQ3_Kx4VNNI(SB), NOSPLIT, $0-48
	ZENTER
	MOVL $0x04040404, AX
	VPBROADCASTD AX, Z28
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z29
	MOVQ CX, SI
	SHRQ $1, CX
	JZ   zq3tail

zq3pairs:
	Q3VSB
	ZMERGE(Z16)
	ZNEXT(110)
	Q3VSB
	ZSTEP2(108, 110)
	ZNEXT(110)
	DECQ CX
	JNZ  zq3pairs

zq3tail:
	TESTQ $1, SI
	JZ    zq3done
	Q3VSB
	ZSTEP(108)

zq3done:
	ZDONE
