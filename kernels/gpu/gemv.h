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
#include "gemv_rows.h"

// gemv_prefetch asks for the weight rows [row0, row0 + nrows) in the L2
// cache, each of the n threads taking every n-th 128-byte line from thread
// t, and then waits for the commands before (grid_wait, prelude_cuda.h):
// no command writes the weights, so on CUDA their reads from memory overlap
// the command before this one. Every threadgroup waits, an idle one too,
// so no command after this one can finish before the ones before it.
template <int T>
inline void gemv_prefetch(device const uchar* w, uint k, uint row0, uint nrows, uint t, uint n) {
    ulong rb = row_bytes<T>(k);
    device const uchar* base = w + row0 * rb;
    for (ulong off = ulong(t) * 128; off < nrows * rb; off += ulong(n) * 128) prefetch_l2(base + off);
    grid_wait();
}

// gemv_standard: standard and wide shapes.
template <int T, bool S>
inline void gemv_standard(device const uchar* w, device const half* x, device const half* up,
                          device half* y, device const float* bias, constant GEMVParams& p,
                          uint tg, uint sg, uint lane) {
    uint row0 = (tg * nsg + sg) * nr;
    uint nrows = row0 < p.n ? min(nr, p.n - row0) : 0;
    gemv_prefetch<T>(w, p.k, row0, nrows, lane, 32);
    if (nrows == 0) return;
    float sums[GEMV_MAX_NR];
    gemv_rows<T, S>(w, x, up, p.k, p.n, row0, nrows, lane, 32, sums);
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
    gemv_prefetch<T>(w, p.k, row0, nrows, 32 * sg + lane, 32 * 4);
    float sums[GEMV_MAX_NR];
    if (nrows > 0) {
        gemv_rows<T, S>(w, x, up, p.k, p.n, row0, nrows, 32 * sg + lane, 32 * 4, sums);
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

// The large-K down projection (K = the FFN length) is launched with N / nr
// threadgroups of 128 threads, about 8 per SM on the shapes we run (4096
// rows of the 8B shape: 1024 threadgroups on an H100's 132 SMs), and
// needed 72 registers: 7 threadgroups a SM, so a second wave of 100 ran
// alone after the first (ncu: 1.11 waves, 27% of DRAM bandwidth). Held to
// 64 registers, all fit at once: decode +3–5% on the 0.6B, 1B and 8B Q4_0
// shapes (against figures from another H100 of the same kind; docs/cuda.md).
//! cuda_launch_bounds gemv_l_silu 128 8
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

// gemv_planar: W in the planar layout (docs/formats.md#planar): every
// block's 16 quant bytes, row after row, then every block's F16 scale, so
// that a row's block is one aligned 16-byte load where the 18-byte blocks
// of the file allow only 2-byte ones. 128 threads in nsg row groups of nr
// rows; a group's 128/nsg lanes take the row's blocks l, l + 128/nsg, ...
// (kernels/geometry.go: planarShape). A lane quantizes its block of x as
// the CPU twin does (Q8_0: q = rne(x·127/amax), the scale amax/127 rounded
// to F16) once for all its rows, loads every row's block before the first
// product, and each row's block is eight dp4a of its nibbles; Q4_0 only
// (planarTypes). Measured on an H100 (weights streamed from memory): the
// 8B shape's gate|up GEMV 33.3 → 25.7 µs, its down projection 22.7 → 15.5
// (docs/cuda.md, ADR 0025).
inline int q8_block32(device const half* x, uint b, thread uint* xq, thread float& dx) {
    float xc[32];
    if (vec_x) {
        unpack16(x + 32 * b, xc);
        unpack16(x + 32 * b + 16, xc + 16);
    } else {
        for (uint i = 0; i < 32; i++) xc[i] = float(x[32 * b + i]);
    }
    float amax = 0.0f;
    for (uint i = 0; i < 32; i++) amax = max(amax, fabs(xc[i]));
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    dx = float(half(amax / 127.0f));
    return q8_pack(xc, id, 8, xq);
}

// q4_0_planar_dot is a row's block: its low nibbles are elements 0..15,
// its high nibbles 16..31.
inline float q4_0_planar_dot(uint4 q, float d, thread const uint* xq, int xs, float dx) {
    int acc = dot4_i8(q.x & 0x0F0F0F0Fu, xq[0], 0);
    acc = dot4_i8(q.y & 0x0F0F0F0Fu, xq[1], acc);
    acc = dot4_i8(q.z & 0x0F0F0F0Fu, xq[2], acc);
    acc = dot4_i8(q.w & 0x0F0F0F0Fu, xq[3], acc);
    acc = dot4_i8((q.x >> 4) & 0x0F0F0F0Fu, xq[4], acc);
    acc = dot4_i8((q.y >> 4) & 0x0F0F0F0Fu, xq[5], acc);
    acc = dot4_i8((q.z >> 4) & 0x0F0F0F0Fu, xq[6], acc);
    acc = dot4_i8((q.w >> 4) & 0x0F0F0F0Fu, xq[7], acc);
    return d * (dx * small_int_float(acc - 8 * xs));
}

// planar_load reads block b of the group's nr rows (a row past the last
// reads the last again, as gemv_rows does).
inline void planar_load(device const uint4* qs, device const half* ds, uint row0, uint nrows, uint nb, uint b,
                        thread uint4* q, thread float* d) {
    for (uint r = 0; r < nr; r++) {
        ulong i = ulong(row0 + min(r, nrows - 1)) * nb + b;
        q[r] = qs[i];
        d[r] = float(ds[i]);
    }
}

// planar_block adds block b's products to the rows' sums: x's block
// quantized once for all of them.
inline void planar_block(device const half* x, uint b, thread const uint4* q, thread const float* d, thread float* sums) {
    uint xq[8];
    float dx;
    int xs = q8_block32(x, b, xq, dx);
    for (uint r = 0; r < nr; r++) sums[r] += q4_0_planar_dot(q[r], d[r], xq, xs, dx);
}

// gemv_planar_body: F is the form, a sum of flags (0: plain).
// FORM_RES (the norm_fold rule's GEMV before a folded residual norm): res
// += the result, rounded as residual_rmsnorm adds them, y = res·norm_w,
// rounded, and each threadgroup's Σres² of its rows to
// partials[threadgroup] (p.parts of them). FORM_NORM (the GEMV after it):
// x is that y, and the product is scaled by 1/sqrt(Σ partials / k + eps),
// each threadgroup adding the p.parts partials (not the residual) while its
// weights stream. FORM_GLU (the _glu form): W's rows are gate and up in
// turn (the repack:<dtype>_planar_pairs layout), and the row group's lanes
// 2i and 2i + 1 meet by a shuffle: y[row/2] = silu(gate)·up, each rounded
// to the activation type first, as the gate|up GEMV and silu_gate would
// store them. nr is even and so is N, so a pair never straddles two groups.
// FORM_PAIRS (the batch programs' planar GEMM of gate|up, W in the
// pairs layout): y is written as the concatenated weight gives it, gate
// rows then up rows, a row's bias at that place.
#define FORM_NORM 1
#define FORM_RES 2
#define FORM_GLU 4
#define FORM_PAIRS 8
// PlanarDims are the body's sizes: a GEMV's parameters, or a planar GEMM's
// (no norm: eps and parts 0).
struct PlanarDims {
    uint n;
    uint k;
    float eps;
    uint parts;
};
inline PlanarDims gemv_dims(constant GEMVParams& p) {
    PlanarDims d = {p.n, p.k, p.eps, p.parts};
    return d;
}
template <int T, int F>
inline void gemv_planar_body(device const uchar* w,
                             device const half* x,
                             device half* res,
                             device const float* norm_w,
                             device float* partials,
                             device half* y,
                             device const float* bias,
                             PlanarDims p,
                             threadgroup float* tgmem,
                             uint3 tgpig,
                             uint sg,
                             uint lane) {
    uint nb = p.k / 32, kt = 128 / nsg, t = 32 * sg + lane;
    uint kl = t % kt, row0 = (tgpig.x * nsg + t / kt) * nr;
    uint nrows = row0 < p.n ? min(nr, p.n - row0) : 0;
    device const uint4* qs = (device const uint4*)w;               // [n][nb] blocks of 16 bytes
    device const half* ds = (device const half*)(w + ulong(p.n) * nb * 16); // [n][nb]
    // With preload (tuning.gemv_preload_max_k), a lane with one block a row
    // (nb <= kt) loads them into registers before waiting, so that its
    // weights arrive while the command before still runs; otherwise the
    // group's rows go into L2 (gemv_prefetch has why). Two paths, so that
    // the loop's registers are not held across the wait.
    bool one = preload && nb <= kt;
    uint4 q[GEMV_MAX_NR];
    float d[GEMV_MAX_NR];
    if (one) {
        if (nrows > 0 && kl < nb) planar_load(qs, ds, row0, nrows, nb, kl, q, d);
    } else {
        device const uchar* qb = (device const uchar*)(qs + ulong(row0) * nb);
        for (ulong off = ulong(kl) * 128; off < ulong(nrows) * nb * 16; off += ulong(kt) * 128) prefetch_l2(qb + off);
    }
    grid_wait();
    float ss = 0.0f; // FORM_NORM: this thread's share of the partials
    if ((F & FORM_NORM) != 0) {
        for (uint i = t; i < p.parts; i += 128) ss += partials[i];
    }
    float sums[GEMV_MAX_NR];
    for (uint r = 0; r < GEMV_MAX_NR; r++) sums[r] = 0.0f;
    if (nrows > 0) {
        if (one) {
            if (kl < nb) planar_block(x, kl, q, d, sums);
        } else {
            for (uint b = kl; b < nb; b += kt) {
                uint4 qb[GEMV_MAX_NR];
                float db[GEMV_MAX_NR];
                planar_load(qs, ds, row0, nrows, nb, b, qb, db);
                planar_block(x, b, qb, db, sums);
            }
        }
    }
    for (uint r = 0; r < nr; r++) {
        float s = simd_sum(sums[r]);
        if (lane == 0) tgmem[sg * nr + r] = s;
    }
    if ((F & FORM_NORM) != 0) {
        ss = simd_sum(ss);
        if (lane == 0) tgmem[4 * nr + sg] = ss; // after the 4 SIMD groups' nr sums each
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint per = kt / 32; // SIMD groups a row group spans
    float sc = 1.0f;    // FORM_NORM: the norm's 1/rms, from the SIMD groups' shares of Σres²
    if ((F & FORM_NORM) != 0) sc = 1.0f / sqrt((tgmem[4 * nr] + tgmem[4 * nr + 1] + tgmem[4 * nr + 2] + tgmem[4 * nr + 3]) / float(p.k) + p.eps);
    if ((F & FORM_GLU) != 0) {
        if (sg % per == 0) { // the whole SIMD group, for the shuffle
            float s = 0.0f;
            if (lane < nrows) {
                for (uint g = 0; g < per; g++) s += tgmem[(sg + g) * nr + lane];
                s *= sc;
                s = float(half(has_bias ? s + bias[row0 + lane] : s));
            }
            float u = shfl_xor(s, 1);
            if (lane < nrows && (lane & 1) == 0) y[(row0 + lane) / 2] = half(silu(s) * u);
        }
        return;
    }
    float hs = 0.0f; // FORM_RES: this lane's new res, squared
    if (sg % per == 0 && lane < nrows) {
        float s = 0.0f;
        for (uint g = 0; g < per; g++) s += tgmem[(sg + g) * nr + lane];
        uint row = row0 + lane;
        if ((F & FORM_PAIRS) != 0) row = (row & 1u) * (p.n / 2) + row / 2;
        s *= sc;
        if (has_bias) s += bias[row];
        if ((F & FORM_RES) != 0) {
            half h = half(float(half(s)) + float(res[row]));
            res[row] = h;
            y[row] = half(float(h) * norm_w[row]);
            hs = float(h) * float(h);
        } else {
            y[row] = half(s);
        }
    }
    if ((F & FORM_RES) != 0) { // the threadgroup's Σres², after the row sums are read
        hs = simd_sum(hs);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lane == 0) tgmem[sg] = hs;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 0 && tgpig.x < p.parts) partials[tgpig.x] = tgmem[0] + tgmem[1] + tgmem[2] + tgmem[3];
    }
}

template <int T>
inline void gemv_planar(device const uchar* w,
                        device const half* x,
                        device half* y,
                        device const float* bias,
                        constant GEMVParams& p,
                        threadgroup float* tgmem,
                        uint3 tgpig,
                        uint sg,
                        uint lane) {
    // res, norm_w and partials unread
    gemv_planar_body<T, 0>(w, x, y, bias, (device float*)bias, y, bias, gemv_dims(p), tgmem, tgpig, sg, lane);
}

// The folded forms (norm_fold) need 155-167 registers, so that streaming
// rows past the preload bound at 8 rows a group (every matrix of the 8B
// shape) ran three threadgroups an SM and the fold made that shape 14%
// slower (495 -> 420 tok/s on an H100); held to four (128 registers)
// there, it decodes faster folded than not (ADR 0029). Bounded in every
// specialization the small shapes decoded 1-5% slower, so preloading ones
// (one wave whatever the registers) and those at 4 rows stay unbounded.
//! cuda_launch_bounds gemv_planar_norm 128 4 unless preload || nr < 8
template <int T>
inline void gemv_planar_norm(device const uchar* w,
                             device const half* x,
                             device const float* partials,
                             device half* y,
                             device const float* bias,
                             constant GEMVParams& p,
                             threadgroup float* tgmem,
                             uint3 tgpig,
                             uint sg,
                             uint lane) {
    gemv_planar_body<T, FORM_NORM>(w, x, y, bias, (device float*)partials, y, bias, gemv_dims(p), tgmem, tgpig, sg, lane);
}

//! cuda_launch_bounds gemv_planar_res 128 4 unless preload || nr < 8
template <int T>
inline void gemv_planar_res(device const uchar* w,
                            device const half* x,
                            device half* res,
                            device const float* norm_w,
                            device half* y,
                            device float* partials,
                            device const float* bias,
                            constant GEMVParams& p,
                            threadgroup float* tgmem,
                            uint3 tgpig,
                            uint sg,
                            uint lane) {
    gemv_planar_body<T, FORM_RES>(w, x, res, norm_w, partials, y, bias, gemv_dims(p), tgmem, tgpig, sg, lane);
}

template <int T>
inline void gemv_planar_glu(device const uchar* w,
                            device const half* x,
                            device half* y,
                            device const float* bias,
                            constant GEMVParams& p,
                            threadgroup float* tgmem,
                            uint3 tgpig,
                            uint sg,
                            uint lane) {
    gemv_planar_body<T, FORM_GLU>(w, x, y, bias, (device float*)bias, y, bias, gemv_dims(p), tgmem, tgpig, sg, lane);
}

//! cuda_launch_bounds gemv_planar_glu_norm 128 4 unless preload || nr < 8
template <int T>
inline void gemv_planar_glu_norm(device const uchar* w,
                                 device const half* x,
                                 device const float* partials,
                                 device half* y,
                                 device const float* bias,
                                 constant GEMVParams& p,
                                 threadgroup float* tgmem,
                                 uint3 tgpig,
                                 uint sg,
                                 uint lane) {
    gemv_planar_body<T, FORM_GLU + FORM_NORM>(w, x, y, bias, (device float*)partials, y, bias, gemv_dims(p), tgmem, tgpig, sg, lane);
}

// gemv_planar_rows (simd_gemm_small_<dtype>_planar): the batch programs'
// products of 2 to 8 rows (batched decode, a speculative verify pass)
// through the decode GEMV's planar layout and body. Threadgroup (r, g)
// runs the planar GEMV's threadgroup g over row r of X, r varying fastest,
// so that a row group's threadgroups for every row run together and read
// the same weight lines: one read from memory, the rest from L2. A row's
// x is quantized to 8 bits as in decode, so each row's products are the
// decode GEMV's bits. The _glu form reads gate|up in the pairs layout
// (the decode program's buffer) and writes Y gate rows then up rows, as
// the concatenated weight gives them (FORM_PAIRS).
template <int T, int F>
inline void gemv_planar_rows(device const uchar* w,
                             device const half* x,
                             device half* y,
                             device const float* bias,
                             constant GEMMParams& p,
                             threadgroup float* tgmem,
                             uint3 tgpig,
                             uint sg,
                             uint lane) {
    uint r = tgpig.x;
    if (r >= p.m) return;
    PlanarDims d = {p.n, p.k, 0.0f, 0u};
    device half* yr = y + ulong(r) * p.ldc;
    uint3 g = tgpig; // the GEMV's threadgroup: the grid's second dimension
    g.x = tgpig.y;
    g.y = 0;
    gemv_planar_body<T, F>(w, x + ulong(r) * p.lda, yr, bias, (device float*)bias, yr, bias, d, tgmem, g, sg, lane);
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
//! entry gemv_q6_k_l = gemv_l<W_Q6_K>
//! entry gemv_q6_k_l_silu = gemv_l_silu<W_Q6_K>
//! entry gemv_q4_0_planar = gemv_planar<W_Q4_0>
//! entry gemv_q4_0_planar_glu = gemv_planar_glu<W_Q4_0>
//! entry gemv_q4_0_planar_norm = gemv_planar_norm<W_Q4_0>
//! entry gemv_q4_0_planar_glu_norm = gemv_planar_glu_norm<W_Q4_0>
//! entry gemv_q4_0_planar_res = gemv_planar_res<W_Q4_0>
//! entry simd_gemm_small_q4_0_planar = gemv_planar_rows<W_Q4_0, 0>
//! entry simd_gemm_small_q4_0_planar_glu = gemv_planar_rows<W_Q4_0, FORM_PAIRS>
//! entry gemv_q6_k_planar = gemv<W_Q6_K_PLANAR>
//! entry gemv_wide_q6_k_planar = gemv_wide<W_Q6_K_PLANAR>
//! entry gemv_q6_k_planar_l = gemv_l<W_Q6_K_PLANAR>
