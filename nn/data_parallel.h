// nn/data_parallel.h — data-parallel training over a Communicator (nn/comm.h), as PyTorch's DDP
// and llm.c do it: every rank holds the whole model; at the start the parameters are broadcast
// from rank 0; each rank runs forward and backward on its own shard of the global batch; then the
// gradients are averaged across ranks — packed into one flat buffer per dtype, one all-reduce
// each — and every rank takes the same optimizer step, so the models stay identical.
//
// With the loss a mean over the shard's examples and equal shards, the averaged gradient is the
// gradient of the mean over the global batch: N ranks × batch B/N train as one process × batch B,
// up to the rounding of the sums' order.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "nn/comm.h"

namespace hg::nn {

class DataParallel {
 public:
  DataParallel(Communicator& comm, std::vector<Tensor> params);

  void broadcast_parameters(int root = 0);  // every rank's parameters become root's
  // After backward: every parameter's gradient becomes the mean of the ranks' gradients. A
  // parameter no backward reached on any rank keeps no gradient; one reached on some ranks only is
  // an hg::Error on every rank (the ranks must run the same model).
  void average_gradients();

  // This rank's rows [begin, end) of a global batch of `batch` examples; refuses a batch the rank
  // count does not divide, naming both (each rank must average over as many examples).
  struct Shard {
    int64_t begin = 0, end = 0;
  };
  Shard shard(int64_t batch) const;
  // The mean over ranks of per-rank values (losses for the report), one all-reduce.
  std::vector<double> average(const std::vector<double>& values);

  Communicator& comm() { return comm_; }

 private:
  Communicator& comm_;
  std::vector<Tensor> params_;
};

}  // namespace hg::nn
