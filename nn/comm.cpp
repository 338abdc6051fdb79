// nn/comm.cpp — the one-process communicator, and world(): which communicator this process runs.
#include "nn/comm.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "engine/error.h"

namespace hg::nn {

namespace {

class SingleProcess final : public Communicator {
 public:
  const char* backend() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void broadcast(const Tensor& t, int root) override {
    if (root != 0) fail("broadcast", "root {} is not a rank of this one-process job (rank 0 only)", root);
    if (!t.is_contiguous()) fail("broadcast", "{} must be contiguous", t.describe());
  }
  void all_reduce(const Tensor& t, Reduce) override {
    if (!t.is_contiguous()) fail("all_reduce", "{} must be contiguous", t.describe());
  }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

// A launcher's word that this process is one rank of several (OpenMPI's mpirun, or a PMI one).
int launched_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

std::unique_ptr<Communicator> make_world() {
  const char* forced = std::getenv("HANDGRAD_COMM");
  const std::string want = forced ? forced : launched_ranks() > 0 ? "mpi" : "single";
  if (want != "single" && want != "mpi" && want != "nccl")
    fail("world", "HANDGRAD_COMM is '{}'; it must be single, mpi or nccl (or unset: mpi under mpirun, single otherwise)",
         want);
  if (!comm_available(want)) {
    if (!forced)
      fail("world", "this process was started by mpirun ({} ranks), but this build of handgrad has no MPI; install "
           "libopenmpi-dev (scripts/install-deps) and rebuild, or run without mpirun", launched_ranks());
    fail("world", "HANDGRAD_COMM={} asks for a communicator this build does not have ({}); rebuild with it, or "
         "unset HANDGRAD_COMM", want,
         want == "mpi" ? "MPI was not found: install libopenmpi-dev" : "NCCL needs the CUDA toolkit's NCCL and MPI");
  }
  if (want == "mpi") return make_mpi_communicator();
  if (want == "nccl") return make_nccl_communicator();
  if (launched_ranks() > 1)
    fail("world", "HANDGRAD_COMM=single, but mpirun started {} ranks: each would train alone; unset HANDGRAD_COMM",
         launched_ranks());
  return make_single_communicator();
}

}  // namespace

std::unique_ptr<Communicator> make_single_communicator() { return std::make_unique<SingleProcess>(); }

namespace {
std::unique_ptr<Communicator> g_world;  // made by the first world(), kept until exit
std::once_flag g_world_once;
}  // namespace

Communicator& world() {
  std::call_once(g_world_once, [] { g_world = make_world(); });
  return *g_world;
}

bool comm_available(const std::string& backend) {
  if (backend == "single") return true;
#ifdef HANDGRAD_WITH_MPI
  if (backend == "mpi") return true;
#endif
#ifdef HANDGRAD_WITH_NCCL
  if (backend == "nccl") return true;
#endif
  return false;
}

std::string rank_label() {
  if (!g_world) return {};  // never made: a one-process run, or world() itself failed
  const Communicator& w = *g_world;
  return w.size() > 1 ? "rank " + std::to_string(w.rank()) + " of " + std::to_string(w.size()) + " (" + w.backend() + ")"
                      : std::string();
}

void abort_job_if_parallel(int code) {
  if (g_world && g_world->size() > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    g_world->abort(code);
  }
}

#ifndef HANDGRAD_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator() {
  fail("make_mpi_communicator", "this build of handgrad has no MPI; install libopenmpi-dev and rebuild");
}
#endif
#ifndef HANDGRAD_WITH_NCCL
std::unique_ptr<Communicator> make_nccl_communicator() {
  fail("make_nccl_communicator", "this build of handgrad has no NCCL (it needs the CUDA toolkit's NCCL and MPI)");
}
#endif

}  // namespace hg::nn
