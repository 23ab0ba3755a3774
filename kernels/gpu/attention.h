// attention.h: the online-softmax state shared by the attention kernels.
// Lane l of a SIMD group holds output elements l, l+32, ... (head_dim_v ≤
// 32·ATTN_MAX_PER_LANE) and the q elements l, l+32, ... of its query.
#ifndef AKUNU_ATTENTION_H
#define AKUNU_ATTENTION_H

#define ATTN_MAX_PER_LANE 8 // head dims up to 256

struct AttnState {
    float m, l;
    float o[ATTN_MAX_PER_LANE];
};

inline void attn_init(thread AttnState& s) {
    s.m = -INFINITY;
    s.l = 0.0f;
    for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) s.o[i] = 0.0f;
}

// attn_keys folds keys j = lo + first, lo + first + step, ... < hi of one
// kv head into s: q·k by the lanes and a simd_sum, scale, softcap, then the
// online softmax update. qv holds this lane's q elements.
inline void attn_keys(thread AttnState& s, thread const float* qv, device const half* kc, device const half* vc,
                      uint hd, uint hdv, uint lo, uint hi, uint first, uint step, float scale,
                      bool softcap, float cap, uint lane) {
    for (uint j = lo + first; j < hi; j += step) {
        device const half* kr = kc + ulong(j) * hd;
        float d = 0.0f;
        for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < hd; i++) d += qv[i] * float(kr[lane + 32 * i]);
        float sc = simd_sum(d) * scale;
        if (softcap && cap > 0.0f) sc = cap * precise::tanh(sc / cap);
        float mn = max(s.m, sc);
        float a = exp(s.m - mn), b = exp(sc - mn);
        device const half* vr = vc + ulong(j) * hdv;
        for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < hdv; i++) s.o[i] = s.o[i] * a + b * float(vr[lane + 32 * i]);
        s.l = s.l * a + b;
        s.m = mn;
    }
}

// attn_range is the key range [lo, hi) a query at position pos sees:
// causal, and with a window w only keys > pos - w.
inline uint2 attn_range(uint pos, uint kv_len, bool window, uint w) {
    uint2 r;
    r.y = min(pos + 1, kv_len);
    r.x = (window && w > 0 && pos + 1 > w) ? pos + 1 - w : 0;
    return r;
}
#endif // AKUNU_ATTENTION_H
