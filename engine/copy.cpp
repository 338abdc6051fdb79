// engine/copy.cpp — whole-tensor writes: fill_, copy_ (across dtypes, by engine/convert.h's rule,
// and across devices), add_, mul_. Each bumps the version counter the graph checks saved tensors by.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/backend.h"
#include "engine/convert.h"
#include "cpu/kernels.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "engine/tensor.h"
#include "engine/tensor_internal.h"

namespace hg {

Tensor& Tensor::fill_(double v) {
  check_defined("fill_");
  check_inplace(*this, "fill_");
  if (dtype() == DType::i64 && !fits_i64(v)) fail("fill_", "{}", no_i64_value(DType::f64, v, "(the fill value)"));
  if (device() == Device::cuda) {
    require_cuda("fill_").fill(*this, v);
  } else {
    dispatch_any(dtype(), [&]<typename T>() {
      const T value = convert_element<T>(v);  // engine/convert.h; checked above
      for_each_row<T>(shape(), {&strides()}, std::make_tuple(data_ptr<T>()),
                      [&](int64_t n, std::tuple<T*> p, const std::array<int64_t, 1>& st) {
                        T* d = std::get<0>(p);
                        if (st[0] == 1) {  // unit stride: a loop the compiler vectorises
                          std::fill(d, d + n, value);
                        } else {
                          for (int64_t i = 0; i < n; ++i) d[i * st[0]] = value;
                        }
                      });
    });
  }
  bump_version();
  return *this;
}

namespace {

// A float src converted to i64: every element must have an int64 value (engine/convert.h), else
// an Error naming the first one that has none, in src's row-major order. Nothing is written.
template <typename S>
void check_fits_i64(const Tensor& src) {
  std::atomic<bool> bad{false};
  for_each_row<const S>(src.shape(), {&src.strides()}, std::make_tuple(static_cast<const S*>(src.raw_data())),
                        [&bad](int64_t n, std::tuple<const S*> p, const std::array<int64_t, 1>& st) {
                          const S* s = std::get<0>(p);
                          bool row_bad = false;
                          for (int64_t i = 0; i < n; ++i) row_bad |= !fits_i64(s[i * st[0]]);
                          if (row_bad) bad.store(true, std::memory_order_relaxed);
                        });
  if (!bad.load()) return;
  for (int64_t i = 0; i < src.numel(); ++i) {  // the rare failure: find the first one
    const double v = src.get_flat(i);
    if (!fits_i64(v))
      fail("to(i64)", "{}",
           no_i64_value(src.dtype(), v,
                        fmt::format("at position {} of the source {}", index_str(src.shape(), i), shape_str(src.shape()))));
  }
}

// dst[...] = src[...] over dst's shape; src may broadcast (stride 0) and differ in dtype. Each
// element converts by engine/convert.h's rule, as the CUDA copy kernel does.
void copy_cpu(const Tensor& dst, const Tensor& src, const Shape& src_strides) {
  dispatch_any(dst.dtype(), [&]<typename D>() {
    dispatch_any(src.dtype(), [&]<typename S>() {
      if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>) check_fits_i64<S>(src);
      for_each_row<D, const S>(dst.shape(), {&dst.strides(), &src_strides},
                               std::make_tuple(dst.data_ptr<D>(), static_cast<const S*>(src.raw_data())),
                               [](int64_t n, std::tuple<D*, const S*> p, const std::array<int64_t, 2>& st) {
                                 auto [d, s] = p;
                                 if (st[0] == 1 && st[1] == 1) {  // unit strides: a loop the compiler vectorises,
                                   if constexpr (std::is_same_v<D, S>) {  // or, one dtype, glibc's memcpy (at the
                                     std::memcpy(d, s, static_cast<size_t>(n) * sizeof(D));  // CPU's widest vectors)
                                     return;
                                   }
                                   for (int64_t i = 0; i < n; ++i) d[i] = convert_element<D>(s[i]);
                                 } else {
                                   for (int64_t i = 0; i < n; ++i) d[i * st[0]] = convert_element<D>(s[i * st[1]]);
                                 }
                               });
    });
  });
}

// Strides that read `src` as if it had shape `to` (numpy broadcasting), or fail naming `op`.
Shape broadcast_strides_for(const Tensor& src, const Shape& to, const char* op) {
  const Shape& s = src.shape();
  if (s.size() > to.size()) fail(op, "cannot broadcast shape {} to {}", shape_str(s), shape_str(to));
  Shape st(to.size(), 0);
  size_t lead = to.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == to[lead + i]) st[lead + i] = src.strides()[i];
    else if (s[i] != 1) fail(op, "cannot broadcast shape {} to {}", shape_str(s), shape_str(to));
  }
  return st;
}

// The bytes [first, last) a view can touch: its offset plus every stride's reach (strides ≥ 0).
std::pair<int64_t, int64_t> byte_span(const Tensor& t) {
  int64_t first = t.offset(), last = t.offset();
  for (size_t d = 0; d < t.shape().size(); ++d) last += (t.shape()[d] - 1) * t.strides()[d];
  const int64_t size = static_cast<int64_t>(dtype_size(t.dtype()));
  return {first * size, (last + 1) * size};
}

// Whether writing dst could change src's elements before they are read: the two share a storage
// and their byte spans meet (a conservative test: interleaved views that never touch count too).
bool may_overlap(const Tensor& dst, const Tensor& src) {
  if (dst.impl()->storage != src.impl()->storage || dst.numel() == 0 || src.numel() == 0) return false;
  const auto [a0, a1] = byte_span(dst);
  const auto [b0, b1] = byte_span(src);
  return a0 < b1 && b0 < a1;
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined("copy_");
  src.check_defined("copy_ (source)");
  check_inplace(*this, "copy_");
  // a.copy_(a.transpose(0, 1)) read in place would read elements it has already overwritten: a
  // source that shares memory with the destination is copied to a buffer of its own first.
  if (may_overlap(*this, src)) return copy_(src.detach().clone());
  if (device() == Device::cpu && src.device() == Device::cpu) {
    copy_cpu(*this, src, broadcast_strides_for(src, shape(), "copy_"));
  } else if (device() == Device::cuda && src.device() == Device::cuda) {
    broadcast_strides_for(src, shape(), "copy_");  // the shape check, with the CPU path's message
    require_cuda("copy_").copy(*this, src);
  } else if (device() == Device::cuda) {
    // host -> device: the source as one contiguous host buffer (broadcast and dtype conversion
    // happen on the device), uploaded, then copied into this tensor's layout
    broadcast_strides_for(src, shape(), "copy_");
    const CudaBackend& cu = require_cuda("copy_");
    Tensor host = src.detach().contiguous();
    Tensor staged = is_contiguous() && host.shape() == shape() && host.dtype() == dtype() ? *this
                                                                                           : empty(host.shape(), host.dtype(), Device::cuda);
    cu.memcpy_h2d(staged.raw_data(), host.raw_data(), static_cast<size_t>(host.numel()) * dtype_size(host.dtype()));
    if (staged.raw_data() != raw_data()) cu.copy(*this, staged);
  } else {
    // device -> host: converted and broadcast on the device into a contiguous buffer, downloaded
    broadcast_strides_for(src, shape(), "copy_");
    const CudaBackend& cu = require_cuda("copy_");
    Tensor dev = src.detach();
    if (dev.shape() != shape() || dev.dtype() != dtype() || !dev.is_contiguous()) {
      Tensor packed = empty(shape(), dtype(), Device::cuda);
      cu.copy(packed, dev);
      dev = packed;
    }
    Tensor host = is_contiguous() ? *this : empty(shape(), dtype());
    cu.memcpy_d2h(host.raw_data(), dev.raw_data(), static_cast<size_t>(numel()) * dtype_size(dtype()));
    if (host.raw_data() != raw_data()) copy_cpu(*this, host, host.strides());
  }
  bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_defined("add_");
  check_inplace(*this, "add_");
  if (other.shape() != shape() || other.dtype() != dtype() || other.device() != device())
    fail("add_", "{} += {}: needs the same shape, dtype and device", describe(), other.describe());
  if (may_overlap(*this, other)) return add_(other.detach().clone(), alpha);  // as copy_: read before writing
  if (device() == Device::cuda) {
    require_cuda("add_").axpy(*this, other, alpha);
    bump_version();
    return *this;
  }
  add_rows(*this, *this, other, alpha);
  bump_version();
  return *this;
}

void add_rows(const Tensor& out, const Tensor& x, const Tensor& y, double alpha) {
  dispatch_float(out.dtype(), "add_", [&]<typename T>() {
    const T a = static_cast<T>(alpha);
    // alpha = 1 (a gradient summed): 1 · y is y exactly, so the kernel table's vadd
    // (cpu/kernels.h) gives the same bits at the CPU's vector width.
    const cpu::BinaryRow add_row = std::is_same_v<T, float> && alpha == 1.0 ? cpu::kernels().vadd : nullptr;
    for_each_row<T, const T, const T>(
        out.shape(), {&out.strides(), &x.strides(), &y.strides()},
        std::make_tuple(out.data_ptr<T>(), x.data_ptr<const T>(), y.data_ptr<const T>()),
        [=](int64_t n, std::tuple<T*, const T*, const T*> p, const std::array<int64_t, 3>& st) {
          auto [o, u, v] = p;
          if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
            if constexpr (std::is_same_v<T, float>) {
              if (add_row) return add_row(o, u, v, n);
            }
            for (int64_t i = 0; i < n; ++i) o[i] = u[i] + a * v[i];
          } else {
            for (int64_t i = 0; i < n; ++i) o[i * st[0]] = u[i * st[1]] + a * v[i * st[2]];
          }
        });
  });
}

Tensor& Tensor::mul_(double s) {
  check_defined("mul_");
  check_inplace(*this, "mul_");
  if (device() == Device::cuda) {
    require_cuda("mul_").scale(*this, s);
    bump_version();
    return *this;
  }
  dispatch_float(dtype(), "mul_", [&]<typename T>() {
    const T f = static_cast<T>(s);
    for_each_row<T>(shape(), {&strides()}, std::make_tuple(data_ptr<T>()),
                    [f](int64_t n, std::tuple<T*> p, const std::array<int64_t, 1>& st) {
                      T* d = std::get<0>(p);
                      if (st[0] == 1) {
                        for (int64_t i = 0; i < n; ++i) d[i] *= f;
                      } else {
                        for (int64_t i = 0; i < n; ++i) d[i * st[0]] *= f;
                      }
                    });
  });
  bump_version();
  return *this;
}

}  // namespace hg
