// Decode flash attention: one query per head (kernels/geometry.go:
// attnDecodeGeometry). Threadgroup h owns query head h, reading kv head
// h / (n_heads / n_kv_heads) (GQA). Its SIMD groups take keys g, g+G, ...,
// each with its own online-softmax state (attention.h); the states merge in
// threadgroup memory, G × (head_dim_v + 2) floats. The parallel form takes
// split s of the key range in threadgroup (h, s) and writes its unnormalized
// state to partials [n_heads, n_splits, head_dim_v + 2] (output, max, sum)
// for flash_attention_decode_reduce_f16.
#include "attention_split.h"


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
    device const half* kc = k_cache + ulong(kvh) * p.max_ctx * head_dim;
    device const half* vc = v_cache + ulong(kvh) * p.max_ctx * head_dim_v;
    decode_keys<KIND == D_PARALLEL, G>(qv, r, kc, vc, p.scale, p.softcap, out, partials, merge, h, tgpig.y, tid, sg, lane);
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
