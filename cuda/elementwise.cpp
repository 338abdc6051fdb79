// cuda/elementwise.cpp — the host side of the elementwise device ops (kernels: cuda/elementwise.cu)
// and the helpers every device op shares (cuda/device_ops.h): checks, broadcasting, geometry,
// contiguous copies, the status buffer.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/device_ops.h"
#include "cuda/runtime.h"
#include "engine/convert.h"

namespace hg::cuda {

// ---------------------------------------------------------------- shared helpers

Elem elem(DType t) {
  switch (t) {
    case DType::f32: return Elem::f32;
    case DType::f64: return Elem::f64;
    case DType::i64: return Elem::i64;
    case DType::b8: return Elem::b8;
  }
  throw Error("cuda: unknown dtype");
}

void require_device(std::string_view op, const Tensor& t, const char* what) {
  if (!t.defined()) fail(op, "the {} is an undefined tensor", what);
  if (t.device() != Device::cuda)
    fail(op, "the {} {} is on {}; this CUDA kernel needs it on cuda (move it with .to(Device::cuda))", what,
         t.describe(), device_name(t.device()));
}

void require_float(std::string_view op, const Tensor& t, const char* what) {
  require_device(op, t, what);
  if (!is_floating(t.dtype()))
    fail(op, "the {} {} has dtype {}; this op needs float32 or float64 (convert with .to(DType::f32))", what,
         t.describe(), dtype_name(t.dtype()));
}

void require_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(op, "dtype mismatch: {} vs {}; convert one with .to(DType::{})", a.describe(), b.describe(),
         a.dtype() == DType::f64 ? "f64" : "f32");
}

Shape broadcast_shape(std::string_view op, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes {} and {} cannot be broadcast: dimension {} is {} vs {} (sizes must match or be 1)",
           shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(std::string_view op, const Tensor& x, const Shape& to) {
  const Shape& s = x.shape();
  if (s.size() > to.size()) fail(op, "cannot broadcast {} to shape {}", x.describe(), shape_str(to));
  Shape st(to.size(), 0);
  const size_t lead = to.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == to[lead + i])
      st[lead + i] = x.strides()[i];
    else if (s[i] != 1)
      fail(op, "cannot broadcast {} to shape {}", x.describe(), shape_str(to));
  }
  return st;
}

Tensor dense(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = empty(x.shape(), x.dtype(), Device::cuda);
  cuda::copy(out, x);
  return out;
}

Tensor new_status() {
  static_assert(kNoError == LLONG_MAX);
  Tensor s = empty({kStatusSlots}, DType::i64, Device::cuda);
  HG_CUDA_CHECK(launch_status_init(status_ptr(s), stream()));
  return s;
}

std::array<int64_t, kStatusSlots> read_status(const Tensor& status) {
  std::array<int64_t, kStatusSlots> out{};
  HG_CUDA_CHECK(cudaMemcpyAsync(out.data(), status.raw_data(), sizeof out, cudaMemcpyDeviceToHost, stream()));
  HG_CUDA_CHECK(cudaStreamSynchronize(stream()));
  note_host_wait();
  return out;
}

namespace {

struct PendingCheck {
  Tensor status;  // kept alive (and its block out of the cache) until it is read
  StatusReport report;
};
// The checks not yet read, from every host thread that queues work on the stream: only touched
// with pending_mutex() held (defer_check's push, wait_for_stream's swap), never while the reports
// run, which may throw or read the device.
std::vector<PendingCheck>& pending() {
  static std::vector<PendingCheck> list;
  return list;
}
std::mutex& pending_mutex() {
  static std::mutex m;
  return m;
}
std::atomic<uint64_t> g_host_waits{0};

// Queues on the stream the reading of every status in `checks` into `host` (kStatusSlots each, in
// order): gathered on the device into one buffer, then one copy to the host, which is complete
// once the host has waited for the stream. Returns the device buffer, to keep until then.
Tensor queue_status_read(const std::vector<PendingCheck>& checks, std::vector<int64_t>& host) {
  const int64_t n = static_cast<int64_t>(checks.size());
  Tensor gathered = empty({n * kStatusSlots}, DType::i64, Device::cuda);  // (n, kStatusSlots)
  for (int64_t first = 0; first < n; first += kGatherMax) {
    StatusSources src{};
    src.count = static_cast<int>(std::min<int64_t>(kGatherMax, n - first));
    for (int i = 0; i < src.count; ++i) src.status[i] = status_ptr(checks[static_cast<size_t>(first + i)].status);
    HG_CUDA_CHECK(launch_status_gather(src, status_ptr(gathered) + first * kStatusSlots, stream()));
  }
  host.assign(static_cast<size_t>(n * kStatusSlots), 0);
  HG_CUDA_CHECK(cudaMemcpyAsync(host.data(), gathered.raw_data(), host.size() * sizeof(int64_t),
                                cudaMemcpyDeviceToHost, stream()));
  return gathered;
}

}  // namespace

void defer_check(Tensor status, StatusReport report) {
  size_t queued = 0;
  {
    const std::lock_guard<std::mutex> lock(pending_mutex());
    pending().push_back({std::move(status), std::move(report)});
    queued = pending().size();
  }
  // A long run with no copy to the host would hold one status per op: read them now and then.
  if (queued >= 4096) wait_for_stream();
}

void wait_for_stream() {
  std::vector<PendingCheck> checks;
  {
    const std::lock_guard<std::mutex> lock(pending_mutex());
    checks.swap(pending());  // a report that throws leaves the list empty, not half read
  }
  std::vector<int64_t> host;  // pageable: the copy into it is complete once the stream is
  Tensor gathered;
  if (!checks.empty()) gathered = queue_status_read(checks, host);
  HG_CUDA_CHECK(cudaStreamSynchronize(stream()));  // the one wait: the caller's work, the gather, its copy
  note_host_wait();
  for (size_t i = 0; i < checks.size(); ++i) {
    std::array<int64_t, kStatusSlots> st{};
    std::copy_n(host.begin() + static_cast<std::ptrdiff_t>(i * kStatusSlots), kStatusSlots, st.begin());
    checks[i].report(st);
  }
}

void note_host_wait() { g_host_waits.fetch_add(1, std::memory_order_relaxed); }
uint64_t host_waits() { return g_host_waits.load(std::memory_order_relaxed); }

long long* status_ptr(const Tensor& status) {
  static_assert(sizeof(long long) == sizeof(int64_t));
  return static_cast<long long*>(status.raw_data());
}

int64_t read_i64_at(const Tensor& t, int64_t flat) {
  int64_t v = 0;
  HG_CUDA_CHECK(cudaMemcpyAsync(&v, static_cast<const int64_t*>(t.raw_data()) + flat, sizeof v, cudaMemcpyDeviceToHost,
                                stream()));
  HG_CUDA_CHECK(cudaStreamSynchronize(stream()));
  note_host_wait();
  return v;
}

// ---------------------------------------------------------------- copy, fill, axpy, scale

namespace {

// Element `offset` (in elements, from element 0) of the float device tensor t (for error messages).
double read_float_at(const Tensor& t, int64_t offset) {
  double v = 0.0;
  float f = 0.0f;
  const bool f32 = t.dtype() == DType::f32;
  const void* at = f32 ? static_cast<const void*>(static_cast<const float*>(t.raw_data()) + offset)
                       : static_cast<const void*>(static_cast<const double*>(t.raw_data()) + offset);
  HG_CUDA_CHECK(cudaMemcpyAsync(f32 ? static_cast<void*>(&f) : static_cast<void*>(&v), at, f32 ? sizeof f : sizeof v,
                                cudaMemcpyDeviceToHost, stream()));
  HG_CUDA_CHECK(cudaStreamSynchronize(stream()));
  note_host_wait();
  return f32 ? static_cast<double>(f) : v;
}

// The deferred check of a float -> i64 copy: the kernel's first bad position e (row-major in the
// destination's shape `to`) read back as the source element there, named as the CPU names it.
StatusReport conversion_report(const Tensor& src, const Shape& to, const Shape& src_strides) {
  return [src, to, src_strides](const std::array<int64_t, kStatusSlots>& st) {
    if (st[kBadIndex] == kNoError) return;
    int64_t rest = st[kBadIndex], offset = 0, flat = 0, stride = 1;
    const size_t lead = to.size() - src.shape().size();
    for (size_t d = to.size(); d-- > 0;) {
      const int64_t i = rest % to[d];
      rest /= to[d];
      offset += i * src_strides[d];
      if (d >= lead && src.shape()[d - lead] != 1) flat += i * stride;  // its position in src's own shape
      if (d >= lead) stride *= src.shape()[d - lead];
    }
    fail("to(i64) (cuda)", "{}",
         no_i64_value(src.dtype(), read_float_at(src, offset),
                      fmt::format("at position {} of the source {}", index_str(src.shape(), flat),
                                  shape_str(src.shape()))));
  };
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  constexpr std::string_view op = "copy (cuda)";
  require_device(op, dst, "destination");
  require_device(op, src, "source");
  const Shape ss = broadcast_strides(op, src, dst.shape());
  const Geometry<2> g = geometry<2>(op, dst.shape(), {&dst.strides(), &ss});
  if (dst.dtype() != DType::i64 || !is_floating(src.dtype()) || g.numel == 0) {
    HG_CUDA_CHECK(
        launch_copy(elem(dst.dtype()), dst.raw_data(), elem(src.dtype()), src.raw_data(), g, nullptr, stream()));
    return;
  }
  // float -> i64: an element with no int64 value (engine/convert.h) is a deferred Error, as a bad
  // index is: the copy is queued like any other, and the host reads its status at its next wait.
  const Tensor status = new_status();
  HG_CUDA_CHECK(launch_copy(elem(dst.dtype()), dst.raw_data(), elem(src.dtype()), src.raw_data(), g,
                            status_ptr(status), stream()));
  defer_check(status, conversion_report(src.detach(), dst.shape(), ss));
}

void fill(const Tensor& dst, double value) {
  constexpr std::string_view op = "fill (cuda)";
  require_device(op, dst, "destination");
  if (dst.dtype() == DType::i64 && !fits_i64(value)) fail(op, "{}", no_i64_value(DType::f64, value, "(the fill value)"));
  const Geometry<1> g = geometry<1>(op, dst.shape(), {&dst.strides()});
  HG_CUDA_CHECK(launch_fill(elem(dst.dtype()), dst.raw_data(), value, g, stream()));
}

void axpy(const Tensor& dst, const Tensor& src, double alpha) {
  constexpr std::string_view op = "axpy (cuda)";
  require_float(op, dst, "destination");
  require_float(op, src, "source");
  require_same_dtype(op, dst, src);
  const Shape ss = broadcast_strides(op, src, dst.shape());
  const Geometry<2> g = geometry<2>(op, dst.shape(), {&dst.strides(), &ss});
  HG_CUDA_CHECK(launch_axpy(elem(dst.dtype()), dst.raw_data(), src.raw_data(), alpha, g, stream()));
}

void scale(const Tensor& dst, double factor) {
  constexpr std::string_view op = "scale (cuda)";
  require_float(op, dst, "destination");
  const Geometry<1> g = geometry<1>(op, dst.shape(), {&dst.strides()});
  HG_CUDA_CHECK(launch_scale(elem(dst.dtype()), dst.raw_data(), factor, g, stream()));
}

// ---------------------------------------------------------------- unary, binary

Tensor unary(UnaryCode kind, const Tensor& x, double scalar) {
  if (kind < 0 || kind >= kUnaryCount) fail("unary (cuda)", "no elementwise kind {} (cuda/kinds.h)", static_cast<int>(kind));
  const std::string op = fmt::format("{} (cuda)", kUnaryNames[kind]);
  require_float(op, x, "input");
  Tensor out = empty(x.shape(), x.dtype(), Device::cuda);
  const Geometry<2> g = geometry<2>(op, x.shape(), {&out.strides(), &x.strides()});
  HG_CUDA_CHECK(
      launch_unary(static_cast<int>(kind), elem(x.dtype()), out.raw_data(), x.raw_data(), scalar, g, stream()));
  return out;
}

Tensor binary(BinaryCode kind, const Tensor& a, const Tensor& b) {
  if (kind < 0 || kind >= kBinaryCount) fail("binary (cuda)", "no elementwise kind {} (cuda/kinds.h)", static_cast<int>(kind));
  const std::string op = fmt::format("{} (cuda)", kBinaryNames[kind]);
  require_float(op, a, "first operand");
  require_float(op, b, "second operand");
  require_same_dtype(op, a, b);
  const Shape shape = broadcast_shape(op, a.shape(), b.shape());
  const Shape sa = broadcast_strides(op, a, shape), sb = broadcast_strides(op, b, shape);
  Tensor out = empty(shape, a.dtype(), Device::cuda);
  const Geometry<3> g = geometry<3>(op, shape, {&out.strides(), &sa, &sb});
  HG_CUDA_CHECK(
      launch_binary(static_cast<int>(kind), elem(a.dtype()), out.raw_data(), a.raw_data(), b.raw_data(), g, stream()));
  return out;
}

// ---------------------------------------------------------------- masked_fill, where

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  constexpr std::string_view op = "masked_fill (cuda)";
  require_float(op, x, "input x");
  require_device(op, mask, "mask");
  if (mask.dtype() != DType::b8) fail(op, "the mask {} must be b8 (boolean)", mask.describe());
  const Shape sm = broadcast_strides(op, mask, x.shape());
  Tensor out = empty(x.shape(), x.dtype(), Device::cuda);
  const Geometry<3> g = geometry<3>(op, x.shape(), {&out.strides(), &x.strides(), &sm});
  HG_CUDA_CHECK(launch_masked_fill(elem(x.dtype()), out.raw_data(), x.raw_data(),
                                   static_cast<const uint8_t*>(mask.raw_data()), value, g, stream()));
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  constexpr std::string_view op = "where (cuda)";
  require_device(op, cond, "condition");
  if (cond.dtype() != DType::b8) fail(op, "the condition {} must be b8 (boolean)", cond.describe());
  require_float(op, a, "input a");
  require_float(op, b, "input b");
  require_same_dtype(op, a, b);
  const Shape shape = broadcast_shape(op, cond.shape(), broadcast_shape(op, a.shape(), b.shape()));
  const Shape sc = broadcast_strides(op, cond, shape), sa = broadcast_strides(op, a, shape),
              sb = broadcast_strides(op, b, shape);
  Tensor out = empty(shape, a.dtype(), Device::cuda);
  const Geometry<4> g = geometry<4>(op, shape, {&out.strides(), &sc, &sa, &sb});
  HG_CUDA_CHECK(launch_where(elem(a.dtype()), out.raw_data(), static_cast<const uint8_t*>(cond.raw_data()),
                             a.raw_data(), b.raw_data(), g, stream()));
  return out;
}

}  // namespace hg::cuda
