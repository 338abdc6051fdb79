// nn/comm_nccl.cpp — the communicator over NCCL, one process per GPU (the launcher's local rank
// picks it). NCCL's unique id is made on rank 0 and broadcast over MPI (the job is started by a
// launcher: nn/comm.h, launch_info); MPI also carries the barrier, the abort, the check that every
// rank passes the same size, and the collectives on CPU tensors. A one-rank job needs no launcher:
// its id never leaves the process. After each collective the host waits for it, polling NCCL's
// asynchronous error and a time limit (nn/comm_wait.h), and ends the job when either trips.
#ifdef HANDGRAD_WITH_NCCL
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cuda/nccl.h"
#include "engine/backend.h"
#include "engine/error.h"
#include "nn/comm.h"
#include "nn/comm_wait.h"

namespace hg::nn {

namespace {

const char* real_getenv(const char* name) { return std::getenv(name); }

constexpr int kCollectiveFailed = 1;  // the exit status of a job ended by a lost collective

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const LaunchInfo& launch)
      : timeout_s_(collective_timeout_s(real_getenv)),
        host_(launch.launched() ? make_mpi_communicator() : make_single_communicator()) {
    const CudaBackend* cu = cuda_backend();
    if (!cu || !cu->device_available())
      fail("world", "rank {}: HANDGRAD_COMM=nccl needs a GPU on every rank, but there is no usable GPU here ({}); run on "
           "a GPU machine, or unset HANDGRAD_COMM", host_->rank(), cu ? cu->device_summary() : "built without CUDA");
    cuda::NcclId id{};
    if (host_->rank() == 0) id = cuda::Nccl::unique_id();
    const Tensor bytes = index_tensor(std::vector<int64_t>(id.begin(), id.end()), {static_cast<int64_t>(id.size())});
    host_->broadcast(bytes, 0);
    const std::vector<int64_t> got = bytes.to_int_vector();
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(got[i]);
    const int gpus = cuda::Nccl::gpu_count();
    if (gpus < 1) fail("world", "rank {}: NCCL needs a GPU, and this machine has none", host_->rank());
    nccl_ = std::make_unique<cuda::Nccl>(id, host_->rank(), host_->size(), launch.local_rank % gpus);
  }
  const char* backend() const override { return "nccl"; }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  void broadcast(const Tensor& t, int root) override {
    if (t.device() != Device::cuda) return host_->broadcast(t, root);
    same_size("broadcast", t);
    nccl_->broadcast(t, root);
    wait("broadcast");
  }
  void all_reduce(const Tensor& t, Reduce how) override {
    if (t.device() != Device::cuda) return host_->all_reduce(t, how);
    same_size("all_reduce", t);
    nccl_->all_reduce(t, how == Reduce::average);
    wait("all_reduce");
  }
  void barrier() override { host_->barrier(); }
  [[noreturn]] void abort(int code) override {
    if (nccl_) nccl_->abort();
    host_->abort(code);
    std::_Exit(code);  // not reached: the compiler does not see [[noreturn]] through the virtual call
  }

 private:
  // The host waits for the collective it just queued. The message goes out before ncclCommAbort,
  // so that it is on stderr even if the abort itself should hang; then MPI ends every rank.
  void wait(const char* op) {
    const CollectiveWait hooks{
        [this] { return nccl_->finished(); },
        [this] { return nccl_->async_error(); },
        [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); },
        [this](const std::string& message) {
          std::fflush(stdout);
          std::fprintf(stderr, "error on %s\n", message.c_str());
          std::fflush(stderr);
          abort(kCollectiveFailed);
        }};
    wait_for_collective(fmt::format("rank {} of {} (nccl)", rank(), size()), op, timeout_s_, hooks);
  }

  // Every rank's element count against rank 0's, over MPI (a mismatch would make NCCL read past a
  // buffer): rank 0's count is broadcast, and the mismatches are summed so every rank sees them.
  void same_size(const char* op, const Tensor& t) {
    if (host_->size() == 1) return;
    const Tensor n = index_tensor({t.numel()}, {1});
    host_->broadcast(n, 0);
    const int64_t root_n = n.to_int_vector()[0];
    const Tensor bad = tensor({root_n != t.numel() ? 1.0 : 0.0}, {1}, DType::f64);
    host_->all_reduce(bad, Reduce::sum);
    if (bad.item() != 0)
      fail(op, "rank {} passes {}, rank 0 a tensor of {} elements: every rank must pass the same shape", rank(),
           t.describe(), root_n);
  }
  double timeout_s_;  // read first: a malformed HANDGRAD_NCCL_TIMEOUT_S fails before any collective
  std::unique_ptr<Communicator> host_;
  std::unique_ptr<cuda::Nccl> nccl_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator() { return std::make_unique<NcclCommunicator>(launch_info()); }

}  // namespace hg::nn
#endif  // HANDGRAD_WITH_NCCL
