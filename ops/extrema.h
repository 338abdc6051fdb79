// ops/extrema.h — maxima and minima over several dims and the smooth maximum,
// PyTorch's names and arguments (max over one dim with its index is ops/reduce.h).
#pragma once
#include "engine/tensor.h"
#include "ops/scan.h"  // cumsum, which lived here

namespace hg {

// The largest (smallest) entry over dims (every dim when empty); where several entries tie, the
// gradient is shared evenly among them (PyTorch's amax/amin rule).
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false, Site where = Site::current());
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false, Site where = Site::current());
// min over one dim (the gradient to the first minimum, as max's), and the index of that minimum.
Tensor min(const Tensor& x, int64_t dim, bool keepdim = false, Site where = Site::current());
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// log Σ exp(x) over dims, without overflow: m + log Σ exp(x − m), m the maximum (held fixed: its
// terms cancel); the gradient is softmax(x) over dims.
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false, Site where = Site::current());

}  // namespace hg
