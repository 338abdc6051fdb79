// nn/comm.h — the few collectives data-parallel training needs, behind one small interface:
// broadcast, all-reduce (sum or average) of a flat buffer, barrier, and abort.
//
// Three implementations, chosen once per process by world():
//   single  one process; every collective leaves the buffer as it is (the default)
//   mpi     one process per rank, started by an MPI launcher (mpirun, mpiexec, srun), on CPU
//           tensors; a GPU tensor is staged through the host (compiled when CMake finds MPI)
//   nccl    one process per GPU, NCCL's unique id shared over MPI (compiled when CUDA, NCCL and MPI
//           are all found); a one-rank job may run without a launcher. The host waits for each
//           collective, and ends the job on NCCL's asynchronous error or after
//           HANDGRAD_NCCL_TIMEOUT_S seconds (600 by default; nn/comm_wait.h)
// HANDGRAD_COMM=single|mpi|nccl forces one; otherwise a process that a launcher started as one
// rank of several (launch_info() below) gets mpi, any other gets single.
//
// The sum has a fixed order — element k is ((x₀ + x₁) + x₂) + … over ranks 0, 1, 2, … on every
// rank — so the same inputs give the same bits on every rank and every run (mpi; NCCL's ring has
// its own fixed order for a fixed rank count).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "engine/tensor.h"

namespace hg::nn {

enum class Reduce { sum, average };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const char* backend() const = 0;  // "single", "mpi" or "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank passes a contiguous tensor of the same shape and dtype (f32 or f64; broadcast also
  // i64 and bool). broadcast overwrites it with rank `root`'s values; all_reduce with the sum (or
  // the mean) over the ranks. A shape that differs between ranks is an hg::Error on every rank.
  virtual void broadcast(const Tensor& t, int root = 0) = 0;
  virtual void all_reduce(const Tensor& t, Reduce op) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job with `code` (MPI_Abort): what a rank calls when it cannot go on,
  // so that the others do not wait for it forever.
  [[noreturn]] virtual void abort(int code) = 0;
};

// The process's communicator (see above), made on first use and never destroyed: static
// destruction runs after the CUDA runtime has shut down, too late to tear NCCL down (cuda/nccl.cpp
// does that in an exit handler of its own, as the allocator and cuBLAS handle are leaked likewise).
Communicator& world();

// What the launcher says about this process: which launcher, the job's rank count, this
// process's rank, and its index among the ranks on its machine (which GPU it takes). Read from
// the environment, the first of these that is present winning:
//   OpenMPI   OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK
//   PMIx      PMIX_RANK; size from PMIX_SIZE or SLURM_STEP_NUM_TASKS (srun --mpi=pmix), local rank
//             from OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID, where present
//   MPICH     PMI_SIZE, PMI_RANK, MPI_LOCALRANKID (hydra's mpiexec, Intel MPI)
//   MVAPICH2  MV2_COMM_WORLD_SIZE, MV2_COMM_WORLD_RANK, MV2_COMM_WORLD_LOCAL_RANK
//   Slurm     SLURM_STEP_NUM_TASKS or SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID, in a job step only
//             (SLURM_STEP_ID set: srun); a batch script holds SLURM_NTASKS of the whole allocation
//             and is no rank of it
// Slurm is last because its variables reach everything in an allocation, mpirun's ranks too.
// A missing local rank is 0. A value that is not an integer, is negative, or a rank not below
// the size is an hg::Error naming the variable and its value.
struct LaunchInfo {
  std::string launcher;  // "OpenMPI", "PMIx", "MPICH", "MVAPICH2", "Slurm"; "" when none
  std::string size_var;  // the variable the size came from ("" when none says it)
  int size = 1;          // 0: the launcher does not say (PMIx without a size variable)
  int rank = 0;
  int local_rank = 0;
  // One rank of several (or of a count the launcher does not say): a job for MPI to join.
  bool launched() const { return !launcher.empty() && size != 1; }
};
using Getenv = std::function<const char*(const char* name)>;  // std::getenv, or a test's table
LaunchInfo launch_info(const Getenv& env);
LaunchInfo launch_info();  // of this process's environment
// Refuses, naming both, a launch whose rank count differs from MPI_COMM_WORLD's: then this
// handgrad's MPI is not the launcher's, and each rank would run as a job of its own.
void check_launch_size(const LaunchInfo& launch, int mpi_size);
// Whether this build can run each backend: "single" always, "mpi" and "nccl" when compiled in.
bool comm_available(const std::string& backend);
// "rank 1 of 2 (mpi)", or "" in a one-process run (or before world() was made): who wrote a message.
std::string rank_label();
// What a program does with an error it cannot go on from, after printing it: in a job of several
// ranks, end them all with `code` (the others may be waiting in a collective for this one, and would
// wait forever); in a one-process run, return.
void abort_job_if_parallel(int code);

// The communicators themselves, for tests and for code that wants one explicitly.
std::unique_ptr<Communicator> make_single_communicator();
std::unique_ptr<Communicator> make_mpi_communicator();   // needs the MPI build; initializes MPI once
std::unique_ptr<Communicator> make_nccl_communicator();  // needs the NCCL build; one GPU per rank

}  // namespace hg::nn
