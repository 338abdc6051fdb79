// nn/comm_mpi.cpp — the communicator over MPI (OpenMPI from Debian), one process per rank; its size
// must be the launcher's (nn/comm.h: check_launch_size).
//
// all_reduce is a reduce-scatter then an all-gather, both by hand over MPI_Alltoallv and
// MPI_Allgatherv, so that the order of the sum is ours and fixed: rank k owns the k-th of N
// nearly equal chunks, receives every rank's copy of it, adds them in rank order 0, 1, …, N − 1,
// and the reduced chunks are gathered back to every rank. (MPI_Allreduce leaves the order to the
// library's choice of algorithm, which may differ between message sizes, rank counts and ranks.)
// The traffic is that of a ring all-reduce: each rank sends and receives 2 (N − 1)/N of the buffer.
#ifdef HANDGRAD_WITH_MPI
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include "engine/error.h"
#include "engine/tape.h"
#include "nn/comm.h"

namespace hg::nn {

namespace {

void init_mpi_once() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

MPI_Datatype mpi_type(const char* op, const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::b8: return MPI_UINT8_T;
  }
  fail(op, "{} has a dtype MPI cannot carry", t.describe());
}

template <typename T>
void add_into(T* acc, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

template <typename T>
void divide(T* x, int64_t n, int ranks) {
  const T r = static_cast<T>(ranks);
  for (int64_t i = 0; i < n; ++i) x[i] /= r;
}

class Mpi final : public Communicator {
 public:
  Mpi() {
    // Read before MPI_Init: OpenMPI's init of a process no launcher of its own started (a
    // singleton: srun or hydra starting ranks of an OpenMPI build) sets OMPI_COMM_WORLD_SIZE=1.
    const LaunchInfo launch = launch_info();
    init_mpi_once();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    check_launch_size(launch, size_);
  }
  const char* backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void broadcast(const Tensor& t, int root) override {
    const char* op = "broadcast";
    if (root < 0 || root >= size_) fail(op, "root {} is not a rank of this {}-rank job", root, size_);
    Staged s = stage(op, t);
    const MPI_Datatype type = mpi_type(op, s.host);
    char* p = static_cast<char*>(s.host.raw_data());
    const int64_t esz = dtype_size(s.host.dtype());
    for (int64_t off = 0; off < s.host.numel(); off += kPiece) {
      const int64_t n = std::min<int64_t>(kPiece, s.host.numel() - off);
      MPI_Bcast(p + off * esz, static_cast<int>(n), type, root, MPI_COMM_WORLD);
    }
    s.finish(t);
  }

  void all_reduce(const Tensor& t, Reduce how) override {
    const char* op = "all_reduce";
    if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
      fail(op, "{}: only f32 and f64 tensors are summed; convert it with to(DType::f32) first", t.describe());
    Staged s = stage(op, t);
    if (s.host.dtype() == DType::f32) reduce<float>(s.host, how);
    else reduce<double>(s.host, how);
    s.finish(t);
  }

  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
  }

 private:
  static constexpr int64_t kPiece = INT_MAX / 2;  // elements per MPI call: MPI counts are ints

  // A CPU tensor to work on in place: t itself, or a host copy of a GPU tensor written back by finish().
  struct Staged {
    Tensor host;
    bool copied = false;
    void finish(const Tensor& t) const {
      if (!copied) return;
      NoGradGuard ng;
      Tensor dst = t;
      dst.copy_(host.to(t.device()));
    }
  };

  // Checks t and that every rank passes the same element count and dtype (one small all-reduce).
  Staged stage(const char* op, const Tensor& t) {
    if (!t.defined()) fail(op, "the tensor is undefined");
    if (!t.is_contiguous()) fail(op, "{} must be contiguous (call contiguous() and pass that)", t.describe());
    long long mine[4] = {t.numel(), -t.numel(), static_cast<long long>(t.dtype()), -static_cast<long long>(t.dtype())};
    long long all[4];
    MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (all[0] != -all[1] || all[2] != -all[3])
      fail(op, "rank {} passes {}, but the ranks' tensors differ in size or dtype (from {} to {} elements); every rank "
           "must pass the same shape", rank_, t.describe(), -all[1], all[0]);
    if (t.device() == Device::cpu) return {t, false};
    return {t.detach().to(Device::cpu), true};
  }

  template <typename T>
  void reduce(const Tensor& host, Reduce how) {
    T* x = host.data_ptr<T>();
    const int64_t n = host.numel();
    const int64_t per_call = kPiece / size_ * size_;  // whole chunks per piece, each count an int
    for (int64_t off = 0; off < n; off += per_call) reduce_piece(x + off, std::min(per_call, n - off), how);
  }

  // Sum (and mean) of x[0, n) over the ranks, in rank order, into every rank's x.
  template <typename T>
  void reduce_piece(T* x, int64_t n, Reduce how) {
    const MPI_Datatype type = sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE;
    const int N = size_;
    std::vector<int> count(static_cast<size_t>(N)), displ(static_cast<size_t>(N));
    for (int k = 0; k < N; ++k) {
      const int64_t lo = n * k / N, hi = n * (k + 1) / N;
      displ[static_cast<size_t>(k)] = static_cast<int>(lo);
      count[static_cast<size_t>(k)] = static_cast<int>(hi - lo);
    }
    const int mine = count[static_cast<size_t>(rank_)];
    // Every rank's copy of my chunk, rank k's at [k * mine, (k + 1) * mine).
    std::vector<T> gathered(static_cast<size_t>(mine) * static_cast<size_t>(N));
    std::vector<int> recv_count(static_cast<size_t>(N), mine), recv_displ(static_cast<size_t>(N));
    for (int k = 0; k < N; ++k) recv_displ[static_cast<size_t>(k)] = k * mine;
    MPI_Alltoallv(x, count.data(), displ.data(), type, gathered.data(), recv_count.data(), recv_displ.data(), type,
                  MPI_COMM_WORLD);
    T* chunk = x + displ[static_cast<size_t>(rank_)];
    std::copy(gathered.begin(), gathered.begin() + mine, chunk);
    for (int k = 1; k < N; ++k) add_into(chunk, gathered.data() + static_cast<size_t>(k) * static_cast<size_t>(mine), mine);
    if (how == Reduce::average) divide(chunk, mine, N);
    MPI_Allgatherv(MPI_IN_PLACE, 0, type, x, count.data(), displ.data(), type, MPI_COMM_WORLD);
  }

  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<Mpi>(); }

}  // namespace hg::nn
#endif  // HANDGRAD_WITH_MPI
