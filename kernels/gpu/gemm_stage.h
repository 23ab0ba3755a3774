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

// dequant32 writes chunks c and c+1 (c even, both below k) of a row: two
// dequant16, or one pass over a Q4_0 block, whose 16 bytes hold both
// chunks' nibbles.
template <int T>
inline void dequant32(device const uchar* row, uint c, uint k, thread float* out) {
    dequant16<T>(row, c, k, out);
    dequant16<T>(row, c + 1, k, out + 16);
}
template <>
inline void dequant32<W_Q4_0>(device const uchar* row, uint c, uint, thread float* out) {
    device const uchar* b = row + (c / 2) * 18;
    float d = ld_half(b);
    device const ushort* q = (device const ushort*)(b + 2); // blocks and rows are 18·n bytes: 2-aligned
    for (uint i = 0; i < 8; i++) {
        uint u = q[i];
        out[2 * i] = d * (float(u & 0xF) - 8.0f);
        out[2 * i + 1] = d * (float((u >> 8) & 0xF) - 8.0f);
        out[16 + 2 * i] = d * (float((u >> 4) & 0xF) - 8.0f);
        out[17 + 2 * i] = d * (float((u >> 12) & 0xF) - 8.0f);
    }
}

// sw and ld·2 bytes are multiples of 16.
template <int T, int NC>
inline void gemm_stage_w(threadgroup half* sw, uint ld, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, c = k0 / 16 + NC * (tid & 1);
    device const uchar* row = w + ulong(n0 + r) * rb;
    bool in = n0 + r < n;
    float v[16 * NC];
    if (NC == 2 && in && 16 * c + 32 <= k) {
        dequant32<T>(row, c, k, v);
    } else {
        for (uint j = 0; j < NC; j++) {
            if (in && 16 * (c + j) < k) {
                dequant16<T>(row, c + j, k, v + 16 * j);
            } else {
                for (uint i = 0; i < 16; i++) v[16 * j + i] = 0.0f;
            }
        }
    }
    for (uint j = 0; j < NC; j++) store16(sw + r * ld + 16 * (NC * (tid & 1) + j), v + 16 * j);
}
