// ops/division.h — floor division and remainder (ops/division.cpp), PyTorch's `//` and `%`.
#pragma once
#include "engine/tensor.h"

namespace hg {

// floor_divide: a / b rounded towards −∞. remainder: a − floor_divide(a, b)·b, with b's sign.
// Two int64 or bool operands divide exactly (a zero divisor is an Error); with a float the result
// is that float's (ops/integer.h says how operands promote).
Tensor floor_divide(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor remainder(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor floor_divide(const Tensor& a, double s, Site where = Site::current());
Tensor remainder(const Tensor& a, double s, Site where = Site::current());
Tensor remainder(double s, const Tensor& b, Site where = Site::current());

}  // namespace hg
