// cpu/pointwise_rules.h — the value rules of the pointwise functions whose edge cases are easy to
// get wrong, written once for the CPU loops (ops/pointwise.cpp) and the GPU kernels
// (cuda/elementwise.cu), which both include this header.
//
// Division of floats follows C and Python rather than a rounded quotient: fmod(−0.25, −0.001) is
// −0.000999…, not 0, because a / b rounds to 250 while the exact quotient is 249.99…. Every rule
// below starts from fmod, which C computes exactly, and recovers the whole quotient from it.
#pragma once
#include <math.h>

// Every call names the C library's function (::fmod), never a same-named op of handgrad's that an
// including file may have declared in namespace hg.

#if defined(__CUDACC__)
#define HG_POINTWISE __host__ __device__ inline
#else
#define HG_POINTWISE inline
#endif

namespace hg::rules {

// a − b·⌊a/b⌋ with the divisor's sign (Python's %); a zero divisor gives NaN.
template <typename T>
HG_POINTWISE T remainder_value(T a, T b) {
  T mod = ::fmod(a, b);
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
  return mod;
}

// ⌊a/b⌋ of the exact quotient (Python's //); a zero divisor gives a / b (±inf or NaN), as PyTorch.
template <typename T>
HG_POINTWISE T floor_divide_value(T a, T b) {
  if (b == T(0)) return a / b;
  const T mod = ::fmod(a, b);
  T q = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) q -= T(1);
  if (q == T(0)) return ::copysign(T(0), a / b);
  T whole = ::floor(q);
  if (q - whole > T(0.5)) whole += T(1);
  return whole;
}

// a · ln b, 0 where a = 0 unless b is NaN (PyTorch's xlogy).
template <typename T>
HG_POINTWISE T xlogy_value(T a, T b) {
  if (b != b) return b;
  if (a == T(0)) return T(0);
  return a * ::log(b);
}

// The larger (smaller) of a and b, a NaN losing to a number (C's fmax and fmin).
template <typename T>
HG_POINTWISE T fmax_value(T a, T b) {
  return ::fmax(a, b);
}
template <typename T>
HG_POINTWISE T fmin_value(T a, T b) {
  return ::fmin(a, b);
}

// ln(eᵃ + eᵇ) = m + ln(1 + e^(−|a − b|)), m the larger; equal infinities give that infinity
// (their difference would be NaN).
template <typename T>
HG_POINTWISE T logaddexp_value(T a, T b) {
  if (a == b && (a == T(INFINITY) || a == T(-INFINITY))) return a;
  const T m = a > b ? a : b;
  return m + ::log1p(::exp(-::fabs(a - b)));
}

// log₂(2ᵃ + 2ᵇ) = m + log₂(1 + 2^(−|a − b|)).
template <typename T>
HG_POINTWISE T logaddexp2_value(T a, T b) {
  if (a == b && (a == T(INFINITY) || a == T(-INFINITY))) return a;
  const T m = a > b ? a : b;
  return m + ::log1p(::exp2(-::fabs(a - b))) / T(0.693147180559945309417232121458176568);
}

// The inverse of erf on (−1, 1): an approximation refined by Newton's method on erf itself, so the
// result is erf's inverse to a few ulps (±1 give ±inf; outside [−1, 1], NaN).
template <typename T>
HG_POINTWISE T erfinv_value(T y) {
  if (y != y || y < T(-1) || y > T(1)) return T(NAN);
  if (y == T(1)) return T(INFINITY);
  if (y == T(-1)) return T(-INFINITY);
  if (y == T(0)) return y;  // ±0 keeps its sign
  // Giles' single-precision approximation ("Approximating the erfinv function", GPU Gems 2010),
  // then Newton steps in double: x ← x − (erf(x) − y) / (2/√π · e^(−x²)).
  const double yd = ::fabs(static_cast<double>(y));  // erfinv is odd: solve for |y|, then y's sign
  double w = -::log((1.0 - yd) * (1.0 + yd)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * yd;
  } else {
    w = ::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * yd;
  }
  // erf(x) − y, written as (1 − y) − erfc(x) near 1, where 1 − y is exact and erf(x) would round to 1
  const double two_over_sqrt_pi = 1.12837916709551257389615890312154517;
  for (int step = 0; step < 3; ++step) {
    const double slope = two_over_sqrt_pi * ::exp(-x * x);
    if (slope == 0.0) break;  // x past ~27: no double below 1 is that close to it
    const double residual = yd > 0.5 ? (1.0 - yd) - ::erfc(x) : ::erf(x) - yd;
    x -= residual / slope;
  }
  return static_cast<T>(y < T(0) ? -x : x);
}

}  // namespace hgrules
