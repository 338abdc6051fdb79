// tests/gpu/emulation/selftest/cases.cpp — small programs the emulator must stop (or pass), one per
// case named on the command line; tests/gpu/emulation/selftest/run builds and checks them.
#include <cstdio>
#include <cstring>
#include <string>

#include "cuda_runtime_api.h"

namespace {

// Threads 0-15 return before the barrier the others wait at.
__global__ void early_return(float* out) {
  if (threadIdx.x < 16) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// Odd and even threads wait at two different barriers.
__global__ void two_sites(float* out) {
  if (threadIdx.x & 1) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}

// A uniform block reduction: every thread gets the sum (a block_reduce in miniature).
__global__ void block_sum(const float* in, float* out) {
  __shared__ float partial[32];
  float v = in[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (blockDim.x >> 5) ? partial[threadIdx.x & 31] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void half_mask(float* out) { out[threadIdx.x] = __shfl_xor_sync(0xffffu, 1.0f, 1); }

// Writes 100 floats past the end of an n-float block: into the guard page.
__global__ void overrun(float* out, int n) { out[n + 100] = 0.0f; }

}  // namespace

int main(int argc, char** argv) {
  const std::string c = argc > 1 ? argv[1] : "";
  const int n = 64;
  float *d = nullptr, *e = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&d), n * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&e), 2 * n * sizeof(float));
  float host[2 * n];
  if (c == "ok") {
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
    cudaMemcpyAsync(d, host, n * sizeof(float), cudaMemcpyHostToDevice, nullptr);
    block_sum<<<2, n, 0, nullptr>>>(d, e);
    cudaMemcpyAsync(host, e, 2 * n * sizeof(float), cudaMemcpyDeviceToHost, nullptr);
    for (int i = 0; i < 2 * n; ++i)
      if (host[i] != 2016.0f) return std::printf("block_sum: thread %d has %g, not 2016\n", i, host[i]), 1;
    float* f = nullptr;  // a fresh block reads as NaN
    cudaMalloc(reinterpret_cast<void**>(&f), 3 * sizeof(float));
    cudaMemcpyAsync(host, f, 3 * sizeof(float), cudaMemcpyDeviceToHost, nullptr);
    if (host[2] == host[2]) return std::printf("a fresh block holds %g, not NaN\n", host[2]), 1;
    cudaFree(f);
    cudaFree(d);
    cudaFree(e);
    std::printf("ok\n");
    return 0;
  }
  if (c == "early-return") early_return<<<1, n, 0, nullptr>>>(d);
  if (c == "two-sites") two_sites<<<1, n, 0, nullptr>>>(d);
  if (c == "half-mask") half_mask<<<1, 32, 0, nullptr>>>(d);
  if (c == "overrun") overrun<<<1, 1, 0, nullptr>>>(d, n);
  if (c == "host-read") std::printf("%g\n", static_cast<double>(d[3]));
  if (c == "host-write") d[3] = 1.0f;
  if (c == "host-memcpy") std::memcpy(host, d, sizeof(float));
  std::printf("not stopped\n");
  return 0;
}
