// ops/loss.h: cross_entropy against a value PyTorch prints, against the formula computed another
// way, its gradient against (softmax − onehot) / n, ignored rows, stability, and every error.
#include <doctest/doctest.h>

#include <cmath>

#include "handgrad.h"

using namespace hg;

namespace {

using Vals = std::vector<double>;

// The loss straight from the definition, in float64, without the max subtraction:
// mean over kept rows of log(sum_c exp(x_rc)) − x_r,t_r.
double direct_loss(const Vals& x, const std::vector<int64_t>& t, int64_t C, int64_t ignore) {
  double total = 0;
  int64_t n = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == ignore) continue;
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[r * C + c]);
    total += std::log(s) - x[r * C + t[r]];
    ++n;
  }
  return total / static_cast<double>(n);
}

// (softmax(x_r) − onehot(t_r)) / n on kept rows, 0 on ignored rows, softmax as exp(x) / sum exp(x).
Vals direct_grad(const Vals& x, const std::vector<int64_t>& t, int64_t C, int64_t ignore) {
  int64_t n = 0;
  for (int64_t v : t) n += v != ignore;
  Vals g(x.size(), 0.0);
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == ignore) continue;
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[r * C + c]);
    for (int64_t c = 0; c < C; ++c)
      g[r * C + c] = (std::exp(x[r * C + c]) / s - (c == t[r] ? 1.0 : 0.0)) / static_cast<double>(n);
  }
  return g;
}

}  // namespace

TEST_CASE("cross_entropy: the value PyTorch prints for a one-row example, and its gradient by hand") {
  // >>> F.cross_entropy(torch.tensor([[1., 2., 3.]]), torch.tensor([2]))  ->  tensor(0.4076)
  // By hand: -log(e^3 / (e^1 + e^2 + e^3)) = log(1 + e^-1 + e^-2) = 0.40760596444438...
  Tensor x = tensor({1, 2, 3}, {1, 3}, DType::f64).requires_grad_();
  Tensor loss = cross_entropy(x, index_tensor({2}, {1}));
  CHECK(loss.dim() == 0);
  CHECK(loss.item() == doctest::Approx(0.4076).epsilon(1e-4));
  CHECK(std::abs(loss.item() - 0.4076059644443804) < 1e-15);
  loss.backward();
  // softmax(1, 2, 3) = (0.0900306, 0.2447285, 0.6652410); minus onehot(2)
  Vals g = x.grad().to_vector();
  CHECK(g[0] == doctest::Approx(0.09003057317038048).epsilon(1e-12));
  CHECK(g[1] == doctest::Approx(0.2447284710547977).epsilon(1e-12));
  CHECK(g[2] == doctest::Approx(0.665240955774822 - 1.0).epsilon(1e-12));
}

TEST_CASE("cross_entropy: two rows, the mean of their losses and a gradient divided by n = 2") {
  Tensor x = tensor({1, 2, 3, 1, 2, 3}, {2, 3}, DType::f64).requires_grad_();
  Tensor loss = cross_entropy(x, index_tensor({0, 1}, {2}));
  // lse = 3.40760596444438; losses 2.4076..., 1.4076...
  CHECK(loss.item() == doctest::Approx(1.9076059644443801).epsilon(1e-13));
  loss.backward();
  Vals want = {-0.4549847134148098, 0.12236423552739885, 0.332620477887411,
               0.04501528658519024, -0.37763576447260117, 0.332620477887411};
  Vals g = x.grad().to_vector();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

TEST_CASE("cross_entropy over a (2, 3, C) batch with ignored rows matches the direct float64 formula") {
  Generator gen(21);
  const int64_t C = 5;
  Tensor x = randn({2, 3, C}, gen, DType::f64).requires_grad_();
  std::vector<int64_t> t = {4, -100, 0, 2, 2, -100};
  Tensor loss = cross_entropy(x, index_tensor(t, {2, 3}));
  Vals xv = x.to_vector();
  CHECK(loss.item() == doctest::Approx(direct_loss(xv, t, C, -100)).epsilon(1e-12));
  loss.backward();
  Vals g = x.grad().to_vector(), want = direct_grad(xv, t, C, -100);
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-10));
  for (int64_t c = 0; c < C; ++c) {  // ignored rows get exactly zero
    CHECK(g[1 * C + c] == 0.0);
    CHECK(g[5 * C + c] == 0.0);
  }
}

TEST_CASE("cross_entropy: ignoring rows equals dropping them; ignore_index may be a class id") {
  Tensor x = tensor({0.3, -1, 2, 1, 1, 0, -2, 0.5, 0.25}, {3, 3}, DType::f64);
  double with_ignored = cross_entropy(x, index_tensor({2, -100, 1}, {3})).item();
  double dropped = cross_entropy(concat({x.slice(0, 0, 1), x.slice(0, 2, 3)}, 0), index_tensor({2, 1}, {2})).item();
  CHECK(with_ignored == doctest::Approx(dropped).epsilon(1e-14));
  double ignore_one = cross_entropy(x, index_tensor({1, 0, 1}, {3}), /*ignore_index=*/1).item();
  CHECK(ignore_one == doctest::Approx(direct_loss(x.to_vector(), {1, 0, 1}, 3, 1)).epsilon(1e-12));
}

TEST_CASE("cross_entropy: every target ignored gives loss 0 and a zero gradient, not NaN") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).requires_grad_();
  Tensor loss = cross_entropy(x, index_tensor({-100, -100}, {2}));
  CHECK(loss.item() == 0.0);
  loss.backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().to_vector() == Vals(6, 0.0));
}

TEST_CASE("cross_entropy is stable for logits of ±1000 in float32") {
  Tensor x = tensor({1000, 0, -1000, 1000, 0, -1000}, {2, 3}).requires_grad_();  // f32
  Tensor loss = cross_entropy(x, index_tensor({0, 1}, {2}));
  // row 0: log(1 + e^-1000 + e^-2000) = 0; row 1: 1000 - 0; mean 500
  CHECK(loss.item() == doctest::Approx(500.0));
  loss.backward();
  // (softmax − onehot) / 2 with softmax = (1, 0, 0) to float precision
  Vals g = x.grad().to_vector(), want = {0, 0, 0, 0.5, -0.5, 0};
  for (size_t i = 0; i < g.size(); ++i) {
    CHECK(std::isfinite(g[i]));
    CHECK(g[i] == doctest::Approx(want[i]));
  }
}

TEST_CASE("cross_entropy: float32 agrees with float64") {
  Generator gen(22);
  Tensor x64 = randn({4, 7}, gen, DType::f64);
  Tensor t = index_tensor({6, 0, 3, 3}, {4});
  Tensor x32 = x64.to(DType::f32).requires_grad_();
  Tensor l32 = cross_entropy(x32, t);
  CHECK(l32.dtype() == DType::f32);
  CHECK(l32.item() == doctest::Approx(cross_entropy(x64, t).item()).epsilon(1e-6));
  l32.backward();
  Vals g = x32.grad().to_vector(), want = direct_grad(x64.to_vector(), {6, 0, 3, 3}, 7, -100);
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("cross_entropy saves the logits, the logsumexp (N,) and the kept-row count, and refuses logits modified in place") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).requires_grad_();
  Tensor h = x * 1.0;  // a non-leaf we can write to after the forward
  Tensor loss = cross_entropy(h, index_tensor({0, 2}, {2}));
  const Node& e = *loss.grad_fn();
  REQUIRE(e.op == "cross_entropy");
  REQUIRE(e.saved.size() == 4);  // logits, targets, logsumexp, kept-row count: the same on both devices
  CHECK(e.saved[2].what == "logsumexp");
  CHECK(e.saved[3].what == "kept-row count");
  CHECK(e.saved[3].data.item() == 2.0);
  CHECK(e.saved[2].data.shape() == Shape{2});
  CHECK(e.saved[2].data.to_vector()[0] == doctest::Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))));
  h.detach().add_(ones({2, 3}, DType::f64));
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("cross_entropy backward"), Error);
}

TEST_CASE("cross_entropy errors name the op, the target, its position and C") {
  Tensor x = zeros({2, 3, 5});
  try {
    cross_entropy(x, index_tensor({0, 1, 2, 5, 0, 0}, {2, 3}));
    FAIL("expected a range error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("cross_entropy") == 0);
    CHECK(m.find("target 5") != std::string::npos);
    CHECK(m.find("position [1, 0]") != std::string::npos);
    CHECK(m.find("C = 5") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(cross_entropy(x, index_tensor({0, 1, 2, -1, 0, 0}, {2, 3})),
                       doctest::Contains("target -1 at position [1, 0]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, zeros({2, 3})), doctest::Contains("cross_entropy: targets"), Error);
  try {
    cross_entropy(x, index_tensor({0, 1}, {2}));
    FAIL("expected a shape error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("cross_entropy") == 0);
    CHECK(m.find("(2,)") != std::string::npos);
    CHECK(m.find("(2, 3)") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(cross_entropy(scalar(1.0), index_tensor({0}, {})), doctest::Contains("0-d"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(index_tensor({1, 2}, {1, 2}), index_tensor({0}, {1})),
                       doctest::Contains("cross_entropy: dtype int64"), Error);
  Tensor nan_row = tensor({0, 0, std::nan(""), 1, 2, 3}, {2, 3}, DType::f64);
  CHECK_THROWS_WITH_AS(cross_entropy(nan_row, index_tensor({0, 1}, {2})), doctest::Contains("is NaN"), Error);
}
