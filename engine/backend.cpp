// engine/backend.cpp — the reason a CUDA tensor cannot be had, when it cannot.
#include "engine/backend.h"

#include "engine/error.h"

namespace hg {

const CudaBackend& require_cuda(const char* what) {
  const CudaBackend* b = cuda_backend();
  if (!b) fail(what, "a CUDA tensor was asked for, but handgrad was built without CUDA (configure with the CUDA "
               "toolkit installed, nvcc on PATH); use Device::cpu");
  if (!b->device_available())
    fail(what, "a CUDA tensor was asked for, but no usable GPU is present: {}; use Device::cpu", b->device_summary());
  return *b;
}

}  // namespace hg
