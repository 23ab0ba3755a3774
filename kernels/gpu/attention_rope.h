// flash_attention_decode_rope_*: the parallel decode attention
// (attention_decode.h) with the rotation of its q and k in it, so that no
// rope_qkv_write command runs before it in decode (kernels/geometry.go:
// attnDecodeRoPEGeometry). Threadgroup (h, s) RMS-normalizes (_norm) and
// rotates query head h into threadgroup memory, each value rounded to half
// as rope_qkv_write stores q_out. The threadgroups whose split holds the
// token's position do the same for kv head h / (n_heads / n_kv_heads),
// write it and v into the cache at that position, and then read their keys
// as the other splits do; the heads of one GQA group write the same bytes.
// The rest is flash_attention_decode_parallel's, partials for
// flash_attention_decode_reduce_f16.
#include "attention_split.h"
#include "rope_math.h"

// rope_head_tg normalizes (NORM) and rotates one head src (head_dim
// elements, the rotation's pairs on threads 0 .. rope_dim/2 - 1 of ntg,
// each with its pair's cos and sin and norm weights w0, w1) into dst in
// threadgroup memory, as rope_kv computes it; red holds the SIMD groups'
// sums of squares. It ends with a barrier, so dst is complete and red free
// again when it returns.
template <bool NEOX, bool NORM>
inline void rope_head_tg(device const half* src, device const float* nw, float2 cs, float w0, float w1, uint rope_dim,
                         float eps, threadgroup float* dst, threadgroup float* red, uint tid, uint ntg) {
    float inv = 1.0f;
    if (NORM) {
        float s2 = 0.0f;
        for (uint i = tid; i < head_dim; i += ntg) {
            float e = float(src[i]);
            s2 += e * e;
        }
        s2 = simd_sum(s2);
        if (tid % 32 == 0) red[tid / 32] = s2;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        s2 = 0.0f;
        for (uint g = 0; g < ntg / 32; g++) s2 += red[g];
        inv = rsqrt(s2 / float(head_dim) + eps);
    }
    if (tid < rope_dim / 2) {
        uint2 ix = pair_index<NEOX>(tid, rope_dim);
        float x0 = float(src[ix.x]), x1 = float(src[ix.y]);
        if (NORM) {
            x0 *= inv * w0;
            x1 *= inv * w1;
        }
        dst[ix.x] = float(half(x0 * cs.x - x1 * cs.y));
        dst[ix.y] = float(half(x0 * cs.y + x1 * cs.x));
    }
    for (uint i = rope_dim + tid; i < head_dim; i += ntg) { // past rope_dim: through (normalized with NORM)
        float e = float(src[i]);
        dst[i] = float(half(NORM ? e * inv * nw[i] : e));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

template <bool NEOX, bool NORM>
inline void decode_rope(device const half* q, device const half* k, device const half* v, device const float* q_norm,
                        device const float* k_norm, device half* k_cache, device half* v_cache, device float* partials,
                        device const float* factors, constant AttentionRoPEParams& p, threadgroup float* tg, uint3 tgpig,
                        uint tid, uint sg, uint lane) {
    const uint G = 4;
    uint h = tgpig.x, kvh = h / (p.n_heads / p.n_kv_heads);
    uint pos = p.position;
    uint2 r = attn_range(pos, p.kv_len, has_window, p.window);
    uint c = (p.kv_len + n_splits - 1) / n_splits;
    r.x = max(r.x, tgpig.y * c);
    r.y = min(r.y, (tgpig.y + 1) * c);
    // Before grid_wait (prelude_cuda.h), what no command writes: the pair's
    // angle (the position is a parameter) and norm weights, so that the
    // pow, cos and sin overlap the command before, as in rope_kv.
    RopeArgs a = {p.rope_dim, p.orig_ctx, p.theta, p.freq_scale, p.attn_factor, p.ext_factor, p.beta_fast, p.beta_slow};
    bool pair = tid < p.rope_dim / 2;
    uint2 ix = pair_index<NEOX>(tid, p.rope_dim);
    float2 cs;
    cs.x = cs.y = 0.0f;
    float qw0 = 1.0f, qw1 = 1.0f, kw0 = 1.0f, kw1 = 1.0f;
    if (pair) {
        cs = rope_cs(a, factors, tid, pos);
        if (NORM) {
            qw0 = q_norm[ix.x];
            qw1 = q_norm[ix.y];
            kw0 = k_norm[ix.x];
            kw1 = k_norm[ix.y];
        }
    }
    // The split's cached keys and values of earlier steps asked into L2, so
    // that the QKV GEMV's time fetches them rather than the keys' loop: a
    // hint only, no value is read before the wait. Heads of 128 only: on an
    // H100 (tg128) the 0.6B shape 1926 -> 2016 tok/s and the 8B 495 -> 507,
    // but the 1B shape (heads of 64) unchanged and its Q4_K_M mix 1339 ->
    // 1303, unexplained (ADR 0029).
    uint hi = min(r.y, pos);
    if (head_dim >= 128 && r.x < hi) {
        device const uchar* kb = (device const uchar*)(k_cache + (ulong(kvh) * p.max_ctx + r.x) * head_dim);
        device const uchar* vb = (device const uchar*)(v_cache + (ulong(kvh) * p.max_ctx + r.x) * head_dim_v);
        ulong kn = ulong(hi - r.x) * head_dim * sizeof(half), vn = ulong(hi - r.x) * head_dim_v * sizeof(half);
        for (ulong off = ulong(tid) * 128; off < kn; off += G * 32 * 128) prefetch_l2(kb + off);
        for (ulong off = ulong(tid) * 128; off < vn; off += G * 32 * 128) prefetch_l2(vb + off);
    }
    grid_wait();
    // threadgroup memory: q's head, k's head, the norm's 4 sums; the
    // merge area reuses it once q is in registers
    threadgroup float* qs = tg;
    threadgroup float* ks = tg + head_dim;
    threadgroup float* red = tg + 2 * head_dim;
    rope_head_tg<NEOX, NORM>(q + h * head_dim, q_norm, cs, qw0, qw1, p.rope_dim, p.eps, qs, red, tid, G * 32);
    if (r.x <= pos && pos < r.y) { // the same for every thread of the threadgroup
        rope_head_tg<NEOX, NORM>(k + kvh * head_dim, k_norm, cs, kw0, kw1, p.rope_dim, p.eps, ks, red, tid, G * 32);
        device half* kd = k_cache + (ulong(kvh) * p.max_ctx + pos) * head_dim;
        device half* vd = v_cache + (ulong(kvh) * p.max_ctx + pos) * head_dim_v;
        device const half* vs = v + kvh * head_dim_v;
        for (uint i = tid; i < head_dim; i += G * 32) kd[i] = half(ks[i]);
        for (uint i = tid; i < head_dim_v; i += G * 32) vd[i] = vs[i];
        threadgroup_barrier(mem_flags::mem_device); // the row written before any SIMD group reads it
    }
    float qv[ATTN_MAX_PER_LANE];
    for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) qv[i] = lane + 32 * i < head_dim ? qs[lane + 32 * i] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup); // every q read before the merge area overwrites it
    device const half* kc = k_cache + ulong(kvh) * p.max_ctx * head_dim;
    device const half* vc = v_cache + ulong(kvh) * p.max_ctx * head_dim_v;
    decode_keys<true, G>(qv, r, kc, vc, p.scale, p.softcap, nullptr, partials, tg, h, tgpig.y, tid, sg, lane);
}

// flash_attention_decode_rope: the interleaved pairs (NEOX false, Llama)
// or NeoX's halves (Qwen 2), without the head norm.
template <bool NEOX>
inline void flash_attention_decode_rope(device const half* q,
                                        device const half* k,
                                        device const half* v,
                                        device half* k_cache,
                                        device half* v_cache,
                                        device float* partials,
                                        device const float* factors,
                                        constant AttentionRoPEParams& p,
                                        threadgroup float* tg,
                                        uint3 tgpig,
                                        uint tid,
                                        uint sg,
                                        uint lane) {
    decode_rope<NEOX, false>(q, k, v, factors, factors, k_cache, v_cache, partials, factors, p, tg, tgpig, tid, sg, lane);
}

inline void flash_attention_decode_rope_neox_norm(device const half* q,
                                                  device const half* k,
                                                  device const half* v,
                                                  device const float* q_norm,
                                                  device const float* k_norm,
                                                  device half* k_cache,
                                                  device half* v_cache,
                                                  device float* partials,
                                                  device const float* factors,
                                                  constant AttentionRoPEParams& p,
                                                  threadgroup float* tg,
                                                  uint3 tgpig,
                                                  uint tid,
                                                  uint sg,
                                                  uint lane) {
    decode_rope<true, true>(q, k, v, q_norm, k_norm, k_cache, v_cache, partials, factors, p, tg, tgpig, tid, sg, lane);
}

//! entry flash_attention_decode_rope_f16 = flash_attention_decode_rope<false>
//! entry flash_attention_decode_rope_neox_f16 = flash_attention_decode_rope<true>
//! entry flash_attention_decode_rope_neox_norm_f16 = flash_attention_decode_rope_neox_norm
