// nn/comm.cpp — the one-process communicator, what the launcher says (launch_info), and world():
// which communicator this process runs.
#include "nn/comm.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

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

// One launcher's variables (nn/comm.h lists them): `present` says it started this process; of a
// list, the first variable that is set is read.
struct LauncherVars {
  const char* name;
  const char* program;  // how an error names it
  const char* present;
  std::vector<const char*> size;
  const char* rank;
  std::vector<const char*> local_rank;
};

const std::vector<LauncherVars>& launchers() {  // in the order nn/comm.h gives
  static const std::vector<LauncherVars> table = {
      {"OpenMPI", "mpirun (OpenMPI)", "OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_SIZE"}, "OMPI_COMM_WORLD_RANK",
       {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"PMIx", "a PMIx launcher", "PMIX_RANK", {"PMIX_SIZE", "SLURM_STEP_NUM_TASKS"}, "PMIX_RANK",
       {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}},
      {"MPICH", "mpiexec (MPICH's hydra)", "PMI_SIZE", {"PMI_SIZE"}, "PMI_RANK", {"MPI_LOCALRANKID"}},
      {"MVAPICH2", "MVAPICH2's launcher", "MV2_COMM_WORLD_SIZE", {"MV2_COMM_WORLD_SIZE"}, "MV2_COMM_WORLD_RANK",
       {"MV2_COMM_WORLD_LOCAL_RANK"}},
      {"Slurm", "srun", "SLURM_STEP_ID", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, "SLURM_PROCID", {"SLURM_LOCALID"}},
  };
  return table;
}

const char* first_set(const Getenv& env, const std::vector<const char*>& vars) {
  for (const char* var : vars)
    if (env(var)) return var;
  return nullptr;
}

// The variable's value as a non-negative int; anything else is an hg::Error naming both.
int read_count(const Getenv& env, const char* var) {
  const std::string_view value = env(var);
  int n = -1;
  const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || err != std::errc() || end != value.data() + value.size() || n < 0)
    fail("launch_info", "{}='{}' is not a non-negative integer; the launcher sets it, so unset it if it was set by hand",
         var, value);
  return n;
}

const char* program_of(const LaunchInfo& launch) {
  for (const LauncherVars& l : launchers())
    if (launch.launcher == l.name) return l.program;
  return "the launcher";
}

// "rank 2 of 4" or, where the launcher does not say the size, "rank 2".
std::string ranks_of(const LaunchInfo& launch) {
  return launch.size > 0 ? fmt::format("rank {} of {}", launch.rank, launch.size) : fmt::format("rank {}", launch.rank);
}

std::unique_ptr<Communicator> make_world() {
  const LaunchInfo launch = launch_info();
  const char* forced = std::getenv("HANDGRAD_COMM");
  const std::string want = forced ? forced : launch.launched() ? "mpi" : "single";
  if (want != "single" && want != "mpi" && want != "nccl")
    fail("world", "HANDGRAD_COMM is '{}'; it must be single, mpi or nccl (or unset: mpi under mpirun or srun, single "
         "otherwise)", want);
  if (!comm_available(want)) {
    if (!forced)
      fail("world", "this process was started by {} as {}, but this build of handgrad has no MPI; install "
           "libopenmpi-dev (scripts/install-deps) and rebuild, or run without the launcher", program_of(launch),
           ranks_of(launch));
    fail("world", "HANDGRAD_COMM={} asks for a communicator this build does not have ({}); rebuild with it, or "
         "unset HANDGRAD_COMM", want,
         want == "mpi" ? "MPI was not found: install libopenmpi-dev" : "NCCL needs the CUDA toolkit's NCCL and MPI");
  }
  if (want == "mpi") return make_mpi_communicator();  // which checks the launcher's size against MPI's
  if (want == "nccl") return make_nccl_communicator();
  if (launch.launched())
    fail("world", "HANDGRAD_COMM=single, but {} started this process as {}: each rank would train alone; unset "
         "HANDGRAD_COMM", program_of(launch), ranks_of(launch));
  return make_single_communicator();
}

}  // namespace

std::unique_ptr<Communicator> make_single_communicator() { return std::make_unique<SingleProcess>(); }

LaunchInfo launch_info(const Getenv& env) {
  for (const LauncherVars& l : launchers()) {
    if (!env(l.present)) continue;
    LaunchInfo launch;
    launch.launcher = l.name;
    launch.size = 0;
    if (const char* var = first_set(env, l.size)) {
      launch.size_var = var;
      launch.size = read_count(env, var);
      if (launch.size == 0) fail("launch_info", "{}='0': a job has at least one rank", var);
    }
    if (!env(l.rank))
      fail("launch_info", "{} is set, so {} started this process, but {} (this process's rank) is not set", l.present,
           l.program, l.rank);
    launch.rank = read_count(env, l.rank);
    if (const char* var = first_set(env, l.local_rank)) launch.local_rank = read_count(env, var);
    if (launch.size > 0 && launch.rank >= launch.size)
      fail("launch_info", "{}='{}' is not a rank of a job of {}='{}' ranks (0 to {})", l.rank, launch.rank,
           launch.size_var, launch.size, launch.size - 1);
    if (launch.size > 0 && launch.local_rank >= launch.size)
      fail("launch_info", "{}='{}' is not a local rank of a job of {}='{}' ranks", first_set(env, l.local_rank),
           launch.local_rank, launch.size_var, launch.size);
    return launch;
  }
  return {};
}

LaunchInfo launch_info() {
  return launch_info([](const char* name) -> const char* { return std::getenv(name); });
}

void check_launch_size(const LaunchInfo& launch, int mpi_size) {
  if (launch.launcher.empty() || launch.size == 0 || launch.size == mpi_size) return;
  fail("world", "{} says {} ranks ({}={}), MPI_COMM_WORLD has {}: this handgrad's MPI is not the launcher's, and each "
       "rank would train alone; rebuild handgrad against the MPI that launches the job, or launch it with the mpirun "
       "of the MPI handgrad was built with", program_of(launch), launch.size, launch.size_var, launch.size, mpi_size);
}

namespace {
// Made by the first world() and never destroyed (nn/comm.h says why; untested, since it matters
// only after the last test has run).
Communicator* g_world = nullptr;
std::once_flag g_world_once;
}  // namespace

Communicator& world() {
  std::call_once(g_world_once, [] { g_world = make_world().release(); });
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
