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
#include <functional>
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

// ---------------------------------------------------------------- ops with their backward

// f on fresh leaves holding the values of `xs` (CPU tensors) on `device` in dtype t (floating
// inputs only; masks and indices are moved as they are): the output, and the gradient of
// sum(out ∘ R) with respect to every floating input, R fixed.
struct OpRun {
  Tensor out;
  std::vector<Tensor> grads;
};
inline OpRun run_op(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& xs,
                    Device device, DType t) {
  std::vector<Tensor> in;
  for (const Tensor& x : xs) {
    Tensor v = is_floating(x.dtype()) ? x.detach().to(t) : x.detach();
    v = v.to(device).detach();
    if (is_floating(x.dtype())) v.requires_grad_();
    in.push_back(v);
  }
  OpRun r;
  r.out = f(in);
  Generator gen(99);
  const Tensor R = randn(r.out.shape(), gen, DType::f32).to(t).to(device);  // float32 values: the same R in both dtypes
  if (r.out.requires_grad()) sum(mul(r.out, R)).backward();
  for (const Tensor& x : in) r.grads.push_back(x.requires_grad() && x.grad().defined() ? x.grad() : Tensor());
  return r;
}

// The op on the GPU in float64 and float32 against the CPU op in float64 on the values the GPU
// was given: the output and every input's gradient, each printed as ‖gpu − cpu‖ / ‖cpu‖.
inline void check_op(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                     const std::vector<Tensor>& xs) {
  for (DType t : kFloatTypes) {
    std::vector<Tensor> given;  // the values the GPU gets, in float64 for the CPU reference (ref())
    for (const Tensor& x : xs) given.push_back(is_floating(x.dtype()) ? ref(x.detach().to(t)) : x);
    const OpRun cpu = run_op(f, given, Device::cpu, DType::f64);
    const OpRun gpu = run_op(f, xs, Device::cuda, t);
    REQUIRE(gpu.out.device() == Device::cuda);
    expect_close(what + " forward", gpu.out, cpu.out, t);
    for (size_t k = 0; k < xs.size(); ++k) {
      if (!cpu.grads[k].defined()) continue;
      REQUIRE(gpu.grads[k].defined());
      expect_close(what + " d/dx" + std::to_string(k), gpu.grads[k], cpu.grads[k], t);
    }
  }
}

}  // namespace hg::gpu_test
