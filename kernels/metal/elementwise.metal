// Elementwise kernels: thread i of threadgroup (x, t) owns element 256x + i
// of row t (kernels/geometry.go: elementwiseGeometry), so no element is
// shared and nothing synchronizes. Math in float, stored as F16.
#include <metal_stdlib>
#include "ShaderTypes.h"
#include "quants.h"
#include "bounds.h"
using namespace metal;

constant bool last_row [[function_constant(0)]];

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
kernel void unary_kernel(device const half* x [[buffer(0)]],
                         device half* out [[buffer(1)]],
                         constant ElementwiseParams& p [[buffer(2)]],
                         uint3 tgpig [[threadgroup_position_in_grid]],
                         uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    out[row * p.out_stride + col] = half(unary_f<OP>(float(x[row * p.a_stride + col]), p.alpha));
}
typedef decltype(unary_kernel<U_SCALE>) unary_t;
template [[host_name("scale_f16")]] kernel unary_t unary_kernel<U_SCALE>;
template [[host_name("softcap_f16")]] kernel unary_t unary_kernel<U_SOFTCAP>;
template [[host_name("silu_f16")]] kernel unary_t unary_kernel<U_SILU>;
template [[host_name("gelu_f16")]] kernel unary_t unary_kernel<U_GELU>;

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
kernel void binary_kernel(device const half* a [[buffer(0)]],
                          device const half* b [[buffer(1)]],
                          device half* out [[buffer(2)]],
                          constant ElementwiseParams& p [[buffer(3)]],
                          uint3 tgpig [[threadgroup_position_in_grid]],
                          uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    float va = float(a[row * p.a_stride + col]), vb = float(b[row * p.b_stride + col]);
    out[row * p.out_stride + col] = half(binary_f<OP>(va, vb));
}
typedef decltype(binary_kernel<B_ADD>) binary_t;
template [[host_name("add_f16")]] kernel binary_t binary_kernel<B_ADD>;
template [[host_name("mul_f16")]] kernel binary_t binary_kernel<B_MUL>;

// The gates: out = act(gate) · up, gate and up read with their own strides
// (often two halves of one gate|up row).
template <int OP>
kernel void gate_kernel(device const half* gate [[buffer(0)]],
                        device const half* up [[buffer(1)]],
                        device half* out [[buffer(2)]],
                        constant ElementwiseParams& p [[buffer(3)]],
                        uint3 tgpig [[threadgroup_position_in_grid]],
                        uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    float g = float(gate[row * p.a_stride + col]), u = float(up[row * p.b_stride + col]);
    out[row * p.out_stride + col] = half(binary_f<OP>(g, u));
}
typedef decltype(gate_kernel<B_SILU_GATE>) gate_t;
template [[host_name("silu_gate_f16")]] kernel gate_t gate_kernel<B_SILU_GATE>;
template [[host_name("gelu_gate_f16")]] kernel gate_t gate_kernel<B_GELU_GATE>;

// bias_add: x[row] += bias (F32, broadcast over rows), in place.
kernel void bias_add_f16(device half* x [[buffer(0)]],
                         device const float* bias [[buffer(1)]],
                         constant ElementwiseParams& p [[buffer(2)]],
                         uint3 tgpig [[threadgroup_position_in_grid]],
                         uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    device half* e = x + row * p.a_stride + col;
    *e = half(float(*e) + bias[col]);
}

// copy: out = x; with last_row the grid has one row and it copies the
// batch's last row (n_rows - 1) to row 0, the one the LM head reads.
kernel void copy_f16(device const half* x [[buffer(0)]],
                     device half* out [[buffer(1)]],
                     constant ElementwiseParams& p [[buffer(2)]],
                     uint3 tgpig [[threadgroup_position_in_grid]],
                     uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    uint src = last_row ? p.n_rows - 1 : row;
    out[row * p.out_stride + col] = x[src * p.a_stride + col];
}

// convert_f16_to_f32: F16 activations to the F32 logits the host reads.
kernel void convert_f16_to_f32(device const half* x [[buffer(0)]],
                               device float* out [[buffer(1)]],
                               constant ElementwiseParams& p [[buffer(2)]],
                               uint3 tgpig [[threadgroup_position_in_grid]],
                               uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    out[row * p.out_stride + col] = float(x[row * p.a_stride + col]);
}

// gather_rows: output row j is input row rows[j] (the batch rows whose
// logits are asked for). A source row that reaches past x's bound length
// (bounds.h) reads as zeros, as runtime/cpu's twin: the runtime never asks
// for one, but an index is host data the kernel must not trust.
kernel void gather_rows_f16(device const half* x [[buffer(0)]],
                            device const uint* rows [[buffer(1)]],
                            device half* out [[buffer(2)]],
                            constant ElementwiseParams& p [[buffer(3)]],
                            uint3 tgpig [[threadgroup_position_in_grid]],
                            uint tpitg [[thread_index_in_threadgroup]]) {
    EW_INDEX
    ulong src = ulong(rows[row]) * p.a_stride;
    bool inside = src + p.n_cols <= bound_bytes(p, 0) / 2;
    out[row * p.out_stride + col] = inside ? x[src + col] : half(0.0f);
}
