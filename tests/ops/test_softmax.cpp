// softmax, log_softmax, the row rule and the Jacobian, against the formulas computed another way.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "handgrad.h"
#include "test_util.h"

using namespace hg;
using namespace hg::test;

namespace {

}  // namespace

TEST_CASE("softmax: rows are exp(s)/sum exp(s), sum to 1, along any dimension, float32 and float64") {
  Generator gen(21);
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    Tensor s = randn({3, 4, 5}, gen, t, 0.0, 2.0);
    for (int64_t dim : {0, 1, 2, -1}) {
      CAPTURE(dim);
      Tensor p = softmax(s, dim);
      CHECK(p.shape() == s.shape());
      // the definition, with the ops of elementwise.h and reduce.h (no max subtraction needed here)
      Tensor e = exp(s);
      Tensor ref = e / sum(e, {dim}, true);
      CHECK(max_abs_diff(p, ref) < (t == DType::f64 ? 1e-14 : 1e-6));
      Tensor rows = sum(p, {dim});
      for (double r : rows.to_vector()) CHECK(r == doctest::Approx(1.0).epsilon(t == DType::f64 ? 1e-14 : 1e-6));
      // log_softmax is its log
      CHECK(max_abs_diff(log_softmax(s, dim), log(p)) < (t == DType::f64 ? 1e-13 : 1e-5));
    }
  }
}

TEST_CASE("softmax subtracts the row max: huge scores do not overflow") {
  Tensor s = tensor({1000, 1001, 1002, -1000, -1001, -1002}, {2, 3}, DType::f32);
  Tensor p = softmax(s);
  CHECK(all_finite(p));
  Tensor ref = softmax(tensor({0, 1, 2, 0, -1, -2}, {2, 3}, DType::f64));
  CHECK(max_abs_diff(p.to(DType::f64), ref) < 1e-6);
  CHECK(all_finite(log_softmax(s)));
}

TEST_CASE("softmax_backward equals J g with the (symmetric) Jacobian, row by row, and the tape's gradient") {
  Generator gen(22);
  Tensor s = randn({4, 5}, gen, DType::f64).requires_grad_();
  Tensor g = randn({4, 5}, gen, DType::f64);
  Tensor P = softmax(s);
  Tensor J = softmax_jacobian(P.detach());  // (4, 5, 5)
  CHECK(J.shape() == Shape{4, 5, 5});
  Tensor D;
  Tensor dS = softmax_backward(P.detach(), g, &D);
  CHECK(D.shape() == Shape{4, 1});
  for (int64_t r = 0; r < 4; ++r) {
    Tensor Jr = J.select(0, r);
    CHECK(max_abs_diff(Jr, Jr.transpose(0, 1)) == 0.0);  // symmetric
    Tensor Jg = matmul(Jr, g.select(0, r));               // J g
    CHECK(max_abs_diff(dS.select(0, r), Jg) < 1e-14);
    double dot = 0;
    for (int64_t j = 0; j < 5; ++j) dot += P.at({r, j}) * g.at({r, j});
    CHECK(D.at({r, 0}) == doctest::Approx(dot).epsilon(1e-14));
  }
  P.backward(g);  // the tape's softmax entry
  CHECK(max_abs_diff(s.grad(), dS) < 1e-15);
  // along dim 0 too: the rule applied to columns
  Tensor s0 = s.detach().clone().requires_grad_();
  Tensor P0 = softmax(s0, 0);
  P0.backward(g);
  Tensor ref = softmax_backward(P0.detach().transpose(0, 1), g.transpose(0, 1)).transpose(0, 1);
  CHECK(max_abs_diff(s0.grad(), ref) < 1e-15);
}

TEST_CASE("softmax_jacobian is diag(p) - p p^T and matches finite differences of softmax") {
  Generator gen(23);
  Tensor s = randn({4}, gen, DType::f64);
  Tensor p = softmax(s);
  Tensor J = softmax_jacobian(p);
  for (int64_t i = 0; i < 4; ++i) {
    double row = 0;
    for (int64_t j = 0; j < 4; ++j) {
      const double pi = p.at({i}), pj = p.at({j});
      CHECK(J.at({i, j}) == doctest::Approx((i == j ? pi : 0.0) - pi * pj).epsilon(1e-15));
      row += J.at({i, j});
    }
    CHECK(std::abs(row) < 1e-15);  // adding a constant to every score changes nothing
    // column i of J is d p / d s_i: central differences of softmax
    Tensor num = numeric_gradient([i](const std::vector<Tensor>& x) { return softmax(x[0]).select(0, i); }, {s}, 0);
    for (int64_t j = 0; j < 4; ++j) CHECK(num.at({j}) == doctest::Approx(J.at({i, j})).epsilon(1e-6));
  }
  // its trace 1 - Σ p_i^2 peaks at the uniform row
  Tensor u = full({4}, 0.25, DType::f64);
  Tensor Ju = softmax_jacobian(u);
  double tr = 0;
  for (int64_t i = 0; i < 4; ++i) tr += Ju.at({i, i});
  CHECK(tr == doctest::Approx(0.75));
}

TEST_CASE("a fully -inf row: softmax gives zeros and zero gradient, log_softmax -inf and zero gradient; never NaN") {
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    Tensor s = tensor({1, 2, 3, -kInf, -kInf, -kInf, 0, -kInf, 1}, {3, 3}, t).requires_grad_();
    Tensor p = softmax(s);
    CHECK(all_finite(p));
    CHECK(p.select(0, 1).to_vector() == std::vector<double>{0, 0, 0});
    CHECK(p.at({2, 1}) == 0.0);
    CHECK(p.at({2, 0}) + p.at({2, 2}) == doctest::Approx(1.0));
    Tensor g = tensor({1, -2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, t);
    p.backward(g);
    CHECK(all_finite(s.grad()));
    CHECK(s.grad().select(0, 1).to_vector() == std::vector<double>{0, 0, 0});
    CHECK(s.grad().at({2, 1}) == 0.0);

    Tensor s2 = s.detach().clone().requires_grad_();
    Tensor y = log_softmax(s2);
    CHECK(y.select(0, 1).to_vector() == std::vector<double>{-kInf, -kInf, -kInf});
    y.backward(g);
    CHECK(all_finite(s2.grad()));
    CHECK(s2.grad().select(0, 1).to_vector() == std::vector<double>{0, 0, 0});
    // a finite row: dS = g - softmax * rowsum(g)
    double gsum = 1 - 2 + 3;
    for (int64_t j = 0; j < 3; ++j)
      CHECK(s2.grad().at({0, j}) == doctest::Approx(g.at({0, j}) - p.at({0, j}) * gsum).epsilon(1e-6));
  }
}

TEST_CASE("softmax errors name the op and the shapes") {
  Tensor P = zeros({2, 3}, DType::f64);
  CHECK_THROWS_WITH_AS(softmax_backward(P, zeros({3, 2}, DType::f64)),
                       doctest::Contains("softmax_backward: P (2, 3) and dP (3, 2) must have the same shape"), Error);
  CHECK_THROWS_WITH_AS(softmax(P, 2), doctest::Contains("softmax: dim 2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(softmax(zeros({2}, DType::i64)), doctest::Contains("softmax:"), Error);
  CHECK_THROWS_WITH_AS(softmax_jacobian(scalar(1.0, DType::f64)), doctest::Contains("softmax_jacobian:"), Error);
  CHECK(softmax(scalar(3.0, DType::f64)).item() == 1.0);  // a single element is certain
}

TEST_CASE("NaN in, NaN out: a row of NaN and −inf is NaN through softmax, log_softmax and attention, not a masked row") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor s = tensor({nan, -inf, -inf, -inf, -inf, -inf}, {2, 3}, DType::f64);  // row 0: NaN; row 1: all masked
  const std::vector<double> p = softmax(s, -1).to_vector(), y = log_softmax(s, -1).to_vector();
  for (int j = 0; j < 3; ++j) {
    CHECK(std::isnan(p[j]));
    CHECK(std::isnan(y[j]));
    CHECK(p[3 + j] == 0.0);  // the masked row keeps its rule
    CHECK(y[3 + j] == -inf);
  }
  Tensor x = s.clone().requires_grad_();
  log_softmax(x, -1).backward(ones({2, 3}, DType::f64));
  CHECK(std::isnan(x.grad().to_vector()[0]));
  CHECK(x.grad().to_vector()[3] == 0.0);
  // attention(q, k, v, {.scale = NaN}): every score NaN, so every output NaN on both paths.
  const Tensor q = ones({2, 4, 3}, DType::f64), v = ones({2, 4, 3}, DType::f64);
  for (AttentionPath path : {AttentionPath::materialized, AttentionPath::tiled})
    for (double o : attention(q, q, v, {.scale = nan, .causal = true, .path = path}).to_vector()) CHECK(std::isnan(o));
}
