// ops/sort.h — sorting along a dim and the k largest or smallest (ops/sort.cpp), PyTorch's forms.
#pragma once
#include "engine/tensor.h"

namespace hg {

// values and the int64 indices that give them: values = gather(x, dim, indices).
struct SortResult {
  Tensor values, indices;
};

// x sorted along dim, ascending or descending; ties keep their order (stable), and NaN sorts as the
// largest value (last ascending, first descending), as PyTorch. Float, int64 and bool tensors.
SortResult sort(const Tensor& x, int64_t dim = -1, bool descending = false, Site where = Site::current());
// The k largest (smallest) along dim, in sorted order: sort's first k.
SortResult topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, Site where = Site::current());

}  // namespace hg
