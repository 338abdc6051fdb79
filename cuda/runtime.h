// cuda/runtime.h — the one way cuda/ calls the CUDA runtime: every call goes through
// HG_CUDA_CHECK, which turns a failure into an hg::Error naming the call, file and line;
// every kernel launch is followed by cudaGetLastError (the launchers return it, the caller
// checks it). All work runs on one stream, stream(), so that freeing a block and handing it
// out again is ordered after every kernel that used it (what makes the caching allocator safe).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace hg::cuda {

// The stream every copy and kernel runs on. For now the legacy default stream.
cudaStream_t stream();

// Throws hg::Error "cuda: <call> failed: <reason> (<cudaErrorName>) at <file>:<line>[; <hint>]".
// Clears the runtime's last-error slot first, so a later launch check does not report it twice.
[[noreturn]] void cuda_fail(cudaError_t e, const std::string& call, const char* file, int line,
                            const std::string& hint = {});

// "/work/main/cuda/backend.cpp" -> "cuda/backend.cpp": the path inside the repository.
const char* repo_path(const char* file);

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) cuda_fail(e, call, file, line);
}

}  // namespace hg::cuda

#define HG_CUDA_CHECK(call) ::hg::cuda::check((call), #call, __FILE__, __LINE__)
