// The W half of a prefill GEMM's K step, shared by simd_gemm (gemm.h) and
// gemm_id (gemm_id.h): a 64-row × 32-column tile of W, dequantized to
// half, into sw ([64][ld]), rows n0.., columns k0..; thread tid (of 128)
// takes row tid/2, chunk of 16 tid&1. Rows past n and chunks past k are
// zeros. Included after quants.h (dequant16, row_bytes).

// pack_half2 packs a and b, rounded to half, into one uint (a in the low
// bits: the element before b in memory).
inline uint pack_half2(float a, float b) {
    return uint(as_type<ushort>(half(a))) | (uint(as_type<ushort>(half(b))) << 16);
}

// The 16 halves go to threadgroup memory as two 16-byte stores: sw and
// ld·2 bytes are multiples of 16.
template <int T>
inline void gemm_stage_w(threadgroup half* sw, uint ld, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, c = (k0 / 16) + (tid & 1);
    float v[16];
    if (n0 + r < n && 16 * c < k) {
        dequant16<T>(w + ulong(n0 + r) * rb, c, k, v);
    } else {
        for (uint i = 0; i < 16; i++) v[i] = 0.0f;
    }
    uint4 lo, hi;
    lo.x = pack_half2(v[0], v[1]);
    lo.y = pack_half2(v[2], v[3]);
    lo.z = pack_half2(v[4], v[5]);
    lo.w = pack_half2(v[6], v[7]);
    hi.x = pack_half2(v[8], v[9]);
    hi.y = pack_half2(v[10], v[11]);
    hi.z = pack_half2(v[12], v[13]);
    hi.w = pack_half2(v[14], v[15]);
    threadgroup uint4* d = (threadgroup uint4*)(sw + r * ld + (tid & 1) * 16);
    d[0] = lo;
    d[1] = hi;
}
