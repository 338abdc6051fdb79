// gemm (cuBLAS) against the CPU matmul for every operand layout the host side distinguishes,
// and attention forward + backward composed from the table's entries (gemm, attention_scale_mask,
// softmax_rows, softmax_backward_rows) against the CPU attention_trace, intermediate by
// intermediate, for every mask kind and the fully-masked-row rule.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "gpu_compare.h"
#include "cuda/ops.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

// An operand: a CPU tensor and the view taken of it (on the CPU and, identically, on the GPU).
struct Operand {
  Shape shape;
  Tensor (*view)(const Tensor&);
};
Tensor as_is(const Tensor& x) { return x; }
Tensor transposed(const Tensor& x) { return x.transpose(-2, -1); }
Tensor every_other_column(const Tensor& x) { return x.slice(-1, 0, x.size(-1), 2); }
Tensor swap_batch(const Tensor& x) { return x.permute({1, 0, 2, 3}); }

void check_gemm(const std::string& what, const Operand& A, const Operand& B, double alpha, Generator& gen, DType t) {
  const Tensor a_base = normal(A.shape, gen, t), b_base = normal(B.shape, gen, t);
  const Tensor ga = A.view(gpu(a_base)), gb = B.view(gpu(b_base));
  const Tensor out = poisoned([&] { return cuda::gemm(ga, gb, alpha); });
  expect_close("gemm " + what, out, hg::mul(hg::matmul(A.view(ref(a_base)), B.view(ref(b_base))), alpha), t);
}

// Attention forward and backward from the table's entries, the formulas of ops/attention_formulas.cpp.
struct Trace {
  Tensor S, P, O, dP, D, dS, dQ, dK, dV;
};
Trace device_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dO, double scale, bool causal,
                       const Tensor& mask) {
  Trace t;
  t.S = cuda::gemm(q, k.transpose(-2, -1), 1.0);  // (B, H, Tq, Tk) = Q Kᵀ
  cuda::attention_scale_mask(t.S, scale, causal, mask);
  t.P = cuda::softmax_rows(t.S);
  t.O = cuda::gemm(t.P, v, 1.0);                        // P V
  t.dV = cuda::gemm(t.P.transpose(-2, -1), dO, 1.0);    // Pᵀ dO
  t.dP = cuda::gemm(dO, v.transpose(-2, -1), 1.0);      // dO Vᵀ
  t.dS = cuda::softmax_backward_rows(t.P, t.dP, &t.D);  // P ∘ (dP − D)
  t.dQ = cuda::gemm(t.dS, k, scale);                    // dS K · scale
  t.dK = cuda::gemm(t.dS.transpose(-2, -1), q, scale);  // dSᵀ Q · scale
  return t;
}

}  // namespace

TEST_CASE("gemm matches the CPU matmul for every operand layout") {
  Generator gen(301);
  for (DType t : kFloatTypes) {
    const std::string dtype = dtype_name(t);
    CAPTURE(dtype);
    check_gemm("(5, 7) @ (7, 3)", {{5, 7}, as_is}, {{7, 3}, as_is}, 1.0, gen, t);
    check_gemm("batched (2, 3, 5, 7) @ (2, 3, 7, 4), alpha 0.5", {{2, 3, 5, 7}, as_is}, {{2, 3, 7, 4}, as_is}, 0.5, gen,
               t);
    check_gemm("shared right (4, 6, 5) @ (5, 3)", {{4, 6, 5}, as_is}, {{5, 3}, as_is}, 1.0, gen, t);
    check_gemm("shared left (5, 7) @ (4, 7, 3)", {{5, 7}, as_is}, {{4, 7, 3}, as_is}, 1.0, gen, t);
    check_gemm("broadcast both (2, 1, 5, 7) @ (1, 3, 7, 4)", {{2, 1, 5, 7}, as_is}, {{1, 3, 7, 4}, as_is}, 1.0, gen, t);
    check_gemm("b transposed (2, 5, 7) @ (2, 4, 7)^T", {{2, 5, 7}, as_is}, {{2, 4, 7}, transposed}, 1.0, gen, t);
    check_gemm("a transposed (2, 7, 5)^T @ (2, 7, 4)", {{2, 7, 5}, transposed}, {{2, 7, 4}, as_is}, 1.0, gen, t);
    check_gemm("both transposed", {{3, 7, 5}, transposed}, {{3, 4, 7}, transposed}, -1.5, gen, t);
    check_gemm("a sliced with a step (5, 14)[:, ::2]", {{5, 14}, every_other_column}, {{7, 3}, as_is}, 1.0, gen, t);
    check_gemm("batch dims permuted (3, 2, 5, 7) -> (2, 3, 5, 7)", {{3, 2, 5, 7}, swap_batch}, {{2, 3, 7, 4}, as_is},
               1.0, gen, t);
    check_gemm("row @ column (1, 7) @ (7, 1)", {{1, 7}, as_is}, {{7, 1}, as_is}, 1.0, gen, t);
    check_gemm("row (1, 7) @ (7, 4)", {{1, 7}, as_is}, {{7, 4}, as_is}, 1.0, gen, t);
    check_gemm("column (5, 7) @ (7, 1)", {{5, 7}, as_is}, {{7, 1}, as_is}, 1.0, gen, t);
    check_gemm("k = 1 (5, 1) @ (1, 4)", {{5, 1}, as_is}, {{1, 4}, as_is}, 1.0, gen, t);
    check_gemm("attention-sized (8, 64, 64) @ (8, 64, 64), alpha 0.125", {{8, 64, 64}, as_is},
               {{8, 64, 64}, transposed}, 0.125, gen, t);
    // k = 0: a sum over no terms is 0 (the CPU matmul says so too)
    const Tensor out = poisoned([&] {
      return cuda::gemm(empty({3, 0}, t, Device::cuda), empty({0, 4}, t, Device::cuda), 1.0);
    });
    expect_equal("gemm k = 0", out, hg::matmul(empty({3, 0}, t), empty({0, 4}, t)));
  }
}

TEST_CASE("gemm errors name the shapes") {
  const Tensor a = zeros({2, 3}, DType::f64, Device::cuda);
  CHECK_THROWS_WITH_AS(cuda::gemm(a, zeros({4, 2}, DType::f64, Device::cuda), 1.0),
                       doctest::Contains("inner dimensions differ"), Error);
  CHECK_THROWS_WITH_AS(cuda::gemm(a, zeros({3, 2}, DType::f32, Device::cuda), 1.0), doctest::Contains("dtype mismatch"),
                       Error);
  CHECK_THROWS_WITH_AS(cuda::gemm(a, zeros({3}, DType::f64, Device::cuda), 1.0),
                       doctest::Contains("two matrix dimensions"), Error);
  CHECK_THROWS_WITH_AS(
      cuda::gemm(zeros({2, 2, 3}, DType::f64, Device::cuda), zeros({3, 3, 2}, DType::f64, Device::cuda), 1.0),
      doctest::Contains("cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(cuda::gemm(a, zeros({3, 2}, DType::f64), 1.0), doctest::Contains("is on cpu"), Error);
}

TEST_CASE("attention composed on the device: every intermediate matches attention_trace, every mask kind") {
  const int64_t B = 2, H = 2, T = 6, dk = 4, dv = 3;
  Generator gen(302);
  for (DType t : kFloatTypes) {
    const double lowest = t == DType::f64 ? std::numeric_limits<double>::lowest()
                                          : static_cast<double>(std::numeric_limits<float>::lowest());
    // The masks, on the CPU.
    std::vector<bool> pad(static_cast<size_t>(B * T), true);  // (B, 1, 1, T): batch 1 hides its last two keys
    pad[static_cast<size_t>(T + T - 1)] = pad[static_cast<size_t>(T + T - 2)] = false;
    std::vector<bool> row_hidden(static_cast<size_t>(T * T), true);  // (1, 1, T, T): query 2 sees nothing
    for (int64_t j = 0; j < T; ++j) row_hidden[static_cast<size_t>(2 * T + j)] = false;
    std::vector<bool> first_key(static_cast<size_t>(B * T), true);  // (B, 1, 1, T): batch 0 hides key 0
    first_key[0] = false;
    Tensor additive = normal({T, T}, gen, t);  // (T, T): finite offsets, −inf, and lowest() counted as hidden
    additive.set_at({0, 3}, -kInf);
    additive.set_at({4, 1}, -kInf);
    additive.set_at({5, 5}, lowest);

    struct Case {
      const char* what;
      bool causal;
      Tensor mask;
      int64_t Tq;
    };
    const Case cases[] = {
        {"no mask", false, Tensor(), T},
        {"causal", true, Tensor(), T},
        {"boolean padding (B, 1, 1, T)", false, bool_tensor(pad, {B, 1, 1, T}), T},
        {"additive (T, T) with -inf and lowest", false, additive, T},
        {"a fully masked row (1, 1, T, T)", false, bool_tensor(row_hidden, {1, 1, T, T}), T},
        {"causal + padding: query 0 of batch 0 sees nothing", true, bool_tensor(first_key, {B, 1, 1, T}), T},
        {"causal, Tq = 4 < Tk = 6", true, Tensor(), 4},
    };
    for (const Case& c : cases) {
      const std::string what = c.what, dtype = dtype_name(t);
      CAPTURE(what);
      CAPTURE(dtype);
      const Tensor q = normal({B, H, c.Tq, dk}, gen, t), k = normal({B, H, T, dk}, gen, t);
      const Tensor v = normal({B, H, T, dv}, gen, t), dO = normal({B, H, c.Tq, dv}, gen, t);
      // The reference in the same dtype: a float32 additive mask's lowest() is float32's.
      const AttentionTrace want = attention_trace(q, k, v, dO, {.causal = c.causal, .mask = c.mask});
      const Tensor gmask = c.mask.defined() ? gpu(c.mask) : Tensor();
      const Trace got =
          poisoned([&] { return device_attention(gpu(q), gpu(k), gpu(v), gpu(dO), want.scale, c.causal, gmask); });
      const std::string w = std::string(" [") + c.what + "]";
      expect_close("attention S" + w, got.S, want.S, t);
      expect_close("attention P" + w, got.P, want.P, t);
      expect_close("attention O" + w, got.O, want.O, t);
      expect_close("attention dP" + w, got.dP, want.dP, t);
      expect_close("attention D" + w, got.D, want.D, t);
      expect_close("attention dS" + w, got.dS, want.dS, t);
      expect_close("attention dQ" + w, got.dQ, want.dQ, t);
      expect_close("attention dK" + w, got.dK, want.dK, t);
      expect_close("attention dV" + w, got.dV, want.dV, t);
    }
    // The fully masked row: zero weights, zero output, zero dQ — exactly.
    const Tensor q = normal({B, H, T, dk}, gen, t), k = normal({B, H, T, dk}, gen, t);
    const Tensor v = normal({B, H, T, dv}, gen, t), dO = normal({B, H, T, dv}, gen, t);
    const Trace got =
        device_attention(gpu(q), gpu(k), gpu(v), gpu(dO), 0.5, false, gpu(bool_tensor(row_hidden, {1, 1, T, T})));
    bool zero = true;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < T; ++j) zero = zero && got.P.at({b, h, 2, j}) == 0.0 && got.dS.at({b, h, 2, j}) == 0.0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t j = 0; j < dv; ++j) zero = zero && got.O.at({b, h, 2, j}) == 0.0;
        for (int64_t j = 0; j < dk; ++j) zero = zero && got.dQ.at({b, h, 2, j}) == 0.0;
      }
    CHECK(zero);
  }
}

TEST_CASE("attention_scale_mask errors") {
  const Tensor S = zeros({2, 3, 4}, DType::f32, Device::cuda);
  CHECK_THROWS_WITH_AS(cuda::attention_scale_mask(S.transpose(-2, -1), 1.0, false, Tensor()),
                       doctest::Contains("contiguous"), Error);
  CHECK_THROWS_WITH_AS(cuda::attention_scale_mask(S, 1.0, false, zeros({3, 4}, DType::f64, Device::cuda)),
                       doctest::Contains("must be b8"), Error);
  CHECK_THROWS_WITH_AS(cuda::attention_scale_mask(S, 1.0, false, zeros({5, 4}, DType::b8, Device::cuda)),
                       doctest::Contains("broadcast"), Error);
  CHECK_THROWS_WITH_AS(cuda::attention_scale_mask(zeros({4}, DType::f32, Device::cuda), 1.0, true, Tensor()),
                       doctest::Contains("two dimensions"), Error);
}

#ifdef HANDGRAD_WITH_CUDA
TEST_CASE("steady state: attention forward + backward on the device makes no new cudaMalloc") {
  Generator gen(303);
  const Tensor q = gpu(normal({2, 4, 64, 16}, gen, DType::f32)), k = gpu(normal({2, 4, 64, 16}, gen, DType::f32));
  const Tensor v = gpu(normal({2, 4, 64, 16}, gen, DType::f32)), dO = gpu(normal({2, 4, 64, 16}, gen, DType::f32));
  { Trace warm = device_attention(q, k, v, dO, 0.25, true, Tensor()); }
  const uint64_t before = cuda::allocator_stats().cuda_malloc_calls;
  for (int step = 0; step < 3; ++step) {
    Trace t = device_attention(q, k, v, dO, 0.25, true, Tensor());
    cu().synchronize();
  }
  CHECK(cuda::allocator_stats().cuda_malloc_calls == before);
}
#endif
