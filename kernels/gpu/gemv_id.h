// gemv_id: the expert-indexed GEMV of a mixture-of-experts FFN
// (kernels/geometry.go: gemvIDGeometry). W is n_expert matrices of n rows
// back to back; threadgroup (t, j, r) is a standard GEMV threadgroup
// (gemv.h) over the matrix of expert ids[r·n_slots + j], with slot j of row
// r's x, writing slot j of row r's y. An id at or past n_expert writes
// zeros and reads nothing: the ids are another kernel's output, and W
// holds n_expert matrices only. Every lane of a SIMD group shares (r, j)
// and its rows, so the early returns leave no lane of a simd_sum behind.
// In prefill an expert's matrix is read once per (row, slot) that chose
// it; gemm_id.h, the batch form, groups the rows by expert (as runtime/cpu's
// twin does).
#include "gemv_rows.h"

template <int T>
inline void gemv_id(device const uchar* w,
                    device const half* x,
                    device const uint* ids,
                    device half* y,
                    constant GEMVIDParams& p,
                    uint3 tgpig,
                    uint sg,
                    uint lane) {
    uint j = tgpig.y, r = tgpig.z;
    uint row0 = (tgpig.x * nsg + sg) * nr;
    if (r >= p.n_rows || j >= p.n_slots || row0 >= p.n) return;
    uint nrows = min(nr, p.n - row0);
    uint e = ids[ulong(r) * p.n_slots + j];
    device half* yr = y + ulong(r) * p.y_stride + ulong(j) * p.n + row0;
    if (e >= p.n_expert) {
        if (lane < nrows) yr[lane] = half(0.0f);
        return;
    }
    device const uchar* we = w + ulong(e) * p.n * row_bytes<T>(p.k);
    device const half* xr = x + ulong(r) * p.x_stride + ulong(j) * p.x_slot;
    float sums[GEMV_MAX_NR];
    gemv_rows<T, false>(we, xr, xr, p.k, p.n, row0, nrows, lane, 32, sums); // n: planar layouts' only
    for (uint i = 0; i < nr; i++) {
        float s = simd_sum(sums[i]);
        if (lane == 0 && i < nrows) yr[i] = half(s);
    }
}

//! entry gemv_id_f32 = gemv_id<W_F32>
//! entry gemv_id_f16 = gemv_id<W_F16>
//! entry gemv_id_bf16 = gemv_id<W_BF16>
//! entry gemv_id_q4_0 = gemv_id<W_Q4_0>
//! entry gemv_id_q4_1 = gemv_id<W_Q4_1>
//! entry gemv_id_q5_0 = gemv_id<W_Q5_0>
//! entry gemv_id_q5_1 = gemv_id<W_Q5_1>
//! entry gemv_id_q8_0 = gemv_id<W_Q8_0>
//! entry gemv_id_q4_k = gemv_id<W_Q4_K>
//! entry gemv_id_q5_k = gemv_id<W_Q5_K>
//! entry gemv_id_q6_k = gemv_id<W_Q6_K>
//! entry gemv_id_q2_k = gemv_id<W_Q2_K>
//! entry gemv_id_q3_k = gemv_id<W_Q3_K>
//! entry gemv_id_iq4_nl = gemv_id<W_IQ4_NL>
//! entry gemv_id_iq4_xs = gemv_id<W_IQ4_XS>
