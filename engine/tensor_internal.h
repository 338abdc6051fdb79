// engine/tensor_internal.h — the private header of the tensor's sources (engine/tensor.cpp,
// engine/tensor_autograd.cpp, engine/copy.cpp), shared with engine/backward.cpp. Not part of the API.
#pragma once
#include "engine/tensor.h"

namespace hg {

// out = x + alpha · y elementwise on the CPU, for float32 or float64 tensors of one shape and dtype
// with any strides (out may be x: Tensor::add_, the gradient accumulated in place; or a fresh
// tensor: the backward adding two gradients). alpha = 1 with float32 unit-stride rows is the
// kernel table's vadd (cpu/kernels.h): the same bits at the CPU's vector width. One loop for both,
// so a gradient sums the same way wherever it is summed.
void add_rows(const Tensor& out, const Tensor& x, const Tensor& y, double alpha);

// Refuses an in-place write to a tensor that requires grad while grad mode is on, naming `op`.
void check_inplace(const Tensor& t, const char* op);

}  // namespace hg
