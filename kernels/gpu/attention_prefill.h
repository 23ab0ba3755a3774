// Prefill flash attention: a batch of queries at positions position ..
// position + n_tokens - 1, causal (kernels/geometry.go: attnPrefillGeometry).
// Query head h reads kv head h / (n_heads / n_kv_heads).
//
// v1: SIMD group g of threadgroup (r, h) owns query row 4r + g and streams
// its keys with an online softmax (attention.h).
// v2: threadgroup (r, h) owns 32 query rows, 8 per SIMD group (head dims
// up to 128, multiples of 8): the 32 query rows, then each tile of 32 keys
// and values, are staged in threadgroup memory; a SIMD group multiplies its
// 8 rows by the key tile with the tile primitive (8×8 products on the
// matrix units), runs the online softmax with a lane per key, and
// multiplies the weights (rounded to F16, as the CPU twin rounds them) by
// the value tile the same way. A Rows threadgroup whose rows are not all of
// one sequence slot, or one with a row outside its cache, and larger head
// dims, run each row as v1 does.
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

// stage_rows copies the t cache rows from k0 (zeros from hi on) of n halves
// each (n a multiple of 8, rows 16-byte aligned) from src to dst (row
// stride ld, 16-byte aligned), 16 bytes at a time, threads tid of 128.
inline void stage_rows(threadgroup half* dst, uint ld, device const half* src, uint n, uint k0, uint hi, uint t, uint tid) {
    uint n8 = n / 8;
    for (uint e = tid; e < t * n8; e += 128) {
        uint j = e / n8, c = 8 * (e % n8);
        uint4 v;
        v.x = v.y = v.z = v.w = 0;
        if (k0 + j < hi) v = *(device const uint4*)(src + ulong(k0 + j) * n + c);
        *(threadgroup uint4*)(dst + j * ld + c) = v;
    }
}

// prefill_tiled is v2's staged form for the 32 rows from r0 of head h
// (layout of tg: the key tile [32][head_dim + 8] and value tile
// [32][head_dim_v + 8] as half, the query rows [32][head_dim + 8] as half,
// whose memory later holds the scores [32][32] as float and the weights
// [32][32] as half, and 64 floats a SIMD group of scratch;
// kernels/geometry.go sizes it).
template <bool ROWS>
inline void prefill_tiled(device const half* q, device const half* k_cache, device const half* v_cache,
                          device half* out, RowsArgs ra, constant AttentionParams& p, threadgroup float* tg,
                          uint r0, uint h, uint tid, uint sg, uint lane) {
    const uint T = 32;
    const uint NJ = head_dim_v / 8 < 16 ? head_dim_v / 8 : 16; // 8-column blocks of the output
    if (r0 >= p.n_tokens) return;
    uint nrows = min(32u, p.n_tokens - r0);
    // The rows' key ranges, and whether the staged form applies: every
    // thread reads the same rows, so the test is uniform.
    bool ok = head_dim <= 128 && head_dim_v <= 128 && head_dim % 8 == 0 && head_dim_v % 8 == 0;
    uint seq0 = 0, lo = 0xFFFFFFFFu, hi = 0;
    for (uint i = 0; i < nrows; i++) {
        uint t = r0 + i, pos = p.position + t, kv_len = p.kv_len;
        if (ROWS) {
            pos = ra.pos[t];
            uint s = ra.seq[t];
            if (i == 0) seq0 = s;
            ok = ok && s == seq0 && pos < p.max_ctx;
            kv_len = pos + 1;
        }
        uint2 rg = attn_range(pos, kv_len, has_window, p.window);
        lo = min(lo, rg.x);
        hi = max(hi, rg.y);
    }
    if (ROWS) ok = ok && kv_slot_fits(seq0, p.n_kv_heads, p.max_ctx, head_dim, head_dim_v, ra.k_bytes, ra.v_bytes);
    if (!ok) {
        for (uint i = 0; i < 8; i++) prefill_row<ROWS>(q, k_cache, v_cache, out, ra, p, r0 + sg * 8 + i, h, lane);
        return;
    }
    if (ROWS) {
        k_cache += ulong(seq0) * p.n_kv_heads * p.max_ctx * head_dim;
        v_cache += ulong(seq0) * p.n_kv_heads * p.max_ctx * head_dim_v;
    }
    uint kvh = h / (p.n_heads / p.n_kv_heads);
    device const half* kc = k_cache + ulong(kvh) * p.max_ctx * head_dim;
    device const half* vc = v_cache + ulong(kvh) * p.max_ctx * head_dim_v;
    // Rows of the staged tiles are padded by 8 halves (KP, VP), so that the
    // 8 rows a tile load reads fall in distinct banks and a row starts
    // 16-byte aligned. The query rows are read into registers once, and
    // their memory then holds the scores and weights.
    const uint KP = head_dim + 8, VP = head_dim_v + 8;
    threadgroup half* kt = (threadgroup half*)tg;
    threadgroup half* vt = kt + T * KP;
    threadgroup half* qt = vt + T * VP;
    threadgroup float* st = (threadgroup float*)qt;
    threadgroup half* pt = (threadgroup half*)(st + 32 * T);
    uint qbytes = max(32 * KP * 2, 32 * T * 6); // the query rows, or the scores and weights
    threadgroup float* xt = (threadgroup float*)((threadgroup uchar*)qt + qbytes) + sg * 64;
    for (uint e = tid; e < 32 * head_dim; e += 128) {
        uint i = e / head_dim, c = e % head_dim;
        qt[i * KP + c] = i < nrows ? q[ulong(r0 + i) * p.q_stride + h * head_dim + c] : half(0.0f);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tile_half qa[16]; // this SIMD group's 8 rows, 8 columns each: head_dim ≤ 128
    for (uint d = 0; d < head_dim / 8; d++) tile_load_a(qa[d], qt + (8 * sg) * KP + 8 * d, KP);
    // This SIMD group's rows 8sg + i: their key ranges and softmax state.
    float m[8], l[8];
    uint rlo[8], rhi[8];
    for (uint i = 0; i < 8; i++) {
        uint t = r0 + 8 * sg + i, pos = p.position + t, kv_len = p.kv_len;
        if (ROWS && 8 * sg + i < nrows) {
            pos = ra.pos[t];
            kv_len = pos + 1;
        }
        uint2 rg = attn_range(pos, kv_len, has_window, p.window);
        rlo[i] = rg.x;
        rhi[i] = 8 * sg + i < nrows ? rg.y : 0;
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    // Lane l accumulates row l/4, columns 2(l%4) and 2(l%4)+1 of each 8×8
    // block of the output.
    uint orow = lane / 4, ocol = 2 * (lane % 4);
    float o[32];
    for (uint j = 0; j < 32; j++) o[j] = 0.0f;
    threadgroup float* ss = st + sg * 8 * T;
    threadgroup half* ps = pt + sg * 8 * T;
    for (uint k0 = lo; k0 < hi; k0 += T) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        // K and V: 16-byte loads and stores (head dims are multiples of 8,
        // the caches' rows 16-byte aligned).
        stage_rows(kt, KP, kc, head_dim, k0, hi, T, tid);
        stage_rows(vt, VP, vc, head_dim_v, k0, hi, T, tid);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint cb = 0; cb < T / 8; cb++) {
            tile_acc acc;
            tile_zero(acc);
            for (uint d = 0; d < head_dim / 8; d++) {
                tile_half b;
                tile_load_b(b, kt + (8 * cb) * KP + 8 * d, KP, true);
                tile_mma(acc, qa[d], b);
            }
            tile_store(acc, ss + 8 * cb, T);
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
        uint key = k0 + lane;
        float amine = 1.0f;
        for (uint i = 0; i < 8; i++) {
            float sc = ss[i * T + lane] * p.scale;
            if (has_softcap && p.softcap > 0.0f) sc = p.softcap * precise::tanh(sc / p.softcap);
            bool in = key >= rlo[i] && key < rhi[i];
            float mx = simd_max(in ? sc : -INFINITY);
            float a = 1.0f, w = 0.0f;
            if (mx > -INFINITY) {
                float mn = max(m[i], mx);
                a = exp(m[i] - mn);
                w = in ? exp(sc - mn) : 0.0f;
                m[i] = mn;
            }
            l[i] = l[i] * a + simd_sum(w);
            ps[i * T + lane] = half(w);
            if (i == orow) amine = a;
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
        tile_half pa[T / 8];
        for (uint kk = 0; kk < T / 8; kk++) tile_load_a(pa[kk], ps + 8 * kk, T);
        for (uint j = 0; j < NJ; j++) {
            tile_acc acc;
            tile_zero(acc);
            for (uint kk = 0; kk < T / 8; kk++) {
                tile_half b;
                tile_load_b(b, vt + (8 * kk) * VP + 8 * j, VP, false);
                tile_mma(acc, pa[kk], b);
            }
            tile_store(acc, xt, 8);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            o[2 * j] = o[2 * j] * amine + xt[orow * 8 + ocol];
            o[2 * j + 1] = o[2 * j + 1] * amine + xt[orow * 8 + ocol + 1];
            simdgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
    float lm = 0.0f;
    for (uint i = 0; i < 8; i++) {
        if (i == orow) lm = l[i];
    }
    if (8 * sg + orow < nrows) {
        device half* ob = out + ulong(r0 + 8 * sg + orow) * p.o_stride + h * head_dim_v;
        for (uint j = 0; j < NJ; j++) {
            ob[8 * j + ocol] = half(lm > 0.0f ? o[2 * j] / lm : 0.0f);
            ob[8 * j + ocol + 1] = half(lm > 0.0f ? o[2 * j + 1] / lm : 0.0f);
        }
    }
}

inline void flash_attention_prefill_v2(device const half* q,
                                       device const half* k_cache,
                                       device const half* v_cache,
                                       device half* out,
                                       constant AttentionParams& p,
                                       threadgroup float* tg,
                                       uint3 tgpig,
                                       uint tid,
                                       uint sg,
                                       uint lane) {
    (void)kv_tile; // 32 for the staged form; the geometry sizes tg by it
    RowsArgs none = {nullptr, nullptr, 0, 0};
    prefill_tiled<false>(q, k_cache, v_cache, out, none, p, tg, tgpig.x * 32, tgpig.y, tid, sg, lane);
}

inline void flash_attention_prefill_v2_rows(device const half* q,
                                            device const half* k_cache,
                                            device const half* v_cache,
                                            device half* out,
                                            device const uint* pos,
                                            device const uint* seq,
                                            constant AttentionParams& p,
                                            threadgroup float* tg,
                                            uint3 tgpig,
                                            uint tid,
                                            uint sg,
                                            uint lane) {
    (void)kv_tile;
    RowsArgs ra = {pos, seq, bound_bytes(p, 1), bound_bytes(p, 2)};
    prefill_tiled<true>(q, k_cache, v_cache, out, ra, p, tg, tgpig.x * 32, tgpig.y, tid, sg, lane);
}

//! entry flash_attention_prefill_f16 = flash_attention_prefill
//! entry flash_attention_prefill_rows_f16 = flash_attention_prefill_rows
//! entry flash_attention_prefill_v2_f16 = flash_attention_prefill_v2
//! entry flash_attention_prefill_v2_rows_f16 = flash_attention_prefill_v2_rows
