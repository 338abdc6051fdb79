// tests/test_util.h — small comparisons shared by the test suites.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::test {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Largest |a_i - b_i|; equal entries (including equal infinities) count as 0.
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

inline double max_abs_diff(const Tensor& x, const Tensor& y) {
  REQUIRE(x.shape() == y.shape());
  return max_abs_diff(x.to_vector(), y.to_vector());
}

// Each a[i] has b[i]'s shape and its very bits (read as float64, which holds every float32 exactly).
inline void check_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    REQUIRE(a[i].shape() == b[i].shape());
    const std::vector<double> x = a[i].to_vector(), y = b[i].to_vector();
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
  }
}

inline bool all_finite(const Tensor& x) {
  for (double v : x.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

inline bool all_zero(const Tensor& x) {
  for (double v : x.to_vector())
    if (v != 0.0) return false;
  return true;
}

// Equal when both are rounded to `decimals`, as the texts print them (the labs' tests).
inline void check_text(double measured, double text, int decimals = 3) {
  const double s = std::pow(10.0, decimals);
  INFO("measured " << measured << ", text " << text);
  CHECK(std::llround(measured * s) == std::llround(text * s));
}

inline void check_text(const std::vector<double>& measured, const std::vector<double>& text, int decimals = 3) {
  REQUIRE(measured.size() == text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    CAPTURE(i);
    check_text(measured[i], text[i], decimals);
  }
}

// A test case that cannot run on this machine says so and why, and does nothing else: ctest
// reports every case whose output holds "SKIPPED: " as skipped (tests/CMakeLists.txt), so such a
// case must return straight after calling this.
inline void skip_case(const std::string& why) {
  std::printf("SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
}

}  // namespace hg::test
