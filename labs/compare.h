// labs/compare.h — how the labs compare two tensors.
#pragma once
#include "handgrad.h"

namespace hg::lab {

// max |a − b| over all elements (same shape required); equal infinities count as equal, a NaN
// anywhere gives NaN.
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace hg::lab
