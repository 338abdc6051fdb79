// cpu/rows.h — scalar building blocks of the row kernels, written so that a loop of them
// vectorises: a polynomial e^x and reductions over 8 fixed lanes. Used by the per-level kernels
// (cpu/kernels_impl.h) and by the templated CPU loops of ops/ (float64, strided rows).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu/portable.h"

namespace hg {

// e^x for the exp-heavy row kernels (attention's softmax, cross-entropy), written so that a
// loop of them vectorises (std::exp is one library call per element). float: Cephes' expf —
// x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a degree-7 polynomial, 2^n put into the exponent
// bits — within 2 ulp of e^x (tests/cpu/test_parallel.cpp checks it against std::exp); 0 below
// x = −86.9 (where e^x is below 2^−125, subnormal), +inf above 88.72, NaN for NaN. double: std::exp.
// Every step is one correctly rounded operation (no fused multiply-add: the kernel files are
// compiled with contraction off), so a vector lane computes exactly what the scalar code does.
template <typename T>
inline T exp_fast(T x) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr float lo = -86.9f, hi = 88.72283905f;
    constexpr float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    constexpr float shifter = 12582912.0f;  // 1.5 · 2^23: adding and subtracting it rounds to an integer
    const float xc = std::min(std::max(x, lo), hi);
    const float n = (xc * log2e + shifter) - shifter;
    const float r = (xc - n * ln2_hi) - n * ln2_lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float er = p * r * r + r + 1.0f;
    // 2^n = 2^(n−1) · 2: n reaches 128 near hi, one more than a float's exponent holds
    const float scale = hg::bit_cast<float>((static_cast<int32_t>(n) + 126) << 23);
    float y = er * scale * 2.0f;
    y = x < lo ? 0.0f : y;
    y = x > hi ? std::numeric_limits<float>::infinity() : y;
    return x != x ? x : y;
  } else {
    return std::exp(x);
  }
}

// Row reductions over 8 interleaved lanes: lane l takes elements l, l + 8, l + 16, ..., and the
// lanes are combined in one fixed tree. A plain loop is one long chain of dependent adds (or
// maxes), each waiting for the last; eight independent chains run 8 wide. The order is fixed —
// the same at every instruction-set level (cpu/kernels.h) — so the result is the same bits
// every run, but not those of the plain loop's left-to-right sum.
template <typename T, typename Term>
inline T sum_lanes(int64_t n, Term term) {
  T acc[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += term(j + l);
  T total = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; j < n; ++j) total += term(j);
  return total;
}

// The row's maximum, −inf for n = 0; a NaN element is skipped (std::max keeps its first operand).
template <typename T>
inline T max_lanes(const T* x, int64_t n) {
  T acc[8];
  std::fill(acc, acc + 8, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] = std::max(acc[l], x[j + l]);
  T m = std::max(std::max(std::max(acc[0], acc[4]), std::max(acc[1], acc[5])),
                 std::max(std::max(acc[2], acc[6]), std::max(acc[3], acc[7])));
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

}  // namespace hg
