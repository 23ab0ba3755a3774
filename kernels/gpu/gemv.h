// GEMV kernels (decode): y[N] = W[N×K] · x[K] (+ bias), W in any weight
// type, x and y F16, accumulation in float. Geometry: kernels/geometry.go
// (gemvGeometry); the split reaches the kernel as the constants nr and nsg.
//
// Standard and wide: SIMD group g of threadgroup t owns rows
// [(t·nsg + g)·nr, +nr). Its 32 lanes stride over the row's 16-element
// chunks (lane l takes chunks l, l+32, ...): a lane loads its chunk of x
// once and applies it to all nr rows, so x is read once per SIMD group
// rather than once per row, and a simd_sum per row ends the dot product.
// The wide form is the same code with nsg = 8 (256 threads per group).
//
// Large-K (_l): the 4 SIMD groups of a threadgroup share its nr rows; lane l
// of group g takes chunks 32g + l, 32g + l + 128, ... Each group's partial
// sums meet in threadgroup memory (4 × nr floats) and group 0 adds them.
//
// _silu: x is silu(gate)·up, computed as each chunk is loaded, so the down
// projection reads gate and up directly and no silu_gate dispatch runs.
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

// Q4_0 without shifts: a ushort u of qs holds the nibbles of two bytes at
// bits 0, 4, 8 and 12, so (u & 0x000F), (u & 0x00F0), (u & 0x0F00) and
// (u & 0xF000) are the nibbles times 1, 16, 256 and 4096. Pre-scaling x by
// 1, 1/16, 1/256 and 1/4096 once per chunk cancels the factors, so each row
// costs a mask and a multiply-add per element; the -8 offset is applied
// once per chunk as -8·Σx.
inline void q4_0_prescale(uint c, thread float* xc, thread float& xsum) {
    float lo = (c & 1) ? 1.0f / 16.0f : 1.0f, hi = (c & 1) ? 1.0f / 4096.0f : 1.0f / 256.0f;
    xsum = 0.0f;
    for (uint i = 0; i < 16; i += 2) {
        xsum += xc[i] + xc[i + 1];
        xc[i] *= lo;
        xc[i + 1] *= hi;
    }
}
inline float q4_0_dot(device const uchar* row, uint c, thread const float* xs, float xsum) {
    device const uchar* b = row + (c / 2) * 18;
    device const ushort* q = (device const ushort*)(b + 2); // blocks and rows are 18·n bytes: 2-aligned
    ushort mlo = (c & 1) ? 0x00F0 : 0x000F, mhi = (c & 1) ? 0xF000 : 0x0F00;
    float acc = 0.0f;
    for (uint i = 0; i < 8; i++) {
        ushort u = q[i];
        acc += xs[2 * i] * float(u & mlo) + xs[2 * i + 1] * float(u & mhi);
    }
    return ld_half(b) * (acc - 8.0f * xsum);
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
    for (uint c = c0; c < nchunks; c += step) {
        float xc[16];
        load_x16<S>(x, up, c, k, xc);
        if (T == W_Q4_0) {
            float xsum;
            q4_0_prescale(c, xc, xsum);
            for (uint r = 0; r < nr; r++) {
                sums[r] += q4_0_dot(w + (row0 + min(r, nrows - 1)) * rb, c, xc, xsum);
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

// gemv_standard: standard and wide shapes.
template <int T, bool S>
inline void gemv_standard(device const uchar* w, device const half* x, device const half* up,
                          device half* y, device const float* bias, constant GEMVParams& p,
                          uint tg, uint sg, uint lane) {
    uint row0 = (tg * nsg + sg) * nr;
    if (row0 >= p.n) return;
    uint nrows = min(nr, p.n - row0);
    float sums[GEMV_MAX_NR];
    gemv_rows<T, S>(w, x, up, p.k, row0, nrows, lane, 32, sums);
    for (uint r = 0; r < nr; r++) {
        float s = simd_sum(sums[r]);
        if (lane == 0 && r < nrows) y[row0 + r] = half(has_bias ? s + bias[row0 + r] : s);
    }
}

// gemv_large_k: 4 SIMD groups share nr rows; partials in tgmem[4][nr].
template <int T, bool S>
inline void gemv_large_k(device const uchar* w, device const half* x, device const half* up,
                         device half* y, device const float* bias, constant GEMVParams& p,
                         threadgroup float* tgmem, uint tg, uint sg, uint lane) {
    uint row0 = tg * nr;
    uint nrows = row0 < p.n ? min(nr, p.n - row0) : 0;
    float sums[GEMV_MAX_NR];
    if (nrows > 0) {
        gemv_rows<T, S>(w, x, up, p.k, row0, nrows, 32 * sg + lane, 32 * 4, sums);
    } else {
        for (uint r = 0; r < GEMV_MAX_NR; r++) sums[r] = 0.0f;
    }
    for (uint r = 0; r < nr; r++) {
        float s = simd_sum(sums[r]);
        if (lane == 0) tgmem[sg * nr + r] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0 && lane < nrows) {
        float s = tgmem[lane] + tgmem[nr + lane] + tgmem[2 * nr + lane] + tgmem[3 * nr + lane];
        y[row0 + lane] = half(has_bias ? s + bias[row0 + lane] : s);
    }
}

template <int T>
inline void gemv(device const uchar* w,
                 device const half* x,
                 device half* y,
                 device const float* bias,
                 constant GEMVParams& p,
                 uint3 tgpig,
                 uint sg,
                 uint lane) {
    gemv_standard<T, false>(w, x, x, y, bias, p, tgpig.x, sg, lane);
}

template <int T>
inline void gemv_silu(device const uchar* w,
                      device const half* gate,
                      device const half* up,
                      device half* y,
                      device const float* bias,
                      constant GEMVParams& p,
                      uint3 tgpig,
                      uint sg,
                      uint lane) {
    gemv_standard<T, true>(w, gate, up, y, bias, p, tgpig.x, sg, lane);
}

template <int T>
inline void gemv_l(device const uchar* w,
                   device const half* x,
                   device half* y,
                   device const float* bias,
                   constant GEMVParams& p,
                   threadgroup float* tgmem,
                   uint3 tgpig,
                   uint sg,
                   uint lane) {
    gemv_large_k<T, false>(w, x, x, y, bias, p, tgmem, tgpig.x, sg, lane);
}

template <int T>
inline void gemv_l_silu(device const uchar* w,
                        device const half* gate,
                        device const half* up,
                        device half* y,
                        device const float* bias,
                        constant GEMVParams& p,
                        threadgroup float* tgmem,
                        uint3 tgpig,
                        uint sg,
                        uint lane) {
    gemv_large_k<T, true>(w, gate, up, y, bias, p, tgmem, tgpig.x, sg, lane);
}

// The wide shape runs the standard code with nsg = 8; a function of its
// own because one specialization cannot be instantiated under two names.
template <int T>
inline void gemv_wide(device const uchar* w,
                      device const half* x,
                      device half* y,
                      device const float* bias,
                      constant GEMVParams& p,
                      uint3 tgpig,
                      uint sg,
                      uint lane) {
    gemv_standard<T, false>(w, x, x, y, bias, p, tgpig.x, sg, lane);
}

//! entry gemv_f32 = gemv<W_F32>
//! entry gemv_wide_f32 = gemv_wide<W_F32>
//! entry gemv_f32_silu = gemv_silu<W_F32>
//! entry gemv_f16 = gemv<W_F16>
//! entry gemv_wide_f16 = gemv_wide<W_F16>
//! entry gemv_f16_silu = gemv_silu<W_F16>
//! entry gemv_bf16 = gemv<W_BF16>
//! entry gemv_wide_bf16 = gemv_wide<W_BF16>
//! entry gemv_bf16_silu = gemv_silu<W_BF16>
//! entry gemv_q4_0 = gemv<W_Q4_0>
//! entry gemv_wide_q4_0 = gemv_wide<W_Q4_0>
//! entry gemv_q4_0_silu = gemv_silu<W_Q4_0>
//! entry gemv_q4_1 = gemv<W_Q4_1>
//! entry gemv_wide_q4_1 = gemv_wide<W_Q4_1>
//! entry gemv_q4_1_silu = gemv_silu<W_Q4_1>
//! entry gemv_q5_0 = gemv<W_Q5_0>
//! entry gemv_wide_q5_0 = gemv_wide<W_Q5_0>
//! entry gemv_q5_0_silu = gemv_silu<W_Q5_0>
//! entry gemv_q5_1 = gemv<W_Q5_1>
//! entry gemv_wide_q5_1 = gemv_wide<W_Q5_1>
//! entry gemv_q5_1_silu = gemv_silu<W_Q5_1>
//! entry gemv_q8_0 = gemv<W_Q8_0>
//! entry gemv_wide_q8_0 = gemv_wide<W_Q8_0>
//! entry gemv_q8_0_silu = gemv_silu<W_Q8_0>
//! entry gemv_q4_k = gemv<W_Q4_K>
//! entry gemv_wide_q4_k = gemv_wide<W_Q4_K>
//! entry gemv_q4_k_silu = gemv_silu<W_Q4_K>
//! entry gemv_q5_k = gemv<W_Q5_K>
//! entry gemv_wide_q5_k = gemv_wide<W_Q5_K>
//! entry gemv_q5_k_silu = gemv_silu<W_Q5_K>
//! entry gemv_q6_k = gemv<W_Q6_K>
//! entry gemv_wide_q6_k = gemv_wide<W_Q6_K>
//! entry gemv_q6_k_silu = gemv_silu<W_Q6_K>
//! entry gemv_q4_0_l = gemv_l<W_Q4_0>
//! entry gemv_q4_0_l_silu = gemv_l_silu<W_Q4_0>
//! entry gemv_q4_1_l = gemv_l<W_Q4_1>
//! entry gemv_q4_1_l_silu = gemv_l_silu<W_Q4_1>
//! entry gemv_q4_k_l = gemv_l<W_Q4_K>
//! entry gemv_q4_k_l_silu = gemv_l_silu<W_Q4_K>
//! entry gemv_q2_k = gemv<W_Q2_K>
//! entry gemv_wide_q2_k = gemv_wide<W_Q2_K>
//! entry gemv_q2_k_silu = gemv_silu<W_Q2_K>
//! entry gemv_q3_k = gemv<W_Q3_K>
//! entry gemv_wide_q3_k = gemv_wide<W_Q3_K>
//! entry gemv_q3_k_silu = gemv_silu<W_Q3_K>
//! entry gemv_iq4_nl = gemv<W_IQ4_NL>
//! entry gemv_wide_iq4_nl = gemv_wide<W_IQ4_NL>
//! entry gemv_iq4_nl_silu = gemv_silu<W_IQ4_NL>
//! entry gemv_iq4_xs = gemv<W_IQ4_XS>
//! entry gemv_wide_iq4_xs = gemv_wide<W_IQ4_XS>
//! entry gemv_iq4_xs_silu = gemv_silu<W_IQ4_XS>
//! entry gemv_iq4_nl_l = gemv_l<W_IQ4_NL>
//! entry gemv_iq4_nl_l_silu = gemv_l_silu<W_IQ4_NL>
//! entry gemv_iq4_xs_l = gemv_l<W_IQ4_XS>
//! entry gemv_iq4_xs_l_silu = gemv_l_silu<W_IQ4_XS>
