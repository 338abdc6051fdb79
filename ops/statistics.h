// ops/statistics.h — the spread of a tensor along dims, PyTorch's names and arguments.
#pragma once
#include "engine/tensor.h"

namespace hg {

// Σ (x − μ)² / (N − correction) over dims (all of them when empty); correction 1 is the unbiased
// estimate (PyTorch's default), 0 the population variance. N − correction ≤ 0 gives inf or NaN,
// as PyTorch; over no elements it is an error, as mean's.
Tensor var(const Tensor& x, const Shape& dims = {}, double correction = 1.0, bool keepdim = false,
           Site where = Site::current());
// √var, with var's arguments.
Tensor std(const Tensor& x, const Shape& dims = {}, double correction = 1.0, bool keepdim = false,
           Site where = Site::current());

}  // namespace hg
