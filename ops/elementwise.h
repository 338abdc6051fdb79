// ops/elementwise.h — elementwise ops with numpy broadcasting (float32 / float64).
// Forward kernels and hand-derived backward rules are in ops/elementwise.cpp.
// Every op ends with `Site where`, defaulted to the caller's line (the operators below pass on
// their own line instead).
#pragma once
#include "engine/tensor.h"

namespace hg {

// Binary, broadcasting.
Tensor add(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor sub(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor mul(const Tensor& a, const Tensor& b, Site where = Site::current());
Tensor div(const Tensor& a, const Tensor& b, Site where = Site::current());

// With a scalar.
Tensor add(const Tensor& a, double s, Site where = Site::current());
Tensor mul(const Tensor& a, double s, Site where = Site::current());
Tensor rsub(const Tensor& a, double s, Site where = Site::current());  // s - a
Tensor rdiv(const Tensor& a, double s, Site where = Site::current());  // s / a

// Unary.
Tensor neg(const Tensor& x, Site where = Site::current());
Tensor exp(const Tensor& x, Site where = Site::current());
Tensor log(const Tensor& x, Site where = Site::current());
Tensor pow(const Tensor& x, double p, Site where = Site::current());
Tensor sqrt(const Tensor& x, Site where = Site::current());
Tensor relu(const Tensor& x, Site where = Site::current());
Tensor tanh(const Tensor& x, Site where = Site::current());
Tensor gelu(const Tensor& x, Site where = Site::current());  // exact: x * Phi(x), Phi the standard normal CDF (PyTorch's default)
Tensor softplus(const Tensor& x, Site where = Site::current());  // log(1 + e^x), computed without overflow

// The elementwise functions of ops/elementwise_math.cpp, PyTorch's names (each f' by hand there).
Tensor sin(const Tensor& x, Site where = Site::current());
Tensor cos(const Tensor& x, Site where = Site::current());
Tensor tan(const Tensor& x, Site where = Site::current());
Tensor asin(const Tensor& x, Site where = Site::current());
Tensor acos(const Tensor& x, Site where = Site::current());
Tensor atan(const Tensor& x, Site where = Site::current());
Tensor sinh(const Tensor& x, Site where = Site::current());
Tensor cosh(const Tensor& x, Site where = Site::current());
Tensor asinh(const Tensor& x, Site where = Site::current());
Tensor acosh(const Tensor& x, Site where = Site::current());
Tensor atanh(const Tensor& x, Site where = Site::current());
Tensor sigmoid(const Tensor& x, Site where = Site::current());
Tensor silu(const Tensor& x, Site where = Site::current());
Tensor log1p(const Tensor& x, Site where = Site::current());
Tensor expm1(const Tensor& x, Site where = Site::current());
Tensor log2(const Tensor& x, Site where = Site::current());
Tensor exp2(const Tensor& x, Site where = Site::current());
Tensor reciprocal(const Tensor& x, Site where = Site::current());
Tensor rsqrt(const Tensor& x, Site where = Site::current());
Tensor square(const Tensor& x, Site where = Site::current());
Tensor abs(const Tensor& x, Site where = Site::current());  // its gradient at 0 is 0, as PyTorch's
Tensor sign(const Tensor& x, Site where = Site::current());
Tensor floor(const Tensor& x, Site where = Site::current());
Tensor ceil(const Tensor& x, Site where = Site::current());
Tensor round(const Tensor& x, Site where = Site::current());  // half to even, as PyTorch
Tensor trunc(const Tensor& x, Site where = Site::current());

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
// An int64 or bool tensor divides as float32 (true division), as in PyTorch.
inline Tensor operator/(const Tensor& a, double s) {
  return mul(a.defined() && !is_floating(a.dtype()) ? a.to(DType::f32) : a, 1.0 / s);
}
inline Tensor operator/(double s, const Tensor& a) { return rdiv(a, s); }

}  // namespace hg
