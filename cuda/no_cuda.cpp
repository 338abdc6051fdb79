// cuda/no_cuda.cpp — compiled instead of the CUDA backend when CMake finds no CUDA toolkit.
#include "engine/backend.h"

namespace hg {
const CudaBackend* cuda_backend() { return nullptr; }
}  // namespace hg
