// FlashAttention-2's tiled attention on the GPU (cuda::attention_tiled_forward / _backward,
// cuda/attention_tiled_*.cu) against the CPU's materialized trace in float64 (hg::attention_trace):
// O, the row log-sum-exp L (checked against logsumexp of the trace's scores), dQ, dK, dV and dS,
// for float64 and float32, causal or not, no mask / boolean / additive (with −inf entries and rows
// with no visible key), Tq != Tk, sizes the tiles do not divide, a stride-0 batch dimension and
// non-contiguous operands; bit-identical reruns; NaN rows; and the argument errors. The forward
// with its tangent (cuda::attention_tiled_tangent) against hg::attention_tangent_trace, the same cases.
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/ops.h"
#include "gpu_compare.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

enum class Mask { none, boolean, additive };

struct Case {
  const char* name;
  Shape batch;
  int64_t Tq, Tk, dk, dv;
  bool causal = false;
  Mask mask = Mask::none;
  bool expand_k = false;   // K and V with a stride-0 batch dimension (one K, V shared by batch[0])
  bool strided_q = false;  // q a transposed view
};

Shape with(Shape s, std::initializer_list<int64_t> last) {
  s.insert(s.end(), last);
  return s;
}

// A boolean mask (Tq, Tk), true = may attend: about 3 in 4 keys visible, row 2 none (a row with no
// visible key). Read as a broadcast over the batch.
Tensor boolean_mask(int64_t Tq, int64_t Tk, Generator& gen) {
  const Tensor u = uniform({Tq, Tk}, gen, DType::f64, 0.0, 1.0);
  std::vector<bool> m(static_cast<size_t>(Tq * Tk));
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t j = 0; j < Tk; ++j) m[static_cast<size_t>(i * Tk + j)] = i != 2 && u.at({i, j}) < 0.75;
  return bool_tensor(m, {Tq, Tk});
}

// An additive mask's storage, (batch[0], [1,] Tk, Tq) float64 (the mask is its transpose, read
// through strides and broadcast over batch[1] when there is one): normal entries, −inf at about
// 1 in 5, query row 3 all −inf (no visible key).
Tensor additive_mask_storage(const Shape& batch, int64_t Tq, int64_t Tk, Generator& gen) {
  const Shape shape = batch.size() > 1 ? Shape{batch[0], 1, Tk, Tq} : Shape{batch[0], Tk, Tq};
  Tensor m = normal(shape, gen, DType::f64);
  const Tensor u = uniform({Tk, Tq}, gen, DType::f64, 0.0, 1.0);
  Tensor flat = m.reshape({batch[0], Tk, Tq});
  for (int64_t b = 0; b < batch[0]; ++b)
    for (int64_t j = 0; j < Tk; ++j)
      for (int64_t i = 0; i < Tq; ++i)
        if (i == 3 || u.at({j, i}) < 0.2) flat.set_at({b, j, i}, -kInf);
  return m;
}

// The row log-sum-exp of the trace's scores S (..., Tq, Tk): −inf on a row with no visible key.
Tensor logsumexp_rows(const Tensor& S) {
  const int64_t Tk = S.size(-1), rows = Tk ? S.numel() / Tk : 0;
  const std::vector<double> s = S.contiguous().to_vector();
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double m = -kInf, z = 0.0;
    for (int64_t j = 0; j < Tk; ++j) m = std::max(m, s[static_cast<size_t>(r * Tk + j)]);
    for (int64_t j = 0; m != -kInf && j < Tk; ++j) z += std::exp(s[static_cast<size_t>(r * Tk + j)] - m);
    out[static_cast<size_t>(r)] = m == -kInf ? -kInf : m + std::log(z);
  }
  return tensor(out, Shape(S.shape().begin(), S.shape().end() - 1), DType::f64);
}

struct Tiled {
  Tensor O, L, dQ, dK, dV, dS;
};

Tiled run_tiled(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale, bool causal,
                const Tensor& dO, bool want_ds) {
  Tiled r;
  r.O = cuda::attention_tiled_forward(q, k, v, mask, scale, causal, &r.L);
  cuda::attention_tiled_backward(q, k, v, mask, scale, causal, r.O, r.L, dO, &r.dQ, &r.dK, &r.dV,
                                 want_ds ? &r.dS : nullptr);
  return r;
}

void check_case(const Case& c, DType t, Generator& gen) {
  CAPTURE(std::string(c.name));
  CAPTURE(std::string(dtype_name(t)));
  // The values the GPU gets (rounded to t), and the CPU reference's float64 copies of them.
  const Tensor q_store = normal(c.strided_q ? with(c.batch, {c.dk, c.Tq}) : with(c.batch, {c.Tq, c.dk}), gen, t);
  Shape kv_batch = c.batch;
  if (c.expand_k) kv_batch[0] = 1;
  const Tensor k = normal(with(kv_batch, {c.Tk, c.dk}), gen, t), v = normal(with(kv_batch, {c.Tk, c.dv}), gen, t);
  const Tensor dO = normal(with(c.batch, {c.Tq, c.dv}), gen, t);
  const auto view_q = [&](const Tensor& x) { return c.strided_q ? x.transpose(-2, -1) : x; };
  const auto view_kv = [&](const Tensor& x, int64_t d) { return c.expand_k ? expand(x, with(c.batch, {c.Tk, d})) : x; };
  Tensor mask_ref, mask_gpu;  // CPU float64 / b8, and the GPU's (b8, or t), same values and strides
  if (c.mask == Mask::boolean) {
    mask_ref = boolean_mask(c.Tq, c.Tk, gen);
    mask_gpu = gpu(mask_ref);
  } else if (c.mask == Mask::additive) {
    const Tensor stored = additive_mask_storage(c.batch, c.Tq, c.Tk, gen).to(t);
    mask_ref = ref(stored).transpose(-2, -1);
    mask_gpu = gpu(stored).transpose(-2, -1);
  }
  const AttentionTrace want = attention_trace(view_q(ref(q_store)), view_kv(ref(k), c.dk), view_kv(ref(v), c.dv),
                                              ref(dO), {.causal = c.causal, .mask = mask_ref});
  const Tensor gq = view_q(gpu(q_store)), gk = view_kv(gpu(k), c.dk), gv = view_kv(gpu(v), c.dv), gdO = gpu(dO);
  const bool want_ds = c.mask == Mask::additive;
  const Tiled got = poisoned([&] { return run_tiled(gq, gk, gv, mask_gpu, want.scale, c.causal, gdO, want_ds); });
  expect_close("O", got.O, want.O, t);
  expect_close("L", got.L, logsumexp_rows(want.S), t);
  expect_close("dQ", got.dQ, want.dQ, t);
  expect_close("dK", got.dK, want.dK, t);
  expect_close("dV", got.dV, want.dV, t);
  if (want_ds) expect_close("dS", got.dS, want.dS, t);
  // The same bits on a second run: no atomics, a fixed order of every sum.
  const Tiled again = run_tiled(gq, gk, gv, mask_gpu, want.scale, c.causal, gdO, want_ds);
  expect_equal("O (rerun)", again.O, got.O);
  expect_equal("L (rerun)", again.L, got.L);
  expect_equal("dQ (rerun)", again.dQ, got.dQ);
  expect_equal("dK (rerun)", again.dK, got.dK);
  expect_equal("dV (rerun)", again.dV, got.dV);
  if (want_ds) expect_equal("dS (rerun)", again.dS, got.dS);
  // The forward with its tangent (cuda/attention_tiled_tangent.cu) against the CPU's formulas.
  const Tensor dq_store = normal(q_store.shape(), gen, t), dk = normal(k.shape(), gen, t), dv = normal(v.shape(), gen, t);
  const AttentionTangentTrace wt =
      attention_tangent_trace(view_q(ref(q_store)), view_kv(ref(k), c.dk), view_kv(ref(v), c.dv), view_q(ref(dq_store)),
                              view_kv(ref(dk), c.dk), view_kv(ref(dv), c.dv), {.causal = c.causal, .mask = mask_ref});
  Tensor tL, tOd;
  const Tensor tO = poisoned([&] {
    return cuda::attention_tiled_tangent(gq, gk, gv, mask_gpu, want.scale, c.causal, view_q(gpu(dq_store)),
                                         view_kv(gpu(dk), c.dk), view_kv(gpu(dv), c.dv), &tL, &tOd);
  });
  expect_close("O (with its tangent)", tO, want.O, t);
  expect_close("L (with its tangent)", tL, logsumexp_rows(want.S), t);
  expect_close("Ȯ", tOd, wt.dotO, t);
  // Only V moving: Ȯ = P V̇.
  Tensor vOd;
  cuda::attention_tiled_tangent(gq, gk, gv, mask_gpu, want.scale, c.causal, Tensor(), Tensor(), view_kv(gpu(dv), c.dv),
                                nullptr, &vOd);
  expect_close("Ȯ (V̇ alone)", vOd, matmul(want.P, view_kv(ref(dv), c.dv)), t);
}

template <typename F>
void expect_error(const F& f, std::initializer_list<const char*> parts) {
  try {
    f();
    FAIL("no hg::Error thrown");
  } catch (const Error& e) {
    const std::string msg = e.what();
    MESSAGE(msg);
    CHECK(msg.find("attention_tiled (cuda)") != std::string::npos);
    for (const char* p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "expected \"", p, "\" in the message");
  }
}

}  // namespace

TEST_CASE("attention tiled (cuda): O, L, dQ, dK, dV and dS against the CPU trace") {
  const Case cases[] = {
      {"square, no mask", {2, 2}, 70, 70, 16, 8},
      {"square, causal", {2, 2}, 70, 70, 16, 8, true},
      {"Tq > Tk, causal, boolean mask", {3}, 45, 21, 8, 4, true, Mask::boolean},
      {"Tq < Tk, boolean mask", {2}, 21, 50, 8, 8, false, Mask::boolean},
      {"additive mask (−inf, a hidden row), dS", {2, 2}, 37, 40, 16, 4, false, Mask::additive},
      {"additive mask, causal, Tq < Tk", {2}, 33, 50, 8, 8, true, Mask::additive},
      {"stride-0 batch of K and V", {3, 2}, 19, 35, 8, 4, true, Mask::none, true},
      {"non-contiguous q, boolean mask", {2}, 40, 26, 16, 8, false, Mask::boolean, false, true},
      {"one row, one key", {1}, 1, 1, 8, 4},
  };
  Generator gen(811);
  for (DType t : kFloatTypes)
    for (const Case& c : cases) check_case(c, t, gen);
}

TEST_CASE("attention tiled (cuda): a row with no visible key gives O = 0, L = −inf and no gradient") {
  Generator gen(812);
  for (DType t : kFloatTypes) {
    const Tensor q = gpu(normal({1, 20, 8}, gen, t)), k = gpu(normal({1, 20, 8}, gen, t));
    const Tensor v = gpu(normal({1, 20, 4}, gen, t)), dO = gpu(normal({1, 20, 4}, gen, t));
    const Tensor mask = gpu(boolean_mask(20, 20, gen));  // row 2 hidden
    const Tiled r = run_tiled(q, k, v, mask, 0.5, false, dO, false);
    CHECK(r.L.at({0, 2}) == -kInf);  // (at() copies to the host)
    for (int64_t c = 0; c < 4; ++c) CHECK(r.O.at({0, 2, c}) == 0.0);
    for (int64_t c = 0; c < 8; ++c) CHECK(r.dQ.at({0, 2, c}) == 0.0);
    // No key at all (Tk = 0): every row is such a row.
    Tensor L0;
    const Tensor O0 = cuda::attention_tiled_forward(q, gpu(normal({1, 0, 8}, gen, t)), gpu(normal({1, 0, 4}, gen, t)),
                                                    Tensor(), 0.5, false, &L0);
    expect_equal("O with no keys", O0, zeros({1, 20, 4}, t));
    expect_equal("L with no keys", L0, full({1, 20}, -kInf, t));
  }
}

TEST_CASE("attention tiled (cuda): a NaN among a row's visible scores makes its O and L NaN") {
  Generator gen(813);
  for (DType t : kFloatTypes) {
    Tensor qc = normal({1, 40, 8}, gen, t);
    qc.set_at({0, 5, 3}, std::nan(""));
    const Tensor k = gpu(normal({1, 40, 8}, gen, t)), v = gpu(normal({1, 40, 4}, gen, t));
    Tensor L;
    const Tensor O = cuda::attention_tiled_forward(gpu(qc), k, v, Tensor(), 0.5, true, &L);
    CHECK(std::isnan(L.at({0, 5})));
    for (int64_t c = 0; c < 4; ++c) CHECK(std::isnan(O.at({0, 5, c})));
    CHECK(std::isfinite(L.at({0, 4})));
    CHECK(std::isfinite(L.at({0, 6})));
  }
}

TEST_CASE("attention tiled (cuda): bad arguments throw an hg::Error naming the op") {
  Generator gen(814);
  const Tensor q = gpu(normal({2, 6, 8}, gen, DType::f64)), k = gpu(normal({2, 7, 8}, gen, DType::f64));
  const Tensor v = gpu(normal({2, 7, 4}, gen, DType::f64));
  const auto forward = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m = Tensor()) {
    return [=] { (void)cuda::attention_tiled_forward(a, b, c, m, 1.0, false, nullptr); };
  };
  expect_error(forward(gpu(normal({1, 4, 129}, gen, DType::f64)), gpu(normal({1, 4, 129}, gen, DType::f64)),
                       gpu(normal({1, 4, 8}, gen, DType::f64))),
               {"(1, 4, 129)", "128"});
  expect_error(forward(q, k, gpu(normal({2, 7, 130}, gen, DType::f64))), {"dv = 130", "128"});
  expect_error(forward(q, k.to(DType::f32), v), {"dtype"});
  expect_error(forward(q, gpu(normal({1, 7, 8}, gen, DType::f64)), v), {"batch"});
  expect_error(forward(q, gpu(normal({2, 7, 5}, gen, DType::f64)), v), {"dk"});
  expect_error(forward(q, k, gpu(normal({2, 6, 4}, gen, DType::f64))), {"Tk"});
  expect_error(forward(normal({2, 6, 8}, gen, DType::f64), k, v), {"on cpu"});
  expect_error(forward(q, k, v, gpu(ones({6, 7}, DType::i64))), {"mask", "b8"});
  expect_error(forward(q, k, v, gpu(ones({6, 7}, DType::f32))), {"mask", "additive"});
  expect_error(forward(q, k, v, gpu(ones({5, 7}, DType::f64))), {"broadcast"});
  Tensor L;
  const Tensor O = cuda::attention_tiled_forward(q, k, v, Tensor(), 1.0, false, &L);
  Tensor dQ;
  expect_error([&] { cuda::attention_tiled_backward(q, k, v, Tensor(), 1.0, false, O, L.transpose(0, 1), O, &dQ,
                                                    nullptr, nullptr, nullptr); },
               {"log-sum-exp L", "(2, 6)"});
  expect_error([&] { cuda::attention_tiled_backward(q, k, v, Tensor(), 1.0, false, O, L, O.to(DType::f32), &dQ,
                                                    nullptr, nullptr, nullptr); },
               {"dtype"});
}
