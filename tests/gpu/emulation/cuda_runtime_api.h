// tests/gpu/emulation/cuda_runtime_api.h — a CPU emulation of the part of the CUDA runtime that
// handgrad uses, so that tests/gpu/emulation/run can execute cuda/*.cu and cuda/*.cpp with g++
// (and AddressSanitizer) on a machine without a GPU. A logic check — indexing, launch
// configurations, reductions and barriers, the status flags, the tests themselves — not a model
// of GPU numerics (no fused multiply-adds, host libm), timing or the driver.
//
// Device memory (memory.cpp) is host memory the host cannot touch: cudaMalloc maps pages of
// their own, filled with 0xFF (NaN as float32 and float64) so that an element a kernel forgets to
// write shows, each block ending right before a guard page, and keeps them PROT_NONE except
// inside an emulated kernel, cudaMemcpyAsync, cudaMemsetAsync or cuBLAS call (a DeviceScope).
// Host code that reads or writes a device pointer anywhere else stops with "host code read (or
// wrote) device memory at ..."; a kernel that runs past the end of a block stops at the guard page.
//
// A launch runs its blocks one after another; a block first runs its threads one after another,
// and if the kernel synchronises (__syncthreads, a shuffle) the block is run again as cooperative
// fibers (fibers.cpp), each barrier a round over all of them. Every round must end with every
// thread of the block waiting at the same barrier — the same call site, which
// std::source_location names — or with every thread returned; anything else (some threads
// returned, or waiting at another barrier: undefined behaviour on a GPU, a hang or corrupt values)
// stops the program with both sites named. Writes before a kernel's first barrier must be
// idempotent — true of every kernel in cuda/ (they reduce before they write).
#pragma once
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <source_location>
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

// ---- device memory (memory.cpp)
void* device_alloc(size_t n);   // page-protected, 0xFF-filled; nullptr when the mapping fails
bool device_free(void* p);      // false: p is not a live block of device_alloc
// While one is alive on a thread, that thread may touch device memory (a kernel, a copy, cuBLAS).
struct DeviceScope {
  DeviceScope();
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};

// ---- blocks and barriers (fibers.cpp)
struct Launch {  // where a kernel was launched (launch.py writes it at every launch)
  const char* kernel;
  const char* file;
  int line;
};
struct BlockRun {  // the block being run
  const Launch* launch;
  unsigned block, grid, threads;
};
struct NeedFibers {};                        // thrown at a barrier while a block runs sequentially
inline thread_local bool sequential = false;  // the block's threads run one after another
inline unsigned char* exchange() {            // the shuffles' mailbox, 16 bytes per thread
  alignas(16) static unsigned char buf[1024 * 16];
  return buf;
}
// Waits at the barrier `what` called at `site` until every thread of the block is there.
void wait_at_barrier(const char* what, const std::source_location& site);
void run_block_as_fibers(const BlockRun& run, void (*body)(void*, unsigned), void* arg);
// Kernels seen at a barrier: their later blocks go to the fibers straight away.
bool synchronises(const void* kernel);
void mark_synchronises(const void* kernel);
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // stderr, then abort
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
  *p = emu::device_alloc(n);
  return *p ? cudaSuccess : (emu::last_error() = cudaErrorMemoryAllocation);
}
inline cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  return emu::device_free(p) ? cudaSuccess : (emu::last_error() = cudaErrorInvalidValue);
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  emu::DeviceScope scope;
  if (n) std::memcpy(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  emu::DeviceScope scope;
  if (n) std::memset(d, v, n);
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

// A barrier is named by its call site: the default argument is filled in where the kernel (or a
// device function such as block_reduce) calls it.
inline void __syncthreads(std::source_location site = std::source_location::current()) {
  if (emu::sequential) throw emu::NeedFibers{};
  emu::wait_at_barrier("__syncthreads", site);
}
// Lane threadIdx.x ^ o's value. Only full-mask shuffles are emulated, and as a block-wide step:
// every thread of the block must call it at the same point (as block_reduce does), which is
// stricter than a GPU (there the 32 lanes of each warp must).
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int o, std::source_location site = std::source_location::current()) {
  static_assert(sizeof(T) <= 16);
  if (mask != 0xffffffffu || o <= 0 || o >= 32)
    emu::fail("emulation: __shfl_xor_sync(mask 0x%x, v, %d) at %s:%u: only full-mask shuffles with 0 < offset < 32 "
              "are emulated\n", mask, o, site.file_name(), static_cast<unsigned>(site.line()));
  if (emu::sequential) throw emu::NeedFibers{};
  emu::wait_at_barrier("__shfl_xor_sync (before its write)", site);  // everyone has read the previous exchange
  std::memcpy(emu::exchange() + threadIdx.x * 16, &v, sizeof(T));
  emu::wait_at_barrier("__shfl_xor_sync (before its read)", site);
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
// emu_launch({"kernel", __FILE__, __LINE__}, grid, threads, shmem, stream, kernel, args...).
template <typename K, typename... A>
void emu_launch(const emu::Launch& where, unsigned grid, unsigned threads, size_t, cudaStream_t, K kernel,
                A... args) {
  if (grid == 0 || threads == 0 || threads > 1024 || grid > 0x7fffffffu) {
    emu::last_error() = cudaErrorInvalidConfiguration;
    return;
  }
  struct Call {
    K kernel;
    std::tuple<A...> args;
    emu::BlockRun run;
  } call{kernel, std::tuple<A...>(args...), {&where, 0, grid, threads}};
  auto body = [](void* p, unsigned t) {
    const Call& c = *static_cast<const Call*>(p);
    threadIdx = {t, 0, 0};
    blockIdx = {c.run.block, 0, 0};
    blockDim = dim3(c.run.threads);
    gridDim = dim3(c.run.grid);
    std::apply(c.kernel, c.args);
  };
  const void* id = reinterpret_cast<const void*>(kernel);
  bool fibers = emu::synchronises(id);
  emu::DeviceScope scope;
  for (unsigned b = 0; b < grid; ++b) {
    call.run.block = b;
    if (!fibers) {
      try {
        emu::sequential = true;
        for (unsigned t = 0; t < threads; ++t) body(&call, t);
        emu::sequential = false;
        continue;
      } catch (emu::NeedFibers&) {
        emu::sequential = false;
        emu::mark_synchronises(id);
        fibers = true;
      }
    }
    emu::run_block_as_fibers(call.run, body, &call);
  }
}
