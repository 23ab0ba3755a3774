// cuda_shim.h: what NVRTC declares without headers, declared for clang's
// CUDA front end, so that CI (which has no CUDA toolkit) type-checks the
// generated CUDA source: `clang++ -x cuda --cuda-device-only -nocudainc
// -nocudalib -fsyntax-only -include shim/cuda_shim.h` (kernels/gpu tests).
// Declarations only: nothing here is compiled for a GPU. The pragma makes
// unannotated functions device functions, as NVRTC's -default-device does.
#include "__clang_cuda_builtin_vars.h"
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

// The vector types NVRTC predefines (vector_types.h), as far as the kernels use them.
struct uint2 { unsigned x, y; };
struct uint3 { unsigned x, y, z; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct float2 { float x, y; };

__device__ float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32);
__device__ unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane_mask, int width = 32);
__device__ float __shfl_down_sync(unsigned mask, float v, unsigned delta, int width = 32);
__device__ unsigned __shfl_down_sync(unsigned mask, unsigned v, unsigned delta, int width = 32);
__device__ unsigned __shfl_up_sync(unsigned mask, unsigned v, unsigned delta, int width = 32);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence_block();
__device__ float __int_as_float(int);
__device__ float expf(float);
__device__ float __expf(float);
__device__ float __fdividef(float, float);
__device__ float __fmul_rn(float, float);
__device__ float fabsf(float);
__device__ float logf(float);
__device__ float sinf(float);
__device__ float cosf(float);
__device__ float tanhf(float);
__device__ float powf(float, float);
__device__ float sqrtf(float);
__device__ float rsqrtf(float);
__device__ float floorf(float);
__device__ float ceilf(float);

#pragma clang force_cuda_host_device begin
