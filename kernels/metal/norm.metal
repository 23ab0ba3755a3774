// Norms: RMSNorm and LayerNorm per row (and their residual forms), and the
// per-head RMSNorm. Geometry: kernels/geometry.go (normGeometry,
// headNormGeometry). A row norm is one threadgroup of T threads per row:
// thread i sums elements i, i+T, ...; simd_sum, then one float per SIMD
// group (two for LayerNorm) in threadgroup memory. The residual forms first
// store residual + x (rounded to F16) and normalize the stored value.
#include <metal_stdlib>
#include "ShaderTypes.h"
#include "quants.h"
using namespace metal;

constant bool has_bias [[function_constant(0)]];

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

template <bool RES, bool LN>
inline void norm_row(device const half* x, device half* residual, device const float* weight,
                     device const float* bias, device half* out, constant NormParams& p,
                     threadgroup float* tg, uint row, uint tid, uint ntg) {
    if (row >= p.n_rows) return;
    ulong base = ulong(row) * p.stride;
    float s = 0.0f, s2 = 0.0f;
    for (uint i = tid; i < p.dim; i += ntg) {
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
    for (uint i = tid; i < p.dim; i += ntg) {
        float v = float(RES ? residual[base + i] : x[base + i]);
        float o = (v - mean) * inv * weight[i];
        if (LN && has_bias) o += bias[i];
        out[base + i] = half(o);
    }
}

kernel void rmsnorm_f16(device const half* x [[buffer(0)]],
                        device const float* weight [[buffer(1)]],
                        device half* out [[buffer(2)]],
                        constant NormParams& p [[buffer(3)]],
                        threadgroup float* tg [[threadgroup(0)]],
                        uint3 tgpig [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint3 ntg [[threads_per_threadgroup]]) {
    norm_row<false, false>(x, out, weight, weight, out, p, tg, tgpig.x, tid, ntg.x);
}

kernel void residual_rmsnorm_f16(device const half* x [[buffer(0)]],
                                 device half* residual [[buffer(1)]],
                                 device const float* weight [[buffer(2)]],
                                 device half* out [[buffer(3)]],
                                 constant NormParams& p [[buffer(4)]],
                                 threadgroup float* tg [[threadgroup(0)]],
                                 uint3 tgpig [[threadgroup_position_in_grid]],
                                 uint tid [[thread_index_in_threadgroup]],
                                 uint3 ntg [[threads_per_threadgroup]]) {
    norm_row<true, false>(x, residual, weight, weight, out, p, tg, tgpig.x, tid, ntg.x);
}

kernel void layernorm_f16(device const half* x [[buffer(0)]],
                          device const float* weight [[buffer(1)]],
                          device const float* bias [[buffer(2)]],
                          device half* out [[buffer(3)]],
                          constant NormParams& p [[buffer(4)]],
                          threadgroup float* tg [[threadgroup(0)]],
                          uint3 tgpig [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]],
                          uint3 ntg [[threads_per_threadgroup]]) {
    norm_row<false, true>(x, out, weight, bias, out, p, tg, tgpig.x, tid, ntg.x);
}

kernel void residual_layernorm_f16(device const half* x [[buffer(0)]],
                                   device half* residual [[buffer(1)]],
                                   device const float* weight [[buffer(2)]],
                                   device const float* bias [[buffer(3)]],
                                   device half* out [[buffer(4)]],
                                   constant NormParams& p [[buffer(5)]],
                                   threadgroup float* tg [[threadgroup(0)]],
                                   uint3 tgpig [[threadgroup_position_in_grid]],
                                   uint tid [[thread_index_in_threadgroup]],
                                   uint3 ntg [[threads_per_threadgroup]]) {
    norm_row<true, true>(x, residual, weight, bias, out, p, tg, tgpig.x, tid, ntg.x);
}

// head_rmsnorm: one SIMD group per (token, head), 8 per threadgroup, in
// place; lane i takes elements i, i+32, ... and a simd_sum needs no
// threadgroup memory.
kernel void head_rmsnorm_f16(device half* x [[buffer(0)]],
                             device const float* weight [[buffer(1)]],
                             constant NormParams& p [[buffer(2)]],
                             uint3 tgpig [[threadgroup_position_in_grid]],
                             uint sg [[simdgroup_index_in_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]]) {
    uint idx = tgpig.x * 8 + sg;
    if (idx >= p.n_rows * p.n_heads) return;
    device half* h = x + ulong(idx / p.n_heads) * p.stride + (idx % p.n_heads) * p.dim;
    float s2 = 0.0f;
    for (uint i = lane; i < p.dim; i += 32) { float v = float(h[i]); s2 += v * v; }
    float inv = rsqrt(simd_sum(s2) / float(p.dim) + p.eps);
    for (uint i = lane; i < p.dim; i += 32) h[i] = half(float(h[i]) * inv * weight[i]);
}
