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

// attn_score is q·k of key row kr: the lanes' products and a simd_sum,
// scaled and soft-capped.
inline float attn_score(thread const float* qv, device const half* kr, uint hd, float scale, bool softcap, float cap,
                        uint lane) {
    float d = 0.0f;
    for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < hd; i++) d += qv[i] * float(kr[lane + 32 * i]);
    float sc = simd_sum(d) * scale;
    if (softcap && cap > 0.0f) sc = cap * precise::tanh(sc / cap);
    return sc;
}

// attn_keys folds keys j = lo + first, lo + first + step, ... < hi of one
// kv head into s: q·k by the lanes and a simd_sum, scale, softcap, then the
// online softmax update. qv holds this lane's q elements. Four keys at a
// time, their K and V elements loaded into registers together: the loads,
// dot products and reductions of the four are independent, so a SIMD group
// waits on memory once per four keys where one key's chain of loads,
// shuffles, exp and V loads would wait twice per key (decode at a
// 512-token depth was half as fast as at an empty context on an H100);
// the rest one at a time.
inline void attn_keys(thread AttnState& s, thread const float* qv, device const half* kc, device const half* vc,
                      uint hd, uint hdv, uint lo, uint hi, uint first, uint step, float scale,
                      bool softcap, float cap, uint lane) {
    uint j = lo + first;
    for (; j + 3 * step < hi; j += 4 * step) {
        half kx[4][ATTN_MAX_PER_LANE], vx[4][ATTN_MAX_PER_LANE];
        for (uint t = 0; t < 4; t++) {
            device const half* kr = kc + ulong(j + t * step) * hd;
            device const half* vr = vc + ulong(j + t * step) * hdv;
            for (uint i = 0; i < ATTN_MAX_PER_LANE; i++) {
                kx[t][i] = lane + 32 * i < hd ? kr[lane + 32 * i] : half(0.0f);
                vx[t][i] = lane + 32 * i < hdv ? vr[lane + 32 * i] : half(0.0f);
            }
        }
        float sc[4];
        for (uint t = 0; t < 4; t++) {
            float d = 0.0f;
            for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < hd; i++) d += qv[i] * float(kx[t][i]);
            sc[t] = simd_sum(d) * scale;
            if (softcap && cap > 0.0f) sc[t] = cap * precise::tanh(sc[t] / cap);
        }
        float mn = max(max(s.m, max(sc[0], sc[1])), max(sc[2], sc[3]));
        float a = exp(s.m - mn), b0 = exp(sc[0] - mn), b1 = exp(sc[1] - mn), b2 = exp(sc[2] - mn), b3 = exp(sc[3] - mn);
        for (uint i = 0; i < ATTN_MAX_PER_LANE && lane + 32 * i < hdv; i++) {
            s.o[i] = s.o[i] * a + b0 * float(vx[0][i]) + b1 * float(vx[1][i]) + b2 * float(vx[2][i]) + b3 * float(vx[3][i]);
        }
        s.l = s.l * a + (b0 + b1 + b2 + b3);
        s.m = mn;
    }
    for (; j < hi; j += step) {
        float sc = attn_score(qv, kc + ulong(j) * hd, hd, scale, softcap, cap, lane);
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
