// flash_attention_decode_reduce_f16: merges the parallel decode kernel's
// splits (kernels/geometry.go: attnReduceGeometry). Threadgroup h owns head
// h, thread i output element i: Σ_s o_s[i]·e^(m_s - m) / Σ_s l_s·e^(m_s - m).
// Its own file (library): its constants' indices differ from the decode
// kernels'.


inline void flash_attention_decode_reduce(device const float* partials,
                                          device half* out,
                                          constant AttentionParams& p,
                                          uint3 tgpig,
                                          uint tid) {
    uint h = tgpig.x;
    if (tid >= head_dim_v) return;
    device const float* ph = partials + ulong(h) * n_splits * (head_dim_v + 2);
    float m = -INFINITY;
    for (uint s = 0; s < n_splits; s++) m = max(m, ph[s * (head_dim_v + 2) + head_dim_v]);
    float l = 0.0f, o = 0.0f;
    for (uint s = 0; s < n_splits; s++) {
        device const float* st = ph + s * (head_dim_v + 2);
        if (st[head_dim_v + 1] > 0.0f) {
            float f = exp(st[head_dim_v] - m);
            l += st[head_dim_v + 1] * f;
            o += st[tid] * f;
        }
    }
    out[h * head_dim_v + tid] = half(l > 0.0f ? o / l : 0.0f);
}

//! entry flash_attention_decode_reduce_f16 = flash_attention_decode_reduce
