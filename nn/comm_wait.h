// nn/comm_wait.h — how a rank waits for a collective that a peer may never join. NCCL only queues
// a collective on the GPU; when a peer is lost, that work never ends and a host that simply
// synchronized would wait with it forever. So the host polls, in one loop: has the collective
// finished, has the library reported an asynchronous error, has the time limit passed. On an error
// or the limit the job is ended (nn/comm_nccl.cpp: message, ncclCommAbort, MPI_Abort).
// Plain C++ over callbacks, with no CUDA or NCCL type, so that tests drive it with stand-ins.
#pragma once
#include <functional>
#include <string>

#include "nn/comm.h"

namespace hg::nn {

struct CollectiveWait {
  std::function<bool()> done;                // has the collective finished? (cudaStreamQuery)
  std::function<std::string()> async_error;  // the library's asynchronous error; "" while none
  std::function<double()> now_s;             // a clock, in seconds
  // Ends the job, given why. Should it return (a test's stand-in), wait_for_collective throws
  // the same message as an hg::Error.
  std::function<void(const std::string& message)> abort;
};

// Returns once `done` says so. On an asynchronous error, or when limit_s seconds pass first, calls
// `abort` with "<who>: <op>: <why>", where `who` names the rank ("rank 1 of 2 (nccl)").
void wait_for_collective(const std::string& who, const char* op, double limit_s, const CollectiveWait& hooks);

// The time limit of one collective: HANDGRAD_NCCL_TIMEOUT_S seconds (a positive number), 600 when
// unset; anything else is an hg::Error naming the variable and its value.
double collective_timeout_s(const Getenv& env);

}  // namespace hg::nn
