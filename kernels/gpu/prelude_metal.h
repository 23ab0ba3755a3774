// prelude_metal.h: the Metal side of the kernel dialect (kernels/gpu/doc.go).
// The kernel bodies are written in the subset of MSL that prelude_cuda.h
// also makes valid CUDA C++; what the two targets do differently is here
// and in prelude_cuda.h, and nowhere else.
#ifndef AKUNU_PRELUDE_H
#define AKUNU_PRELUDE_H
#include <metal_stdlib>
using namespace metal;

#define AKUNU_METAL 1

// UNROLL before a loop of a constant count unrolls it whole (a thread's
// array indexed by its counters then lives in registers).
#define UNROLL _Pragma("clang loop unroll(full)")

// ---- prelude_cuda.h's launch hooks, as no-ops: a Metal command encoder
// orders its dispatches itself and has no L2 prefetch to ask for, so the
// bodies that call them stay one source.
inline void grid_dependents() {}
inline void grid_wait() {}
inline void prefetch_l2(device const void*) {}

// small_float(v) is float(v) for v < 2^23: on CUDA a bit trick that keeps
// the quantized GEMVs off the slow integer conversion (prelude_cuda.h has
// why); Apple GPUs convert at full rate, so here it is the conversion.
inline float small_float(uint v) { return float(v); }

inline float fast_exp(float x) { return fast::exp(x); }
inline float fast_recip(float x) { return 1.0f / x; }

// ---- 8-bit integer dot products (prelude_cuda.h has what each does).
// Apple GPUs have no four-way 8-bit dot instruction: emulated, the byte
// products take more instructions than the float multiply-adds they would
// replace (by count; not measured, no Mac here), so int8_dot is false and
// the Q4_0, Q4_K and Q6_K GEMVs multiply in float; the functions exist so that the one
// source compiles.
#define int8_dot false
inline int dot4_i8(uint a, uint b, int c) {
    char4 x = as_type<char4>(a), y = as_type<char4>(b);
    return c + int(x.x) * int(y.x) + int(x.y) * int(y.y) + int(x.z) * int(y.z) + int(x.w) * int(y.w);
}
inline float shfl_xor(float v, uint m) { return simd_shuffle_xor(v, ushort(m)); }
inline float max_xor(float v, uint m) { return max(v, shfl_xor(v, m)); }
inline float mul_rn(float a, float b) { return a * b; }
inline uint pack_low_bytes(uint a, uint b, uint c, uint d) {
    return (a & 0xFFu) | ((b & 0xFFu) << 8) | ((c & 0xFFu) << 16) | (d << 24);
}
inline float small_int_float(int v) { return float(v); }

// ---- The 8×8 tile primitive (one SIMD group): the prefill GEMM's matrix
// unit. Here Apple's simdgroup matrices; prelude_cuda.h has the NVIDIA one.
// tile_load_a and tile_load_b read an 8×8 block of halves at src (row
// stride ld), b transposed when t; tile_mma adds a·b to d, tile_mma2 a0·b
// to d0 and a1·b to d1; tile_store writes d as floats.
typedef simdgroup_float8x8 tile_acc;
typedef simdgroup_half8x8 tile_half;

inline void tile_zero(thread tile_acc& d) { d = make_filled_simdgroup_matrix<float, 8, 8>(0.0f); }
inline void tile_load_a(thread tile_half& m, threadgroup const half* src, uint ld) { simdgroup_load(m, src, ld); }
inline void tile_load_b(thread tile_half& m, threadgroup const half* src, uint ld, bool t) {
    simdgroup_load(m, src, ld, ulong2(0), t);
}
inline void tile_mma(thread tile_acc& d, thread const tile_half& a, thread const tile_half& b) {
    simdgroup_multiply_accumulate(d, a, b, d);
}
inline void tile_mma2(thread tile_acc& d0, thread tile_acc& d1, thread const tile_half& a0, thread const tile_half& a1,
                      thread const tile_half& b) {
    simdgroup_multiply_accumulate(d0, a0, b, d0);
    simdgroup_multiply_accumulate(d1, a1, b, d1);
}
inline void tile_store(thread const tile_acc& d, threadgroup float* dst, uint ld) { simdgroup_store(d, dst, ld); }

#endif // AKUNU_PRELUDE_H
