// ops/broadcast.h — numpy broadcasting: the shape two operands broadcast to, expand (a
// stride-0 view) and its adjoint sum_to (sum a gradient back down to an operand's shape).
#pragma once
#include "engine/tensor.h"

namespace hg {

// The broadcast of shapes a and b, or an Error naming `op` and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Strides that read x as if it had shape `to` (0 on broadcast dimensions).
Shape broadcast_strides(const char* op, const Tensor& x, const Shape& to);

// A view of x with shape `to` (broadcast dimensions get stride 0). Backward: sum_to(g, x.shape).
Tensor expand(const Tensor& x, const Shape& to, Site where = Site::current());
// Sum g over the dimensions that broadcasting added or stretched, giving shape `to`.
Tensor sum_to(const Tensor& g, const Shape& to);

// Both inputs must share dtype and device; otherwise an Error naming op, both shapes and the fix.
void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b);

}  // namespace hg
