// attention: the module's three-token example, fully masked rows, the composed path, the trace.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "handgrad.h"
#include "test_util.h"

using namespace hg;
using namespace hg::test;

namespace {

// |x - expect| within half a unit of the third decimal: "to 3 decimals" as the text prints them.
bool near3(double x, double expect) { return std::abs(x - expect) <= 0.0005 + 1e-12; }

// Left-padded key padding (B, 1, 1, T), true = a real token; the pads come first.
Tensor left_padding(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<bool> m;
  for (int64_t len : lengths)
    for (int64_t j = 0; j < T; ++j) m.push_back(j >= T - len);
  return bool_tensor(m, {static_cast<int64_t>(lengths.size()), 1, 1, T});
}

// The boolean mask as an additive one: 0 where visible, `hidden` elsewhere.
Tensor additive_from(const Tensor& boolean, double hidden, DType t) {
  std::vector<double> v;
  for (double b : boolean.to_vector()) v.push_back(b != 0.0 ? 0.0 : hidden);
  return tensor(v, boolean.shape(), t);
}

// causal & padding, broadcast to (B, 1, T, T), as the module builds it.
Tensor combined(const Tensor& pad, int64_t T) {
  const int64_t B = pad.size(0);
  std::vector<bool> m;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) m.push_back(j <= i && pad.at({b, 0, 0, j}) != 0.0);
  return bool_tensor(m, {B, 1, T, T});
}

struct QKV {
  Tensor q, k, v;
};

QKV three_tokens() {
  Tensor q = tensor({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64).requires_grad_();
  Tensor k = tensor({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64).requires_grad_();  // a separate leaf, equal values
  Tensor v = tensor({1, 0, 0, 2, 3, 3}, {3, 2}, DType::f64).requires_grad_();
  return {q, k, v};
}

}  // namespace

TEST_CASE("module 6, three tokens, causal, scale 1/sqrt 2: weights, outputs, and the hand backward of L = o_3,2") {
  QKV t = three_tokens();
  Tensor dO = zeros({3, 2}, DType::f64);
  dO.set_at({2, 1}, 1.0);  // L = o_{3,2}
  AttentionTrace tr = attention_trace(t.q, t.k, t.v, dO, {.causal = true});
  CHECK(tr.scale == doctest::Approx(1 / std::sqrt(2.0)));
  // weights
  CHECK(tr.P.at({0, 0}) == 1.0);
  CHECK(near3(tr.P.at({1, 0}), 0.330));
  CHECK(near3(tr.P.at({1, 1}), 0.670));
  CHECK(tr.P.at({1, 2}) == 0.0);
  CHECK(near3(tr.P.at({2, 0}), 0.248));
  CHECK(near3(tr.P.at({2, 1}), 0.248));
  CHECK(near3(tr.P.at({2, 2}), 0.503));
  CHECK(tr.S.at({0, 1}) == -kInf);  // the causal mask, visible in the scores
  // o_3
  CHECK(near3(tr.O.at({2, 0}), 1.759));
  CHECK(near3(tr.O.at({2, 1}), 2.007));
  CHECK(tr.O.at({0, 0}) == 1.0);  // token 1 can only copy v_1
  CHECK(tr.O.at({0, 1}) == 0.0);
  // dS row 3 and dQ row 3
  CHECK(near3(tr.dS.at({2, 0}), -0.498));
  CHECK(near3(tr.dS.at({2, 1}), -0.002));
  CHECK(near3(tr.dS.at({2, 2}), 0.500));
  CHECK(all_zero(tr.dS.select(0, 0)));  // only row 3 contributes
  CHECK(all_zero(tr.dS.select(0, 1)));
  CHECK(near3(tr.dQ.at({2, 0}), 0.001));
  CHECK(near3(tr.dQ.at({2, 1}), 0.352));

  // the tape: L = o_{3,2}, backward, and the same dQ, dK, dV
  Tensor o = attention(t.q, t.k, t.v, {.causal = true});
  Tensor loss = o.index({2, 1});
  CHECK(near3(loss.item(), 2.007));
  loss.backward();
  CHECK(max_abs_diff(t.q.grad(), tr.dQ) < 1e-12);
  CHECK(max_abs_diff(t.k.grad(), tr.dK) < 1e-12);
  CHECK(max_abs_diff(t.v.grad(), tr.dV) < 1e-12);
  // and finite differences
  auto L = [](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], {.causal = true}).index({2, 1}); };
  std::vector<Tensor> in = {t.q.detach(), t.k.detach(), t.v.detach()};
  CHECK(max_abs_diff(numeric_gradient(L, in, 0), tr.dQ) < 1e-8);
  CHECK(max_abs_diff(numeric_gradient(L, in, 1), tr.dK) < 1e-8);
}

TEST_CASE("module 6, without the scale: row 3's weight on v_3 is 0.576 and o_3 = (1.940, 2.152)") {
  QKV t = three_tokens();
  Tensor o = attention(t.q, t.k, t.v, {.scale = 1.0, .causal = true});
  CHECK(near3(o.at({2, 0}), 1.940));
  CHECK(near3(o.at({2, 1}), 2.152));
  AttentionTrace tr = attention_trace(t.q, t.k, t.v, zeros({3, 2}, DType::f64), {.scale = 1.0});
  CHECK(near3(tr.P.at({2, 2}), 0.576));
  // without the mask rows 1 and 2 mirror each other, the first two entries swapped
  CHECK(tr.P.at({0, 0}) == doctest::Approx(tr.P.at({1, 1})));
  CHECK(tr.P.at({0, 1}) == doctest::Approx(tr.P.at({1, 0})));
}

TEST_CASE("the left-padded causal batch: early padded queries see only padding -> output 0, gradients 0, never NaN") {
  // module 6, "Numerical safety": B, h, T, dk = 2, 8, 5, 32; sequence 2 has 3 tokens, left-padded.
  const int64_t B = 2, H = 8, T = 5, dk = 32;
  Generator gen(31);
  Tensor pad = left_padding({5, 3}, T);  // (B, 1, 1, T)
  Tensor comb = combined(pad, T);        // (B, 1, T, T)
  struct Variant {
    const char* name;
    AttentionOptions opts;
  };
  const std::vector<Variant> variants = {
      {"causal flag + padding (B, 1, 1, T)", {.causal = true, .mask = pad}},
      {"combined bool (B, 1, T, T)", {.mask = comb}},
      {"additive -inf (B, 1, T, T)", {.mask = additive_from(comb, -kInf, DType::f64)}},
      {"additive lowest() (B, 1, T, T)", {.mask = additive_from(comb, std::numeric_limits<double>::lowest(), DType::f64)}},
  };
  Tensor q0 = randn({B, H, T, dk}, gen, DType::f64), k0 = randn({B, H, T, dk}, gen, DType::f64),
         v0 = randn({B, H, T, dk}, gen, DType::f64), R = randn({B, H, T, dk}, gen, DType::f64);
  Tensor first;
  for (const Variant& var : variants) {
    CAPTURE(var.name);
    Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    Tensor o = attention(q, k, v, var.opts);
    CHECK(all_finite(o));
    Tensor padded_rows = o.select(0, 1).slice(1, 0, 2);  // sequence 2, queries 1-2: (H, 2, dk)
    CHECK(all_zero(padded_rows));
    CHECK_FALSE(all_zero(o.select(0, 1).slice(1, 2, 5)));
    sum(o * R).backward();
    for (const Tensor& g : {q.grad(), k.grad(), v.grad()}) CHECK(all_finite(g));
    CHECK(all_zero(q.grad().select(0, 1).slice(1, 0, 2)));  // the padded queries
    CHECK(all_zero(k.grad().select(0, 1).slice(1, 0, 2)));  // the pads, as keys, are seen by no one
    CHECK(all_zero(v.grad().select(0, 1).slice(1, 0, 2)));
    CHECK_FALSE(all_zero(q.grad().select(0, 1).slice(1, 2, 5)));
    if (!first.defined()) first = o.detach();
    else CHECK(max_abs_diff(o, first) < 1e-15);  // every way of writing the mask gives the same outputs
  }
}

TEST_CASE("an additive mask of lowest() hides the row; the plain composed path silently averages it") {
  Generator gen(32);
  Tensor q = randn({3, 4}, gen, DType::f64), k = randn({3, 4}, gen, DType::f64), v = randn({3, 2}, gen, DType::f64);
  const double low = std::numeric_limits<double>::lowest();
  Tensor mask = tensor({0, 0, 0, low, low, low, 0, low, 0}, {3, 3}, DType::f64);  // row 2 fully hidden
  Tensor o = attention(q, k, v, {.mask = mask});
  CHECK(all_zero(o.select(0, 1)));
  // the trap: S + lowest() makes every score of row 2 the same finite number, so the softmax is uniform
  Tensor naive = matmul(softmax(matmul(q, k.transpose(0, 1)) * 0.5 + mask), v);
  CHECK(naive.at({1, 0}) == doctest::Approx((v.at({0, 0}) + v.at({1, 0}) + v.at({2, 0})) / 3));
  CHECK(max_abs_diff(o.select(0, 0), naive.select(0, 0)) < 1e-14);  // visible rows agree
  // float32 too: half of lowest() counts as hidden
  Tensor m32 = tensor({0, 0, 0, -2e38, -2e38, -2e38, 0, -2e38, 0}, {3, 3}, DType::f32);
  Tensor o32 = attention(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32), {.mask = m32});
  CHECK(all_zero(o32.select(0, 1)));
}

TEST_CASE("attention equals the composed path (matmul, scale, additive mask, softmax, matmul), values and gradients") {
  Generator gen(33);
  const int64_t B = 2, H = 3, T = 4, dk = 5, dv = 3;
  Tensor pad = left_padding({4, 2}, T);
  Tensor comb = combined(pad, T);
  Tensor additive = additive_from(comb, -kInf, DType::f64);  // (B, 1, T, T)
  const double scale = 1 / std::sqrt(static_cast<double>(dk));
  Tensor q0 = randn({B, H, T, dk}, gen, DType::f64), k0 = randn({B, H, T, dk}, gen, DType::f64),
         v0 = randn({B, H, T, dv}, gen, DType::f64), R = randn({B, H, T, dv}, gen, DType::f64);

  Tensor q1 = q0.clone().requires_grad_(), k1 = k0.clone().requires_grad_(), v1 = v0.clone().requires_grad_();
  Tensor o1 = attention(q1, k1, v1, {.mask = comb});
  REQUIRE(tape_of(o1).size() == 1);  // one node, "attention"
  CHECK(tape_of(o1)[0]->op == "attention");
  sum(o1 * R).backward();

  Tensor q2 = q0.clone().requires_grad_(), k2 = k0.clone().requires_grad_(), v2 = v0.clone().requires_grad_();
  Tensor S = matmul(q2, k2.transpose(-2, -1)) * scale + additive;
  Tensor o2 = matmul(softmax(S, -1), v2);
  sum(o2 * R).backward();

  CHECK(max_abs_diff(o1, o2) < 1e-13);
  CHECK(max_abs_diff(q1.grad(), q2.grad()) < 1e-13);
  CHECK(max_abs_diff(k1.grad(), k2.grad()) < 1e-13);
  CHECK(max_abs_diff(v1.grad(), v2.grad()) < 1e-13);
}

TEST_CASE("attention_trace is what the tape does: dQ, dK, dV equal the tape's gradients to 1e-12, every buffer checks") {
  Generator gen(34);
  const int64_t B = 2, H = 2, Tq = 3, Tk = 4, dk = 3, dv = 2;
  Tensor q = randn({B, H, Tq, dk}, gen, DType::f64).requires_grad_();
  Tensor k = randn({B, 1, Tk, dk}, gen, DType::f64).requires_grad_();  // shared by the heads
  Tensor v = randn({B, 1, Tk, dv}, gen, DType::f64).requires_grad_();
  Tensor pad = bool_tensor({true, true, true, true, true, false, true, false}, {B, 1, 1, Tk});
  Tensor dO = randn({B, H, Tq, dv}, gen, DType::f64);
  AttentionOptions opts{.causal = true, .mask = pad};
  AttentionTrace t = attention_trace(q, k, v, dO, opts);
  attention(q, k, v, opts).backward(dO);
  CHECK(max_abs_diff(t.dQ, q.grad()) < 1e-12);
  CHECK(max_abs_diff(t.dK, k.grad()) < 1e-12);
  CHECK(max_abs_diff(t.dV, v.grad()) < 1e-12);
  CHECK(t.dK.shape() == k.shape());
  CHECK(t.D.shape() == Shape{B, H, Tq, 1});
  // each buffer against its formula written with the other ops
  const double scale = 1 / std::sqrt(3.0);
  CHECK(t.scale == doctest::Approx(scale));
  CHECK(max_abs_diff(t.P, softmax(t.S, -1)) < 1e-15);
  CHECK(max_abs_diff(t.O, matmul(t.P, v.detach())) < 1e-14);
  CHECK(max_abs_diff(t.dP, matmul(dO, v.detach().transpose(-2, -1))) < 1e-14);
  CHECK(max_abs_diff(t.D, sum(t.P * t.dP, {-1}, true)) < 1e-14);
  CHECK(max_abs_diff(t.dS, t.P * (t.dP - t.D)) < 1e-14);
  CHECK(max_abs_diff(t.dV, sum(matmul(t.P.transpose(-2, -1), dO), {1}, true)) < 1e-14);
  CHECK(max_abs_diff(t.dQ, matmul(t.dS, k.detach()) * scale) < 1e-14);
  CHECK(max_abs_diff(t.dK, sum(matmul(t.dS.transpose(-2, -1), q.detach()), {1}, true) * scale) < 1e-14);
  // the scores: -inf exactly where hidden (causal j > i, or a padded key), finite elsewhere
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) {
        const bool hidden = j > i || pad.at({b, 0, 0, j}) == 0.0;
        CHECK((t.S.at({b, 0, i, j}) == -kInf) == hidden);
        CHECK((t.P.at({b, 1, i, j}) == 0.0) == hidden);
      }
}

TEST_CASE("causal with Tq != Tk aligns the diagonal at the top left") {
  Generator gen(35);
  Tensor q = randn({2, 3}, gen, DType::f64), k = randn({4, 3}, gen, DType::f64), v = randn({4, 2}, gen, DType::f64);
  AttentionTrace t = attention_trace(q, k, v, zeros({2, 2}, DType::f64), {.causal = true});
  CHECK(t.P.at({0, 0}) == 1.0);
  CHECK(t.P.at({0, 1}) == 0.0);
  CHECK(t.P.at({1, 0}) + t.P.at({1, 1}) == doctest::Approx(1.0));
  CHECK(t.P.at({1, 2}) == 0.0);
  CHECK(t.P.at({1, 3}) == 0.0);
}

TEST_CASE("attention in float32 agrees with float64; causal_mask is the lower triangle") {
  Generator gen(36);
  Tensor q = randn({2, 5, 4}, gen, DType::f64), k = randn({2, 5, 4}, gen, DType::f64), v = randn({2, 5, 3}, gen, DType::f64);
  Tensor o64 = attention(q, k, v, {.causal = true});
  Tensor o32 = attention(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32), {.mask = causal_mask(5)});
  CHECK(o32.dtype() == DType::f32);
  CHECK(max_abs_diff(o32.to(DType::f64), o64) < 1e-5);
  Tensor cm = causal_mask(3);
  CHECK(cm.dtype() == DType::b8);
  CHECK(cm.to_vector() == std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1});
}

TEST_CASE("attention errors name the op and the shapes") {
  Tensor q = zeros({3, 2}, DType::f64), k = zeros({3, 4}, DType::f64), v = zeros({3, 2}, DType::f64);
  CHECK_THROWS_WITH_AS(attention(q, k, v), doctest::Contains("attention: Q (3, 2) and K (3, 4) must share d_k"), Error);
  CHECK_THROWS_WITH_AS(attention(q, q, zeros({4, 2}, DType::f64)),
                       doctest::Contains("attention: K (3, 2) and V (4, 2) must hold the same number of keys"), Error);
  CHECK_THROWS_WITH_AS(attention(zeros({2, 3, 2}, DType::f64), zeros({3, 3, 2}, DType::f64), zeros({3, 3, 2}, DType::f64)),
                       doctest::Contains("attention: the leading (batch) dimensions of Q (2, 3, 2), K (3, 3, 2)"), Error);
  CHECK_THROWS_WITH_AS(attention(q, q, v, {.mask = zeros({2, 3}, DType::b8)}),
                       doctest::Contains("attention: mask (2, 3) does not broadcast against the scores (..., Tq, Tk) = (3, 3)"), Error);
  CHECK_THROWS_WITH_AS(attention(q, q, v, {.mask = zeros({3, 3}, DType::i64)}), doctest::Contains("must be boolean"), Error);
  CHECK_THROWS_WITH_AS(attention(q, q, v, {.mask = zeros({3, 3}, DType::f32)}), doctest::Contains("Q's dtype float64"), Error);
  CHECK_THROWS_WITH_AS(attention(zeros({3}, DType::f64), q, v), doctest::Contains("at least two dimensions"), Error);
  CHECK_THROWS_WITH_AS(attention(q, q, zeros({3, 2}, DType::f32)), doctest::Contains("attention: dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(attention_trace(q, q, v, zeros({2, 2}, DType::f64)),
                       doctest::Contains("attention_trace: dO (2, 2) must have the shape of the output O (3, 2)"), Error);
}

// attention_qkv against the composition it replaces, qkv_heads then attention: the fused kernels
// rotate with qkv_heads' own tables and row kernel and run attention's gemms on the same blocks,
// so the output and the gradient of qkv match bit for bit — float32 and float64, rotating or not,
// a transposed qkv, one row block or three, O contiguous or merged.
TEST_CASE("attention_qkv gives qkv_heads + attention's output and gradient, bit for bit; one tape entry") {
  Generator gen(41);
  for (DType dt : {DType::f32, DType::f64})
    for (bool rot : {true, false})
      for (bool transposed : {false, true})
        for (int64_t T : {7, 70}) {
          CAPTURE(dtype_name(dt));
          CAPTURE(rot);
          CAPTURE(transposed);
          CAPTURE(T);
          const int64_t B = 3, H = 2, d_h = 16, d = H * d_h;
          const AttentionOptions opts{.causal = true, .merged_output = transposed};
          Tensor src = randn(transposed ? Shape{T, B, 3 * d} : Shape{B, T, 3 * d}, gen, dt);
          const Tensor w = randn({B, H, T, d_h}, gen, dt);
          auto run = [&](bool fused) {
            Tensor leaf_ = src.detach().clone().requires_grad_();
            const Tensor qkv = transposed ? leaf_.transpose(0, 1) : leaf_;  // (B, T, 3d)
            Tensor o;
            if (fused) {
              o = attention_qkv(qkv, H, rot, opts);
              CHECK(o.grad_fn()->op == "attention_qkv");
            } else {
              const QkvHeads h = qkv_heads(qkv, H, rot);
              o = attention(h.q, h.k, h.v, opts);
            }
            backward(sum(mul(o, w)));
            return std::vector<Tensor>{o.contiguous(), leaf_.grad()};
          };
          check_same_bits(run(true), run(false));
        }
}

TEST_CASE("attention_qkv: errors name the op and the shape; a mask or the tiled path runs the composition") {
  CHECK_THROWS_WITH_AS(attention_qkv(zeros({2, 3, 10}), 2), doctest::Contains("attention_qkv: expects qkv (B, T, 3d)"),
                       Error);
  CHECK_THROWS_WITH_AS(attention_qkv(zeros({2, 3, 24}), 3), doctest::Contains("cannot cut d = 8"), Error);
  CHECK_THROWS_WITH_AS(attention_qkv(zeros({2, 3, 24}), 8), doctest::Contains("d_h = d / H = 8 / 8 = 1 is odd"), Error);
  CHECK_THROWS_WITH_AS(attention_qkv(zeros({2, 3, 24}, DType::i64), 2), doctest::Contains("attention_qkv"), Error);
  Generator gen(42);
  Tensor qkv = randn({2, 4, 24}, gen, DType::f64).requires_grad_();
  const Tensor pad = bool_tensor({true, true, true, false, true, true, false, false}, {2, 1, 1, 4});
  CHECK(attention_qkv(qkv, 2, true, {.mask = pad}).grad_fn()->op == "attention");
  CHECK(attention_qkv(qkv, 2, true, {.causal = true, .path = AttentionPath::tiled}).grad_fn()->op == "attention");
  CHECK(attention_qkv(zeros({2, 0, 24}), 2).shape() == Shape{2, 2, 0, 4});  // an empty problem: the composition's empty output
}
