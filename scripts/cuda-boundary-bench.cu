// cuda-boundary-bench.cu measures what a kernel boundary costs on an NVIDIA GPU
// against a grid-wide barrier inside one persistent kernel: the question
// behind a persistent decode kernel (docs/cuda.md, session 24). Tiny kernels
// of 128 threads a threadgroup, 1, 2 and 4 threadgroups an SM: 2000 launches
// captured in one CUDA graph, without and with programmatic dependent launch;
// then one cooperative kernel crossing 2000 grid.sync()s, and one crossing
// 2000 barriers of an atomic counter. Best of 5 each. On the device machine:
//
//   nvcc -O3 -arch=sm_90 -rdc=true scripts/cuda-boundary-bench.cu -o /tmp/cbb && /tmp/cbb
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void tiny(float* buf) {
  if (threadIdx.x == 0) buf[blockIdx.x] += 1.0f;
}
__global__ void tiny_pdl(float* buf) {
  asm volatile("griddepcontrol.launch_dependents;");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0) buf[blockIdx.x] += 1.0f;
}
__global__ void coop(float* buf, int n) {
  cg::grid_group g = cg::this_grid();
  for (int i = 0; i < n; i++) {
    if (threadIdx.x == 0) buf[blockIdx.x] += 1.0f;
    g.sync();
  }
}
// A sense-free barrier: a counter that only grows; phase i waits for (i+1)*G arrivals.
__global__ void mybar(float* buf, unsigned* count, int n) {
  unsigned G = gridDim.x;
  for (int i = 0; i < n; i++) {
    if (threadIdx.x == 0) buf[blockIdx.x] += 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(count, 1u);
      unsigned want = (unsigned)(i + 1) * G;
      while (true) {
        unsigned v;
        asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(count));
        if (v >= want) break;
      }
    }
    __syncthreads();
  }
}

int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* buf; CK(cudaMalloc(&buf, 1 << 20)); CK(cudaMemset(buf, 0, 1 << 20));
  unsigned* cnt; CK(cudaMalloc(&cnt, 64));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  const int N = 2000;
  int grids[3] = {sms, 2 * sms, 4 * sms};
  for (int gi = 0; gi < 3; gi++) {
    int G = grids[gi];
    for (int pdl = 0; pdl < 2; pdl++) {
      cudaGraph_t gr; cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < N; i++) {
        cudaLaunchConfig_t cfg = {}; cfg.gridDim = G; cfg.blockDim = 128; cfg.stream = s;
        cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at; cfg.numAttrs = pdl;
        if (pdl) CK(cudaLaunchKernelEx(&cfg, tiny_pdl, buf)); else CK(cudaLaunchKernelEx(&cfg, tiny, buf));
      }
      CK(cudaStreamEndCapture(s, &gr)); CK(cudaGraphInstantiate(&ge, gr, 0));
      CK(cudaGraphLaunch(ge, s)); CK(cudaStreamSynchronize(s));
      float best = 1e9;
      for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(a, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < best) best = ms;
      }
      printf("grid %4d  graph of %d launches, pdl=%d: %.3f us a kernel\n", G, N, pdl, best * 1000 / N);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(gr);
    }
    int perSM; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, coop, 128, 0));
    if (G <= perSM * sms) {
      int n = N; void* args[2] = {&buf, &n};
      CK(cudaLaunchCooperativeKernel((void*)coop, G, 128, args, 0, s)); CK(cudaStreamSynchronize(s));
      float best = 1e9;
      for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(a, s)); CK(cudaLaunchCooperativeKernel((void*)coop, G, 128, args, 0, s)); CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < best) best = ms;
      }
      printf("grid %4d  cooperative grid.sync x%d: %.3f us a barrier\n", G, N, best * 1000 / N);
      best = 1e9;
      for (int r = 0; r < 5; r++) {
        CK(cudaMemsetAsync(cnt, 0, 64, s));
        CK(cudaEventRecord(a, s)); mybar<<<G, 128, 0, s>>>(buf, cnt, n); CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (ms < best) best = ms;
      }
      CK(cudaGetLastError());
      printf("grid %4d  atomic counter barrier x%d: %.3f us a barrier\n", G, N, best * 1000 / N);
    }
  }
  return 0;
}
