// The W half of a prefill GEMM's K step, shared by simd_gemm (gemm.h) and
// gemm_id (gemm_id.h): a 64-row × 32-column tile of W, dequantized to
// half, into sw ([64][32]), rows n0.., columns k0..; thread tid (of 128)
// takes row tid/2, chunk of 16 tid&1. Rows past n and chunks past k are
// zeros. Included after quants.h (dequant16, row_bytes).

template <int T>
inline void gemm_stage_w(threadgroup half* sw, device const uchar* w, ulong rb, uint n0, uint k0, uint n, uint k, uint tid) {
    uint r = tid / 2, c = (k0 / 16) + (tid & 1);
    float v[16];
    if (n0 + r < n && 16 * c < k) {
        dequant16<T>(w + ulong(n0 + r) * rb, c, k, v);
    } else {
        for (uint i = 0; i < 16; i++) v[i] = 0.0f;
    }
    for (uint i = 0; i < 16; i++) sw[r * 32 + (tid & 1) * 16 + i] = half(v[i]);
}
