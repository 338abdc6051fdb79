// cuda/nccl.cpp — cuda/nccl.h over NCCL (ncclAllReduce with ncclAvg for the mean, ncclBroadcast),
// the stream and async-error polls the host's wait reads, and the teardown at exit.
#ifdef HANDGRAD_WITH_NCCL
#include "cuda/nccl.h"

#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

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

// Every communicator still open, for the exit handler; leaked (as world() is), so that a Nccl
// destroyed during static destruction still finds them.
std::mutex& open_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<ncclComm_t*>& open_comms() {
  static auto* comms = new std::vector<ncclComm_t*>;
  return *comms;
}

// Finalize (flush what is queued; NCCL 2.14 on) and destroy. Errors go unreported: this runs at
// exit or in a destructor, where there is nobody left to tell.
void finalize_and_destroy(ncclComm_t& comm) {
  if (!comm) return;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  ncclCommFinalize(comm);
#endif
  ncclCommDestroy(comm);
  comm = nullptr;
}

void close_all_at_exit() {
  std::lock_guard lock(open_mutex());
  for (ncclComm_t* comm : open_comms()) finalize_and_destroy(*comm);
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
  HG_CUDA_CHECK(cudaFree(nullptr));  // the runtime and the device's context are started from here on
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof(nid));
  nccl_check(ncclCommInitRank(&s_->comm, size, nid, rank), "ncclCommInitRank");
  // The order at exit: std::atexit handlers run in the reverse order of their registration, static
  // destructors among them. The CUDA runtime registered its shutdown when it started (at the
  // calls above, at the latest), so the handler registered here runs before it, while
  // ncclCommDestroy still has a runtime to call; static destruction would be too late for that
  // (a hang, or "driver shutting down"), and world() never destroys its communicator.
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(close_all_at_exit); });
  std::lock_guard lock(open_mutex());
  open_comms().push_back(&s_->comm);
}

Nccl::~Nccl() {
  if (!s_) return;
  std::lock_guard lock(open_mutex());
  std::vector<ncclComm_t*>& comms = open_comms();
  comms.erase(std::remove(comms.begin(), comms.end(), &s_->comm), comms.end());
  finalize_and_destroy(s_->comm);  // nothing left to do if the exit handler or abort() came first
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

bool Nccl::finished() const {
  const cudaError_t e = cudaStreamQuery(stream());
  if (e == cudaErrorNotReady) return false;
  check(e, "cudaStreamQuery(stream())", __FILE__, __LINE__);
  return true;
}

std::string Nccl::async_error() const {
  if (!s_->comm) return "the communicator was aborted";
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(s_->comm, &state);
  if (r != ncclSuccess) return fmt::format("ncclCommGetAsyncError failed: {}", ncclGetErrorString(r));
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return fmt::format("{} ({})", ncclGetErrorString(state), ncclGetLastError(s_->comm));
}

void Nccl::abort() {
  std::lock_guard lock(open_mutex());
  if (s_->comm) ncclCommAbort(s_->comm);
  s_->comm = nullptr;
}

}  // namespace hg::cuda
#endif  // HANDGRAD_WITH_NCCL
