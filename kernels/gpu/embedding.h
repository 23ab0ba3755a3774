// Embedding lookups: out[i] = table[ids[token_slot + i]] · scale, one
// threadgroup of 256 threads per token (kernels/geometry.go:
// embeddingGeometry); thread t dequantizes 16-element chunks t, t+256, ...
// of the row, so the row is read once, in order. The token id comes from the
// ids buffer at the patched token_slot: in a chain it is the id argmax wrote
// on the GPU for the previous token. An id ≥ vocab gives a row of zeros.
#include "quants.h"

template <int T>
inline void embedding_lookup(device const uchar* table,
                             device const uint* ids,
                             device half* out,
                             constant EmbeddingParams& p,
                             uint3 tgpig,
                             uint tid) {
    uint i = tgpig.x;
    if (i >= p.n_tokens) return;
    uint id = ids[p.token_slot + i];
    device half* o = out + ulong(i) * p.out_stride;
    uint nchunks = (p.dim + 15) / 16;
    for (uint c = tid; c < nchunks; c += 256) {
        float v[16];
        if (id < p.vocab) {
            dequant16<T>(table + ulong(id) * row_bytes<T>(p.dim), c, p.dim, v);
        } else {
            for (uint j = 0; j < 16; j++) v[j] = 0.0f;
        }
        for (uint j = 0; j < 16 && 16 * c + j < p.dim; j++) o[16 * c + j] = half(v[j] * p.scale);
    }
}

//! entry embedding_lookup_f32 = embedding_lookup<W_F32>
//! entry embedding_lookup_f16 = embedding_lookup<W_F16>
//! entry embedding_lookup_bf16 = embedding_lookup<W_BF16>
//! entry embedding_lookup_q4_0 = embedding_lookup<W_Q4_0>
//! entry embedding_lookup_q4_1 = embedding_lookup<W_Q4_1>
//! entry embedding_lookup_q5_0 = embedding_lookup<W_Q5_0>
//! entry embedding_lookup_q5_1 = embedding_lookup<W_Q5_1>
//! entry embedding_lookup_q8_0 = embedding_lookup<W_Q8_0>
//! entry embedding_lookup_q4_k = embedding_lookup<W_Q4_K>
//! entry embedding_lookup_q5_k = embedding_lookup<W_Q5_K>
//! entry embedding_lookup_q6_k = embedding_lookup<W_Q6_K>
//! entry embedding_lookup_q2_k = embedding_lookup<W_Q2_K>
//! entry embedding_lookup_q3_k = embedding_lookup<W_Q3_K>
//! entry embedding_lookup_iq4_nl = embedding_lookup<W_IQ4_NL>
//! entry embedding_lookup_iq4_xs = embedding_lookup<W_IQ4_XS>
