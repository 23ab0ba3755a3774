// argmax and Gumbel top-k sampling over the vocabulary: a threadgroup of
// 1024 threads per row (kernels/geometry.go: argmaxGeometry, vocabGeometry);
// thread i scans logits i, i+1024, ...; SIMD reductions, then the 32 groups
// meet in threadgroup memory (8 bytes per group).
#include "quants.h"

#define VOCAB_TG 1024

// better reports whether (v, i) beats (bv, bi): larger, or equal and a lower
// index. NaN never beats anything.
inline bool better(float v, uint i, float bv, uint bi) { return v > bv || (v == bv && i < bi); }

// argmax: threadgroup r takes row r of n logits (n_rows of them, 0 meaning
// one) and writes ids[out_slot + r] = the index of its largest logit, the
// lowest among equals, 0 when every logit is -inf or NaN (as runtime/cpu's
// twin). A threadgroup past n_rows returns whole, before any barrier.
inline void argmax(device const half* logits,
                   device uint* ids,
                   constant ArgmaxParams& p,
                   threadgroup float* tg,
                   uint3 tgpig,
                   uint tid,
                   uint sg,
                   uint lane) {
    uint r = tgpig.x;
    if (r >= max(p.n_rows, 1u)) return;
    device const half* row = logits + ulong(r) * p.n;
    float bv = -INFINITY;
    uint bi = 0xFFFFFFFFu;
    if (vec_x) { // 8 logits a load: a threadgroup on one core reads 16 bytes per request, not 2
        device const uint4* v8 = (device const uint4*)row;
        for (uint j = tid; j < p.n / 8; j += VOCAB_TG) {
            uint4 u = v8[j];
            uint w[4];
            w[0] = u.x;
            w[1] = u.y;
            w[2] = u.z;
            w[3] = u.w;
            for (uint e = 0; e < 4; e++) {
                float a = float(as_type<half>(ushort(w[e] & 0xFFFFu))), b = float(as_type<half>(ushort(w[e] >> 16)));
                if (a > bv) { bv = a; bi = 8 * j + 2 * e; } // indices grow: a tie keeps the lower one
                if (b > bv) { bv = b; bi = 8 * j + 2 * e + 1; }
            }
        }
    } else {
        for (uint i = tid; i < p.n; i += VOCAB_TG) {
            float v = float(row[i]);
            if (v > bv) { bv = v; bi = i; } // i grows: a tie keeps the lower index
        }
    }
    for (ushort d = 16; d > 0; d /= 2) {
        float ov = simd_shuffle_down(bv, d);
        uint oi = simd_shuffle_down(bi, d);
        if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    threadgroup uint* tgi = (threadgroup uint*)(tg + 32);
    if (lane == 0) { tg[sg] = bv; tgi[sg] = bi; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        bv = tg[lane];
        bi = tgi[lane];
        for (ushort d = 16; d > 0; d /= 2) {
            float ov = simd_shuffle_down(bv, d);
            uint oi = simd_shuffle_down(bi, d);
            if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
        }
        if (lane == 0) ids[p.out_slot + r] = bi == 0xFFFFFFFFu ? 0 : bi;
    }
}

// ---- gumbel_topk: runtime/cpu/sample.go is the definition; this is its
// twin. The noise is the same counter-based RNG bit for bit up to the last
// step: u_i is exact (integer hashing), -ln(-ln(u)) is computed with
// precise::log in float where the CPU uses float64 (an ulp apart at most).

inline uint fmix32(uint h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
inline float gumbel_noise(uint key, uint i) {
    uint h = fmix32(key ^ i);
    float u = (float(h >> 8) + 0.5f) / 16777216.0f; // exact: 24 bits
    return -precise::log(-precise::log(u));
}

// upper_mid is the upper middle of [lo, hi], (lo + hi + 1) / 2, without
// the overflow of hi - lo + 1 when the range is all of uint: that wrapped
// to 0, mid stayed lo, and the bisection never ended (found when the
// kernel first ran on a GPU, on CUDA).
inline uint upper_mid(uint lo, uint hi) { return uint((ulong(lo) + ulong(hi) + 1) / 2); }

// order maps a float to a uint with the same order (for bisection on the
// threshold); -inf and NaN never are candidates.
inline uint order(float v) {
    uint b = as_type<uint>(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// tg_sum2 sums (a, b) over the threadgroup; every thread gets the totals.
inline float2 tg_sum2(float a, float b, threadgroup float* tg, uint sg, uint lane) {
    a = simd_sum(a);
    b = simd_sum(b);
    threadgroup_barrier(mem_flags::mem_threadgroup); // tg may still be read
    if (lane == 0) { tg[sg] = a; tg[32 + sg] = b; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float2 r;
    r.x = 0.0f;
    r.y = 0.0f;
    for (uint g = 0; g < 32; g++) { r.x += tg[g]; r.y += tg[32 + g]; }
    return r;
}

inline float tg_max(float v, threadgroup float* tg, uint sg, uint lane) {
    v = simd_max(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane == 0) tg[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = tg[0];
    for (uint g = 1; g < 32; g++) m = max(m, tg[g]);
    return m;
}

inline bool candidate(float l) { return !isnan(l) && l != -INFINITY; }

// A candidate's rank key: larger logits first, lower indices first among
// equals. keep(l, i) is "ranks at or above (tv, ti)".
inline bool ranks_above(float l, uint i, uint tv, uint ti) {
    uint o = order(l);
    return o > tv || (o == tv && i <= ti);
}

// The filter keeps the candidates ranking at or above a cut (tv, ti),
// found by bisection: first on the value (32 steps over its order key),
// then among the equal values on the index, so ties break to the lower
// index exactly as the CPU's sort does. pred(count, mass) says whether a cut
// keeps enough.
inline void gumbel_topk(device half* logits,
                        constant SamplingParams& p,
                        threadgroup float* tg,
                        uint tid,
                        uint sg,
                        uint lane) {
    if (!(p.temperature > 0.0f)) return; // greedy: argmax reads the logits as they are
    uint v = p.vocab;
    // 1. the maximum and the candidate count.
    float m = -INFINITY, cnt = 0.0f;
    for (uint i = tid; i < v; i += VOCAB_TG) {
        float l = float(logits[i]);
        if (candidate(l)) { m = max(m, l); cnt += 1.0f; }
    }
    m = tg_max(m, tg, sg, lane);
    float n = tg_sum2(cnt, 0.0f, tg, sg, lane).x;
    if (n == 0.0f) return;
    // 2a. top-k: the cut keeping exactly top_k candidates.
    uint cutv = 0, cuti = 0xFFFFFFFFu; // keeps every candidate
    if (p.top_k > 0 && float(p.top_k) < n) {
        // the largest order key tv with count(order ≥ tv) ≥ top_k
        uint lo = 0, hi = 0xFFFFFFFFu;
        while (lo < hi) {
            uint mid = upper_mid(lo, hi), c = 0;
            for (uint i = tid; i < v; i += VOCAB_TG) {
                float l = float(logits[i]);
                c += candidate(l) && order(l) >= mid;
            }
            if (tg_sum2(float(c), 0.0f, tg, sg, lane).x >= float(p.top_k)) lo = mid; else hi = mid - 1;
        }
        cutv = lo;
        // among the values equal to cutv, the lowest index ti with
        // count(ranks_above(., ., cutv, ti)) ≥ top_k
        uint ilo = 0, ihi = v - 1;
        while (ilo < ihi) {
            uint mid = ilo + (ihi - ilo) / 2, c = 0;
            for (uint i = tid; i < v; i += VOCAB_TG) {
                float l = float(logits[i]);
                c += candidate(l) && ranks_above(l, i, cutv, mid);
            }
            if (tg_sum2(float(c), 0.0f, tg, sg, lane).x >= float(p.top_k)) ihi = mid; else ilo = mid + 1;
        }
        cuti = ilo;
    }
    // 2b. top-p over the top-k survivors: the shortest prefix, by rank,
    // whose probability mass reaches top_p · z.
    if (p.top_p < 1.0f && p.top_p > 0.0f) {
        float z = 0.0f;
        for (uint i = tid; i < v; i += VOCAB_TG) {
            float l = float(logits[i]);
            if (candidate(l) && ranks_above(l, i, cutv, cuti)) z += exp(l - m);
        }
        float need = p.top_p * tg_sum2(z, 0.0f, tg, sg, lane).x;
        // the largest order key tv whose mass(order ≥ tv) reaches need
        uint lo = cutv, hi = 0xFFFFFFFFu;
        while (lo < hi) {
            uint mid = upper_mid(lo, hi);
            float s = 0.0f;
            for (uint i = tid; i < v; i += VOCAB_TG) {
                float l = float(logits[i]);
                if (candidate(l) && ranks_above(l, i, cutv, cuti) && order(l) >= mid) s += exp(l - m);
            }
            if (tg_sum2(s, 0.0f, tg, sg, lane).x >= need) lo = mid; else hi = mid - 1;
        }
        uint tv = lo;
        uint ilo = 0, ihi = tv == cutv ? cuti : v - 1;
        while (ilo < ihi) {
            uint mid = ilo + (ihi - ilo) / 2;
            float s = 0.0f;
            for (uint i = tid; i < v; i += VOCAB_TG) {
                float l = float(logits[i]);
                if (candidate(l) && ranks_above(l, i, cutv, cuti) && ranks_above(l, i, tv, mid)) s += exp(l - m);
            }
            if (tg_sum2(s, 0.0f, tg, sg, lane).x >= need) ihi = mid; else ilo = mid + 1;
        }
        cutv = tv;
        cuti = ilo;
    }
    // 3. write every logit: kept ones tempered and noised, the rest -inf.
    // min-p (relative to the top token's p = 1) is a per-token test.
    uint key = fmix32(fmix32(p.seed ^ 0x9E3779B9u) + p.position);
    float invT = 1.0f / p.temperature;
    threadgroup_barrier(mem_flags::mem_device);
    for (uint i = tid; i < v; i += VOCAB_TG) {
        float l = float(logits[i]);
        bool keep = candidate(l) && ranks_above(l, i, cutv, cuti);
        if (keep && p.min_p > 0.0f) keep = exp(l - m) >= p.min_p;
        logits[i] = half(keep ? (l - m) * invT + gumbel_noise(key, i) : -INFINITY);
    }
}

//! entry argmax_f16 = argmax
//! entry gumbel_topk_f16 = gumbel_topk
