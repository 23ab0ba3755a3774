// Decode flash attention: one query per head (kernels/geometry.go:
// attnDecodeGeometry). Threadgroup h owns query head h, reading kv head
// h / (n_heads / n_kv_heads) (GQA). Its SIMD groups take keys g, g+G, ...,
// each with its own online-softmax state (attention.h); the states merge in
// threadgroup memory, G × (head_dim_v + 2) floats. The parallel form takes
// split s of the key range in threadgroup (h, s) and writes its unnormalized
// state to partials [n_heads, n_splits, head_dim_v + 2] (output, max, sum)
// for flash_attention_decode_reduce_f16.
#include "attention.h"


enum DecodeKind { D_STANDARD, D_FAST, D_PARALLEL };

template <int KIND>
inline void decode(device const half* q, device const half* k_cache, device const half* v_cache,
                   device half* out, device float* partials, constant AttentionParams& p,
                   threadgroup float* tg, uint3 tgpig, uint tid, uint sg, uint lane) {
    const uint G = KIND == D_FAST ? 8 : 4;
    uint h = tgpig.x, kvh = h / (p.n_heads / p.n_kv_heads);
    uint pos = p.position; // decode: one query, the last position
    uint2 r = attn_range(pos, p.kv_len, has_window, p.window);
    if (KIND == D_PARALLEL) {
        uint c = (p.kv_len + n_splits - 1) / n_splits;
        r.x = max(r.x, tgpig.y * c);
        r.y = min(r.y, (tgpig.y + 1) * c);
    }
    // The fast form stages q in threadgroup memory (head_dim floats) ahead
    // of the merge area.
    threadgroup float* merge = tg;
    device const half* qh = q + h * head_dim;
    float qv[ATTN_MAX_PER_LANE];
    if (KIND == D_FAST) {
        for (uint i = tid; i < head_dim; i += G * 32) tg[i] = float(qh[i]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) qv[i] = lane + 32 * i < head_dim ? tg[lane + 32 * i] : 0.0f;
        merge = tg + head_dim;
    } else {
        for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) qv[i] = lane + 32 * i < head_dim ? float(qh[lane + 32 * i]) : 0.0f;
    }
    AttnState s;
    attn_init(s);
    device const half* kc = k_cache + ulong(kvh) * p.max_ctx * head_dim;
    device const half* vc = v_cache + ulong(kvh) * p.max_ctx * head_dim_v;
    if (r.x < r.y) attn_keys(s, qv, kc, vc, head_dim, head_dim_v, r.x, r.y, sg, G, p.scale, has_softcap, p.softcap, lane);
    // merge the G states
    threadgroup float* mine = merge + sg * (head_dim_v + 2);
    for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < head_dim_v; i++) mine[lane + 32 * i] = s.o[i];
    if (lane == 0) { mine[head_dim_v] = s.m; mine[head_dim_v + 1] = s.l; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = -INFINITY;
    for (uint g = 0; g < G; g++) m = max(m, merge[g * (head_dim_v + 2) + head_dim_v]);
    float l = 0.0f;
    for (uint g = 0; g < G; g++) {
        threadgroup float* st = merge + g * (head_dim_v + 2);
        if (st[head_dim_v + 1] > 0.0f) l += st[head_dim_v + 1] * exp(st[head_dim_v] - m);
    }
    for (uint i = tid; i < head_dim_v; i += G * 32) {
        float o = 0.0f;
        for (uint g = 0; g < G; g++) {
            threadgroup float* st = merge + g * (head_dim_v + 2);
            if (st[head_dim_v + 1] > 0.0f) o += st[i] * exp(st[head_dim_v] - m);
        }
        if (KIND == D_PARALLEL) {
            partials[(ulong(h) * n_splits + tgpig.y) * (head_dim_v + 2) + i] = o;
        } else {
            out[h * head_dim_v + i] = half(l > 0.0f ? o / l : 0.0f);
        }
    }
    if (KIND == D_PARALLEL && tid == 0) {
        device float* part = partials + (ulong(h) * n_splits + tgpig.y) * (head_dim_v + 2);
        part[head_dim_v] = m; // -inf with zero sum: an empty split
        part[head_dim_v + 1] = l;
    }
}

inline void flash_attention_decode(device const half* q,
                                   device const half* k_cache,
                                   device const half* v_cache,
                                   device half* out,
                                   constant AttentionParams& p,
                                   threadgroup float* tg,
                                   uint3 tgpig,
                                   uint tid,
                                   uint sg,
                                   uint lane) {
    decode<D_STANDARD>(q, k_cache, v_cache, out, nullptr, p, tg, tgpig, tid, sg, lane);
}

inline void flash_attention_decode_fast(device const half* q,
                                        device const half* k_cache,
                                        device const half* v_cache,
                                        device half* out,
                                        constant AttentionParams& p,
                                        threadgroup float* tg,
                                        uint3 tgpig,
                                        uint tid,
                                        uint sg,
                                        uint lane) {
    decode<D_FAST>(q, k_cache, v_cache, out, nullptr, p, tg, tgpig, tid, sg, lane);
}

inline void flash_attention_decode_parallel(device const half* q,
                                            device const half* k_cache,
                                            device const half* v_cache,
                                            device float* partials,
                                            constant AttentionParams& p,
                                            threadgroup float* tg,
                                            uint3 tgpig,
                                            uint tid,
                                            uint sg,
                                            uint lane) {
    decode<D_PARALLEL>(q, k_cache, v_cache, nullptr, partials, p, tg, tgpig, tid, sg, lane);
}

//! entry flash_attention_decode_f16 = flash_attention_decode
//! entry flash_attention_decode_fast_f16 = flash_attention_decode_fast
//! entry flash_attention_decode_parallel_f16 = flash_attention_decode_parallel
