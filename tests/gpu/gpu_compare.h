// tests/gpu/gpu_compare.h — what the device-op tests share: the backend table, poisoned outputs,
// and the comparison with the CPU op, printed as ‖gpu − cpu‖ / ‖cpu‖.
//
// The reference is always the CPU op (handgrad.h) on CPU tensors holding the very values the GPU
// was given. A float32 GPU result is compared with the CPU op run in float64 on those float32
// values (ref()), so the error printed is the GPU's own rounding, not the CPU's float32 rounding
// added to it; tolerances: < 1e-12 (float64), < 1e-5 (float32).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "handgrad.h"
#ifdef HANDGRAD_WITH_CUDA
#include "cuda/allocator.h"
#endif

namespace hg::gpu_test {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType kFloatTypes[] = {DType::f64, DType::f32};

inline const CudaBackend& cu() { return *cuda_backend(); }  // main.cpp runs the tests only when it is usable

inline double tolerance(DType t) { return t == DType::f64 ? 1e-12 : 1e-5; }

// The CPU reference's input: x (a CPU tensor) in float64.
inline Tensor ref(const Tensor& x) { return x.detach().to(DType::f64); }
inline Tensor gpu(const Tensor& x) { return x.detach().to(Device::cuda); }

// ‖a − b‖ / ‖b‖ over every entry. Equal entries (equal infinities too) count 0; a NaN, or an
// infinity on one side only, makes it +inf, so a poisoned (NaN) entry the kernel did not write fails.
inline double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) {
      if (std::isfinite(b[i])) den += b[i] * b[i];
      continue;
    }
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return kInf;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  if (num == 0.0) return 0.0;
  return std::sqrt(num) / std::sqrt(den);
}

// Checks a GPU result against the CPU reference (same shape) and prints the relative error.
inline void expect_close(const std::string& what, const Tensor& out, const Tensor& cpu_ref, DType t) {
  REQUIRE(out.defined());
  CHECK(out.device() == Device::cuda);
  CHECK(out.dtype() == t);
  REQUIRE(out.shape() == cpu_ref.shape());
  const double rel = rel_error(out.to_vector(), cpu_ref.to_vector());
  MESSAGE(what, " ", std::string(dtype_name(t)), " ", shape_str(out.shape()), ": ||gpu - cpu|| / ||cpu|| = ", rel);
  CHECK(rel < tolerance(t));
}

// The same where the answers must agree bit for bit (copies, selections, indices).
inline void expect_equal(const std::string& what, const Tensor& out, const Tensor& cpu_ref) {
  REQUIRE(out.defined());
  CHECK(out.device() == Device::cuda);
  CHECK(out.dtype() == cpu_ref.dtype());
  REQUIRE(out.shape() == cpu_ref.shape());
  const double rel = rel_error(out.to_vector(), cpu_ref.to_vector());
  MESSAGE(what, " ", std::string(dtype_name(out.dtype())), " ", shape_str(out.shape()),
          ": ||gpu - cpu|| / ||cpu|| = ", rel, " (must be exactly 0)");
  CHECK(rel == 0.0);
}

// Sets every byte of every cached device block to 0xFF: NaN as float32 and float64, -1 as i64.
inline void poison_cache() {
#ifdef HANDGRAD_WITH_CUDA
  cuda::allocator_poison_cached(0xFF);
#endif
}

// Runs f once to fill the allocator's cache with blocks of the sizes f allocates, drops its
// results, poisons the cache, and runs f again: every output f gets now starts out as NaN, so
// an element the kernel fails to write shows up in the comparison.
template <typename F>
auto poisoned(F&& f) {
  {
    auto warm = f();
    (void)warm;
  }
  poison_cache();
  return f();
}

// Random normal draws (never exactly zero in practice) and uniform draws in [lo, hi).
inline Tensor normal(const Shape& s, Generator& gen, DType t, double sd = 1.0) { return randn(s, gen, t, 0.0, sd); }
inline Tensor uniform(const Shape& s, Generator& gen, DType t, double lo, double hi) { return rand(s, gen, t, lo, hi); }

}  // namespace hg::gpu_test
