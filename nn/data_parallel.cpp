// nn/data_parallel.cpp — the parameter broadcast and the flat-buffer gradient average.
#include "nn/data_parallel.h"

#include <string_view>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/indexing.h"

namespace hg::nn {

DataParallel::DataParallel(Communicator& comm, std::vector<Tensor> params) : comm_(comm), params_(std::move(params)) {
  for (const Tensor& p : params_)
    if (!p.defined() || !p.is_leaf())
      fail("DataParallel", "every parameter must be a defined leaf tensor; {} is not", p.defined() ? p.describe() : "one");
}

void DataParallel::broadcast_parameters(int root) {
  NoGradGuard ng;
  for (Tensor& p : params_) {
    if (p.is_contiguous()) {
      comm_.broadcast(p, root);
    } else {
      const Tensor c = p.contiguous();
      comm_.broadcast(c, root);
      p.copy_(c);
    }
  }
}

void DataParallel::average_gradients() {
  if (std::string_view(comm_.backend()) == "single") return;  // a one-rank MPI or NCCL job still runs the collectives
  NoGradGuard ng;
  // Which parameters any rank has a gradient for: one flag each, summed over the ranks.
  std::vector<double> has(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) has[i] = params_[i].grad().defined() ? 1.0 : 0.0;
  const Tensor flags = tensor(has, {static_cast<int64_t>(has.size())}, DType::f64);
  comm_.all_reduce(flags, Reduce::sum);
  const std::vector<double> any = flags.to_vector();
  for (size_t i = 0; i < params_.size(); ++i)  // every rank sees the same sums, so all refuse together
    if (any[i] > 0 && any[i] < comm_.size())
      fail("average_gradients", "parameter {} ({}) has a gradient on {} of the {} ranks only: every rank must run the "
           "same model on its shard, so that backward reaches the same parameters", i, params_[i].describe(),
           static_cast<int>(any[i]), comm_.size());

  for (const DType dtype : {DType::f32, DType::f64}) {
    std::vector<size_t> members;
    int64_t total = 0;
    for (size_t i = 0; i < params_.size(); ++i)
      if (any[i] > 0 && params_[i].dtype() == dtype) {
        members.push_back(i);
        total += params_[i].numel();
      }
    if (members.empty()) continue;
    const Device device = params_[members[0]].device();
    const Tensor flat = zeros({total}, dtype, device);
    int64_t off = 0;
    for (const size_t i : members) {
      const int64_t n = params_[i].numel();
      flat.slice(0, off, off + n).copy_(params_[i].grad().reshape({n}));
      off += n;
    }
    comm_.all_reduce(flat, Reduce::average);
    off = 0;
    for (const size_t i : members) {
      const int64_t n = params_[i].numel();
      params_[i].grad().copy_(flat.slice(0, off, off + n).view(params_[i].shape()));
      off += n;
    }
  }
}

DataParallel::Shard DataParallel::shard(int64_t batch) const {
  const int64_t n = comm_.size();
  if (batch <= 0 || batch % n != 0)
    fail("DataParallel", "a batch of {} does not split evenly across {} ranks; choose a batch that {} divides", batch, n, n);
  const int64_t per = batch / n;
  return {per * comm_.rank(), per * (comm_.rank() + 1)};
}

std::vector<double> DataParallel::average(const std::vector<double>& values) {
  if (comm_.size() == 1 || values.empty()) return values;
  const Tensor t = tensor(values, {static_cast<int64_t>(values.size())}, DType::f64);
  comm_.all_reduce(t, Reduce::average);
  return t.to_vector();
}

}  // namespace hg::nn
