// ops/scan.h — running sums and products along a dim (ops/scan.cpp), PyTorch's names.
#pragma once
#include "engine/tensor.h"

namespace hg {

// Running sums along dim: out[i] = Σ_{j ≤ i} x[j] (float tensors, and int64 exactly; a bool tensor
// counts, as int64).
Tensor cumsum(const Tensor& x, int64_t dim, Site where = Site::current());
// Running products along dim: out[i] = Π_{j ≤ i} x[j] (float tensors, and int64 exactly, wrapping
// as int64 does; bool as int64); its gradient is exact where x has zeros too.
Tensor cumprod(const Tensor& x, int64_t dim, Site where = Site::current());

}  // namespace hg
