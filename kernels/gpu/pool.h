// pool: the embedding of each input of a batch (kernels/geometry.go:
// poolGeometry). Threadgroup j owns output j, the rows [ranges[2j],
// ranges[2j+1]) of x; thread i owns columns i, i+256, ...: it pools each of
// its columns (the mean sums the rows in row order, in float, then divides
// by their count: the CPU twin's order, runtime/cpu/pooling.go), writes it
// to out, and with l2_normalize rescales what it wrote by the inverse L2 norm
// of the whole vector, reduced by simd_sum and one float per SIMD group in
// threadgroup memory. Only the thread that wrote a column reads it back, so
// out needs no barrier between the two passes.
#include "bounds.h"

#define POOL_TG 256

// The pooling constant's values: llama.cpp's llama_pooling_type.
enum PoolMode { POOL_MEAN = 1, POOL_CLS = 2, POOL_LAST = 3 };

inline void pool(device const half* x,
                 device const uint* ranges,
                 device float* out,
                 constant PoolParams& p,
                 threadgroup float* tg,
                 uint3 tgpig,
                 uint tid,
                 uint sg,
                 uint lane) {
    uint j = tgpig.x;
    if (j >= p.n_rows) return; // the whole threadgroup, before any barrier
    device float* o = out + ulong(j) * p.dim;
    uint start = ranges[2 * j], end = ranges[2 * j + 1];
    // An empty range, or one whose last row reaches past x's bound length
    // (bounds.h), pools nothing: the ranges are host data the kernel must
    // not trust, and the CPU twin writes zeros for them too.
    if (end <= start || ulong(end - 1) * p.a_stride + p.dim > bound_bytes(p, 0) / 2) {
        for (uint c = tid; c < p.dim; c += POOL_TG) o[c] = 0.0f;
        return;
    }
    uint first = pooling == POOL_LAST ? end - 1 : start;
    uint last = pooling == POOL_MEAN ? end : first + 1;
    float s2 = 0.0f;
    for (uint c = tid; c < p.dim; c += POOL_TG) {
        float v = 0.0f;
        for (uint r = first; r < last; r++) v += float(x[ulong(r) * p.a_stride + c]);
        if (pooling == POOL_MEAN) v /= float(end - start);
        o[c] = v;
        s2 += v * v;
    }
    if (!l2_normalize) return;
    s2 = simd_sum(s2);
    if (lane == 0) tg[sg] = s2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint g = 0; g < POOL_TG / 32; g++) s += tg[g];
    float inv = s > 0.0f ? precise::rsqrt(s) : 0.0f;
    for (uint c = tid; c < p.dim; c += POOL_TG) o[c] *= inv;
}

//! entry pool_f16 = pool
