// engine/backend.h — what the engine and ops need from a device backend.
//
// cuda/ fills this table when the library is built with the CUDA toolkit; without it,
// cuda_backend() returns nullptr and asking for a CUDA tensor throws "built without CUDA".
// Keeping the table here lets engine/ and ops/ dispatch to cuda/ without including it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/dtype.h"

namespace hg {

struct CudaBackend {
  bool (*device_available)();      // a usable GPU is present
  const char* (*device_summary)();  // e.g. "NVIDIA H200, sm_90" or why none is usable
  void* (*alloc)(size_t nbytes);
  void (*free)(void* p);
  void (*memcpy_h2d)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2h)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2d)(void* dst, const void* src, size_t nbytes);
  // Kernels. Operands are contiguous; `rows x cols` with the reduced dimension last.
  void (*softmax_lastdim)(const void* x, void* y, int64_t rows, int64_t cols, DType t);
};

const CudaBackend* cuda_backend();  // nullptr in a build without CUDA
// The backend or an Error naming `op` that says why CUDA cannot be used.
const CudaBackend& require_cuda(const char* op);

}  // namespace hg
