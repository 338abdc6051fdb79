// nn/comm.h's launch_info on fake environments (one per launcher), its refusals, and
// nn/comm_wait.h's wait for a collective, driven by stand-ins for the stream, NCCL and the clock.
// (That world() is never destroyed, so that NCCL is torn down by its exit handler before the CUDA
// runtime goes, is not tested: it happens after the last test, where nothing can report on it.)
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "handgrad.h"
#include "nn/comm_wait.h"

using namespace hg;

namespace {

using Env = std::map<std::string, std::string>;

nn::LaunchInfo launch(const Env& env) {
  return nn::launch_info([&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

void check_launch(const nn::LaunchInfo& got, const std::string& launcher, int size, int rank, int local_rank) {
  CHECK(got.launcher == launcher);
  CHECK(got.size == size);
  CHECK(got.rank == rank);
  CHECK(got.local_rank == local_rank);
}

}  // namespace

TEST_CASE("launch_info: each launcher's variables give the size, the rank and the local rank") {
  // Slurm's variables are there in each: mpirun inside an allocation still wins over them.
  const Env slurm = {{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}};
  Env env = slurm;
  env.insert({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  check_launch(launch(env), "OpenMPI", 4, 3, 1);
  CHECK(launch(env).size_var == "OMPI_COMM_WORLD_SIZE");

  env = slurm;
  env.insert({{"PMIX_RANK", "2"}, {"PMIX_SIZE", "3"}});
  check_launch(launch(env), "PMIx", 3, 2, 0);
  check_launch(launch({{"PMIX_RANK", "5"}, {"SLURM_STEP_NUM_TASKS", "6"}, {"SLURM_LOCALID", "1"}}), "PMIx", 6, 5, 1);
  const nn::LaunchInfo unsized = launch({{"PMIX_RANK", "1"}});  // no variable says the size: MPI will
  check_launch(unsized, "PMIx", 0, 1, 0);
  CHECK(unsized.launched());

  env = slurm;
  env.insert({{"PMI_SIZE", "4"}, {"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "2"}});
  check_launch(launch(env), "MPICH", 4, 2, 2);

  env = slurm;
  env.insert({{"MV2_COMM_WORLD_SIZE", "2"}, {"MV2_COMM_WORLD_RANK", "1"}, {"MV2_COMM_WORLD_LOCAL_RANK", "1"}});
  check_launch(launch(env), "MVAPICH2", 2, 1, 1);

  check_launch(launch({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}}),
               "Slurm", 4, 3, 1);
  // An srun step of 2 inside an allocation of 8: the step's own count.
  check_launch(launch({{"SLURM_STEP_ID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_NTASKS", "8"},
                       {"SLURM_PROCID", "1"}}),
               "Slurm", 2, 1, 0);
  CHECK(launch(slurm).launched());
}

TEST_CASE("launch_info: no launcher, a batch script, and a one-rank launch are one process") {
  const nn::LaunchInfo none = launch({});
  check_launch(none, "", 1, 0, 0);
  CHECK_FALSE(none.launched());
  // sbatch's script holds the allocation's SLURM_NTASKS but is no job step (no SLURM_STEP_ID).
  const nn::LaunchInfo batch = launch({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}});
  check_launch(batch, "", 1, 0, 0);
  CHECK_FALSE(batch.launched());
  const nn::LaunchInfo one = launch({{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  check_launch(one, "OpenMPI", 1, 0, 0);
  CHECK_FALSE(one.launched());
}

TEST_CASE("launch_info: a malformed value is refused, naming the variable and its value") {
  const auto refused = [](const Env& env, const std::string& text) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(launch(env), doctest::Contains(text.c_str()), Error);
  };
  refused({{"OMPI_COMM_WORLD_SIZE", "four"}, {"OMPI_COMM_WORLD_RANK", "0"}},
          "OMPI_COMM_WORLD_SIZE='four' is not a non-negative integer");
  refused({{"PMI_SIZE", "4"}, {"PMI_RANK", "-1"}}, "PMI_RANK='-1' is not a non-negative integer");
  refused({{"PMI_SIZE", "4"}, {"PMI_RANK", "1x"}}, "PMI_RANK='1x' is not a non-negative integer");
  refused({{"PMI_SIZE", "4"}, {"PMI_RANK", ""}}, "PMI_RANK='' is not a non-negative integer");
  refused({{"PMI_SIZE", "4"}, {"PMI_RANK", "99999999999"}}, "PMI_RANK='99999999999' is not a non-negative integer");
  refused({{"MV2_COMM_WORLD_SIZE", "0"}, {"MV2_COMM_WORLD_RANK", "0"}}, "MV2_COMM_WORLD_SIZE='0': a job has at least");
  refused({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "4"}},
          "SLURM_PROCID='4' is not a rank of a job of SLURM_NTASKS='4' ranks (0 to 3)");
  refused({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}},
          "OMPI_COMM_WORLD_LOCAL_RANK='2' is not a local rank of a job of OMPI_COMM_WORLD_SIZE='2' ranks");
  refused({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "x"}},
          "SLURM_LOCALID='x' is not a non-negative integer");
  refused({{"OMPI_COMM_WORLD_SIZE", "2"}},
          "OMPI_COMM_WORLD_SIZE is set, so mpirun (OpenMPI) started this process, but OMPI_COMM_WORLD_RANK");
}

TEST_CASE("launch_info: a launcher's rank count that differs from MPI_COMM_WORLD's is refused, naming both") {
  const nn::LaunchInfo srun = launch({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "2"}});
  CHECK_THROWS_WITH_AS(nn::check_launch_size(srun, 1),
                       doctest::Contains("srun says 4 ranks (SLURM_NTASKS=4), MPI_COMM_WORLD has 1: this handgrad's "
                                         "MPI is not the launcher's"),
                       Error);
  const nn::LaunchInfo hydra = launch({{"PMI_SIZE", "2"}, {"PMI_RANK", "0"}});
  CHECK_THROWS_WITH_AS(nn::check_launch_size(hydra, 3),
                       doctest::Contains("mpiexec (MPICH's hydra) says 2 ranks (PMI_SIZE=2), MPI_COMM_WORLD has 3"),
                       Error);
  CHECK_NOTHROW(nn::check_launch_size(srun, 4));
  CHECK_NOTHROW(nn::check_launch_size(launch({}), 3));                     // HANDGRAD_COMM=mpi with no launcher
  CHECK_NOTHROW(nn::check_launch_size(launch({{"PMIX_RANK", "0"}}), 5));  // the launcher does not say
}

namespace {

// A clock that moves a second per reading, and an abort that records why and returns (so that
// wait_for_collective throws): a wait of 600 s takes a few hundred polls and no time.
struct StandIns {
  double t = 0;
  int polls = 0;
  int aborts = 0;
  std::string why;
  nn::CollectiveWait hooks(int done_after, std::string async_error = {}) {
    return {[this, done_after] { return ++polls > done_after; }, [async_error] { return async_error; },
            [this] { return t += 1; },
            [this](const std::string& message) {
              ++aborts;
              why = message;
            }};
  }
};

const std::string kRank = "rank 1 of 2 (nccl)";

}  // namespace

TEST_CASE("wait_for_collective: a collective that finishes returns, and nothing is aborted") {
  StandIns s;
  CHECK_NOTHROW(nn::wait_for_collective(kRank, "all_reduce", 600, s.hooks(3)));
  CHECK(s.polls == 4);
  CHECK(s.aborts == 0);
}

TEST_CASE("wait_for_collective: a collective that never finishes times out, aborting with the rank named") {
  StandIns s;
  CHECK_THROWS_WITH_AS(nn::wait_for_collective(kRank, "all_reduce", 600, s.hooks(1 << 30)),
                       doctest::Contains("rank 1 of 2 (nccl): all_reduce: not finished after 600 s "
                                         "(HANDGRAD_NCCL_TIMEOUT_S), and NCCL reports no error"),
                       Error);
  CHECK(s.aborts == 1);
  CHECK(s.why.rfind("rank 1 of 2 (nccl): all_reduce: not finished after 600 s", 0) == 0);
  CHECK(s.t > 600);
  CHECK(s.t < 700);
  // An abort that does not return (the real one ends the process) is left to do so: here it throws.
  nn::CollectiveWait throwing = s.hooks(1 << 30);
  throwing.abort = [](const std::string& message) { throw std::runtime_error("ended: " + message); };
  CHECK_THROWS_WITH_AS(nn::wait_for_collective(kRank, "broadcast", 5, throwing),
                       doctest::Contains("ended: rank 1 of 2 (nccl): broadcast: not finished after 5 s"),
                       std::runtime_error);
}

TEST_CASE("wait_for_collective: NCCL's asynchronous error aborts at once, with NCCL's message") {
  StandIns s;
  const std::string nccl = "remote process exited or there was a network error (NET/IB: connection closed)";
  CHECK_THROWS_WITH_AS(nn::wait_for_collective(kRank, "all_reduce", 600, s.hooks(1 << 30, nccl)),
                       doctest::Contains(("rank 1 of 2 (nccl): all_reduce: NCCL reports an asynchronous error: " + nccl).c_str()),
                       Error);
  CHECK(s.aborts == 1);
  CHECK(s.polls == 1);
  CHECK(s.why == "rank 1 of 2 (nccl): all_reduce: NCCL reports an asynchronous error: " + nccl);
}

TEST_CASE("collective_timeout_s: HANDGRAD_NCCL_TIMEOUT_S in seconds, 600 when unset, refused when malformed") {
  const auto timeout = [](const char* value) {
    return nn::collective_timeout_s([value](const char* name) -> const char* {
      return std::string(name) == "HANDGRAD_NCCL_TIMEOUT_S" ? value : nullptr;
    });
  };
  CHECK(timeout(nullptr) == 600);
  CHECK(timeout("30") == 30);
  CHECK(timeout("0.5") == 0.5);
  for (const char* bad : {"", "ten", "10s", "0", "-5", "inf", "nan"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(timeout(bad),
                         doctest::Contains(
                             (std::string("HANDGRAD_NCCL_TIMEOUT_S='") + bad + "' is not a positive number of seconds")
                                 .c_str()),
                         Error);
  }
}
