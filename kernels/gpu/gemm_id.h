// gemm_id: the expert-indexed GEMM of a mixture-of-experts FFN for a batch
// (kernels/geometry.go: gemmIDGeometry). gemv_id's semantics, parameters
// and bindings: for row r < n_rows and slot j < n_slots, with e =
// ids[r·n_slots + j], y[r·y_stride + j·n + i] = W_e[i]·x[r·x_stride +
// j·x_slot ...]; an id at or past n_expert gives zeros.
//
// Threadgroup (e, t) owns columns [64t, +64) of every (r, j) pair that
// chose expert e. It scans the ids in windows of 512 (4 a thread,
// coalesced), and compacts the pairs of its expert into a list in
// threadgroup memory (a SIMD prefix sum of each thread's hits, the four
// groups' counts met in threadgroup memory); when the list could overflow
// on the next window, or the ids end, it runs simd_gemm's tile over the
// listed pairs, 32 at a time: X's rows gathered from the pairs' x, W the
// expert's matrix staged 64×32 through the same dequant16, the 8×8 tile
// primitive, Y's rows scattered to the pairs' y. So an expert's matrix is
// read once per 32 pairs that chose it, not once per pair; a threadgroup
// whose expert no pair chose only scans. The pairs' order in the list does
// not matter: each output is its own row's dot products. Threadgroup
// (0, t) also writes the zeros of the pairs whose id is past n_expert (no
// expert lists them), columns [64t, +64), at the scan.
#include "quants.h"
#include "gemm_stage.h"

#define GID_TM 32
#define GID_TN 64
#define GID_TK 32
#define GID_TKP 40 // rows padded by 8, as gemm.h's TKP
// The list of pairs holds GID_CAP; a window adds at most GID_WIN.
#define GID_CAP 2048
#define GID_WIN 512

// gemm_id_tiles is simd_gemm's body (gemm.h) over the count pairs listed
// at list, rows gathered and scattered by pair: threadgroup memory is
// 7.5 KiB of tiles as simd_gemm's (K steps of 32), then the list. Every thread of the
// threadgroup calls it with the same count.
template <int T>
inline void gemm_id_tiles(device const uchar* we,
                          device const half* x,
                          device half* y,
                          constant GEMVIDParams& p,
                          threadgroup half* tg,
                          threadgroup const uint* list,
                          uint count,
                          uint n0,
                          uint tid,
                          uint sg,
                          uint lane) {
    threadgroup half* sx = tg;                   // [TM][TKP]
    threadgroup half* sw = tg + GID_TM * GID_TKP; // [TN][TKP]
    ulong rb = row_bytes<T>(p.k);
    for (uint m0 = 0; m0 < count; m0 += GID_TM) {
        // Thread (sg, lane) stages X rows sg, sg+4, ..., sg+28, column lane.
        ulong xo[GID_TM / 4];
        bool xin[GID_TM / 4];
        for (uint i = 0; i < GID_TM / 4; i++) {
            uint m = m0 + sg + 4 * i;
            xin[i] = m < count;
            uint pr = xin[i] ? list[m] : 0;
            xo[i] = ulong(pr / p.n_slots) * p.x_stride + ulong(pr % p.n_slots) * p.x_slot;
        }
        tile_acc acc[4][2];
        for (uint i = 0; i < 4; i++)
            for (uint j = 0; j < 2; j++) tile_zero(acc[i][j]);
        for (uint k0 = 0; k0 < p.k; k0 += GID_TK) {
            for (uint i = 0; i < GID_TM / 4; i++) {
                uint c = k0 + lane;
                sx[(sg + 4 * i) * GID_TKP + lane] = (xin[i] && c < p.k) ? x[xo[i] + c] : half(0.0f);
            }
            gemm_stage_w<T, 1>(sw, GID_TKP, we, rb, n0, k0, p.n, p.k, tid); // W: the expert's 64 rows × 2 chunks of 16
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint kk = 0; kk < GID_TK; kk += 8) {
                tile_half a[4], b[2];
                for (uint i = 0; i < 4; i++) tile_load_a(a[i], sx + (8 * i) * GID_TKP + kk, GID_TKP);
                for (uint j = 0; j < 2; j++) tile_load_b(b[j], sw + (sg * 16 + 8 * j) * GID_TKP + kk, GID_TKP, true);
                for (uint i = 0; i < 4; i += 2)
                    for (uint j = 0; j < 2; j++) tile_mma2(acc[i][j], acc[i + 1][j], a[i], a[i + 1], b[j]);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        // Out through the tiles' memory, groups {0,1} then {2,3}, each row
        // to its pair's y.
        threadgroup float* so = (threadgroup float*)tg;
        for (uint phase = 0; phase < 2; phase++) {
            if (sg / 2 == phase) {
                threadgroup float* mine = so + (sg % 2) * (GID_TM * 16);
                for (uint i = 0; i < 4; i++)
                    for (uint j = 0; j < 2; j++) tile_store(acc[i][j], mine + (8 * i) * 16 + 8 * j, 16);
                simdgroup_barrier(mem_flags::mem_threadgroup);
                for (uint q = lane; q < GID_TM * 16; q += 32) {
                    uint r = q / 16, c = q % 16, n = n0 + sg * 16 + c;
                    if (m0 + r < count && n < p.n) {
                        uint pr = list[m0 + r];
                        y[ulong(pr / p.n_slots) * p.y_stride + ulong(pr % p.n_slots) * p.n + n] = half(mine[q]);
                    }
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
}

template <int T>
inline void gemm_id(device const uchar* w,
                    device const half* x,
                    device const uint* ids,
                    device half* y,
                    constant GEMVIDParams& p,
                    threadgroup half* tg,
                    uint3 tgpig,
                    uint tid,
                    uint sg,
                    uint lane) {
    uint e = tgpig.x, n0 = tgpig.y * GID_TN;
    if (e >= p.n_expert || n0 >= p.n) return; // the whole threadgroup
    threadgroup uint* cnt = (threadgroup uint*)(tg + (GID_TM + GID_TN) * GID_TKP); // [4]: a window's hits per SIMD group
    threadgroup uint* list = cnt + 4;                                           // [GID_CAP]: pairs r·n_slots + j
    device const uchar* we = w + ulong(e) * p.n * row_bytes<T>(p.k);
    uint total = p.n_rows * p.n_slots, count = 0;
    uint ncols = min(uint(GID_TN), p.n - n0);
    for (uint base = 0; base < total; base += GID_WIN) {
        uint mine[GID_WIN / 128], hits = 0;
        for (uint i = 0; i < GID_WIN / 128; i++) {
            uint q = base + 128 * i + tid;
            if (q >= total) break;
            uint id = ids[q];
            if (id == e) mine[hits++] = q;
            if (e == 0 && id >= p.n_expert) {
                device half* yz = y + ulong(q / p.n_slots) * p.y_stride + ulong(q % p.n_slots) * p.n + n0;
                for (uint c = 0; c < ncols; c++) yz[c] = half(0.0f);
            }
        }
        uint before = simd_prefix_exclusive_sum(hits);
        if (lane == 31) cnt[sg] = before + hits;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint at = count, added = 0;
        for (uint g = 0; g < 4; g++) {
            if (g < sg) at += cnt[g];
            added += cnt[g];
        }
        for (uint i = 0; i < hits; i++) list[at + before + i] = mine[i];
        count += added;
        threadgroup_barrier(mem_flags::mem_threadgroup); // the list complete; cnt free for the next window
        if (count > 0 && (count > GID_CAP - GID_WIN || base + GID_WIN >= total)) {
            gemm_id_tiles<T>(we, x, y, p, tg, list, count, n0, tid, sg, lane);
            count = 0;
        }
    }
}

//! entry gemm_id_f32 = gemm_id<W_F32>
//! entry gemm_id_f16 = gemm_id<W_F16>
//! entry gemm_id_bf16 = gemm_id<W_BF16>
//! entry gemm_id_q4_0 = gemm_id<W_Q4_0>
//! entry gemm_id_q4_1 = gemm_id<W_Q4_1>
//! entry gemm_id_q5_0 = gemm_id<W_Q5_0>
//! entry gemm_id_q5_1 = gemm_id<W_Q5_1>
//! entry gemm_id_q8_0 = gemm_id<W_Q8_0>
//! entry gemm_id_q4_k = gemm_id<W_Q4_K>
//! entry gemm_id_q5_k = gemm_id<W_Q5_K>
//! entry gemm_id_q6_k = gemm_id<W_Q6_K>
//! entry gemm_id_q2_k = gemm_id<W_Q2_K>
//! entry gemm_id_q3_k = gemm_id<W_Q3_K>
//! entry gemm_id_iq4_nl = gemm_id<W_IQ4_NL>
//! entry gemm_id_iq4_xs = gemm_id<W_IQ4_XS>
