// cuda/nccl.h — NCCL's collectives on device tensors, for nn/comm_nccl.cpp (compiled when CMake
// finds NCCL beside the CUDA toolkit). Plain C++: no CUDA or NCCL header. The collectives run on
// the backend's stream, after the work already queued there, so no host wait is needed before them;
// the host's wait after them polls finished() and async_error() (nn/comm_wait.h).
//
// Teardown: the communicators are finalized and destroyed by an exit handler, before the CUDA
// runtime shuts down (cuda/nccl.cpp says why); ~Nccl does it earlier for one destroyed before exit.
#pragma once
#include <array>
#include <memory>
#include <string>

#include "engine/tensor.h"

namespace hg::cuda {

using NcclId = std::array<char, 128>;  // ncclUniqueId's bytes, to send to the other ranks

class Nccl {
 public:
  static NcclId unique_id();  // made on one rank (rank 0) and shared with the others
  // One rank of `size` on GPU `gpu` (made current); every rank calls it with the same id.
  Nccl(const NcclId& id, int rank, int size, int gpu);
  static int gpu_count();
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  // On contiguous CUDA tensors: f32 or f64 for all_reduce, any dtype for broadcast.
  void all_reduce(const Tensor& t, bool average);
  void broadcast(const Tensor& t, int root);
  bool finished() const;           // has everything queued on the stream, the collectives too, run?
  std::string async_error() const;  // ncclCommGetAsyncError's error and NCCL's last message; "" while none
  void abort();  // ncclCommAbort: leaves no collective waiting on a rank that is gone

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace hg::cuda
