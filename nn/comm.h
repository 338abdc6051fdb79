// nn/comm.h — the few collectives data-parallel training needs, behind one small interface:
// broadcast, all-reduce (sum or average) of a flat buffer, barrier, and abort.
//
// Three implementations, chosen once per process by world():
//   single  one process; every collective leaves the buffer as it is (the default)
//   mpi     one process per rank, launched by mpirun (OpenMPI), on CPU tensors; a GPU tensor is
//           staged through the host (compiled when CMake finds MPI)
//   nccl    one process per GPU, NCCL's unique id shared over MPI (compiled when CUDA, NCCL and MPI
//           are all found); a one-rank job may run without mpirun
// HANDGRAD_COMM=single|mpi|nccl forces one; otherwise a process started by mpirun (which sets
// OMPI_COMM_WORLD_SIZE, or PMI_SIZE for other launchers) gets mpi, any other gets single.
//
// The sum has a fixed order — element k is ((x₀ + x₁) + x₂) + … over ranks 0, 1, 2, … on every
// rank — so the same inputs give the same bits on every rank and every run (mpi; NCCL's ring has
// its own fixed order for a fixed rank count).
#pragma once
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

// The process's communicator (see above), made on first use and kept until exit.
Communicator& world();
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
