// ops/compare.h — comparisons and logic, PyTorch's names: each result is a bool tensor, through
// which no gradient flows (so nothing is recorded), and clamp, which is differentiable.
#pragma once
#include <optional>

#include "engine/tensor.h"

namespace hg {

// a ⋄ b elementwise, broadcast, as bool. Two tensors of one dtype compare as that dtype; of two
// dtypes, as float64. A NaN is unequal to everything, itself included (ne: true).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// With a number: it is read in a's dtype when a is floating point (x == 0.1 for float32 x compares
// with 0.1f, as PyTorch), else as int64 when whole, float64 when not.
Tensor eq(const Tensor& a, double s);
Tensor ne(const Tensor& a, double s);
Tensor lt(const Tensor& a, double s);
Tensor le(const Tensor& a, double s);
Tensor gt(const Tensor& a, double s);
Tensor ge(const Tensor& a, double s);

// Each operand read as a truth value (nonzero: true; NaN is nonzero), broadcast.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);

Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);

// Whether any (all) entry over dims is nonzero (every dim when dims is empty), as bool.
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);

// x limited to [lo, hi] (either bound may be absent; a bound above the other wins, as PyTorch):
// the gradient passes to x strictly inside, and to a tensor bound where it is chosen (shared half
// and half where x equals a tensor bound, as PyTorch). A NaN stays.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi, Site where = Site::current());
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, Site where = Site::current());  // either may be undefined

// The larger (smaller) of a and b elementwise, broadcast; a NaN in either gives NaN, and where they
// are equal the gradient is shared half and half (PyTorch's rules).
Tensor maximum(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor minimum(const Tensor& a, const Tensor& b, Site where = Site::current());
// a + w (b − a), broadcast; w a number or a tensor.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w, Site where = Site::current());
Tensor lerp(const Tensor& a, const Tensor& b, double w, Site where = Site::current());

}  // namespace hg
