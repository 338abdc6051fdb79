// engine/strided.h — walking N operands that share one index space but have their own strides.
//
// Used by every CPU kernel that accepts non-contiguous or broadcast (stride 0) inputs.
// Dimensions that are contiguous with each other in every operand are merged first, so a
// fully contiguous walk is a single row.
#pragma once
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/dtype.h"

namespace hg {

template <size_t N>
struct StridedWalk {
  Shape shape;                               // after merging
  std::array<std::vector<int64_t>, N> strides;  // elements, per operand, after merging
};

// Merge adjacent dimensions d-1, d when, for every operand, stride[d-1] == stride[d]*shape[d].
template <size_t N>
StridedWalk<N> merge_dims(const Shape& shape, const std::array<const Shape*, N>& strides) {
  StridedWalk<N> w;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // size-1 dims never matter
    bool merge = !w.shape.empty();
    for (size_t k = 0; merge && k < N; ++k)
      merge = w.strides[k].back() == (*strides[k])[d] * shape[d];
    if (merge) {
      w.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) w.strides[k].back() = (*strides[k])[d];
    } else {
      w.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) w.strides[k].push_back((*strides[k])[d]);
    }
  }
  if (w.shape.empty()) {  // a scalar or all-ones shape: one element
    w.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) w.strides[k].push_back(0);
  }
  return w;
}

// Calls row(n, ptrs, steps) for every innermost row: n elements, operand k's first element at
// ptrs[k], consecutive elements `steps[k]` elements apart. Pointers are typed per operand.
template <typename... T, typename Row>
void for_each_row(const Shape& shape, const std::array<const Shape*, sizeof...(T)>& strides,
                  std::tuple<T*...> base, Row row) {
  constexpr size_t N = sizeof...(T);
  for (int64_t s : shape)
    if (s == 0) return;
  StridedWalk<N> w = merge_dims<N>(shape, strides);
  const size_t rank = w.shape.size();
  const int64_t n = w.shape[rank - 1];
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = w.strides[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off{};
  while (true) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      row(n, std::make_tuple((std::get<I>(base) + off[I])...), steps);
    }(std::make_index_sequence<N>{});
    // odometer over the outer dimensions
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += w.strides[k][d];
      if (++idx[d] < w.shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= w.strides[k][d] * w.shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace hg
