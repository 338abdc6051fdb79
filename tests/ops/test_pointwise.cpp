// ops/pointwise.h and the error function on values: each against the C library's function (or
// CPython's float rules, written out here), at the edges where a composed formula goes wrong —
// a quotient that rounds to a whole number, signed zeros, infinities, NaN. (Their gradients and
// tangents away from the edges are gradcheck's: tests/cases/cases_elementwise.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "handgrad.h"

using namespace hg;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

Tensor f64(std::vector<double> v) { return tensor(v, {static_cast<int64_t>(v.size())}, DType::f64); }

// PyTorch's float // and % (CPython's divmod, except that a zero remainder keeps fmod's sign): the
// quotient of the exact division, floored; the remainder with the divisor's sign.
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
double py_floordiv(double a, double b) {
  const double m = std::fmod(a, b);
  double q = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) q -= 1;
  if (q == 0) return std::copysign(0.0, a / b);
  double f = std::floor(q);
  if (q - f > 0.5) f += 1;
  return f;
}

// Equal as doubles, NaN equal to NaN and the sign of a zero compared.
bool same(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

}  // namespace

TEST_CASE("fmod, remainder and floor division of floats use the exact quotient, not a rounded a / b") {
  // −0.25 / −0.001 rounds to 250, but the exact quotient is 249.99…: fmod is −0.000999…, not 0
  const std::vector<double> as = {-0.25, 0.25, -0.25, 7.5, -7.5, 1e300, 5.0, -0.0, 3.0, kInf, 1.0, 2.0};
  const std::vector<double> bs = {-0.001, -0.001, 0.001, 2.0, 2.0, 1e-300, kInf, 3.0, -kInf, 2.0, 0.0, -0.0};
  const auto fm = fmod(f64(as), f64(bs)).to_vector();
  const auto rm = remainder(f64(as), f64(bs)).to_vector();
  const auto fd = floor_divide(f64(as), f64(bs)).to_vector();
  for (size_t i = 0; i < as.size(); ++i) {
    INFO(as[i], " and ", bs[i]);
    CHECK(same(fm[i], std::fmod(as[i], bs[i])));
    if (bs[i] != 0) {
      CHECK(same(rm[i], py_mod(as[i], bs[i])));
      CHECK(same(fd[i], py_floordiv(as[i], bs[i])));
    } else {  // Python raises; PyTorch gives a / b for the quotient and NaN for the remainder
      CHECK(std::isnan(rm[i]));
      CHECK(same(fd[i], as[i] / bs[i]));
    }
  }
  CHECK(fm[0] == -0.0009999999999999948);  // CPython's math.fmod(-0.25, -0.001)
  CHECK(fd[0] == 249.0);
  // float32 follows the same rules in its own precision
  const Tensor a32 = tensor({-0.25}, {1}, DType::f32), b32 = tensor({-0.001}, {1}, DType::f32);
  CHECK(same(fmod(a32, b32).to_vector()[0], static_cast<double>(std::fmod(-0.25f, -0.001f))));
}

TEST_CASE("fmod and remainder: the gradient with respect to the divisor is minus the exact quotient") {
  const Tensor a = f64({-0.25, 7.5}).requires_grad_(), b = f64({-0.001, -2.0}).requires_grad_();
  sum(fmod(a, b)).backward();
  const auto ga = a.grad().to_vector(), gb = b.grad().to_vector();
  CHECK(ga == std::vector<double>{1.0, 1.0});
  CHECK(gb == std::vector<double>{-249.0, 3.0});  // −trunc(249.99…), −trunc(−3.75)
  const Tensor c = f64({-0.25, 7.5}).requires_grad_(), d = f64({-0.001, -2.0}).requires_grad_();
  sum(remainder(c, d)).backward();
  CHECK(d.grad().to_vector() == std::vector<double>{-249.0, 4.0});  // −⌊249.99…⌋, −⌊−3.75⌋
}

TEST_CASE("fmod of integers keeps the dividend's sign, exactly") {
  const Tensor a = tensor({7, -7, 7, -7, 0}, {5}, DType::i64), b = tensor({3, 3, -3, -3, 5}, {5}, DType::i64);
  const Tensor r = fmod(a, b);
  CHECK(r.dtype() == DType::i64);
  CHECK(r.to_int_vector() == std::vector<int64_t>{1, -1, 1, -1, 0});
}

TEST_CASE("atan2 is the C library's, at the signed zeros and the infinities too") {
  const std::vector<double> ys = {0.0, 0.0, -0.0, -0.0, kInf, kInf, -kInf, 1.0, -1.0, kNan, 1.0, 0.0};
  const std::vector<double> xs = {0.0, -0.0, 0.0, -0.0, kInf, -kInf, kInf, -kInf, -kInf, 1.0, 0.0, -1.0};
  const auto out = atan2(f64(ys), f64(xs)).to_vector();
  for (size_t i = 0; i < ys.size(); ++i) {
    INFO(ys[i], " and ", xs[i]);
    CHECK(same(out[i], std::atan2(ys[i], xs[i])));
  }
}

TEST_CASE("xlogy: 0 where x = 0, NaN where y is; its x-gradient at x = 0 is ln y") {
  const auto out = xlogy(f64({0.0, 0.0, 0.0, 2.0, 0.0}), f64({0.0, -1.0, kNan, 3.0, kInf})).to_vector();
  CHECK(out[0] == 0.0);
  CHECK(out[1] == 0.0);
  CHECK(std::isnan(out[2]));
  CHECK(out[3] == 2.0 * std::log(3.0));
  CHECK(out[4] == 0.0);
  const Tensor x = f64({0.0, 1.0, 0.0}).requires_grad_(), y = f64({2.0, 3.0, -1.0}).requires_grad_();
  sum(xlogy(x, y)).backward();
  const auto gx = x.grad().to_vector(), gy = y.grad().to_vector();
  CHECK(gx[0] == std::log(2.0));
  CHECK(gx[1] == std::log(3.0));
  CHECK(gx[2] == 0.0);  // held at 0 where y ≤ 0 (PyTorch's)
  CHECK(gy == std::vector<double>{0.0, 1.0 / 3.0, -0.0});
}

TEST_CASE("copysign, fmax, fmin, logaddexp, logaddexp2 and hypot at their edges") {
  const auto cs = copysign(f64({1.5, 1.5, -2.0, 0.0}), f64({-0.0, 0.0, kInf, -1.0})).to_vector();
  CHECK(same(cs[0], -1.5));
  CHECK(same(cs[1], 1.5));
  CHECK(same(cs[2], 2.0));
  CHECK(same(cs[3], -0.0));
  const auto mx = fmax(f64({kNan, 1.0, kNan, -0.0}), f64({2.0, kNan, kNan, 3.0})).to_vector();
  CHECK(mx[0] == 2.0);
  CHECK(mx[1] == 1.0);
  CHECK(std::isnan(mx[2]));
  CHECK(mx[3] == 3.0);
  const auto mn = fmin(f64({kNan, 1.0}), f64({2.0, kNan})).to_vector();
  CHECK(mn == std::vector<double>{2.0, 1.0});
  const auto le = logaddexp(f64({1000.0, -kInf, kInf, -kInf, 0.0}), f64({1000.0, -kInf, kInf, 1.0, 0.0})).to_vector();
  CHECK(le[0] == doctest::Approx(1000.0 + std::log(2.0)).epsilon(1e-15));
  CHECK(le[1] == -kInf);
  CHECK(le[2] == kInf);
  CHECK(le[3] == 1.0);
  CHECK(le[4] == doctest::Approx(std::log(2.0)).epsilon(1e-15));
  const auto l2 = logaddexp2(f64({3.0, -kInf}), f64({3.0, 2.0})).to_vector();
  CHECK(l2[0] == doctest::Approx(4.0).epsilon(1e-15));
  CHECK(l2[1] == 2.0);
  const auto hy = hypot(f64({3e300, 3e-300, kInf}), f64({4e300, 4e-300, kNan})).to_vector();
  CHECK(hy[0] == doctest::Approx(5e300).epsilon(1e-15));
  CHECK(hy[1] == doctest::Approx(5e-300).epsilon(1e-15));
  CHECK(hy[2] == kInf);  // C's hypot: an infinity wins over NaN
}

TEST_CASE("erf, erfc, erfinv and log10 against the C library; erfinv inverts erf to a few ulps") {
  const std::vector<double> xs = {-3.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 2.0, 6.0, kInf, -kInf};
  const auto e = erf(f64(xs)).to_vector(), c = erfc(f64(xs)).to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    CHECK(same(e[i], std::erf(xs[i])));
    CHECK(same(c[i], std::erfc(xs[i])));
  }
  const std::vector<double> ys = {-0.999999, -0.9, -0.5, -1e-10, 0.0, 1e-300, 0.3, 0.7, 0.99, 0.9999999999};
  const auto inv = erfinv(f64(ys)).to_vector();
  for (size_t i = 0; i < ys.size(); ++i) {
    INFO(ys[i]);
    CHECK(std::erf(inv[i]) == doctest::Approx(ys[i]).epsilon(4e-16));
  }
  const auto edges = erfinv(f64({1.0, -1.0, 1.5, kNan, -0.0})).to_vector();
  CHECK(edges[0] == kInf);
  CHECK(edges[1] == -kInf);
  CHECK(std::isnan(edges[2]));
  CHECK(std::isnan(edges[3]));
  CHECK(same(edges[4], -0.0));
  const auto l = log10(f64({1000.0, 1e-300, 0.0, -1.0})).to_vector();
  CHECK(l[0] == std::log10(1000.0));
  CHECK(l[1] == std::log10(1e-300));
  CHECK(l[2] == -kInf);
  CHECK(std::isnan(l[3]));
}

TEST_CASE("an int64 operand meets a float one as that float; two of them compute in float32") {
  const Tensor i = tensor({1, -2}, {2}, DType::i64);
  CHECK(atan2(i, f64({1.0, 1.0})).dtype() == DType::f64);
  CHECK(hypot(i, i).dtype() == DType::f32);
  CHECK(erf(i.to(DType::f32)).dtype() == DType::f32);
}
