// Norms: RMSNorm and LayerNorm per row (and their residual forms), and the
// per-head RMSNorm. Geometry: kernels/geometry.go (normGeometry,
// headNormGeometry). A row norm is one threadgroup of T threads per row:
// thread i sums elements i, i+T, ...; simd_sum, then one float per SIMD
// group (two for LayerNorm) in threadgroup memory. The residual forms first
// store residual + x (rounded to F16) and normalize the stored value.
#include "quants.h"


// tg_sum reduces v over the threadgroup through tg (one float per group, region off of
// nsg floats); every thread gets the total.
inline float tg_sum(float v, threadgroup float* tg, uint off, uint tid, uint ntg) {
    uint sg = tid / 32, lane = tid % 32, nsg = (ntg + 31) / 32;
    v = simd_sum(v);
    if (lane == 0) tg[off * nsg + sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint g = 0; g < nsg; g++) s += tg[off * nsg + g];
    return s;
}

// A thread keeps up to NORM_HELD of its elements (and their weights) in
// registers, so the output pass reads nothing from memory again; a longer
// row's further elements are read again from memory.
#define NORM_HELD 4

// norm_row reads the weights (and bias) before grid_wait: no command writes
// them, so on CUDA those reads overlap the command before (prelude_cuda.h).
template <bool RES, bool LN>
inline void norm_row(device const half* x, device half* residual, device const float* weight,
                     device const float* bias, device half* out, constant NormParams& p,
                     threadgroup float* tg, uint row, uint tid, uint ntg) {
    float wv[NORM_HELD], bv[NORM_HELD], xv[NORM_HELD];
    for (uint j = 0; j < NORM_HELD; j++) {
        uint i = tid + j * ntg;
        wv[j] = i < p.dim ? weight[i] : 0.0f;
        bv[j] = LN && has_bias && i < p.dim ? bias[i] : 0.0f;
    }
    grid_wait();
    if (row >= p.n_rows) return;
    ulong base = ulong(row) * p.stride;
    float s = 0.0f, s2 = 0.0f;
    for (uint j = 0; j < NORM_HELD; j++) { // unrolled: xv stays in registers
        uint i = tid + j * ntg;
        float v = 0.0f;
        if (i < p.dim) {
            v = float(x[base + i]);
            if (RES) {
                half r = half(float(residual[base + i]) + v);
                residual[base + i] = r;
                v = float(r);
            }
        }
        xv[j] = v;
        s += v;
        s2 += v * v;
    }
    for (uint i = tid + NORM_HELD * ntg; i < p.dim; i += ntg) {
        float v = float(x[base + i]);
        if (RES) {
            half r = half(float(residual[base + i]) + v);
            residual[base + i] = r;
            v = float(r);
        }
        s += v;
        s2 += v * v;
    }
    float mean = 0.0f, inv;
    if (LN) {
        mean = tg_sum(s, tg, 0, tid, ntg) / float(p.dim);
        float var = tg_sum(s2, tg, 1, tid, ntg) / float(p.dim) - mean * mean;
        inv = rsqrt(max(var, 0.0f) + p.eps);
    } else {
        inv = rsqrt(tg_sum(s2, tg, 0, tid, ntg) / float(p.dim) + p.eps);
    }
    for (uint j = 0; j < NORM_HELD; j++) {
        uint i = tid + j * ntg;
        float o = (xv[j] - mean) * inv * wv[j];
        if (LN && has_bias) o += bv[j];
        if (i < p.dim) out[base + i] = half(o);
    }
    for (uint i = tid + NORM_HELD * ntg; i < p.dim; i += ntg) {
        float v = float(RES ? residual[base + i] : x[base + i]);
        float o = (v - mean) * inv * weight[i];
        if (LN && has_bias) o += bias[i];
        out[base + i] = half(o);
    }
}

inline void rmsnorm(device const half* x,
                    device const float* weight,
                    device half* out,
                    constant NormParams& p,
                    threadgroup float* tg,
                    uint3 tgpig,
                    uint tid,
                    uint3 ntg) {
    norm_row<false, false>(x, out, weight, weight, out, p, tg, tgpig.x, tid, ntg.x);
}

inline void residual_rmsnorm(device const half* x,
                             device half* residual,
                             device const float* weight,
                             device half* out,
                             constant NormParams& p,
                             threadgroup float* tg,
                             uint3 tgpig,
                             uint tid,
                             uint3 ntg) {
    norm_row<true, false>(x, residual, weight, weight, out, p, tg, tgpig.x, tid, ntg.x);
}

inline void layernorm(device const half* x,
                      device const float* weight,
                      device const float* bias,
                      device half* out,
                      constant NormParams& p,
                      threadgroup float* tg,
                      uint3 tgpig,
                      uint tid,
                      uint3 ntg) {
    norm_row<false, true>(x, out, weight, bias, out, p, tg, tgpig.x, tid, ntg.x);
}

inline void residual_layernorm(device const half* x,
                               device half* residual,
                               device const float* weight,
                               device const float* bias,
                               device half* out,
                               constant NormParams& p,
                               threadgroup float* tg,
                               uint3 tgpig,
                               uint tid,
                               uint3 ntg) {
    norm_row<true, true>(x, residual, weight, bias, out, p, tg, tgpig.x, tid, ntg.x);
}

// head_rmsnorm: one SIMD group per (token, head), 8 per threadgroup, in
// place; lane i takes elements i, i+32, ... and a simd_sum needs no
// threadgroup memory.
inline void head_rmsnorm(device half* x,
                         device const float* weight,
                         constant NormParams& p,
                         uint3 tgpig,
                         uint sg,
                         uint lane) {
    uint idx = tgpig.x * 8 + sg;
    if (idx >= p.n_rows * p.n_heads) return;
    device half* h = x + ulong(idx / p.n_heads) * p.stride + (idx % p.n_heads) * p.dim;
    float s2 = 0.0f;
    for (uint i = lane; i < p.dim; i += 32) { float v = float(h[i]); s2 += v * v; }
    float inv = rsqrt(simd_sum(s2) / float(p.dim) + p.eps);
    for (uint i = lane; i < p.dim; i += 32) h[i] = half(float(h[i]) * inv * weight[i]);
}

//! entry rmsnorm_f16 = rmsnorm
//! entry residual_rmsnorm_f16 = residual_rmsnorm
//! entry layernorm_f16 = layernorm
//! entry residual_layernorm_f16 = residual_layernorm
//! entry head_rmsnorm_f16 = head_rmsnorm
