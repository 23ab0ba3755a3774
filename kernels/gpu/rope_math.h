// rope_math.h: the rotation's angle and pairs, shared by the RoPE kernels
// (rope.h) and the decode attention that rotates its own q and k
// (attention_rope.h). A file that includes it declares the constant
// has_factors.
#ifndef AKUNU_ROPE_MATH_H
#define AKUNU_ROPE_MATH_H

struct RopeArgs {
    uint rope_dim, orig_ctx;
    float theta, freq_scale, attn_factor, ext_factor, beta_fast, beta_slow;
};

inline float yarn_corr(float n_rot, uint dims, uint orig_ctx, float base) {
    return float(dims) * log(float(orig_ctx) / (n_rot * 2.0f * M_PI_F)) / (2.0f * log(base));
}

// rope_cs returns (cos, sin) of pair i at position pos, times the mscale.
inline float2 rope_cs(RopeArgs a, device const float* factors, uint i, uint pos) {
    float fs = a.freq_scale == 0.0f ? 1.0f : a.freq_scale;
    float mscale = a.attn_factor == 0.0f ? 1.0f : a.attn_factor;
    float ff = has_factors ? factors[i] : 1.0f;
    float extrap = float(pos) * precise::pow(a.theta, -2.0f * float(i) / float(a.rope_dim)) / ff;
    float interp = fs * extrap, t = interp;
    if (a.ext_factor != 0.0f) {
        float c0 = max(0.0f, floor(yarn_corr(a.beta_fast, a.rope_dim, a.orig_ctx, a.theta)));
        float c1 = min(float(a.rope_dim - 1), ceil(yarn_corr(a.beta_slow, a.rope_dim, a.orig_ctx, a.theta)));
        float y = (float(i) - c0) / max(0.001f, c1 - c0);
        float ramp = (1.0f - min(1.0f, max(0.0f, y))) * a.ext_factor;
        t = interp * (1.0f - ramp) + extrap * ramp;
        mscale *= 1.0f + 0.1f * log(1.0f / fs);
    }
    float2 cs;
    cs.x = precise::cos(t) * mscale;
    cs.y = precise::sin(t) * mscale;
    return cs;
}

// pair_index gives the two elements of pair i.
template <bool NEOX> inline uint2 pair_index(uint i, uint rope_dim) {
    uint2 ix;
    ix.x = NEOX ? i : 2 * i;
    ix.y = NEOX ? i + rope_dim / 2 : 2 * i + 1;
    return ix;
}

#endif // AKUNU_ROPE_MATH_H
