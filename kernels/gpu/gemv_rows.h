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
// unpack16 reads 16 halves from x, 16-byte aligned, as two 16-byte loads.
inline float h_lo(uint u) { return float(as_type<half>(ushort(u & 0xFFFFu))); }
inline float h_hi(uint u) { return float(as_type<half>(ushort(u >> 16))); }
inline void unpack16(device const half* x, thread float* xc) {
    device const uint4* v = (device const uint4*)x;
    uint4 a = v[0], b = v[1];
    xc[0] = h_lo(a.x); xc[1] = h_hi(a.x); xc[2] = h_lo(a.y); xc[3] = h_hi(a.y);
    xc[4] = h_lo(a.z); xc[5] = h_hi(a.z); xc[6] = h_lo(a.w); xc[7] = h_hi(a.w);
    xc[8] = h_lo(b.x); xc[9] = h_hi(b.x); xc[10] = h_lo(b.y); xc[11] = h_hi(b.y);
    xc[12] = h_lo(b.z); xc[13] = h_hi(b.z); xc[14] = h_lo(b.w); xc[15] = h_hi(b.w);
}

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
// block's chunks are the lanes of an aligned group of 2 (Q4_0) or 16 (Q4_K,
// Q6_K), since c0 is the lane plus a multiple of 32 and so is the step;
// they meet on amax by shuffles. q8_quantize packs a lane's 16 values into four words of
// signed bytes and returns their sum; a row's chunk is then four dp4a of its
// nibbles, masked from 32-bit words of its 16 quant bytes (the low
// nibbles or the high: the same bytes of x either way), Q4_0's −8 and
// Q4_K's minimum applied once per chunk through Σq. ncu on the 8B shape's
// gate|up GEMV: 5.8 executed instructions a weight, against ~7 for the
// float path (a row's chunk alone is 2–3 a weight by count; the rest is
// each threadgroup loading, converting and quantizing x). Measured on an H100 (tg128, A/B in one run): Q4_0 0.6B
// 1310 → 1358, 1B 1339 → 1415, 8B 317 → 343 tok/s; Q4_K the 1B Q4_K_M
// mix 978 → 988 (ADR 0024). Tried and kept out:
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
template <int T> inline int q8_quantize(thread const float* xc, thread uint* xq, thread float& dx) {
    float amax = 0.0f;
    for (uint i = 0; i < 16; i++) amax = max(amax, fabs(xc[i]));
    float id;
    if (T == W_Q4_0) {
        amax = max_xor(amax, 1);
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
        dx = float(half(amax / 127.0f));
    } else {
        for (uint m = 1; m < 16; m *= 2) amax = max_xor(amax, m);
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
        dx = amax != 0.0f ? 1.0f / id : 0.0f;
    }
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
// nib_dot16 is nib_dot over 16 quant bytes at a 16-byte-aligned address,
// read in one load.
inline int nib_dot16(device const uchar* q, bool hi, thread const uint* xq) {
    uint4 v = *(device const uint4*)q;
    uint s = hi ? 4 : 0;
    int acc = dot4_i8((v.x >> s) & 0x0F0F0F0Fu, xq[0], 0);
    acc = dot4_i8((v.y >> s) & 0x0F0F0F0Fu, xq[1], acc);
    acc = dot4_i8((v.z >> s) & 0x0F0F0F0Fu, xq[2], acc);
    return dot4_i8((v.w >> s) & 0x0F0F0F0Fu, xq[3], acc);
}
inline float q4_0_dot_i8(device const uchar* row, uint c, thread const uint* xq, int xs, float dx) {
    device const uchar* b = row + (c / 2) * 18; // 18·n bytes: 2-aligned
    int acc = nib_dot((device const ushort*)(b + 2), (c & 1) != 0, xq);
    return ld_half(b) * (dx * small_int_float(acc - 8 * xs));
}
inline float q4_k_dot_i8(device const uchar* row, uint c, thread const uint* xq, int xs, float dx) {
    device const uchar* b = row + (c / 16) * 144;
    uint cb = c % 16, sub = cb / 2;
    float sc, mn;
    scale_min_k4(sub, b + 4, sc, mn);
    int acc = nib_dot16(b + 16 + 32 * (sub / 2) + 16 * (cb & 1), (sub & 1) != 0, xq); // 144·n: 16-aligned
    return dx * (ld_half(b) * sc * small_int_float(acc) - ld_half(b + 2) * mn * small_int_float(xs));
}
// Q6_K's chunk: its low nibbles (the high ones for g ≥ 2) and its two
// top bits, assembled four bytes at a time into values 0..63 that dp4a
// takes as signed; the −32 through Σq, the sub-block's signed scale and d
// once per chunk. x is Q8_K as for Q4_K (the CPU's dotQ6_KGo).
inline float q6_k_dot_i8(device const uchar* row, uint c, thread const uint* xq, int xs, float dx) {
    device const uchar* b = row + (c / 16) * 210;
    uint cb = c % 16, h = cb / 8, g = (cb % 8) / 2, l0 = 16 * (cb & 1);
    // blocks are 210·n bytes and these offsets even: 2-aligned
    device const ushort* ql = (device const ushort*)(b + 64 * h + 32 * (g & 1) + l0);
    device const ushort* qh = (device const ushort*)(b + 128 + 32 * h + l0);
    uint sl = (g / 2) * 4, sh = 2 * g;
    int acc = 0;
    for (uint i = 0; i < 4; i++) {
        uint vl = uint(ql[2 * i]) | (uint(ql[2 * i + 1]) << 16);
        uint vh = uint(qh[2 * i]) | (uint(qh[2 * i + 1]) << 16);
        acc = dot4_i8(((vl >> sl) & 0x0F0F0F0Fu) | (((vh >> sh) & 0x03030303u) << 4), xq[i], acc);
    }
    float sc = float(((device const char*)(b + 192))[8 * h + 2 * g + (cb & 1)]);
    return dx * (ld_half(b + 208) * sc * small_int_float(acc - 32 * xs));
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
inline void gemv_rows(device const uchar* w, device const half* x, device const half* up, uint k,
                      uint row0, uint nrows, uint c0, uint step, thread float* sums) {
    ulong rb = row_bytes<T>(k);
    uint nchunks = (k + 15) / 16;
    for (uint r = 0; r < GEMV_MAX_NR; r++) sums[r] = 0.0f;
    if ((T == W_Q4_0 || T == W_Q4_K || T == W_Q6_K) && int8_dot) {
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
            int xs = q8_quantize<T>(xc, xq, dx);
            if (c < nchunks) {
                for (uint r = 0; r < nr; r++) {
                    device const uchar* row = w + (row0 + min(r, nrows - 1)) * rb;
                    sums[r] += T == W_Q4_0   ? q4_0_dot_i8(row, c, xq, xs, dx)
                               : T == W_Q4_K ? q4_k_dot_i8(row, c, xq, xs, dx)
                                             : q6_k_dot_i8(row, c, xq, xs, dx);
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

#endif // AKUNU_GEMV_ROWS_H
