// ops/reduce.h — sum, mean and max over dimensions, with keepdim.
#pragma once
#include "engine/tensor.h"

namespace hg {

Tensor sum(const Tensor& x, Site where = Site::current());  // all elements -> 0-d
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false, Site where = Site::current());
Tensor mean(const Tensor& x, Site where = Site::current());
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false, Site where = Site::current());
// Largest value along `dim`. Backward sends the gradient to the first position holding the max.
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false, Site where = Site::current());
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // i64, not differentiable

}  // namespace hg
