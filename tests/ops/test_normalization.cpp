// ops/normalization.h: layer_norm and rms_norm against the formula computed entry by entry in
// float64, PyTorch's default eps for rms_norm, the backward under create_graph, and every error.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "handgrad.h"

using namespace hg;

namespace normalization_test {

using Vals = std::vector<double>;

// Each of the `rows` slices of n entries normalized straight from the definition: centred by its
// mean (layer norm) or not (RMS norm), divided by √(mean of squares + eps), then ∘ γ + β.
Vals by_hand(const Vals& x, int64_t rows, int64_t n, const Vals& gamma, const Vals& beta, double eps, bool centre) {
  Vals y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * n;
    double mu = 0, sq = 0;
    if (centre) {
      for (int64_t j = 0; j < n; ++j) mu += row[j];
      mu /= static_cast<double>(n);
    }
    for (int64_t j = 0; j < n; ++j) sq += (row[j] - mu) * (row[j] - mu);
    const double sigma = std::sqrt(sq / static_cast<double>(n) + eps);
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(r * n + j);
      y[at] = (row[j] - mu) / sigma * (gamma.empty() ? 1.0 : gamma[j]) + (beta.empty() ? 0.0 : beta[j]);
    }
  }
  return y;
}

double max_diff(const Vals& a, const Vals& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace normalization_test

using normalization_test::by_hand;
using normalization_test::Vals;
using normalization_test::max_diff;

TEST_CASE("layer_norm: the formula entry by entry, over one and two trailing dims, with and without γ and β") {
  Generator gen(11);
  const Tensor x = randn({2, 3, 4}, gen, DType::f64), g4 = randn({4}, gen, DType::f64), b4 = randn({4}, gen, DType::f64);
  const Tensor g12 = randn({3, 4}, gen, DType::f64), b12 = randn({3, 4}, gen, DType::f64);
  CHECK(max_diff(layer_norm(x, {4}, g4, b4).to_vector(), by_hand(x.to_vector(), 6, 4, g4.to_vector(), b4.to_vector(), 1e-5, true)) < 1e-12);
  CHECK(max_diff(layer_norm(x, {4}).to_vector(), by_hand(x.to_vector(), 6, 4, {}, {}, 1e-5, true)) < 1e-12);
  CHECK(max_diff(layer_norm(x, {3, 4}, g12, b12, 0.5).to_vector(),
                 by_hand(x.to_vector(), 2, 12, g12.to_vector(), b12.to_vector(), 0.5, true)) < 1e-12);
  CHECK(max_diff(layer_norm(x, {3, 4}, Tensor(), b12).to_vector(), by_hand(x.to_vector(), 2, 12, {}, b12.to_vector(), 1e-5, true)) < 1e-12);
  // a transposed view reads the same values as its contiguous copy
  const Tensor xt = x.transpose(0, 2);  // (4, 3, 2)
  CHECK(max_diff(layer_norm(xt, {2}).to_vector(), by_hand(xt.contiguous().to_vector(), 12, 2, {}, {}, 1e-5, true)) < 1e-12);
  // float32 agrees with float64 to float32's rounding
  CHECK(max_diff(layer_norm(x.to(DType::f32), {4}, g4.to(DType::f32), b4.to(DType::f32)).to_vector(),
                 layer_norm(x, {4}, g4, b4).to_vector()) < 1e-5);
  // a constant row has σ = √eps: x̂ = 0, so y = β
  const Vals beta = b4.to_vector();
  Vals twice = beta;
  twice.insert(twice.end(), beta.begin(), beta.end());
  CHECK(max_diff(layer_norm(full({2, 4}, 3.0, DType::f64), {4}, g4, b4).to_vector(), twice) < 1e-12);
}

TEST_CASE("rms_norm: the formula entry by entry; eps defaults to the dtype's machine epsilon, as PyTorch's") {
  Generator gen(12);
  const Tensor x = randn({2, 3, 4}, gen, DType::f64), g4 = randn({4}, gen, DType::f64), g12 = randn({3, 4}, gen, DType::f64);
  const double eps64 = std::numeric_limits<double>::epsilon();
  CHECK(max_diff(rms_norm(x, {4}, g4).to_vector(), by_hand(x.to_vector(), 6, 4, g4.to_vector(), {}, eps64, false)) < 1e-12);
  CHECK(max_diff(rms_norm(x, {3, 4}, g12, 0.25).to_vector(), by_hand(x.to_vector(), 2, 12, g12.to_vector(), {}, 0.25, false)) < 1e-12);
  CHECK(max_diff(rms_norm(x, {4}).to_vector(), by_hand(x.to_vector(), 6, 4, {}, {}, eps64, false)) < 1e-12);
  // float32's default eps is 2^-23: a zero row stays zero (0 / √eps), never NaN
  const Tensor zeros32 = zeros({2, 4}, DType::f32);
  for (double v : rms_norm(zeros32, {4}).to_vector()) CHECK(v == 0.0);
  // a row of tiny entries: eps = 2^-23 is what keeps the divisor from 0
  const Tensor tiny = full({1, 4}, 1e-4, DType::f32);
  const double expect = 1e-4 / std::sqrt(1e-8 + std::numeric_limits<float>::epsilon());
  for (double v : rms_norm(tiny, {4}).to_vector()) CHECK(v == doctest::Approx(expect).epsilon(1e-5));
}

TEST_CASE("layer_norm and rms_norm: the hand-derived backward, differentiated again and pushed forward") {
  Generator gen(13);
  Tensor x = randn({3, 4}, gen, DType::f64).requires_grad_(), w = randn({4}, gen, DType::f64).requires_grad_();
  Tensor b = randn({4}, gen, DType::f64).requires_grad_();
  // Σ y over a row of layer norm is Σ β + Σ γ x̂; without γ, Σ x̂ = 0 for every x, so dx = 0
  Tensor dx = grad({sum(layer_norm(x, {4}))}, {x})[0];
  for (double v : dx.to_vector()) CHECK(std::abs(v) < 1e-12);
  // dβ = Σ_leading dy = 3 for every entry, dγ = Σ_leading x̂
  std::vector<Tensor> g = grad({sum(layer_norm(x, {4}, w, b))}, {w, b});
  CHECK(max_diff(g[0].to_vector(), sum(layer_norm(x.detach(), {4}), {0}).to_vector()) < 1e-12);
  CHECK(max_diff(g[1].to_vector(), Vals(4, 3.0)) < 1e-12);
  // the gradient is a graph of recorded ops, so it has a gradient of its own
  for (bool centre : {true, false}) {
    CAPTURE(centre);
    Tensor y = centre ? layer_norm(x, {4}, w, b) : rms_norm(x, {4}, w);
    Tensor gx = grad({sum(mul(y, y))}, {x}, {}, {.create_graph = true})[0];
    CHECK(gx.requires_grad());
    CHECK(grad({sum(gx)}, {w})[0].defined());
  }
  // forward mode against the backward: ⟨w, J u⟩ = ⟨Jᵀ w, u⟩
  const Tensor u = randn({3, 4}, gen, DType::f64), probe = randn({3, 4}, gen, DType::f64);
  for (bool centre : {true, false}) {
    CAPTURE(centre);
    auto f = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{centre ? layer_norm(in[0], {4}, w.detach()) : rms_norm(in[0], {4}, w.detach())};
    };
    const Tensor Ju = jvp(f, {x.detach()}, {u}).tangents[0];
    const Tensor JTw = grad({sum(mul(f({x})[0], probe))}, {x})[0];
    CHECK(sum(mul(Ju, probe)).item() == doctest::Approx(sum(mul(JTw, u)).item()).epsilon(1e-10));
  }
}

TEST_CASE("layer_norm and rms_norm: each wrong argument is an error naming the op and the shapes") {
  const Tensor x = zeros({2, 3, 4}, DType::f32), w = ones({4}, DType::f32);
  CHECK_THROWS_WITH_AS(layer_norm(x, {3}), doctest::Contains("layer_norm: normalized_shape (3,) does not match the trailing dims of the input"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {2, 3}), doctest::Contains("(2, 3, 4)"), Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {1, 2, 3, 4}), doctest::Contains("rms_norm: normalized_shape (1, 2, 3, 4) does not match"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {}), doctest::Contains("layer_norm: normalized_shape is empty"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}, ones({3}, DType::f32)),
                       doctest::Contains("layer_norm: weight has shape (3,) but must have normalized_shape (4,)"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}, w, ones({1, 4}, DType::f32)), doctest::Contains("layer_norm: bias has shape (1, 4) but must have normalized_shape (4,)"), Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {3, 4}, w), doctest::Contains("rms_norm: weight has shape (4,) but must have normalized_shape (3, 4)"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}, ones({4}, DType::f64)), doctest::Contains("layer_norm"), Error);
  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string not_float = message([] { layer_norm(zeros({2, 4}, DType::i64), {4}); });
  CHECK(not_float.starts_with("layer_norm: "));
  CHECK(not_float.find("(2, 4) int64 is not floating point") != std::string::npos);
  const std::string bool_input = message([] { rms_norm(zeros({2, 4}, DType::b8), {4}); });
  CHECK(bool_input.starts_with("rms_norm: "));
  CHECK(bool_input.find("(2, 4) bool is not floating point") != std::string::npos);
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}, w, Tensor(), std::nan("")), doctest::Contains("layer_norm: eps is NaN"), Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {4}, w, std::nan("")), doctest::Contains("rms_norm: eps is NaN"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(Tensor(), {4}), doctest::Contains("layer_norm: the input is undefined"), Error);
}

TEST_CASE("layer_norm: an empty input gives an empty result, and zero gradients to γ and β") {
  Tensor w = ones({4}, DType::f64).requires_grad_(), b = zeros({4}, DType::f64).requires_grad_();
  Tensor y = layer_norm(zeros({0, 4}, DType::f64), {4}, w, b);
  CHECK(y.shape() == Shape{0, 4});
  std::vector<Tensor> g = grad({sum(y)}, {w, b});
  CHECK(g[0].to_vector() == Vals(4, 0.0));
  CHECK(g[1].to_vector() == Vals(4, 0.0));
}
