// Embedding lookups: out[i] = table[ids[token_slot + i]] · scale, one
// threadgroup of 256 threads per token (kernels/geometry.go:
// embeddingGeometry); thread t dequantizes 16-element chunks t, t+256, ...
// of the row, so the row is read once, in order. The token id comes from the
// ids buffer at the patched token_slot: in a chain it is the id argmax wrote
// on the GPU for the previous token. An id ≥ vocab gives a row of zeros.
#include <metal_stdlib>
#include "ShaderTypes.h"
#include "quants.h"
using namespace metal;

template <int T>
kernel void embedding_lookup(device const uchar* table [[buffer(0)]],
                             device const uint* ids [[buffer(1)]],
                             device half* out [[buffer(2)]],
                             constant EmbeddingParams& p [[buffer(3)]],
                             uint3 tgpig [[threadgroup_position_in_grid]],
                             uint tid [[thread_index_in_threadgroup]]) {
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
typedef decltype(embedding_lookup<W_F16>) embedding_t;
template [[host_name("embedding_lookup_f32")]] kernel embedding_t embedding_lookup<W_F32>;
template [[host_name("embedding_lookup_f16")]] kernel embedding_t embedding_lookup<W_F16>;
template [[host_name("embedding_lookup_bf16")]] kernel embedding_t embedding_lookup<W_BF16>;
template [[host_name("embedding_lookup_q4_0")]] kernel embedding_t embedding_lookup<W_Q4_0>;
template [[host_name("embedding_lookup_q4_1")]] kernel embedding_t embedding_lookup<W_Q4_1>;
template [[host_name("embedding_lookup_q5_0")]] kernel embedding_t embedding_lookup<W_Q5_0>;
template [[host_name("embedding_lookup_q5_1")]] kernel embedding_t embedding_lookup<W_Q5_1>;
template [[host_name("embedding_lookup_q8_0")]] kernel embedding_t embedding_lookup<W_Q8_0>;
template [[host_name("embedding_lookup_q4_k")]] kernel embedding_t embedding_lookup<W_Q4_K>;
template [[host_name("embedding_lookup_q5_k")]] kernel embedding_t embedding_lookup<W_Q5_K>;
template [[host_name("embedding_lookup_q6_k")]] kernel embedding_t embedding_lookup<W_Q6_K>;
