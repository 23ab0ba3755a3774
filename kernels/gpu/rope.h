// RoPE: the stand-alone rotation (in place) and the fused forms that rotate
// q and k and write k and v into the head-major F16 KV cache
// [n_kv_heads, max_ctx, head_dim] (kernels/geometry.go: ropeGeometry,
// ropeKVGeometry). Thread i owns pair i: (2i, 2i+1) interleaved ("norm"),
// (i, i + rope_dim/2) NeoX. The angle of pair i at position pos is
// pos · theta^(-2i/rope_dim) / factors[i], scaled and YaRN-mixed as
// runtime/cpu/rope.go (its ropeCfg) computes it.
//
// The _rows forms take each row's position from pos[t] instead of
// position + t, and the KV writes its KV sequence slot from seq[t]: slots
// lie back to back in each cache, n_kv_heads·max_ctx rows apart. A row
// whose position is past max_ctx, or whose slot lies past a cache
// (bounds.h), writes nothing, q_out included, as the CPU twin skips it.
#include "quants.h"
#include "bounds.h"
#include "rope_math.h"


// rope_head rotates head h of row t, at position pos, in place.
template <bool NEOX>
inline void rope_head(device half* x, device const float* factors, constant RoPEParams& p, uint pos, uint t, uint h, uint tid) {
    RopeArgs a = {p.rope_dim, p.orig_ctx, p.theta, p.freq_scale, p.attn_factor, p.ext_factor, p.beta_fast, p.beta_slow};
    float2 cs = rope_cs(a, factors, tid, pos);
    device half* e = x + ulong(t) * p.stride + h * head_dim;
    uint2 ix = pair_index<NEOX>(tid, p.rope_dim);
    float x0 = float(e[ix.x]), x1 = float(e[ix.y]);
    e[ix.x] = half(x0 * cs.x - x1 * cs.y);
    e[ix.y] = half(x0 * cs.y + x1 * cs.x);
}

template <bool NEOX>
inline void rope(device half* x,
                 device const float* factors,
                 constant RoPEParams& p,
                 uint3 tgpig,
                 uint tid) {
    uint h = tgpig.x, t = tgpig.y;
    if (t >= p.n_tokens || tid >= p.rope_dim / 2) return;
    rope_head<NEOX>(x, factors, p, p.position + t, t, h, tid);
}

// rope_rows: seq is bound (the catalog's Rows bindings) but a stand-alone
// rotation has no cache to place, so only pos is read.
template <bool NEOX>
inline void rope_rows(device half* x,
                      device const float* factors,
                      device const uint* pos,
                      device const uint* seq,
                      constant RoPEParams& p,
                      uint3 tgpig,
                      uint tid) {
    uint h = tgpig.x, t = tgpig.y;
    if (t >= p.n_tokens || tid >= p.rope_dim / 2) return;
    rope_head<NEOX>(x, factors, p, pos[t], t, h, tid);
}

// rope_kv: threadgroup (h, t): h < n_heads rotates query head h into q_out;
// h ≥ n_heads is kv head h - n_heads: its k is rotated into the K cache at
// the row's position and its v copied into the V cache. With NORM each head
// is first RMS-normalized with q_norm or k_norm (Qwen 3, Gemma 3): the sum
// of squares meets in threadgroup memory, one float per SIMD group. With
// ROWS the row's position and slot come from pos and seq, and k_bytes and
// v_bytes are the caches' bound lengths; the guard depends on t alone, so
// a whole threadgroup returns before any barrier or none does.
//
// Before grid_wait (prelude_cuda.h) it reads only what no command writes:
// the norm weights of its pair and, without ROWS (the position is a
// parameter), the pair's angle, whose pow, cos and sin then overlap the
// command before on CUDA.
template <bool NEOX, bool NORM, bool ROWS>
inline void rope_kv(device const half* q, device const half* k, device const half* v,
                    device const float* q_norm, device const float* k_norm,
                    device half* q_out, device half* k_cache, device half* v_cache,
                    device const float* factors, device const uint* pos_in, device const uint* seq_in,
                    ulong k_bytes, ulong v_bytes, constant RoPEQKVWriteParams& p,
                    threadgroup float* tg, uint3 tgpig, uint tid, uint ntg) {
    uint h = tgpig.x, t = tgpig.y;
    bool is_q = h < p.n_heads, pair = tid < p.rope_dim / 2;
    device const float* nw = is_q ? q_norm : k_norm;
    RopeArgs a = {p.rope_dim, p.orig_ctx, p.theta, p.freq_scale, p.attn_factor, p.ext_factor, p.beta_fast, p.beta_slow};
    uint2 ix = pair_index<NEOX>(tid, p.rope_dim);
    float2 cs;
    cs.x = cs.y = 0.0f;
    float w0 = 1.0f, w1 = 1.0f;
    if (pair) {
        if (!ROWS) cs = rope_cs(a, factors, tid, p.position + t);
        if (NORM) { w0 = nw[ix.x]; w1 = nw[ix.y]; }
    }
    grid_wait();
    if (t >= p.n_tokens) return;
    uint pos = p.position + t;
    if (ROWS) {
        pos = pos_in[t];
        uint seq = seq_in[t];
        if (pos >= p.max_ctx || !kv_slot_fits(seq, p.n_kv_heads, p.max_ctx, head_dim, p.head_dim_v, k_bytes, v_bytes)) return;
        k_cache += ulong(seq) * p.n_kv_heads * p.max_ctx * head_dim;
        v_cache += ulong(seq) * p.n_kv_heads * p.max_ctx * p.head_dim_v;
    }
    uint kh = h - p.n_heads;
    device const half* src = is_q ? q + ulong(t) * p.q_stride + h * head_dim
                                  : k + ulong(t) * p.kv_stride + kh * head_dim;
    device half* dst = is_q ? q_out + ulong(t) * p.q_stride + h * head_dim
                            : k_cache + (ulong(kh) * p.max_ctx + pos) * head_dim;
    float inv = 1.0f;
    if (NORM) {
        float s2 = 0.0f;
        for (uint i = tid; i < head_dim; i += ntg) { float e = float(src[i]); s2 += e * e; }
        s2 = simd_sum(s2);
        if (tid % 32 == 0) tg[tid / 32] = s2;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        s2 = 0.0f;
        for (uint g = 0; g < (ntg + 31) / 32; g++) s2 += tg[g];
        inv = rsqrt(s2 / float(head_dim) + p.eps);
    }
    if (pair) {
        if (ROWS) cs = rope_cs(a, factors, tid, pos);
        float x0 = float(src[ix.x]), x1 = float(src[ix.y]);
        if (NORM) { x0 *= inv * w0; x1 *= inv * w1; }
        dst[ix.x] = half(x0 * cs.x - x1 * cs.y);
        dst[ix.y] = half(x0 * cs.y + x1 * cs.x);
    }
    // the elements past rope_dim pass through (normalized with NORM)
    for (uint i = p.rope_dim + tid; i < head_dim; i += ntg) {
        float e = float(src[i]);
        dst[i] = half(NORM ? e * inv * nw[i] : e);
    }
    if (!is_q) {
        device const half* vs = v + ulong(t) * p.kv_stride + kh * p.head_dim_v;
        device half* vd = v_cache + (ulong(kh) * p.max_ctx + pos) * p.head_dim_v;
        for (uint i = tid; i < p.head_dim_v; i += ntg) vd[i] = vs[i];
    }
}

template <bool NEOX>
inline void rope_qkv_write(device const half* q,
                           device const half* k,
                           device const half* v,
                           device half* q_out,
                           device half* k_cache,
                           device half* v_cache,
                           device const float* factors,
                           constant RoPEQKVWriteParams& p,
                           uint3 tgpig,
                           uint tid,
                           uint3 ntg) {
    rope_kv<NEOX, false, false>(q, k, v, factors, factors, q_out, k_cache, v_cache, factors, nullptr, nullptr, 0, 0, p,
                                nullptr, tgpig, tid, ntg.x);
}

template <bool NEOX>
inline void rope_qkv_write_rows(device const half* q,
                                device const half* k,
                                device const half* v,
                                device half* q_out,
                                device half* k_cache,
                                device half* v_cache,
                                device const float* factors,
                                device const uint* pos,
                                device const uint* seq,
                                constant RoPEQKVWriteParams& p,
                                uint3 tgpig,
                                uint tid,
                                uint3 ntg) {
    rope_kv<NEOX, false, true>(q, k, v, factors, factors, q_out, k_cache, v_cache, factors, pos, seq,
                               bound_bytes(p, 4), bound_bytes(p, 5), p, nullptr, tgpig, tid, ntg.x);
}

inline void head_norm_rope_neox_kv_write(device const half* q,
                                         device const half* k,
                                         device const half* v,
                                         device const float* q_norm,
                                         device const float* k_norm,
                                         device half* q_out,
                                         device half* k_cache,
                                         device half* v_cache,
                                         device const float* factors,
                                         constant RoPEQKVWriteParams& p,
                                         threadgroup float* tg,
                                         uint3 tgpig,
                                         uint tid,
                                         uint3 ntg) {
    rope_kv<true, true, false>(q, k, v, q_norm, k_norm, q_out, k_cache, v_cache, factors, nullptr, nullptr, 0, 0, p,
                               tg, tgpig, tid, ntg.x);
}

inline void head_norm_rope_neox_kv_write_rows(device const half* q,
                                              device const half* k,
                                              device const half* v,
                                              device const float* q_norm,
                                              device const float* k_norm,
                                              device half* q_out,
                                              device half* k_cache,
                                              device half* v_cache,
                                              device const float* factors,
                                              device const uint* pos,
                                              device const uint* seq,
                                              constant RoPEQKVWriteParams& p,
                                              threadgroup float* tg,
                                              uint3 tgpig,
                                              uint tid,
                                              uint3 ntg) {
    rope_kv<true, true, true>(q, k, v, q_norm, k_norm, q_out, k_cache, v_cache, factors, pos, seq,
                              bound_bytes(p, 6), bound_bytes(p, 7), p, tg, tgpig, tid, ntg.x);
}

//! entry rope_f16 = rope<false>
//! entry rope_neox_f16 = rope<true>
//! entry rope_rows_f16 = rope_rows<false>
//! entry rope_neox_rows_f16 = rope_rows<true>
//! entry rope_qkv_write_f16 = rope_qkv_write<false>
//! entry rope_neox_qkv_write_f16 = rope_qkv_write<true>
//! entry rope_qkv_write_rows_f16 = rope_qkv_write_rows<false>
//! entry rope_neox_qkv_write_rows_f16 = rope_qkv_write_rows<true>
//! entry head_norm_rope_neox_kv_write_f16 = head_norm_rope_neox_kv_write
//! entry head_norm_rope_neox_kv_write_rows_f16 = head_norm_rope_neox_kv_write_rows
