// gemv_rows.h: the GEMV's inner loop, shared by the GEMV kernels (gemv.h)
// and the expert-indexed GEMV (gemv_id.h): a SIMD group's dot products of
// nr rows of W with x, chunk by chunk (kernels/geometry.go: gemvGeometry
// has why). A file that includes it declares the constants nr (rows per
// SIMD group) and vec_x (x loads in 16-byte vectors).
#ifndef AKUNU_GEMV_ROWS_H
#define AKUNU_GEMV_ROWS_H
#include "quants.h"

// At most this many rows per SIMD group (gemvShapes: 4).
#define GEMV_MAX_NR 8

// load_x16 loads chunk c of x (silu(gate)·up with S) as float; elements at
// or beyond k are 0.
template <bool S>
inline void load_x16(device const half* x, device const half* up, uint c, uint k, thread float* xc) {
    if (vec_x) { // the compiler bound x (and up) 16-byte aligned, and k % 16 == 0
        unpack16(x + 16 * c, xc);
        if (S) {
            float u[16];
            unpack16(up + 16 * c, u);
            for (uint i = 0; i < 16; i++) xc[i] = silu(xc[i]) * u[i];
        }
        return;
    }
    for (uint i = 0; i < 16; i++) {
        uint e = 16 * c + i;
        float v = 0.0f;
        if (e < k) v = S ? silu(float(x[e])) * float(up[e]) : float(x[e]);
        xc[i] = v;
    }
}

// Q4_0 and Q4_K without shifts: a ushort u of a chunk's 16 quant bytes
// holds the nibbles of two bytes at bits 0, 4, 8 and 12, so (u & 0x000F),
// (u & 0x00F0), (u & 0x0F00) and (u & 0xF000) are the nibbles times 1, 16,
// 256 and 4096. Pre-scaling x by 1, 1/16, 1/256 and 1/4096 once per chunk
// (hi: the chunk takes the high nibbles) cancels the factors, so each row
// costs a mask and a multiply-add per element; Q4_0's -8 offset and Q4_K's
// minimum are applied once per chunk through Σx.
inline void q4_prescale(bool hi, thread float* xc, thread float& xsum) {
    float lo = hi ? 1.0f / 16.0f : 1.0f, up = hi ? 1.0f / 4096.0f : 1.0f / 256.0f;
    xsum = 0.0f;
    for (uint i = 0; i < 16; i += 2) {
        xsum += xc[i] + xc[i + 1];
        xc[i] *= lo;
        xc[i + 1] *= up;
    }
}
inline float q4_nibbles(device const ushort* q, bool hi, thread const float* xs) {
    ushort mlo = hi ? 0x00F0 : 0x000F, mhi = hi ? 0xF000 : 0x0F00;
    float acc = 0.0f;
    for (uint i = 0; i < 8; i++) {
        uint u = q[i];
        acc += xs[2 * i] * small_float(u & mlo) + xs[2 * i + 1] * small_float(u & mhi);
    }
    return acc;
}
// Chunk c of a Q4_0 row: block c/2, the high nibbles for odd c.
inline float q4_0_dot(device const uchar* row, uint c, thread const float* xs, float xsum) {
    device const uchar* b = row + (c / 2) * 18;
    // blocks and rows are 18·n bytes: 2-aligned
    return ld_half(b) * (q4_nibbles((device const ushort*)(b + 2), (c & 1) != 0, xs) - 8.0f * xsum);
}
// Chunk c of a Q4_K row (dequant16<W_Q4_K> has the layout): sub-block
// sub = (c % 16) / 2 with its scale and minimum, the high nibbles for odd
// sub, so the same nibble half for every row of a chunk.
inline float q4_k_dot(device const uchar* row, uint c, thread const float* xs, float xsum) {
    device const uchar* b = row + (c / 16) * 144;
    uint cb = c % 16, sub = cb / 2;
    float sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    device const ushort* q = (device const ushort*)(b + 16 + 32 * (sub / 2) + 16 * (cb & 1)); // 144·n: 16-aligned
    return ld_half(b) * sc * q4_nibbles(q, (sub & 1) != 0, xs) - ld_half(b + 2) * mn * xsum;
}

// Q4_0, Q4_K and Q6_K with 8-bit x, where the GPU has a four-way 8-bit
// dot (int8_dot, the preludes). x is quantized as the CPU backend
// quantizes it for the same weights (runtime/cpu quant.go), so that the two
// agree to the order of float additions: for Q4_0 per 32-element block as
// Q8_0 (q = rne(x·(127/amax)), the product rounded first; the scale
// amax/127 rounded to F16), for Q4_K and Q6_K per 256 as Q8_K (iscale =
// 127/amax, q = rne(iscale·x), d = 1/iscale: Q8_K's sign taken from the
// largest element flips q and d together, and so changes no product). A
// block's part of x is spread over the lanes of an aligned group (2 lanes
// of 16 elements for Q4_0, 8 of 32 for Q4_K, 4 of 64 for Q6_K), since c0
// is the lane plus a multiple of 32 and so is the step; they meet on amax
// by shuffles. q8_pack packs a lane's values into words of signed bytes
// and returns their sum; a row's part is then dp4a of its quants, masked
// from 32-bit words, Q4_0's −8, Q4_K's minimum and Q6_K's −32 applied
// through Σq. ncu on the 8B shape's
// gate|up GEMV: 5.8 executed instructions a weight, against ~7 for the
// float path (a row's chunk alone is 2–3 a weight by count; the rest is
// each threadgroup loading, converting and quantizing x). Measured on an H100 (tg128, A/B in one run): Q4_0 0.6B
// 1310 → 1358, 1B 1339 → 1415, 8B 317 → 343 tok/s; Q4_K the 1B Q4_K_M
// mix 978 → 988 (ADR 0024), and with a lane a Q4_K block's 16 quant bytes
// and a quarter of a Q6_K block (q4_k_pair_i8, q6_k_quad_i8) 1163 → 1261–
// 1266 (ADR 0026). Tried and kept out:
// the quants read as four aligned words and a halfword realigned by byte
// permutes, in place of eight halfword loads (1307, 1395, 340: slower),
// and eight rows per SIMD group (mixed).
// q8_pack packs n·4 values of x, scaled by id and rounded to nearest even,
// into n words of signed bytes (xq) and returns their sum.
inline int q8_pack(thread const float* xc, float id, uint n, thread uint* xq) {
    int s = 0;
    for (uint i = 0; i < n; i++) {
        uint b[4];
        for (uint j = 0; j < 4; j++) b[j] = as_type<uint>(mul_rn(xc[4 * i + j], id) + 12582912.0f);
        xq[i] = pack_low_bytes(b[0], b[1], b[2], b[3]);
        s = dot4_i8(xq[i], 0x01010101u, s);
    }
    return s;
}
// q8_k_scale: Q8_K's factor id for a block whose largest magnitude is
// amax, and the scale it returns (1/id).
inline float q8_k_scale(float amax, thread float& id) {
    id = amax != 0.0f ? 127.0f / amax : 0.0f;
    return amax != 0.0f ? 1.0f / id : 0.0f;
}
inline int q8_quantize(thread const float* xc, thread uint* xq, thread float& dx) {
    float amax = 0.0f;
    for (uint i = 0; i < 16; i++) amax = max(amax, fabs(xc[i]));
    amax = max_xor(amax, 1);
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    dx = float(half(amax / 127.0f));
    return q8_pack(xc, id, 4, xq);
}
// nib_dot: the dot product of the 16 nibbles at q (the high ones with hi)
// with the 16 bytes of xq.
inline int nib_dot(device const ushort* q, bool hi, thread const uint* xq) {
    int acc = 0;
    for (uint i = 0; i < 4; i++) {
        uint v = uint(q[2 * i]) | (uint(q[2 * i + 1]) << 16);
        acc = dot4_i8(hi ? (v >> 4) & 0x0F0F0F0Fu : v & 0x0F0F0F0Fu, xq[i], acc);
    }
    return acc;
}
inline float q4_0_dot_i8(device const uchar* row, uint c, thread const uint* xq, int xs, float dx) {
    device const uchar* b = row + (c / 2) * 18; // 18·n bytes: 2-aligned
    int acc = nib_dot((device const ushort*)(b + 2), (c & 1) != 0, xq);
    return ld_half(b) * (dx * small_int_float(acc - 8 * xs));
}
// Q4_K with 8-bit x by quant run: lane u of a block (8 a block) takes
// its 16 quant bytes at 16 + 16u, one aligned load a row, and both their
// nibbles: the low ones are elements 64(u/2) + 16(u&1) + [0, 16) of
// sub-block u & ~1, the high ones the same plus 32, of the next sub-block.
// The block's first 16 bytes (d, dmin and the 12 scale bytes) are one load
// a row as well, decoded in registers. Against a lane a 16-element chunk
// (two lanes loading the same quant bytes, and the scales byte by byte), a
// row's 32 weights cost one quant load instead of two and one header load
// instead of six. xq holds the two chunks' bytes (the low nibbles' x, then
// the high ones'), xs0 and xs1 their sums.
inline uint byte_at(uint w, uint i) { return (w >> (8 * i)) & 0xFFu; }
inline float q4_k_pair_i8(device const uchar* blk, uint u, thread const uint* xq, int xs0, int xs1, float dx) {
    uint4 hd = *(device const uint4*)blk;              // d, dmin, scales[0..11]: 144·n, 16-aligned
    uint4 v = *(device const uint4*)(blk + 16 + 16 * u);
    uint i = (u / 2) * 2 % 4, hiS = u >= 4;             // sub-blocks s0 = u & ~1 and s1 = s0 + 1; i = s0 & 3
    uint y0 = byte_at(hd.y, i), z0 = byte_at(hd.z, i), w0 = byte_at(hd.w, i);
    uint y1 = byte_at(hd.y, i + 1), z1 = byte_at(hd.z, i + 1), w1 = byte_at(hd.w, i + 1);
    uint sc0 = hiS ? (w0 & 0xFu) | ((y0 >> 6) << 4) : y0 & 63u;
    uint mn0 = hiS ? (w0 >> 4) | ((z0 >> 6) << 4) : z0 & 63u;
    uint sc1 = hiS ? (w1 & 0xFu) | ((y1 >> 6) << 4) : y1 & 63u;
    uint mn1 = hiS ? (w1 >> 4) | ((z1 >> 6) << 4) : z1 & 63u;
    int a0 = dot4_i8(v.x & 0x0F0F0F0Fu, xq[0], 0);
    a0 = dot4_i8(v.y & 0x0F0F0F0Fu, xq[1], a0);
    a0 = dot4_i8(v.z & 0x0F0F0F0Fu, xq[2], a0);
    a0 = dot4_i8(v.w & 0x0F0F0F0Fu, xq[3], a0);
    int a1 = dot4_i8((v.x >> 4) & 0x0F0F0F0Fu, xq[4], 0);
    a1 = dot4_i8((v.y >> 4) & 0x0F0F0F0Fu, xq[5], a1);
    a1 = dot4_i8((v.z >> 4) & 0x0F0F0F0Fu, xq[6], a1);
    a1 = dot4_i8((v.w >> 4) & 0x0F0F0F0Fu, xq[7], a1);
    float d = h_lo(hd.x), dmin = h_hi(hd.x);
    int qd = int(sc0) * a0 + int(sc1) * a1, qm = int(mn0) * xs0 + int(mn1) * xs1;
    return dx * (d * float(qd) - dmin * float(qm));
}

// Q6_K with 8-bit x by quarter block: lane v of a block (4 a block) takes
// quant bytes l0 + [0, 16) (l0 = 16(v&1)) of half h = v/2 and all four
// 16-element chunks they make: ql's low nibbles at 64h + l0 with qh's bits
// 0-1 (chunk g = 0), ql's at 64h + 32 + l0 with bits 2-3 (g = 1), the high
// nibbles of the two with bits 4-5 and 6-7 (g = 2, 3); chunk g is elements
// 128h + 32g + l0 + [0, 16) with scale 8h + 2g + (v&1). The values 0..63
// are assembled four bytes at a time, dp4a takes them as signed, the −32
// goes through Σq. Against a lane a chunk, a row's 64 weights cost 24
// two-byte loads instead of 64 (blocks of 210 bytes are only 2-aligned).
// x is Q8_K as for Q4_K (the CPU's dotQ6_KGo); xq holds chunks g = 0..3.
inline uint ld_w32(device const ushort* q, uint i) { return uint(q[2 * i]) | (uint(q[2 * i + 1]) << 16); }
inline uint4 ld_run16(device const ushort* q) { // 16 bytes at a 2-aligned address
    uint4 v;
    v.x = ld_w32(q, 0); v.y = ld_w32(q, 1); v.z = ld_w32(q, 2); v.w = ld_w32(q, 3);
    return v;
}
// q6_k_quad_dot: a quarter block's dot with x from its three 16-byte runs
// (a: ql at 64h + l0, chunks 0 and 2; b: ql at 64h + 32 + l0, chunks 1
// and 3; h: qh at 32h + l0), its four scale bytes at sc (two apart) and d.
inline float q6_k_quad_dot(uint4 a, uint4 b, uint4 h, device const char* sc, float d, thread const uint* xq,
                           thread const int* xs, float dx) {
    uint av[4], bv[4], hv[4];
    av[0] = a.x; av[1] = a.y; av[2] = a.z; av[3] = a.w;
    bv[0] = b.x; bv[1] = b.y; bv[2] = b.z; bv[3] = b.w;
    hv[0] = h.x; hv[1] = h.y; hv[2] = h.z; hv[3] = h.w;
    int a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (uint i = 0; i < 4; i++) {
        uint va = av[i], vb = bv[i], vh = hv[i];
        a0 = dot4_i8((va & 0x0F0F0F0Fu) | ((vh & 0x03030303u) << 4), xq[i], a0);
        a1 = dot4_i8((vb & 0x0F0F0F0Fu) | (((vh >> 2) & 0x03030303u) << 4), xq[4 + i], a1);
        a2 = dot4_i8(((va >> 4) & 0x0F0F0F0Fu) | (((vh >> 4) & 0x03030303u) << 4), xq[8 + i], a2);
        a3 = dot4_i8(((vb >> 4) & 0x0F0F0F0Fu) | (((vh >> 6) & 0x03030303u) << 4), xq[12 + i], a3);
    }
    int s = int(sc[0]) * (a0 - 32 * xs[0]) + int(sc[2]) * (a1 - 32 * xs[1]) + int(sc[4]) * (a2 - 32 * xs[2]) +
            int(sc[6]) * (a3 - 32 * xs[3]);
    return dx * (d * float(s));
}
inline float q6_k_quad_i8(device const uchar* blk, uint v, thread const uint* xq, thread const int* xs, float dx) {
    uint h = v / 2, l0 = 16 * (v & 1);
    // 210·n and even offsets: 2-aligned
    return q6_k_quad_dot(ld_run16((device const ushort*)(blk + 64 * h + l0)), ld_run16((device const ushort*)(blk + 64 * h + 32 + l0)),
                         ld_run16((device const ushort*)(blk + 128 + 32 * h + l0)), (device const char*)(blk + 192 + 8 * h + (v & 1)),
                         ld_half(blk + 208), xq, xs, dx);
}
// q6_k_planar_quad_i8 is q6_k_quad_i8 for a block of the planar layout's
// quant plane (208 bytes, 16-aligned: three aligned loads), d given.
inline float q6_k_planar_quad_i8(device const uchar* blk, float d, uint v, thread const uint* xq, thread const int* xs, float dx) {
    uint h = v / 2, l0 = 16 * (v & 1);
    return q6_k_quad_dot(*(device const uint4*)(blk + 64 * h + l0), *(device const uint4*)(blk + 64 * h + 32 + l0),
                         *(device const uint4*)(blk + 128 + 32 * h + l0), (device const char*)(blk + 192 + 8 * h + (v & 1)), d, xq,
                         xs, dx);
}

// q6_k_quad_x quantizes the lane's 64 elements of x for quarter block q
// (chunks c, c + 2, c + 4, c + 6; zeros where !in) as Q8_K over the
// block's four lanes, which meet on amax: xq the four chunks' bytes, xs
// their sums, dx the scale. With vec_x and no SiLU, x stays in halves (32
// registers, not 64) until packed; the largest magnitude is the largest
// of the halves' bits less the sign, as half to float keeps order.
template <bool S>
inline void q6_k_quad_x(device const half* x, device const half* up, uint k, bool in, uint c, thread uint* xq,
                        thread int* xs, thread float& dx) {
    float id;
    if (vec_x && !S) {
        uint xh[32], mb = 0;
        for (uint j = 0; j < 8; j++) {
            uint4 a;
            if (in) {
                a = ((device const uint4*)(x + 16 * (c + 2 * (j / 2))))[j % 2];
            } else {
                a.x = a.y = a.z = a.w = 0;
            }
            xh[4 * j] = a.x; xh[4 * j + 1] = a.y; xh[4 * j + 2] = a.z; xh[4 * j + 3] = a.w;
        }
        for (uint j = 0; j < 32; j++) mb = max(mb, max(xh[j] & 0x7FFFu, (xh[j] >> 16) & 0x7FFFu));
        dx = q8_k_scale(max_xor(max_xor(h_lo(mb), 1), 2), id);
        for (uint g = 0; g < 4; g++) {
            float xc[16];
            for (uint j = 0; j < 8; j++) {
                xc[2 * j] = h_lo(xh[8 * g + j]);
                xc[2 * j + 1] = h_hi(xh[8 * g + j]);
            }
            xs[g] = q8_pack(xc, id, 4, xq + 4 * g);
        }
        return;
    }
    float xc[64];
    for (uint g = 0; g < 4; g++) {
        if (in) {
            load_x16<S>(x, up, c + 2 * g, k, xc + 16 * g);
        } else {
            for (uint i = 0; i < 16; i++) xc[16 * g + i] = 0.0f;
        }
    }
    float amax = 0.0f;
    for (uint i = 0; i < 64; i++) amax = max(amax, fabs(xc[i]));
    dx = q8_k_scale(max_xor(max_xor(amax, 1), 2), id);
    for (uint g = 0; g < 4; g++) xs[g] = q8_pack(xc + 16 * g, id, 4, xq + 4 * g);
}

// q6_k_rows adds Q6_K rows' dot products with 8-bit x by quarter block
// (k/64 of them a row, 4 a block, whose lanes, an aligned group, meet on
// its amax) into sums: from the file's 210-byte blocks (q6_k_quad_i8,
// rows rb bytes apart) or with P from the planar layout's quant plane
// (208-byte blocks, three aligned loads: q6_k_planar_quad_i8) and its
// scale plane after n rows. Every lane runs the loop as often as the
// others; one past the last quarter quantizes zeros and reads nothing.
template <bool S, bool P>
inline void q6_k_rows(device const uchar* w, device const half* x, device const half* up, uint k, uint n, ulong rb, uint row0,
                      uint nrows, uint c0, uint step, thread float* sums) {
    device const half* ds = (device const half*)(w + ulong(n) * rb); // P: the scale plane
    uint nb = k / 256, nq = k / 64, lane = c0 % 32;
    for (uint uw = c0 - lane; uw < nq; uw += step) {
        uint q = uw + lane, v = q % 4, c = (q / 4) * 16 + 8 * (v / 2) + (v & 1);
        uint xq[16];
        int xs[4];
        float dx;
        q6_k_quad_x<S>(x, up, k, q < nq, c, xq, xs, dx);
        if (q < nq) {
            for (uint r = 0; r < nr; r++) {
                ulong row = row0 + min(r, nrows - 1);
                sums[r] += P ? q6_k_planar_quad_i8(w + row * rb + (q / 4) * 208, float(ds[row * nb + q / 4]), v, xq, xs, dx)
                             : q6_k_quad_i8(w + row * rb + (q / 4) * 210, v, xq, xs, dx);
            }
        }
    }
}

// gemv_rows accumulates, for rows [row0, row0 + nrows) of W, the dot
// products of the chunks c0, c0 + step, ... with x into sums (per lane;
// the caller reduces across lanes; nrows ≥ 1). Every loop over rows runs
// to the constant nr, so that the loops unroll and sums stays in registers
// (AKUNU_CUDA_PROFILE=1 shows 0 bytes of local memory for every GEMV); a
// row past the last reads the last row again instead of testing r < nrows,
// so that no load is behind a branch and every row's loads can issue
// before the first row's arithmetic waits on them (decode 3–4% faster on
// an H200); the callers write only rows < nrows.
template <int T, bool S>
inline void gemv_rows(device const uchar* w, device const half* x, device const half* up, uint k, uint n,
                      uint row0, uint nrows, uint c0, uint step, thread float* sums) {
    ulong rb = row_bytes<T>(k);
    uint nchunks = (k + 15) / 16;
    for (uint r = 0; r < GEMV_MAX_NR; r++) sums[r] = 0.0f;
    if (T == W_Q4_K && int8_dot) {
        // By quant run (q4_k_pair_i8): k/32 of them a row, 8 a block; the
        // 8 lanes of a block (an aligned group, as c0 % 32 is the lane and
        // the step a multiple of 32) meet on its amax.
        uint nq = k / 32, lane = c0 % 32;
        for (uint uw = c0 - lane; uw < nq; uw += step) {
            uint q = uw + lane, u = q % 8, c = (q / 8) * 16 + (u / 2) * 4 + (u & 1);
            float xa[16], xb[16];
            if (q < nq) {
                load_x16<S>(x, up, c, k, xa);
                load_x16<S>(x, up, c + 2, k, xb);
            } else {
                for (uint i = 0; i < 16; i++) xa[i] = xb[i] = 0.0f;
            }
            float amax = 0.0f;
            for (uint i = 0; i < 16; i++) amax = max(amax, max(fabs(xa[i]), fabs(xb[i])));
            for (uint m = 1; m < 8; m *= 2) amax = max_xor(amax, m);
            float id, dx = q8_k_scale(amax, id);
            uint xq[8];
            int xs0 = q8_pack(xa, id, 4, xq), xs1 = q8_pack(xb, id, 4, xq + 4);
            if (q < nq) {
                for (uint r = 0; r < nr; r++) {
                    device const uchar* blk = w + (row0 + min(r, nrows - 1)) * rb + (q / 8) * 144;
                    sums[r] += q4_k_pair_i8(blk, u, xq, xs0, xs1, dx);
                }
            }
        }
        return;
    }
    if (T == W_Q6_K && int8_dot) {
        q6_k_rows<S, false>(w, x, up, k, n, rb, row0, nrows, c0, step, sums);
        return;
    }
    if (T == W_Q4_0 && int8_dot) {
        // Every lane of the SIMD group runs this loop as often as the
        // others (the shuffles in q8_quantize need every lane of a block);
        // a lane past the last chunk quantizes zeros and reads nothing.
        uint lane = c0 % 32;
        for (uint cw = c0 - lane; cw < nchunks; cw += step) {
            uint c = cw + lane;
            float xc[16];
            if (c < nchunks) {
                load_x16<S>(x, up, c, k, xc);
            } else {
                for (uint i = 0; i < 16; i++) xc[i] = 0.0f;
            }
            uint xq[4];
            float dx;
            int xs = q8_quantize(xc, xq, dx);
            if (c < nchunks) {
                for (uint r = 0; r < nr; r++) {
                    device const uchar* row = w + (row0 + min(r, nrows - 1)) * rb;
                    sums[r] += q4_0_dot_i8(row, c, xq, xs, dx);
                }
            }
        }
        return;
    }
    for (uint c = c0; c < nchunks; c += step) {
        float xc[16];
        load_x16<S>(x, up, c, k, xc);
        if (T == W_Q4_0) {
            float xsum;
            q4_prescale((c & 1) != 0, xc, xsum);
            for (uint r = 0; r < nr; r++) {
                sums[r] += q4_0_dot(w + (row0 + min(r, nrows - 1)) * rb, c, xc, xsum);
            }
        } else if (T == W_Q4_K) {
            float xsum;
            q4_prescale(((c >> 1) & 1) != 0, xc, xsum);
            for (uint r = 0; r < nr; r++) {
                sums[r] += q4_k_dot(w + (row0 + min(r, nrows - 1)) * rb, c, xc, xsum);
            }
        } else {
            for (uint r = 0; r < nr; r++) {
                float wc[16];
                dequant16<T>(w + (row0 + min(r, nrows - 1)) * rb, c, k, wc);
                float acc = 0.0f;
                for (uint i = 0; i < 16; i++) acc += wc[i] * xc[i];
                sums[r] += acc;
            }
        }
    }
}

// Q6_K in the planar layout: the quarter blocks of the Q6_K branch above
// (q6_k_rows), from the quant plane and the scale plane.
template <>
inline void gemv_rows<W_Q6_K_PLANAR, false>(device const uchar* w, device const half* x, device const half* up, uint k, uint n,
                                            uint row0, uint nrows, uint c0, uint step, thread float* sums) {
    for (uint r = 0; r < GEMV_MAX_NR; r++) sums[r] = 0.0f;
    q6_k_rows<false, true>(w, x, up, k, n, row_bytes<W_Q6_K_PLANAR>(k), row0, nrows, c0, step, sums);
}

#endif // AKUNU_GEMV_ROWS_H
