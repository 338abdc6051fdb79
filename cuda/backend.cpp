// cuda/backend.cpp — the CudaBackend table (engine/backend.h): device discovery, memory, copies,
// fills and in-place updates (their host side in cuda/elementwise.cpp).
#include "engine/backend.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "cuda/allocator.h"
#include "cuda/device_ops.h"
#include "cuda/runtime.h"
#include "engine/error.h"

#ifndef HANDGRAD_CUDA_ARCHS
#define HANDGRAD_CUDA_ARCHS "?"
#endif

namespace hg {
namespace cuda {

cudaStream_t stream() { return nullptr; }  // the legacy default stream: one place to change it

const char* repo_path(const char* file) {
  const char* best = file;
  for (const char* p = std::strstr(file, "/cuda/"); p; p = std::strstr(p + 1, "/cuda/")) best = p + 1;
  return best;
}

void cuda_fail(cudaError_t e, const std::string& call, const char* file, int line, const std::string& hint) {
  (void)cudaGetLastError();  // a non-sticky error stays in the last-error slot; clear it
  std::string msg = fmt::format("cuda: {} failed: {} ({}) at {}:{}", call, cudaGetErrorString(e),
                                cudaGetErrorName(e), repo_path(file), line);
  if (!hint.empty()) msg += "; " + hint;
  throw Error(msg);
}

namespace {

// ---------------------------------------------------------------- device discovery

struct Probe {
  bool available = false;
  std::string summary;  // "NVIDIA H200, sm_90, ..." or why no device is usable
};

// Asks the runtime once: cudaGetDeviceCount returns an error code (never crashes) when the driver
// or the device is missing, and the answer cannot change during the process.
Probe run_probe() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return {false, fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e))};
  }
  if (count < 1) return {false, "cudaGetDeviceCount: 0 devices"};
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return {false, fmt::format("cudaGetDeviceProperties(0): {} ({})", cudaGetErrorString(e), cudaGetErrorName(e))};
  }
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  std::string what = fmt::format("{}, sm_{}{}, {:.0f} GiB, {} SMs, {} device(s); driver {}.{}, runtime {}.{}; "
                                 "built for CMAKE_CUDA_ARCHITECTURES={}",
                                 prop.name, prop.major, prop.minor, static_cast<double>(prop.totalGlobalMem) / (1u << 30),
                                 prop.multiProcessorCount, count, driver / 1000, driver % 1000 / 10, runtime / 1000,
                                 runtime % 1000 / 10, HANDGRAD_CUDA_ARCHS);
  // A device the build has no kernel image (or PTX) for is not usable: say so now, not at the first launch.
  e = probe_kernel_image();
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return {false, fmt::format("{}: no kernel image for this device: {} ({}); reconfigure with "
                               "-DCMAKE_CUDA_ARCHITECTURES={}{}",
                               what, cudaGetErrorString(e), cudaGetErrorName(e), prop.major, prop.minor)};
  }
  return {true, what};
}

const Probe& probe() {
  static const Probe p = run_probe();  // thread-safe, once
  return p;
}

bool device_available() { return probe().available; }
const char* device_summary() { return probe().summary.c_str(); }

// ---------------------------------------------------------------- copies

// h2d and d2h wait for the copy: the caller may free or read the host buffer as soon as we return.
void memcpy_h2d(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream()));
  HG_CUDA_CHECK(cudaStreamSynchronize(stream()));
  note_host_wait();  // an upload waits too: a training step uploads its batch before it starts
}

// The host waits here for the device, so this is also where the deferred index checks of the
// kernels before it are read (cuda/device_ops.h), in the same wait: a bad index throws at the
// first look at a result.
void memcpy_d2h(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream()));
  wait_for_stream();
}

void memcpy_d2d(void* dst, const void* src, size_t nbytes) {  // ordered on the stream, no wait
  if (nbytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream()));
}

void synchronize() { wait_for_stream(); }

const CudaBackend kBackend{
    .device_available = device_available,
    .device_summary = device_summary,
    .alloc = device_alloc,
    .free = device_free,
    .memcpy_h2d = memcpy_h2d,
    .memcpy_d2h = memcpy_d2h,
    .memcpy_d2d = memcpy_d2d,
    .synchronize = synchronize,
    .host_waits = host_waits,
    .copy = cuda::copy,
    .fill = cuda::fill,
    .axpy = cuda::axpy,
    .scale = cuda::scale,
};

}  // namespace
}  // namespace cuda

const CudaBackend* cuda_backend() { return &cuda::kBackend; }

}  // namespace hg
