// cuda/nccl.cpp — cuda/nccl.h over NCCL (ncclAllReduce with ncclAvg for the mean, ncclBroadcast).
#ifdef HANDGRAD_WITH_NCCL
#include "cuda/nccl.h"

#include <nccl.h>

#include <cstring>

#include "cuda/runtime.h"
#include "engine/error.h"

namespace hg::cuda {

namespace {

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) fail("nccl", "{} failed: {} ({})", call, ncclGetErrorString(r), ncclGetLastError(nullptr));
}

void check_tensor(const char* op, const Tensor& t) {
  if (t.device() != Device::cuda) fail(op, "{} is on the {}; NCCL works on CUDA tensors", t.describe(), device_name(t.device()));
  if (!t.is_contiguous()) fail(op, "{} must be contiguous (call contiguous() and pass that)", t.describe());
}

}  // namespace

struct Nccl::State {
  ncclComm_t comm = nullptr;
};

NcclId Nccl::unique_id() {
  ncclUniqueId id;
  nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclId out;
  static_assert(sizeof(id) == sizeof(NcclId));
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

int Nccl::gpu_count() {
  int n = 0;
  HG_CUDA_CHECK(cudaGetDeviceCount(&n));
  return n;
}

Nccl::Nccl(const NcclId& id, int rank, int size, int gpu) : s_(std::make_unique<State>()) {
  HG_CUDA_CHECK(cudaSetDevice(gpu));
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof(nid));
  nccl_check(ncclCommInitRank(&s_->comm, size, nid, rank), "ncclCommInitRank");
}

Nccl::~Nccl() {
  if (s_ && s_->comm) ncclCommDestroy(s_->comm);
}

void Nccl::all_reduce(const Tensor& t, bool average) {
  check_tensor("all_reduce", t);
  ncclDataType_t type;
  if (t.dtype() == DType::f32) type = ncclFloat32;
  else if (t.dtype() == DType::f64) type = ncclFloat64;
  else fail("all_reduce", "{}: only f32 and f64 tensors are summed", t.describe());
  nccl_check(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), type, average ? ncclAvg : ncclSum,
                           s_->comm, stream()),
             "ncclAllReduce");
}

void Nccl::broadcast(const Tensor& t, int root) {
  check_tensor("broadcast", t);
  nccl_check(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()), ncclUint8,
                           root, s_->comm, stream()),
             "ncclBroadcast");
}

void Nccl::abort() {
  if (s_->comm) ncclCommAbort(s_->comm);
  s_->comm = nullptr;
}

}  // namespace hg::cuda
#endif  // HANDGRAD_WITH_NCCL
