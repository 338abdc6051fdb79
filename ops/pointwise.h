// ops/pointwise.h — PyTorch's pointwise functions of two tensors (ops/pointwise.cpp): atan2, fmod,
// remainder and floor division of floats, xlogy, copysign, fmax, fmin, logaddexp, logaddexp2 and
// hypot. Each broadcasts; an int64 or bool operand meets a float one as that float, and two of them
// compute in float32 (PyTorch's promotion); two floats must share a dtype.
#pragma once
#include "engine/tensor.h"

namespace hg {

// The angle of the point (b, a) in (−π, π], the C library's atan2 (atan2(0, 0) = 0, atan2(0, −0) = π).
Tensor atan2(const Tensor& a, const Tensor& b, Site where = Site::current());
// a − trunc(a / b)·b with the exact quotient, the dividend's sign: C's fmod.
Tensor fmod(const Tensor& a, const Tensor& b, Site where = Site::current());
// a − floor(a / b)·b with the exact quotient, the divisor's sign (Python's %, PyTorch's remainder).
Tensor float_remainder(const Tensor& a, const Tensor& b, Site where = Site::current());
// ⌊a / b⌋ of the exact quotient (Python's //); a zero divisor gives a / b (±inf or NaN), as PyTorch.
Tensor float_floor_divide(const Tensor& a, const Tensor& b, Site where = Site::current());
// a · ln b, 0 where a = 0 (unless b is NaN).
Tensor xlogy(const Tensor& a, const Tensor& b, Site where = Site::current());
// |a| with the sign bit of b.
Tensor copysign(const Tensor& a, const Tensor& b, Site where = Site::current());
// The larger (smaller) of a and b, a NaN losing to a number (NaN only where both are).
Tensor fmax(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor fmin(const Tensor& a, const Tensor& b, Site where = Site::current());
// ln(eᵃ + eᵇ) and log₂(2ᵃ + 2ᵇ), without overflow.
Tensor logaddexp(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor logaddexp2(const Tensor& a, const Tensor& b, Site where = Site::current());
// √(a² + b²) without overflow.
Tensor hypot(const Tensor& a, const Tensor& b, Site where = Site::current());

}  // namespace hg
