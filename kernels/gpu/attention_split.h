// attention_split.h: the end of a decode attention threadgroup, shared by
// the decode kernels (attention_decode.h) and the one that rotates its own
// q and k (attention_rope.h). A file that includes it declares the
// constants head_dim, head_dim_v, has_softcap and n_splits.
#ifndef AKUNU_ATTENTION_SPLIT_H
#define AKUNU_ATTENTION_SPLIT_H
#include "attention.h"

// decode_keys folds keys [r.x, r.y) of one kv head (kc, vc: its cache rows)
// into the G SIMD groups' online-softmax states (group g taking keys g,
// g+G, ...), merges them in threadgroup memory (merge: G × (head_dim_v + 2)
// floats) and writes head h's output, or with PARTIAL its unnormalized
// state for split split to partials [n_heads, n_splits, head_dim_v + 2].
template <bool PARTIAL, uint G>
inline void decode_keys(thread const float* qv, uint2 r, device const half* kc, device const half* vc, float scale, float cap,
                        device half* out, device float* partials, threadgroup float* merge, uint h, uint split,
                        uint tid, uint sg, uint lane) {
    AttnState s;
    attn_init(s);
    if (r.x < r.y) attn_keys(s, qv, kc, vc, head_dim, head_dim_v, r.x, r.y, sg, G, scale, has_softcap, cap, lane);
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
        if (PARTIAL) {
            partials[(ulong(h) * n_splits + split) * (head_dim_v + 2) + i] = o;
        } else {
            out[h * head_dim_v + i] = half(l > 0.0f ? o / l : 0.0f);
        }
    }
    if (PARTIAL && tid == 0) {
        device float* part = partials + (ulong(h) * n_splits + split) * (head_dim_v + 2);
        part[head_dim_v] = m; // -inf with zero sum: an empty split
        part[head_dim_v + 1] = l;
    }
}


#endif // AKUNU_ATTENTION_SPLIT_H
