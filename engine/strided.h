// engine/strided.h — walking N operands that share one index space but have their own strides,
// and the threads the CPU kernels run on.
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

// ---------------------------------------------------------------- threads
//
// The CPU kernels' only source of parallelism: a pool of threads (engine/parallel.cpp), as many
// as HANDGRAD_NUM_THREADS says, else OMP_NUM_THREADS, else the machine's cores, the calling
// thread included. OpenBLAS is kept to one thread and large gemms are divided among these threads
// instead (the gemms of ops/), so the machine never holds more busy threads than asked for.

// Threads parallel_for may use (read from the environment once).
int num_threads();

// Calls body(begin, end) on disjoint contiguous ranges covering [0, n), a few per thread, run by
// the pool's threads and the caller, when n · cost (a rough count of operations per item) is
// large enough to pay for waking threads; otherwise body(0, n) on the calling thread, as also
// from inside another parallel_for or while another thread's parallel_for holds the pool. The
// ranges depend only on n, cost and the thread count, and each range is computed the same
// whichever thread runs it, so results are bit-identical run after run: use it for independent
// items (rows, batch slices), never to divide one reduction. An exception thrown by body is rethrown to
// the caller once every range has finished (so check inputs before the loop all the same).
void parallel_for_impl(int64_t n, int64_t cost, void (*call)(void*, int64_t, int64_t), void* body);
template <typename F>
void parallel_for(int64_t n, int64_t cost, const F& body) {
  parallel_for_impl(n, cost, [](void* b, int64_t begin, int64_t end) { (*static_cast<const F*>(b))(begin, end); },
                    const_cast<void*>(static_cast<const void*>(&body)));
}

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
// Operand 0 is the one written. When its elements are distinct (no stride-0 dimension, i.e. not
// a broadcast view) the rows are spread over the threads (parallel_for): row must then only write its
// own elements of operand 0, as every elementwise kernel does.
template <typename... T, typename Row>
void for_each_row(const Shape& shape, const std::array<const Shape*, sizeof...(T)>& strides,
                  std::tuple<T*...> base, Row row) {
  constexpr size_t N = sizeof...(T);
  for (int64_t s : shape)
    if (s == 0) return;
  const StridedWalk<N> w = merge_dims<N>(shape, strides);
  const size_t rank = w.shape.size();
  const int64_t n = w.shape[rank - 1];
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = w.strides[k][rank - 1];
  int64_t rows = 1;
  bool distinct = n == 1 || steps[0] != 0;
  for (size_t d = 0; d + 1 < rank; ++d) {
    rows *= w.shape[d];
    if (w.shape[d] > 1 && w.strides[0][d] == 0) distinct = false;
  }
  // Rows begin..end-1, the outer dimensions walked with an odometer started at row `begin`.
  auto walk = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, N> off{};
    for (int64_t d = static_cast<int64_t>(rank) - 2, r = begin; d >= 0; --d) {
      idx[d] = r % w.shape[d];
      r /= w.shape[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * w.strides[k][d];
    }
    for (int64_t r = begin; r < end; ++r) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        row(n, std::make_tuple((std::get<I>(base) + off[I])...), steps);
      }(std::make_index_sequence<N>{});
      for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {  // odometer over the outer dimensions
        for (size_t k = 0; k < N; ++k) off[k] += w.strides[k][d];
        if (++idx[d] < w.shape[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= w.strides[k][d] * w.shape[d];
        idx[d] = 0;
      }
    }
  };
  if (distinct) parallel_for(rows, n, walk);
  else walk(0, rows);
}

}  // namespace hg
