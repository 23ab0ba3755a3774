// Prefill GEMMs: Y[M×N] = X[M×K] · W[N×K]ᵀ (+ bias), X and Y F16, W in any
// weight type (kernels/geometry.go: gemmGeometry).
//
// simd_gemm: threadgroup (x, y) owns the tile Y[64y, +64) × [64x, +64). Each
// K step of 64 stages a 64×64 tile of X and a 64×64 tile of W, dequantized
// to half, in threadgroup memory (18 KiB: rows padded to TKP = 72 halves,
// so that the 8 rows a tile load reads fall in distinct banks); each of
// the 4 SIMD groups owns a 64×16 column strip of the tile and multiplies
// 8×8 simdgroup matrices (the tile primitive of the preludes: half inputs,
// float accumulators), each fragment loaded once per 8 columns of K and
// two row blocks a product (tile_mma2). A dequantized W element serves 64
// rows of X: dequantizing is the costly half of a K step. The next K step's
// X and W (Q4_0's raw blocks) are read into registers while this step's
// products run (gemm_stage.h: gemm_load_w). The accumulators
// leave through the same threadgroup memory (a strip is 4 KiB of float),
// so edges need no special case.
//
// simd_gemm_small (2–8 rows): SIMD group g owns cols (≤ 8) output features
// and reads each weight chunk once for all rows of X; lanes stride over the
// chunks.
#include "quants.h"
#include "gemm_stage.h"


#define TM 64
#define TN 64
#define TK 64
#define TKP 72

// gemm_load_x reads X's 8 halves of rows tid/8 + 16·pass, columns
// k0 + 8(tid % 8).., for each pass, zeros past M and K.
inline void gemm_load_x(thread uint4* xv, device const half* x, constant GEMMParams& p, uint m0, uint k0, uint tid) {
    for (uint pass = 0; pass < TM / 16; pass++) {
        uint r = tid / 8 + 16 * pass, c = 8 * (tid % 8);
        uint4 v;
        v.x = v.y = v.z = v.w = 0;
        if (m0 + r < p.m) {
            device const half* xr = x + ulong(m0 + r) * p.lda + k0 + c;
            if (vec_x) { // 16-byte aligned, and K a multiple of 8
                if (k0 + c < p.k) v = *(device const uint4*)xr;
            } else {
                float e[8];
                for (uint i = 0; i < 8; i++) e[i] = k0 + c + i < p.k ? float(xr[i]) : 0.0f;
                v.x = pack_half2(e[0], e[1]);
                v.y = pack_half2(e[2], e[3]);
                v.z = pack_half2(e[4], e[5]);
                v.w = pack_half2(e[6], e[7]);
            }
        }
        xv[pass] = v;
    }
}

template <int T>
inline void simd_gemm(device const uchar* w,
                      device const half* x,
                      device half* y,
                      device const float* bias,
                      constant GEMMParams& p,
                      threadgroup half* tg,
                      uint3 tgpig,
                      uint tid,
                      uint sg,
                      uint lane) {
    threadgroup half* sx = tg;            // [TM][TKP]
    threadgroup half* sw = tg + TM * TKP; // [TN][TKP]
    uint n0 = tgpig.x * TN, m0 = tgpig.y * TM;
    ulong rb = row_bytes<T>(p.k);
    tile_acc acc[TM / 8][2];
    for (uint i = 0; i < TM / 8; i++)
        for (uint j = 0; j < 2; j++) tile_zero(acc[i][j]);
    // The next K step's X and W are read into registers before this
    // step's products, so their latency overlaps the multiplies.
    uint4 xv[TM / 16];
    wregs<T> wv;
    gemm_load_x(xv, x, p, m0, 0, tid);
    gemm_load_w<T>(wv, w, rb, n0, 0, p.n, p.k, tid);
    for (uint k0 = 0; k0 < p.k; k0 += TK) {
        for (uint pass = 0; pass < TM / 16; pass++) // X: 8 halves of rows tid/8 + 16·pass
            *(threadgroup uint4*)(sx + (tid / 8 + 16 * pass) * TKP + 8 * (tid % 8)) = xv[pass];
        gemm_store_w<T>(sw, TKP, wv, w, rb, n0, k0, p.n, p.k, tid); // W: 64 rows × 4 chunks of 16
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (k0 + TK < p.k) {
            gemm_load_x(xv, x, p, m0, k0 + TK, tid);
            gemm_load_w<T>(wv, w, rb, n0, k0 + TK, p.n, p.k, tid);
        }
        for (uint kk = 0; kk < TK; kk += 8) {
            tile_half b[2];
            // Wᵀ: element (k, n) of the 8×8 block is sw[n][k], so load transposed.
            for (uint j = 0; j < 2; j++) tile_load_b(b[j], sw + (sg * 16 + 8 * j) * TKP + kk, TKP, true);
            for (uint i = 0; i < TM / 8; i += 2) {
                tile_half a0, a1;
                tile_load_a(a0, sx + (8 * i) * TKP + kk, TKP);
                tile_load_a(a1, sx + (8 * i + 8) * TKP + kk, TKP);
                for (uint j = 0; j < 2; j++) tile_mma2(acc[i][j], acc[i + 1][j], a0, a1, b[j]);
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    // Out through threadgroup memory: SIMD group g's 64×16 floats at 4 KiB·g.
    threadgroup float* mine = (threadgroup float*)tg + sg * (TM * 16);
    for (uint i = 0; i < TM / 8; i++)
        for (uint j = 0; j < 2; j++) tile_store(acc[i][j], mine + (8 * i) * 16 + 8 * j, 16);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = lane; e < TM * 16; e += 32) {
        uint r = e / 16, c = e % 16, n = n0 + sg * 16 + c;
        if (m0 + r < p.m && n < p.n) {
            float v = mine[e];
            if (has_bias) v += bias[n];
            y[ulong(m0 + r) * p.ldc + n] = half(v);
        }
    }
}

#define SMALL_M 8

// small_dot16 is Σ wc[i]·x[16c + i], i in order, over chunk c of row x:
// loaded in two vectors where the chunk is whole (inside K, vec_x), else
// element by element, elements past k left out.
inline float small_dot16(device const half* x, uint c, uint k, bool whole, thread const float* wc) {
    float s = 0.0f;
    if (whole) {
        float xc[16];
        unpack16(x + 16 * c, xc);
        UNROLL for (uint i = 0; i < 16; i++) s += wc[i] * xc[i];
        return s;
    }
    for (uint i = 0; i < 16; i++) {
        uint e = 16 * c + i;
        if (e < k) s += wc[i] * float(x[e]);
    }
    return s;
}

template <int T>
inline void simd_gemm_small(device const uchar* w,
                            device const half* x,
                            device half* y,
                            device const float* bias,
                            constant GEMMParams& p,
                            uint3 tgpig,
                            uint sg,
                            uint lane) {
    // A plan compiled before cols existed sets none (0 on CUDA): its grid
    // is ceil(N / 32), 8 features a SIMD group.
    uint nc = cols != 0 ? uint(cols) : 8u;
    uint n0 = (tgpig.x * 4 + sg) * nc;
    if (n0 >= p.n) return;
    uint nf = min(nc, p.n - n0), m = min(p.m, uint(SMALL_M));
    ulong rb = row_bytes<T>(p.k);
    uint nchunks = (p.k + 15) / 16;
    // Every loop over rows and features runs to its constant bound,
    // unrolled, the rows and features past m and nf skipped inside, so
    // that acc stays in registers (loops to m and nf put it in local
    // memory: 256 bytes a thread).
    float acc[SMALL_M][8];
    UNROLL for (uint r = 0; r < SMALL_M; r++)
        UNROLL for (uint f = 0; f < 8; f++) acc[r][f] = 0.0f;
    for (uint c = lane; c < nchunks; c += 32) {
        // X's 16 halves of a row in two 16-byte loads where they lie
        // whole and aligned (vec_x: rows 16-byte aligned, K a multiple of 8).
        bool whole = vec_x && 16 * c + 16 <= p.k;
        UNROLL for (uint f = 0; f < 8; f++) {
            if (f >= nf) continue;
            float wc[16];
            dequant16<T>(w + ulong(n0 + f) * rb, c, p.k, wc);
            UNROLL for (uint r = 0; r < SMALL_M; r++) {
                if (r < m) acc[r][f] += small_dot16(x + ulong(r) * p.lda, c, p.k, whole, wc);
            }
        }
    }
    UNROLL for (uint r = 0; r < SMALL_M; r++) {
        UNROLL for (uint f = 0; f < 8; f++) {
            if (r < m && f < nf) {
                float s = simd_sum(acc[r][f]);
                if (lane == 0) y[ulong(r) * p.ldc + n0 + f] = half(has_bias ? s + bias[n0 + f] : s);
            }
        }
    }
}

//! entry simd_gemm_f32 = simd_gemm<W_F32>
//! entry simd_gemm_small_f32 = simd_gemm_small<W_F32>
//! entry simd_gemm_f16 = simd_gemm<W_F16>
//! entry simd_gemm_small_f16 = simd_gemm_small<W_F16>
//! entry simd_gemm_bf16 = simd_gemm<W_BF16>
//! entry simd_gemm_small_bf16 = simd_gemm_small<W_BF16>
//! entry simd_gemm_q4_0 = simd_gemm<W_Q4_0>
//! entry simd_gemm_small_q4_0 = simd_gemm_small<W_Q4_0>
//! entry simd_gemm_q4_1 = simd_gemm<W_Q4_1>
//! entry simd_gemm_small_q4_1 = simd_gemm_small<W_Q4_1>
//! entry simd_gemm_q5_0 = simd_gemm<W_Q5_0>
//! entry simd_gemm_small_q5_0 = simd_gemm_small<W_Q5_0>
//! entry simd_gemm_q5_1 = simd_gemm<W_Q5_1>
//! entry simd_gemm_small_q5_1 = simd_gemm_small<W_Q5_1>
//! entry simd_gemm_q8_0 = simd_gemm<W_Q8_0>
//! entry simd_gemm_small_q8_0 = simd_gemm_small<W_Q8_0>
//! entry simd_gemm_q4_k = simd_gemm<W_Q4_K>
//! entry simd_gemm_small_q4_k = simd_gemm_small<W_Q4_K>
//! entry simd_gemm_q5_k = simd_gemm<W_Q5_K>
//! entry simd_gemm_small_q5_k = simd_gemm_small<W_Q5_K>
//! entry simd_gemm_q6_k = simd_gemm<W_Q6_K>
//! entry simd_gemm_small_q6_k = simd_gemm_small<W_Q6_K>
//! entry simd_gemm_q2_k = simd_gemm<W_Q2_K>
//! entry simd_gemm_small_q2_k = simd_gemm_small<W_Q2_K>
//! entry simd_gemm_q3_k = simd_gemm<W_Q3_K>
//! entry simd_gemm_small_q3_k = simd_gemm_small<W_Q3_K>
//! entry simd_gemm_iq4_nl = simd_gemm<W_IQ4_NL>
//! entry simd_gemm_small_iq4_nl = simd_gemm_small<W_IQ4_NL>
//! entry simd_gemm_iq4_xs = simd_gemm<W_IQ4_XS>
//! entry simd_gemm_small_iq4_xs = simd_gemm_small<W_IQ4_XS>
