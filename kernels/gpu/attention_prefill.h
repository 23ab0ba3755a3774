// Prefill flash attention: a batch of queries at positions position ..
// position + n_tokens - 1, causal (kernels/geometry.go: attnPrefillGeometry).
// Query head h reads kv head h / (n_heads / n_kv_heads).
//
// v1: SIMD group g of threadgroup (r, h) owns query row 4r + g and streams
// its keys with an online softmax (attention.h).
// v2: threadgroup (r, h) owns 32 query rows, 8 per SIMD group. Here each
// SIMD group runs its 8 rows one after another as v1 does; staging key and
// value tiles of kv_tile keys in threadgroup memory (the geometry reserves
// it) is the step still to take, on a Mac, with a profiler.
//
// The _rows forms read query t's position from pos[t] and its KV sequence
// slot from seq[t] (slots back to back in each cache, n_kv_heads·max_ctx
// rows apart) and see keys up to that position, ignoring kv_len and
// position. A query whose position is past max_ctx, or whose slot lies past
// a cache (bounds.h), sees no keys and writes zeros, as the CPU twin.
#include "attention.h"
#include "bounds.h"


// RowsArgs are a Rows command's per-row inputs and its caches' bound
// lengths; the other forms pass none.
struct RowsArgs {
    device const uint* pos;
    device const uint* seq;
    ulong k_bytes, v_bytes;
};

template <bool ROWS>
inline void prefill_row(device const half* q, device const half* k_cache, device const half* v_cache,
                        device half* out, RowsArgs ra, constant AttentionParams& p, uint t, uint h, uint lane) {
    if (t >= p.n_tokens) return;
    uint kvh = h / (p.n_heads / p.n_kv_heads);
    uint pos = p.position + t, kv_len = p.kv_len;
    if (ROWS) {
        pos = ra.pos[t];
        uint seq = ra.seq[t];
        kv_len = 0; // outside the cache: no keys, zeros out
        if (pos < p.max_ctx && kv_slot_fits(seq, p.n_kv_heads, p.max_ctx, head_dim, head_dim_v, ra.k_bytes, ra.v_bytes)) {
            kv_len = pos + 1;
            k_cache += ulong(seq) * p.n_kv_heads * p.max_ctx * head_dim;
            v_cache += ulong(seq) * p.n_kv_heads * p.max_ctx * head_dim_v;
        }
    }
    uint2 r = attn_range(pos, kv_len, has_window, p.window);
    device const half* qh = q + ulong(t) * p.q_stride + h * head_dim;
    float qv[ATTN_MAX_PER_LANE];
    for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) qv[i] = lane + 32 * i < head_dim ? float(qh[lane + 32 * i]) : 0.0f;
    AttnState s;
    attn_init(s);
    device const half* kc = k_cache + ulong(kvh) * p.max_ctx * head_dim;
    device const half* vc = v_cache + ulong(kvh) * p.max_ctx * head_dim_v;
    attn_keys(s, qv, kc, vc, head_dim, head_dim_v, r.x, r.y, 0, 1, p.scale, has_softcap, p.softcap, lane);
    device half* o = out + ulong(t) * p.o_stride + h * head_dim_v;
    for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < head_dim_v; i++)
        o[lane + 32 * i] = half(s.l > 0.0f ? s.o[i] / s.l : 0.0f);
}

inline void flash_attention_prefill(device const half* q,
                                    device const half* k_cache,
                                    device const half* v_cache,
                                    device half* out,
                                    constant AttentionParams& p,
                                    uint3 tgpig,
                                    uint sg,
                                    uint lane) {
    RowsArgs none = {nullptr, nullptr, 0, 0};
    prefill_row<false>(q, k_cache, v_cache, out, none, p, tgpig.x * 4 + sg, tgpig.y, lane);
}

inline void flash_attention_prefill_rows(device const half* q,
                                         device const half* k_cache,
                                         device const half* v_cache,
                                         device half* out,
                                         device const uint* pos,
                                         device const uint* seq,
                                         constant AttentionParams& p,
                                         uint3 tgpig,
                                         uint sg,
                                         uint lane) {
    RowsArgs ra = {pos, seq, bound_bytes(p, 1), bound_bytes(p, 2)};
    prefill_row<true>(q, k_cache, v_cache, out, ra, p, tgpig.x * 4 + sg, tgpig.y, lane);
}

inline void flash_attention_prefill_v2(device const half* q,
                                       device const half* k_cache,
                                       device const half* v_cache,
                                       device half* out,
                                       constant AttentionParams& p,
                                       uint3 tgpig,
                                       uint sg,
                                       uint lane) {
    (void)kv_tile; // the tile size of the staged form (above)
    RowsArgs none = {nullptr, nullptr, 0, 0};
    for (uint i = 0; i < 8; i++) prefill_row<false>(q, k_cache, v_cache, out, none, p, tgpig.x * 32 + sg * 8 + i, tgpig.y, lane);
}

inline void flash_attention_prefill_v2_rows(device const half* q,
                                            device const half* k_cache,
                                            device const half* v_cache,
                                            device half* out,
                                            device const uint* pos,
                                            device const uint* seq,
                                            constant AttentionParams& p,
                                            uint3 tgpig,
                                            uint sg,
                                            uint lane) {
    (void)kv_tile;
    RowsArgs ra = {pos, seq, bound_bytes(p, 1), bound_bytes(p, 2)};
    for (uint i = 0; i < 8; i++) prefill_row<true>(q, k_cache, v_cache, out, ra, p, tgpig.x * 32 + sg * 8 + i, tgpig.y, lane);
}

//! entry flash_attention_prefill_f16 = flash_attention_prefill
//! entry flash_attention_prefill_rows_f16 = flash_attention_prefill_rows
//! entry flash_attention_prefill_v2_f16 = flash_attention_prefill_v2
//! entry flash_attention_prefill_v2_rows_f16 = flash_attention_prefill_v2_rows
