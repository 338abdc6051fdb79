// tests/gpu/emulation/cuda_runtime_api.h — a CPU emulation of the part of the CUDA runtime that
// handgrad uses, so that tests/gpu/emulation/run can execute cuda/*.cu and cuda/*.cpp with g++
// (and AddressSanitizer) on a machine without a GPU. A logic check — indexing, launch
// configurations, reductions and barriers, the status flags, the tests themselves — not a model
// of GPU numerics (no fused multiply-adds, host libm), timing or the driver.
//
// "Device" memory is host memory: cudaMalloc is malloc, filled with 0xFF (NaN as float32 and
// float64) so that an element a kernel forgets to write shows. A launch runs its blocks one after
// another; a block first runs its threads one after another, and if the kernel synchronises
// (__syncthreads, a shuffle) the block is run again as cooperative fibers (fibers.cpp), each
// barrier a round over all of them. Writes before a kernel's first barrier must therefore be
// idempotent — true of every kernel in cuda/ (they reduce before they write).
#pragma once
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <tuple>

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
typedef struct CUstream_st* cudaStream_t;
struct cudaDeviceProp {
  char name[256];
  int major, minor;
  size_t totalGlobalMem;
  int multiProcessorCount;
};
struct cudaFuncAttributes {
  int maxThreadsPerBlock;
};
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1) : x(a) {}
};

namespace emu {
inline cudaError_t& last_error() {
  static cudaError_t e = cudaSuccess;
  return e;
}
struct NeedFibers {};                        // thrown at a barrier while a block runs sequentially
inline thread_local bool sequential = false;  // the block's threads run one after another
inline unsigned char* exchange() {            // the shuffles' mailbox, 16 bytes per thread
  alignas(16) static unsigned char buf[1024 * 16];
  return buf;
}
void yield_to_scheduler();  // fibers.cpp
void run_block_as_fibers(unsigned threads, void (*body)(void*, unsigned), void* arg);
}  // namespace emu

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

// ---------------------------------------------------------------- host API

inline cudaError_t cudaGetLastError() {
  const cudaError_t e = emu::last_error();
  emu::last_error() = cudaSuccess;
  return e;
}
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  }
  return "cudaError?";
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  if (n > (size_t{1} << 34)) return emu::last_error() = cudaErrorMemoryAllocation;  // a 16 GiB "device"
  *p = std::malloc(n);
  std::memset(*p, 0xFF, n);
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  if (n) std::memcpy(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::strcpy(p->name, "CPU emulation (tests/gpu/emulation)");
  p->major = 9;
  p->minor = 0;
  p->totalGlobalMem = size_t{1} << 34;
  p->multiProcessorCount = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F) {
  a->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}

// ---------------------------------------------------------------- device side

#define __global__
#define __device__
#define __host__
#define __shared__ static  // shared by the block's threads: blocks run one at a time
#define __launch_bounds__(...)

inline void emu_barrier() {
  if (emu::sequential) throw emu::NeedFibers{};
  emu::yield_to_scheduler();
}
inline void __syncthreads() { emu_barrier(); }
// Lane threadIdx.x ^ o's value. Every thread of the block calls it at the same point (block_reduce).
template <typename T>
T __shfl_xor_sync(unsigned, T v, int o) {
  static_assert(sizeof(T) <= 16);
  emu_barrier();  // everyone has read the previous exchange
  std::memcpy(emu::exchange() + threadIdx.x * 16, &v, sizeof(T));
  emu_barrier();
  T r;
  std::memcpy(&r, emu::exchange() + (threadIdx.x ^ static_cast<unsigned>(o)) * 16, sizeof(T));
  return r;
}
inline long long atomicMin(long long* a, long long v) {
  std::atomic_ref<long long> r(*a);
  long long old = r.load();
  while (v < old && !r.compare_exchange_weak(old, v)) {
  }
  return old;
}
inline float atomicAdd(float* a, float v) { return std::atomic_ref<float>(*a).fetch_add(v); }
inline double atomicAdd(double* a, double v) { return std::atomic_ref<double>(*a).fetch_add(v); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dadd_rn(double a, double b) { return a + b; }

// kernel<<<grid, threads, shmem, stream>>>(args...) is rewritten (launch.py) to
// emu_launch(grid, threads, shmem, stream, kernel, args...).
template <typename K, typename... A>
void emu_launch(unsigned grid, unsigned threads, size_t, cudaStream_t, K kernel, A... args) {
  if (grid == 0 || threads == 0 || threads > 1024 || grid > 0x7fffffffu) {
    emu::last_error() = cudaErrorInvalidConfiguration;
    return;
  }
  struct Call {
    K kernel;
    std::tuple<A...> args;
    unsigned block, grid, threads;
  } call{kernel, std::tuple<A...>(args...), 0, grid, threads};
  auto body = [](void* p, unsigned t) {
    const Call& c = *static_cast<const Call*>(p);
    threadIdx = {t, 0, 0};
    blockIdx = {c.block, 0, 0};
    blockDim = dim3(c.threads);
    gridDim = dim3(c.grid);
    std::apply(c.kernel, c.args);
  };
  for (unsigned b = 0; b < grid; ++b) {
    call.block = b;
    try {
      emu::sequential = true;
      for (unsigned t = 0; t < threads; ++t) body(&call, t);
      emu::sequential = false;
    } catch (emu::NeedFibers&) {
      emu::sequential = false;
      emu::run_block_as_fibers(threads, body, &call);
    }
  }
}
