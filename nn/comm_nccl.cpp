// nn/comm_nccl.cpp — the communicator over NCCL, one process per GPU. NCCL's unique id is made on
// rank 0 and broadcast over MPI (the job is launched by mpirun); MPI also carries the barrier, the
// abort, the check that every rank passes the same size, and the collectives on CPU tensors.
// A one-rank job needs no mpirun: its id never leaves the process.
#ifdef HANDGRAD_WITH_NCCL
#include <cstdlib>

#include "cuda/nccl.h"
#include "engine/error.h"
#include "nn/comm.h"

namespace hg::nn {

namespace {

int local_rank() {  // this rank's index among the ranks on its machine (OpenMPI sets it)
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return v ? std::atoi(v) : 0;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator() : host_(std::getenv("OMPI_COMM_WORLD_SIZE") ? make_mpi_communicator() : make_single_communicator()) {
    cuda::NcclId id{};
    if (host_->rank() == 0) id = cuda::Nccl::unique_id();
    const Tensor bytes = index_tensor(std::vector<int64_t>(id.begin(), id.end()), {static_cast<int64_t>(id.size())});
    host_->broadcast(bytes, 0);
    const std::vector<int64_t> got = bytes.to_int_vector();
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(got[i]);
    const int gpus = cuda::Nccl::gpu_count();
    if (gpus < 1) fail("world", "rank {}: NCCL needs a GPU, and this machine has none", host_->rank());
    nccl_ = std::make_unique<cuda::Nccl>(id, host_->rank(), host_->size(), local_rank() % gpus);
  }
  const char* backend() const override { return "nccl"; }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  void broadcast(const Tensor& t, int root) override {
    if (t.device() != Device::cuda) return host_->broadcast(t, root);
    same_size("broadcast", t);
    nccl_->broadcast(t, root);
  }
  void all_reduce(const Tensor& t, Reduce how) override {
    if (t.device() != Device::cuda) return host_->all_reduce(t, how);
    same_size("all_reduce", t);
    nccl_->all_reduce(t, how == Reduce::average);
  }
  void barrier() override { host_->barrier(); }
  [[noreturn]] void abort(int code) override {
    nccl_->abort();
    host_->abort(code);
    std::_Exit(code);  // not reached: the compiler does not see [[noreturn]] through the virtual call
  }

 private:
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
  std::unique_ptr<Communicator> host_;
  std::unique_ptr<cuda::Nccl> nccl_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator() { return std::make_unique<NcclCommunicator>(); }

}  // namespace hg::nn
#endif  // HANDGRAD_WITH_NCCL
