// ops/power.h — a tensor raised to a tensor's powers, broadcasting (ops/power.cpp derives both
// gradients). pow(x, p) with a number p is in ops/elementwise.h.
#pragma once
#include "engine/tensor.h"

namespace hg {

Tensor pow(const Tensor& a, const Tensor& b, Site where = Site::current());

}  // namespace hg
