// The routing and the weighted sum of a mixture-of-experts FFN
// (llama.cpp's build_moe_ffn with softmax gating: Qwen3-MoE, Mixtral);
// gemv_id.h computes the experts between them. runtime/cpu/moe.go holds
// the CPU twins and the order they compute in.
#include "quants.h"

// moe_route (kernels/geometry.go: moeRouteGeometry): threadgroup r is one
// SIMD group over row r of the router logits. Lane l owns experts l, l+32,
// ... in tg (a row of n_expert floats): it widens their logits there, the
// row's max (simd_max) and the sum of exp(l - max) (simd_sum) follow, and
// each lane divides its own entries into probabilities. Round j then picks
// the largest probability not yet taken: each lane's best (a tie keeps the
// lower expert, as i grows), the row's best value by simd_max and, among
// the lanes holding it, the lower expert by simd_min; the lane that owns
// the winner marks it taken (-1: probabilities are ≥ 0) and lane j keeps
// it. A lane reads and writes only its own entries of tg, so nothing
// synchronizes. Every lane adds the rounds' weights in round order, so
// with norm_w each divides by the same float sum, clamped below at 2^-14
// as llama.cpp clamps it. A row whose probabilities are NaN (a NaN or
// +inf logit, or every logit -inf) takes nothing: its ids are 0xFFFFFFFF, which gemv_id
// reads as no expert, and its weights 0.
inline void moe_route(device const half* logits,
                      device uint* ids,
                      device float* weights,
                      constant MoERouteParams& p,
                      threadgroup float* tg,
                      uint3 tgpig,
                      uint lane) {
    uint r = tgpig.x;
    if (r >= p.n_rows) return;
    device const half* l = logits + ulong(r) * p.a_stride;
    uint ne = p.n_expert;
    float m = -INFINITY;
    for (uint i = lane; i < ne; i += 32) {
        float v = float(l[i]);
        tg[i] = v;
        m = max(m, v);
    }
    m = simd_max(m);
    float s = 0.0f;
    for (uint i = lane; i < ne; i += 32) {
        float e = precise::exp(tg[i] - m);
        tg[i] = e;
        s += e;
    }
    s = simd_sum(s);
    for (uint i = lane; i < ne; i += 32) tg[i] = tg[i] / s;
    uint my_id = 0xFFFFFFFFu;
    float my_w = 0.0f, wsum = 0.0f;
    for (uint j = 0; j < p.k; j++) {
        float bv = -1.0f;
        uint bi = 0xFFFFFFFFu;
        for (uint i = lane; i < ne; i += 32) {
            float v = tg[i];
            if (v > bv) { bv = v; bi = i; }
        }
        float best = simd_max(bv);
        uint id = simd_min(bv == best ? bi : 0xFFFFFFFFu);
        float wj = 0.0f;
        if (id < ne) {
            wj = best;
            if (id % 32 == lane) tg[id] = -1.0f;
        }
        wsum += wj;
        if (lane == j) { my_id = id; my_w = wj; }
    }
    if (lane < p.k) {
        ulong o = ulong(r) * p.k + lane;
        ids[o] = my_id;
        weights[o] = norm_w ? my_w / max(wsum, 6.103515625e-5f) : my_w;
    }
}

// moe_sum (moeSumGeometry): thread i of threadgroup (x, r) owns element
// 256x + i of row r: the slots' outputs times their weights, added in slot
// order starting from slot 0's product, as the CPU twin adds them.
inline void moe_sum(device const half* y,
                    device const float* weights,
                    device half* out,
                    constant MoESumParams& p,
                    uint3 tgpig,
                    uint tpitg) {
    uint n = tgpig.x * 256 + tpitg, r = tgpig.y;
    if (n >= p.n || r >= p.n_rows) return;
    device const half* yr = y + ulong(r) * p.y_stride + n;
    device const float* wr = weights + ulong(r) * p.n_slots;
    float s = wr[0] * float(yr[0]);
    for (uint j = 1; j < p.n_slots; j++) s += wr[j] * float(yr[ulong(j) * p.n]);
    out[ulong(r) * p.out_stride + n] = half(s);
}

//! entry moe_route_f16 = moe_route
//! entry moe_sum_f16 = moe_sum
