// The W half of a prefill GEMM's K step, shared by simd_gemm (gemm.h) and
// gemm_id (gemm_id.h): a 64-row × 32·NC-column tile of W, dequantized to
// half, into sw ([64][ld]), rows n0.., columns k0..; thread tid (of 128)
// takes row tid/2 and NC chunks of 16 from chunk NC·(tid&1). Rows past n
// and chunks past k are zeros. Included after quants.h (dequant16,
// row_bytes).

// pack_half2 packs a and b, rounded to half, into one uint (a in the low
// bits: the element before b in memory).
inline uint pack_half2(float a, float b) {
    return uint(as_type<ushort>(half(a))) | (uint(as_type<ushort>(half(b))) << 16);
}

// store16 writes v's 16 floats as halves in two 16-byte stores: dst is
// 16-byte aligned.
inline void store16(threadgroup half* dst, thread const float* v) {
    uint4 lo, hi;
    lo.x = pack_half2(v[0], v[1]);
    lo.y = pack_half2(v[2], v[3]);
    lo.z = pack_half2(v[4], v[5]);
    lo.w = pack_half2(v[6], v[7]);
    hi.x = pack_half2(v[8], v[9]);
    hi.y = pack_half2(v[10], v[11]);
    hi.z = pack_half2(v[12], v[13]);
    hi.w = pack_half2(v[14], v[15]);
    threadgroup uint4* d = (threadgroup uint4*)dst;
    d[0] = lo;
    d[1] = hi;
}

// sw and ld·2 bytes are multiples of 16.
template <int T, int NC>
inline void gemm_stage_w(threadgroup half* sw, uint ld, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, c = k0 / 16 + NC * (tid & 1);
    device const uchar* row = w + ulong(n0 + r) * rb;
    for (uint j = 0; j < NC; j++) {
        float v[16];
        if (n0 + r < n && 16 * (c + j) < k) {
            dequant16<T>(row, c + j, k, v);
        } else {
            for (uint i = 0; i < 16; i++) v[i] = 0.0f;
        }
        store16(sw + r * ld + 16 * (NC * (tid & 1) + j), v);
    }
}

// The W stage of simd_gemm in two halves: gemm_load_w reads what the
// thread's row tid/2 and 32 columns from k0 + 32(tid&1) need into
// registers (wregs), gemm_store_w writes them as halves into sw, so the
// GEMM can read the next K step's while it multiplies. The general form
// reads nothing early (its dequantization reads at the store); Q4_0's
// holds the block's 18 bytes, Q4_K's the sub-block's 32 quant bytes, the
// super-block's d and dmin and the three scale bytes scale_min_k4 reads.
template <int T>
struct wregs {
    uint none;
};
template <>
struct wregs<W_Q4_0> {
    ushort d;
    ushort q[8];
    bool ok;
};

template <>
struct wregs<W_Q4_K> {
    ushort d, dmin;
    uchar s0, s1, s2;
    ushort q[16];
    bool ok;
};

template <int T>
inline void gemm_load_w(thread wregs<T>&, device const uchar*, ulong, uint, uint, uint, uint, uint) {}
template <>
inline void gemm_load_w<W_Q4_0>(thread wregs<W_Q4_0>& g, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, blk = k0 / 32 + (tid & 1);
    g.ok = n0 + r < n && 32 * blk < k;
    if (g.ok) {
        device const ushort* b = (device const ushort*)(w + ulong(n0 + r) * rb + blk * 18); // 18·n bytes: 2-aligned
        g.d = b[0];
        for (uint i = 0; i < 8; i++) g.q[i] = b[1 + i];
    }
}

// Q4_K: the thread's 32 elements are sub-block j = (k0/32 + (tid&1)) % 8 of
// super-block k0/256: the nibble half j&1 of qs[32(j/2), +32).
template <>
inline void gemm_load_w<W_Q4_K>(thread wregs<W_Q4_K>& g, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, e0 = k0 + 32 * (tid & 1), j = (e0 / 32) % 8;
    g.ok = n0 + r < n && e0 < k;
    if (g.ok) {
        device const uchar* b = w + ulong(n0 + r) * rb + (e0 / 256) * 144;
        device const ushort* h = (device const ushort*)b; // 144·n bytes: 2-aligned
        g.d = h[0];
        g.dmin = h[1];
        g.s0 = b[4 + (j & 3)]; // scale_min_k4's bytes of the 12 at b + 4: q[j & 3], q[j + 4], q[j]
        g.s1 = b[8 + j];
        g.s2 = b[4 + j];
        device const ushort* qs = (device const ushort*)(b + 16 + 32 * (j / 2));
        for (uint i = 0; i < 16; i++) g.q[i] = qs[i];
    }
}

template <int T>
inline void gemm_store_w(threadgroup half* sw, uint ld, thread const wregs<T>&, device const uchar* w, ulong rb, uint n0, uint k0,
                         uint n, uint k, uint tid) {
    gemm_stage_w<T, 2>(sw, ld, w, rb, n0, k0, n, k, tid);
}
template <>
inline void gemm_store_w<W_Q4_0>(threadgroup half* sw, uint ld, thread const wregs<W_Q4_0>& g, device const uchar*, ulong, uint,
                                 uint, uint, uint, uint tid) {
    float v[32];
    float d = g.ok ? float(as_type<half>(g.d)) : 0.0f;
    for (uint i = 0; i < 8; i++) {
        uint u = g.ok ? g.q[i] : 0x8888u; // zeros: every nibble 8
        v[2 * i] = d * (small_float(u & 0xF) - 8.0f);
        v[2 * i + 1] = d * (small_float((u >> 8) & 0xF) - 8.0f);
        v[16 + 2 * i] = d * (small_float((u >> 4) & 0xF) - 8.0f);
        v[17 + 2 * i] = d * (small_float((u >> 12) & 0xF) - 8.0f);
    }
    threadgroup half* dst = sw + (tid / 2) * ld + 32 * (tid & 1);
    store16(dst, v);
    store16(dst + 16, v + 16);
}
template <>
inline void gemm_store_w<W_Q4_K>(threadgroup half* sw, uint ld, thread const wregs<W_Q4_K>& g, device const uchar*, ulong, uint,
                                 uint k0, uint, uint, uint tid) {
    uint j = ((k0 + 32 * (tid & 1)) / 32) % 8, sh = (j & 1) * 4;
    uint s0 = g.s0, s1 = g.s1, s2 = g.s2;
    float sc = j < 4 ? float(s0 & 63) : float((s1 & 0xF) | ((s0 >> 6) << 4));
    float mn = j < 4 ? float(s1 & 63) : float((s1 >> 4) | ((s2 >> 6) << 4));
    float d1 = g.ok ? float(as_type<half>(g.d)) * sc : 0.0f, m1 = g.ok ? float(as_type<half>(g.dmin)) * mn : 0.0f;
    float v[32];
    for (uint i = 0; i < 16; i++) {
        uint u = g.ok ? g.q[i] : 0u;
        v[2 * i] = d1 * small_float((u >> sh) & 0xF) - m1;
        v[2 * i + 1] = d1 * small_float((u >> (8 + sh)) & 0xF) - m1;
    }
    threadgroup half* dst = sw + (tid / 2) * ld + 32 * (tid & 1);
    store16(dst, v);
    store16(dst + 16, v + 16);
}
