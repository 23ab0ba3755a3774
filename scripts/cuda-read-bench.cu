// cuda-read-bench.cu measures how fast an NVIDIA GPU reads memory, against
// the device-to-device copy that akunu bench divides a token's bytes by (its
// roofline, bytes read and written counted): a 256 MiB copy, then read-only
// kernels (16-byte loads, 4 or 8 in flight a thread, grid-strided or one
// contiguous chunk a threadblock as a GEMV's rows are) over footprints like
// the Llama-3-8B shape's GEMVs (66, 33 and 14 MiB: gate|up, down, QKV) and a
// 1 GiB stream. Each footprint is read from a rotation of buffers, so that
// no pass finds its bytes in L2, with the launches back to back (no
// programmatic dependent launch), as a command timed alone runs
// (docs/cuda.md, session 25). On the device machine:
//
//   nvcc -O3 -arch=sm_90 scripts/cuda-read-bench.cu -o /tmp/crb && /tmp/crb
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
template <int U>
__global__ void rd(const uint4* __restrict__ p, size_t n, unsigned* out) {
  unsigned acc = 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) { uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x12345678u) out[0] = acc;
}
// contiguous chunk per block (like a GEMV's rows): block b reads [b*chunk, (b+1)*chunk)
template <int U>
__global__ void rdchunk(const uint4* __restrict__ p, size_t chunk, unsigned* out) {
  unsigned acc = 0;
  const uint4* q = p + (size_t)blockIdx.x * chunk;
  for (size_t i = threadIdx.x; i < chunk; i += U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = (i + u * blockDim.x < chunk) ? q[i + u * blockDim.x] : make_uint4(0,0,0,0);
#pragma unroll
    for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) out[0] = acc;
}
int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t big = 256ull << 20;
  void *a, *b; CK(cudaMalloc(&a, big)); CK(cudaMalloc(&b, big));
  CK(cudaMemset(a, 1, big)); CK(cudaMemset(b, 2, big));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  float ms;
  for (int r = 0; r < 3; r++) {
    cudaEventRecord(e0); for (int i = 0; i < 10; i++) cudaMemcpy(b, a, big, cudaMemcpyDeviceToDevice); cudaEventRecord(e1); cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1); printf("d2d copy 256MiB: %.0f GB/s (read+write counted)\n", 2.0 * 10 * big / (ms * 1e-3) / 1e9);
  }
  unsigned* out; CK(cudaMalloc(&out, 4));
  const int NB = 16; size_t fp[] = {66ull << 20, 33ull << 20, 14ull << 20, 1024ull << 20};
  for (size_t f : fp) {
    int nb = f >= (1ull << 30) ? 2 : NB;
    void* bufs[NB]; for (int i = 0; i < nb; i++) { CK(cudaMalloc(&bufs[i], f)); CK(cudaMemset(bufs[i], i, f)); }
    size_t n = f / 16;
    for (int threads : {128, 256, 512}) for (int per : {4, 8, 16}) {
      int grid = sms * per;
      auto run = [&](auto kern, const char* name) {
        for (int w = 0; w < nb; w++) kern<<<grid, threads>>>((const uint4*)bufs[w], n, out);
        cudaEventRecord(e0);
        const int it = 4 * nb;
        for (int i = 0; i < it; i++) kern<<<grid, threads>>>((const uint4*)bufs[i % nb], n, out);
        cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1);
        printf("read %4zu MiB %s threads %d grid %d: %.0f GB/s (%.2f us a pass)\n", f >> 20, name, threads, grid, (double)it * f / (ms * 1e-3) / 1e9, ms * 1e3 / it);
      };
      run(rd<4>, "U4 ");
      run(rd<8>, "U8 ");
    }
    for (int chunkKB : {16, 32, 64}) {  // GEMV-like: one contiguous chunk per block
      size_t chunk = (size_t)chunkKB * 1024 / 16; int grid = (int)(n / chunk);
      for (int w = 0; w < nb; w++) rdchunk<8><<<grid, 128>>>((const uint4*)bufs[w], chunk, out);
      cudaEventRecord(e0); const int it = 4 * nb;
      for (int i = 0; i < it; i++) rdchunk<8><<<grid, 128>>>((const uint4*)bufs[i % nb], chunk, out);
      cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1);
      printf("chunks %4zu MiB %d KiB a block (%d blocks, 128 thr): %.0f GB/s (%.2f us a pass)\n", f >> 20, chunkKB, grid, (double)it * f / (ms * 1e-3) / 1e9, ms * 1e3 / it);
    }
    for (int i = 0; i < nb; i++) cudaFree(bufs[i]);
  }
  CK(cudaGetLastError());
  return 0;
}
