// cuda/device_ops.h — what the host side of the kernels (cuda/*.cpp: the entries of cuda/ops.h,
// cuda/optim.h and engine/backend.h) shares: argument checks, the strided
// geometry a kernel walks, contiguous copies, and the status buffer of index-checking kernels.
// Host C++ (C++20, engine headers); the kernels are behind cuda/kernels.h.
#pragma once
#include <array>
#include <functional>
#include <cstdint>
#include <string_view>

#include "cuda/kernels.h"
#include "cuda/ops.h"
#include "engine/backend.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tensor.h"

namespace hg::cuda {

// ---------------------------------------------------------------- shared helpers

Elem elem(DType t);
// t is defined and on the GPU; otherwise an Error naming op and `what` ("input", "mask", ...).
void require_device(std::string_view op, const Tensor& t, const char* what);
// ... and float32 or float64.
void require_float(std::string_view op, const Tensor& t, const char* what);
void require_same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
// The broadcast of two shapes, or an Error naming op and both.
Shape broadcast_shape(std::string_view op, const Shape& a, const Shape& b);
// Strides that read x as shape `to` (0 on broadcast dimensions), or an Error.
Shape broadcast_strides(std::string_view op, const Tensor& x, const Shape& to);
// x when it is contiguous, else a contiguous device copy (not recorded).
Tensor dense(const Tensor& x);

// The index space `shape` with each operand's strides, adjacent dimensions merged.
template <size_t N>
Geometry<N> geometry(std::string_view op, const Shape& shape, const std::array<const Shape*, N>& strides) {
  const StridedWalk<N> w = merge_dims<N>(shape, strides);
  if (w.shape.size() > static_cast<size_t>(kMaxDims))
    fail(op,
         "shape {} keeps {} dimensions after merging the contiguous ones; the CUDA kernels index at most {} "
         "(make the operands contiguous first)",
         shape_str(shape), w.shape.size(), kMaxDims);
  Geometry<N> g;
  g.rank = static_cast<int>(w.shape.size());
  g.numel = shape_numel(shape);
  for (size_t d = 0; d < w.shape.size(); ++d) {
    g.size[d] = w.shape[d];
    for (size_t k = 0; k < N; ++k) g.stride[k][d] = w.strides[k][d];
  }
  return g;
}

// The status buffer (kStatusSlots,) i64 of cuda/kernels.h on the device, set to "no error" by a
// kernel (no host wait).
Tensor new_status();
// Waits for the kernels before it and reads the status back.
std::array<int64_t, kStatusSlots> read_status(const Tensor& status);

// ---------------------------------------------------------------- deferred checks
//
// The kernels that check their indices (embedding, cross-entropy) or their values (a float -> i64
// copy) report into a status buffer. Reading it at once would make the host wait for the GPU in
// the middle of every training step, so the op hands the buffer to defer_check() with a function
// that turns a bad status into an hg::Error naming the op, the value and its position. Every
// pending status is read at the next point where the host waits for the device anyway — a copy
// to the host (item(), to_vector(), printing the loss) or synchronize() — and the first failure is
// thrown there. Until then the kernels have written zeros where an index or value was bad, never
// read out of bounds.
using StatusReport = std::function<void(const std::array<int64_t, kStatusSlots>&)>;
void defer_check(Tensor status, StatusReport report);
// The host's wait for the stream, with the deferred checks read in it: queues one gather of every
// pending status on the device and one copy of them to the host, then one cudaStreamSynchronize
// (counted by note_host_wait) covers the caller's queued work and that copy; then the reports
// run (clearing the list) and the first failure's Error is thrown. memcpy_d2h queues its copy and
// calls it; synchronize() is it.
void wait_for_stream();
// Counts the times the host waited for the device: copies to the host, synchronize(), status reads.
void note_host_wait();
uint64_t host_waits();
long long* status_ptr(const Tensor& status);
constexpr int64_t kNoError = INT64_MAX;
// Element `flat` of a contiguous i64 device tensor (for error messages).
int64_t read_i64_at(const Tensor& t, int64_t flat);

// ---------------------------------------------------------------- the engine's entries (engine/backend.h)
// (the ops' entries are in cuda/ops.h and cuda/optim.h)

void copy(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, double value);
void axpy(const Tensor& dst, const Tensor& src, double alpha);
void scale(const Tensor& dst, double factor);

}  // namespace hg::cuda
