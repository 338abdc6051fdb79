// ops/matmul.h — matrix products (one gemm per batch slice, ops/gemm.h).
#pragma once
#include "engine/tensor.h"

namespace hg {

// a (..., n, k) @ b (..., k, m) -> (..., n, m); leading (batch) dimensions broadcast.
// A 1-D operand is treated as a row (a) or column (b) vector and that dimension is dropped
// from the result, as in numpy. Backward: da = g b^T, db = a^T g (summed over broadcast batches).
Tensor matmul(const Tensor& a, const Tensor& b, Site where = Site::current());

}  // namespace hg
