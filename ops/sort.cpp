// ops/sort.cpp — sort and topk along a dim (ops/sort.h).
//
// The order is found on the CPU (a stable sort of each row's positions, NaN as the largest); the
// values are then gather(x, dim, indices), a recorded op, so the gradient is gather's: each g_i
// goes back to the position its value came from, dx = scatter_add(0, dim, indices, g), and the
// tangent is the same gather of ẋ. topk is sort's first k (narrow, also recorded).
#include "ops/sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/dims.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/gather.h"
#include "ops/rearrange.h"

namespace hg {

namespace {

// NaN after every number (PyTorch's order), else the values' own.
template <typename T>
bool sorts_before(T a, T b, bool descending) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return descending ? (std::isnan(a) && !std::isnan(b)) : (!std::isnan(a) && std::isnan(b));
  }
  return descending ? a > b : a < b;
}

// The int64 positions that sort each row along d (x on the CPU, dim last made contiguous).
Tensor sorting_positions(const Tensor& x, int64_t d, bool descending) {
  NoGradGuard constant;
  const Tensor rows = movedim(x.detach().to(Device::cpu), {d}, {-1}).contiguous();  // dim last: each row a run
  const int64_t n = x.size(d), count = n == 0 ? 0 : x.numel() / n;
  std::vector<double> positions(static_cast<size_t>(x.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(n));
  const auto by_row = [&]<typename T>() {
    const T* p = static_cast<const T*>(rows.raw_data());
    for (int64_t r = 0; r < count; ++r) {
      const T* row = p + r * n;
      std::iota(idx.begin(), idx.end(), int64_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) { return sorts_before(row[i], row[j], descending); });
      for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(r * n + i)] = static_cast<double>(idx[static_cast<size_t>(i)]);
    }
  };
  if (x.dtype() == DType::i64) by_row.template operator()<int64_t>();
  else dispatch_float(x.dtype(), "sort", by_row);
  return movedim(tensor(positions, rows.shape(), DType::i64), {-1}, {d}).contiguous().to(x.device());
}

}  // namespace

SortResult sort(const Tensor& x, int64_t dim, bool descending, Site where) {
  if (!x.defined()) fail("sort", "the input is undefined");
  if (x.dtype() == DType::b8) {  // false before true, as PyTorch: ordered as int64, the values back in bool
    const SortResult as_ints = sort(x.to(DType::i64), dim, descending, where);
    return {as_ints.values.to(DType::b8), as_ints.indices};
  }
  if (x.dim() == 0) {
    wrap_dim("sort", dim, x.shape());
    return {x.clone(where), zeros({}, DType::i64, x.device())};
  }
  const int64_t d = wrap_dim("sort", dim, x.shape());
  const Tensor indices = sorting_positions(x, d, descending);
  return {gather(x, d, indices, where), indices};
}

SortResult topk(const Tensor& x, int64_t k, int64_t dim, bool largest, Site where) {
  if (!x.defined()) fail("topk", "the input is undefined");
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim("topk", dim, x.shape());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 0 || k > n) fail("topk", "k = {} is out of range for dim {} of size {} in {}", k, dim, n, x.describe());
  SortResult all = sort(x, dim, largest, where);
  if (x.dim() == 0) return all;
  return {narrow(all.values, d, 0, k, where), narrow(all.indices, d, 0, k, where)};
}

}  // namespace hg
