// prelude_cuda.h: the CUDA side of the kernel dialect (kernels/gpu/doc.go).
// It makes the MSL subset the kernel bodies are written in valid CUDA C++,
// compiled by NVRTC with -default-device (every function without an
// execution space is a device function, as every MSL function is). It
// uses only what NVRTC declares without headers (blockIdx, __syncthreads,
// __shfl_*_sync, the float math functions); clang's CUDA front end checks
// it in CI with shim/cuda_shim.h declaring the same.
#ifndef AKUNU_PRELUDE_H
#define AKUNU_PRELUDE_H

#define AKUNU_CUDA 1

// UNROLL before a loop of a constant count unrolls it whole (a thread's
// array indexed by its counters then lives in registers, not local memory).
#define UNROLL _Pragma("unroll")

// ---- Address spaces: CUDA has one generic pointer; constant data is const.
#define device
#define thread
#define threadgroup
#define constant const

// ---- Scalar types.
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;
typedef unsigned int uint32_t;
typedef int int32_t;

// half: IEEE binary16, converted with round-to-nearest-even as Metal does.
struct half {
    ushort bits;
    half() = default;
    half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
    operator float() const {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
        return f;
    }
};

// as_type reinterprets the bits of a value of the same size.
template <typename T, typename U> inline T as_type(U u) {
    static_assert(sizeof(T) == sizeof(U), "as_type between sizes");
    union {
        U u;
        T t;
    } v;
    v.u = u;
    return v.t;
}

// small_float(v) is float(v) for v < 2^23 without an integer conversion:
// v in the mantissa of 2^23 (0x4B000000) is 2^23 + v exactly. sm_90 issues
// I2F at 16 a clock per SM against FFMA's 128, and the quantized GEMVs
// convert every nibble they read; the OR and the subtraction issue at full
// rate. Measured on an H100: decode +1–2% on the 0.6B and 1B Q4_0 shapes,
// the 8B shape +0.5% (its GEMVs wait on memory, not on conversions).
// (prelude_metal.h: float(v).)
inline float small_float(uint v) { return as_type<float>(v | 0x4B000000u) - 8388608.0f; }

// fast_exp and fast_recip: the hardware's approximations (ex2.approx and
// rcp.approx, a few ulp), as Metal's fast math gives them. SiLU uses them:
// the fused down projection computes silu(gate) for every chunk of every
// threadgroup, where expf's range reduction and an IEEE division cost many
// instructions an element (decode, measured on an H100: +0–3% on the Q4_0
// shapes, +11% on the Q4_K_M mix).
inline float fast_exp(float x) { return __expf(x); }
inline float fast_recip(float x) { return __fdividef(1.0f, x); }

// ---- Math: MSL's names on CUDA's float functions. precise:: and fast::
// name the same functions here (CUDA's are accurate to a few ulp).
#define precise
#define fast
#define exp(x) expf(x)
#define log(x) logf(x)
#define sin(x) sinf(x)
#define cos(x) cosf(x)
#define tanh(x) tanhf(x)
#define pow(x, y) powf(x, y)
#define sqrt(x) sqrtf(x)
#define fabs(x) fabsf(x)
#define rsqrt(x) rsqrtf(x)
#define floor(x) floorf(x)
#define ceil(x) ceilf(x)
#define isnan(x) ((x) != (x))
#define INFINITY __int_as_float(0x7f800000)
#define M_PI_F 3.14159265358979323846f

template <typename T> inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T max(T a, T b) { return a < b ? b : a; }

// ---- SIMD groups are warps: 32 lanes.
inline float simd_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
inline float simd_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
inline uint simd_min(uint v) {
    for (int o = 16; o > 0; o /= 2) v = min(v, (uint)__shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
inline float simd_shuffle_down(float v, ushort d) { return __shfl_down_sync(0xffffffffu, v, d); }
inline uint simd_shuffle_down(uint v, ushort d) { return __shfl_down_sync(0xffffffffu, v, d); }

// ---- 8-bit integer dot products. int8_dot: this GPU multiplies four
// pairs of 8-bit integers and adds them to an int in one instruction
// (dp4a), so the Q4_0, Q4_K and Q6_K GEMVs quantize x to 8 bits and dot their quants with it
// (gemv_rows.h has the measured gain); Apple GPUs have no such
// instruction (prelude_metal.h), so there the GEMV stays in float. dot4_i8(a, b, c) is
// c plus the dot product of a's and b's four signed bytes; shfl_xor(v, m)
// v of the lane whose index is this one's XOR m, max_xor(v, m) the larger
// of that and v
// (every lane of the SIMD group calls it); mul_rn a product rounded on its own, never
// fused into an add (quantizing x rounds the product first, as the CPU
// does); pack_low_bytes the low bytes of a, b, c and d, in that order from
// bit 0; small_int_float(v) is float(v) for |v| < 2^22 without a
// conversion (small_float's trick on 1.5·2^23, whose mantissa holds v).
#define int8_dot true
inline int dot4_i8(uint a, uint b, int c) {
    int r;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
inline float shfl_xor(float v, uint m) { return __shfl_xor_sync(0xffffffffu, v, m); }
inline float max_xor(float v, uint m) { return max(v, shfl_xor(v, m)); }
inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
inline uint pack_low_bytes(uint a, uint b, uint c, uint d) {
    uint ab, cd, r;
    asm("prmt.b32 %0, %1, %2, 0x0040;" : "=r"(ab) : "r"(a), "r"(b));
    asm("prmt.b32 %0, %1, %2, 0x0040;" : "=r"(cd) : "r"(c), "r"(d));
    asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(ab), "r"(cd));
    return r;
}
inline float small_int_float(int v) { return as_type<float>(uint(v + 0x4B400000)) - 12582912.0f; }

namespace mem_flags {
enum flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
}
inline void threadgroup_barrier(mem_flags::flags f) {
    if (f & mem_flags::mem_device) __threadfence_block();
    __syncthreads();
}
inline void simdgroup_barrier(mem_flags::flags) { __syncwarp(); }

// ---- Programmatic dependent launch (sm_90 and later): runtime/cuda
// launches every command so that it may start while the command before it
// still runs. grid_dependents lets the next command's threadgroups be
// scheduled; grid_wait returns once every command before has finished and
// its writes are visible. Every CUDA entry calls grid_dependents, then
// grid_wait before its body (kernels/gpu.CUDA), unless its family calls
// grid_wait itself after work that touches no buffer a command writes
// (the GEMVs prefetch their weights first). Where the launch did not ask
// for it, grid_wait returns at once.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
inline void grid_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
inline void grid_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
#else
inline void grid_dependents() {}
inline void grid_wait() {}
#endif
// prefetch_l2 asks for the 128-byte line holding p in the L2 cache.
inline void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// ---- The 8×8 tile primitive (one warp), on the tensor cores. A tile's
// fragment is loaded into registers once (tile_load_a, tile_load_b) and
// reused by every product it takes part in. tile_mma is one mma.sync
// m16n8k8 (f16 inputs, f32 accumulation, as Metal's simdgroup matrices)
// with the 8×8 a in the upper half of its 16×8 A and zeros below;
// tile_mma2 fills both halves, a0 above and a1 below, so two products with
// one b cost one instruction. Lane l = 4g + t holds A's (g, 2t) and
// (g, 2t+1), B's (2t, g) and (2t+1, g), and accumulator elements (g, 2t)
// and (g, 2t+1): exactly the m16n8k8 fragments, so nothing is shuffled.
// src and ld are even (a fragment is one 32-bit load, but for an
// untransposed b).
struct tile_acc {
    float v[2];
};
struct tile_half {
    uint r;
};
inline uint akunu_lane() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u; }
// simd_prefix_exclusive_sum: the sum of v over the lanes below this one
// (a Hillis-Steele scan of shuffles up).
inline uint simd_prefix_exclusive_sum(uint v) {
    uint l = akunu_lane(), s = v;
    for (uint o = 1; o < 32; o *= 2) {
        uint u = __shfl_up_sync(0xffffffffu, s, o);
        if (l >= o) s += u;
    }
    return s - v;
}
inline void tile_zero(tile_acc& d) { d.v[0] = d.v[1] = 0.0f; }
// tile_load_a loads the row-major 8×8 block at src (row stride ld) as an a.
inline void tile_load_a(tile_half& m, const half* src, uint ld) {
    uint l = akunu_lane();
    m.r = *(const uint*)(src + (l / 4) * ld + 2 * (l % 4));
}
// tile_load_b loads the 8×8 block at src as a b: element (k, n) at
// src[k·ld + n], or with t at src[n·ld + k].
inline void tile_load_b(tile_half& m, const half* src, uint ld, bool t) {
    uint l = akunu_lane(), g = l / 4, k = 2 * (l % 4);
    if (t) {
        m.r = *(const uint*)(src + g * ld + k);
    } else {
        m.r = uint(src[k * ld + g].bits) | (uint(src[(k + 1) * ld + g].bits) << 16);
    }
}
inline void tile_mma(tile_acc& d, const tile_half& a, const tile_half& b) {
    uint zero = 0;
    float d2, d3;
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
        : "=f"(d.v[0]), "=f"(d.v[1]), "=f"(d2), "=f"(d3)
        : "r"(a.r), "r"(zero), "r"(b.r), "f"(d.v[0]), "f"(d.v[1]), "f"(0.0f), "f"(0.0f));
}
// tile_mma2: d0 += a0·b and d1 += a1·b.
inline void tile_mma2(tile_acc& d0, tile_acc& d1, const tile_half& a0, const tile_half& a1, const tile_half& b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
        : "=f"(d0.v[0]), "=f"(d0.v[1]), "=f"(d1.v[0]), "=f"(d1.v[1])
        : "r"(a0.r), "r"(a1.r), "r"(b.r), "f"(d0.v[0]), "f"(d0.v[1]), "f"(d1.v[0]), "f"(d1.v[1]));
}
inline void tile_store(const tile_acc& d, float* dst, uint ld) {
    uint l = akunu_lane(), i = l / 4, j = 2 * (l % 4);
    dst[i * ld + j] = d.v[0];
    dst[i * ld + j + 1] = d.v[1];
}

#endif // AKUNU_PRELUDE_H
