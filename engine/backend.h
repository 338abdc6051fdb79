// engine/backend.h — what the engine itself needs from a GPU: memory, copies, fills, the
// in-place updates of Tensor (copy_, fill_, add_, mul_), and waiting for the device.
//
// cuda/ fills this table when the library is built with the CUDA toolkit; without it,
// cuda_backend() returns nullptr and asking for a CUDA tensor throws "built without CUDA".
// Keeping the table here lets engine/ use the device without including cuda/. The engine knows
// no op: the ops' kernels are declared beside them in cuda/ (cuda/ops.h) and called from ops/
// through on_device() (ops/device.h).
//
// Common rules of the Tensor entries:
//   - Operands are CUDA tensors of any strides and offset; src may broadcast (a stride-0 view).
//   - They write their destination in place and do not bump its version: the caller
//     (Tensor::copy_, ...) does.
//   - Work is queued on the one stream and no entry waits for the device. Kernels that check
//     values on the device report a failure at the next copy to the host or synchronize(), which
//     throw its hg::Error (cuda/device_ops.h, "deferred checks").
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/dtype.h"
#include "engine/tensor.h"

namespace hg {

struct CudaBackend {
  bool (*device_available)();       // a usable GPU is present
  const char* (*device_summary)();  // e.g. "NVIDIA H200, sm_90" or why none is usable
  void* (*alloc)(size_t nbytes);
  void (*free)(void* p);
  void (*memcpy_h2d)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2h)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2d)(void* dst, const void* src, size_t nbytes);
  // Waits until every queued kernel and copy has finished (benchmarks, timing), then reads the
  // deferred checks and throws the first failure.
  void (*synchronize)();
  // How many times the host has waited for the device so far: copies to the host, synchronize(),
  // status reads. A training step that leaves it unchanged never waited for the host.
  uint64_t (*host_waits)();

  // dst[i] = src[i] converted to dst's dtype by the CPU copy_'s rule (engine/convert.h; a float
  // with no int64 value is a deferred Error, written as 0), any dtype pair (f32, f64, i64, b8);
  // src broadcasts to dst's shape; dst may be a strided view. Overlapping dst and src give
  // undefined results.
  void (*copy)(const Tensor& dst, const Tensor& src);
  // dst[i] = value converted to dst's dtype (engine/convert.h; a value with no int64 value into
  // an i64 dst is an Error at once), any dtype, any strides.
  void (*fill)(const Tensor& dst, double value);
  // dst += alpha · src (Tensor::add_: gradient accumulation); src broadcasts to dst.
  void (*axpy)(const Tensor& dst, const Tensor& src, double alpha);
  // dst *= factor (Tensor::mul_).
  void (*scale)(const Tensor& dst, double factor);
};

const CudaBackend* cuda_backend();  // nullptr in a build without CUDA
// The backend or an Error naming `what` (the caller) that says why CUDA cannot be used.
const CudaBackend& require_cuda(const char* what);

}  // namespace hg
