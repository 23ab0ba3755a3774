// Elementwise kernels: thread i of threadgroup (x, t) owns element 256x + i
// of row t (kernels/geometry.go: elementwiseGeometry), so no element is
// shared and nothing synchronizes. Math in float, stored as F16.
#include "quants.h"
#include "bounds.h"


#define EW_INDEX                                   \
    uint col = tgpig.x * 256 + tpitg;              \
    uint row = tgpig.y;                            \
    if (col >= p.n_cols || row >= p.n_rows) return;

// Unary ops: out = f(x, alpha).
enum UnaryOp { U_SCALE, U_SOFTCAP, U_SILU, U_GELU };

template <int OP> inline float unary_f(float x, float alpha) {
    switch (OP) {
    case U_SCALE:   return x * alpha;
    case U_SOFTCAP: return alpha * precise::tanh(x / alpha);
    case U_SILU:    return silu(x);
    default:        return gelu_tanh(x);
    }
}

template <int OP>
inline void unary_kernel(device const half* x,
                         device half* out,
                         constant ElementwiseParams& p,
                         uint3 tgpig,
                         uint tpitg) {
    EW_INDEX
    out[row * p.out_stride + col] = half(unary_f<OP>(float(x[row * p.a_stride + col]), p.alpha));
}

// Binary ops and the gates: out = f(a, b).
enum BinaryOp { B_ADD, B_MUL, B_SILU_GATE, B_GELU_GATE };

template <int OP> inline float binary_f(float a, float b) {
    switch (OP) {
    case B_ADD:       return a + b;
    case B_MUL:       return a * b;
    case B_SILU_GATE: return silu(a) * b;
    default:          return gelu_tanh(a) * b;
    }
}

template <int OP>
inline void binary_kernel(device const half* a,
                          device const half* b,
                          device half* out,
                          constant ElementwiseParams& p,
                          uint3 tgpig,
                          uint tpitg) {
    EW_INDEX
    float va = float(a[row * p.a_stride + col]), vb = float(b[row * p.b_stride + col]);
    out[row * p.out_stride + col] = half(binary_f<OP>(va, vb));
}

// The gates: out = act(gate) · up, gate and up read with their own strides
// (often two halves of one gate|up row).
template <int OP>
inline void gate_kernel(device const half* gate,
                        device const half* up,
                        device half* out,
                        constant ElementwiseParams& p,
                        uint3 tgpig,
                        uint tpitg) {
    EW_INDEX
    float g = float(gate[row * p.a_stride + col]), u = float(up[row * p.b_stride + col]);
    out[row * p.out_stride + col] = half(binary_f<OP>(g, u));
}

// bias_add: x[row] += bias (F32, broadcast over rows), in place.
inline void bias_add(device half* x,
                     device const float* bias,
                     constant ElementwiseParams& p,
                     uint3 tgpig,
                     uint tpitg) {
    EW_INDEX
    device half* e = x + row * p.a_stride + col;
    *e = half(float(*e) + bias[col]);
}

// copy: out = x; with last_row the grid has one row and it copies the
// batch's last row (n_rows - 1) to row 0, the one the LM head reads.
inline void copy(device const half* x,
                 device half* out,
                 constant ElementwiseParams& p,
                 uint3 tgpig,
                 uint tpitg) {
    EW_INDEX
    uint src = last_row ? p.n_rows - 1 : row;
    out[row * p.out_stride + col] = x[src * p.a_stride + col];
}

// convert_f16_to_f32: F16 activations to the F32 logits the host reads.
inline void do_convert_f16_to_f32(device const half* x,
                                  device float* out,
                                  constant ElementwiseParams& p,
                                  uint3 tgpig,
                                  uint tpitg) {
    EW_INDEX
    out[row * p.out_stride + col] = float(x[row * p.a_stride + col]);
}

// gather_rows: output row j is input row rows[j] (the batch rows whose
// logits are asked for). A source row that reaches past x's bound length
// (bounds.h) reads as zeros, as runtime/cpu's twin: the runtime never asks
// for one, but an index is host data the kernel must not trust.
inline void gather_rows(device const half* x,
                        device const uint* rows,
                        device half* out,
                        constant ElementwiseParams& p,
                        uint3 tgpig,
                        uint tpitg) {
    EW_INDEX
    ulong src = ulong(rows[row]) * p.a_stride;
    bool inside = src + p.n_cols <= bound_bytes(p, 0) / 2;
    out[row * p.out_stride + col] = inside ? x[src + col] : half(0.0f);
}

//! entry scale_f16 = unary_kernel<U_SCALE>
//! entry softcap_f16 = unary_kernel<U_SOFTCAP>
//! entry silu_f16 = unary_kernel<U_SILU>
//! entry gelu_f16 = unary_kernel<U_GELU>
//! entry add_f16 = binary_kernel<B_ADD>
//! entry mul_f16 = binary_kernel<B_MUL>
//! entry silu_gate_f16 = gate_kernel<B_SILU_GATE>
//! entry gelu_gate_f16 = gate_kernel<B_GELU_GATE>
//! entry bias_add_f16 = bias_add
//! entry copy_f16 = copy
//! entry convert_f16_to_f32 = do_convert_f16_to_f32
//! entry gather_rows_f16 = gather_rows
