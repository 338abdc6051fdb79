// Gradcheck cases for ops/elementwise.h: each binary op with equal shapes and with broadcasting.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

namespace {
// Positive inputs for log, sqrt, pow with a fractional exponent and division.
Tensor positive_leaf(const Shape& shape, Generator& gen) {
  return rand(shape, gen, DType::f64, 0.5, 2.0).requires_grad_();
}
}  // namespace

void add_elementwise_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"add", "(3, 4) + (3, 4)", [](const V& x) { return add(x[0], x[1]); }, {leaf({3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"add", "broadcast (2, 3, 4) + (3, 1)", [](const V& x) { return add(x[0], x[1]); }, {leaf({2, 3, 4}, gen), leaf({3, 1}, gen)}});
  out.push_back({"sub", "broadcast (4,) - (3, 4)", [](const V& x) { return sub(x[0], x[1]); }, {leaf({4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"mul", "(3, 4) * (3, 4)", [](const V& x) { return mul(x[0], x[1]); }, {leaf({3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"mul", "broadcast (2, 1, 4) * (3, 1)", [](const V& x) { return mul(x[0], x[1]); }, {leaf({2, 1, 4}, gen), leaf({3, 1}, gen)}});
  out.push_back({"div", "broadcast (3, 4) / (4,)", [](const V& x) { return div(x[0], x[1]); }, {leaf({3, 4}, gen), positive_leaf({4}, gen)}});
  out.push_back({"add_scalar", "x + 1.5", [](const V& x) { return x[0] + 1.5; }, {leaf({3, 4}, gen)}});
  out.push_back({"mul_scalar", "x * -2.5", [](const V& x) { return x[0] * -2.5; }, {leaf({3, 4}, gen)}});
  out.push_back({"rsub_scalar", "1 - x", [](const V& x) { return 1.0 - x[0]; }, {leaf({3, 4}, gen)}});
  out.push_back({"rdiv_scalar", "2 / x", [](const V& x) { return 2.0 / x[0]; }, {positive_leaf({3, 4}, gen)}});
  out.push_back({"neg", "(3, 4)", [](const V& x) { return neg(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"exp", "(3, 4)", [](const V& x) { return exp(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"log", "(3, 4), positive", [](const V& x) { return log(x[0]); }, {positive_leaf({3, 4}, gen)}});
  out.push_back({"pow", "x^3", [](const V& x) { return pow(x[0], 3.0); }, {leaf({3, 4}, gen)}});
  out.push_back({"pow", "x^-1.5, positive", [](const V& x) { return pow(x[0], -1.5); }, {positive_leaf({3, 4}, gen)}});
  out.push_back({"sqrt", "(3, 4), positive", [](const V& x) { return sqrt(x[0]); }, {positive_leaf({3, 4}, gen)}});
  out.push_back({"relu", "(3, 4)", [](const V& x) { return relu(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"tanh", "(3, 4)", [](const V& x) { return tanh(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"gelu", "(3, 4)", [](const V& x) { return gelu(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"softplus", "(3, 4)", [](const V& x) { return softplus(x[0]); }, {leaf({3, 4}, gen)}});
  // Far out on both sides: log(1 + e^800) overflows to inf and e^800 / (1 + e^800) is NaN when
  // written naively; the stable forms give 800 and 1, 0 and 0.
  out.push_back({"softplus", "(2, 3) at ±800 and ±30", [](const V& x) { return softplus(x[0]); },
                 {tensor({800, -800, 30, -30, 0.5, -0.5}, {2, 3}, DType::f64).requires_grad_()}});

  // ops/elementwise_math.cpp, each on inputs inside its domain and away from its jumps
  auto within = [&](double lo, double hi) { return rand({3, 4}, gen, DType::f64, lo, hi).requires_grad_(); };
  using Fn = Tensor (*)(const Tensor&, Site);
  const struct {
    const char* name;
    Fn fn;
    const char* where;
    double lo, hi;  // the inputs' range; lo == hi: normal draws
  } math[] = {
      {"sin", &hg::sin, "(3, 4)", 0, 0},          {"cos", &hg::cos, "(3, 4)", 0, 0},
      {"tan", &hg::tan, "(3, 4) in (−1, 1)", -1, 1}, {"asin", &hg::asin, "(3, 4) in (−0.8, 0.8)", -0.8, 0.8},
      {"acos", &hg::acos, "(3, 4) in (−0.8, 0.8)", -0.8, 0.8}, {"atan", &hg::atan, "(3, 4)", 0, 0},
      {"sinh", &hg::sinh, "(3, 4)", 0, 0},        {"cosh", &hg::cosh, "(3, 4)", 0, 0},
      {"asinh", &hg::asinh, "(3, 4)", 0, 0},      {"acosh", &hg::acosh, "(3, 4) in (1.2, 3)", 1.2, 3},
      {"atanh", &hg::atanh, "(3, 4) in (−0.8, 0.8)", -0.8, 0.8}, {"sigmoid", &hg::sigmoid, "(3, 4)", 0, 0},
      {"silu", &hg::silu, "(3, 4)", 0, 0},        {"log1p", &hg::log1p, "(3, 4) in (−0.5, 2)", -0.5, 2},
      {"expm1", &hg::expm1, "(3, 4)", 0, 0},      {"log2", &hg::log2, "(3, 4) in (0.5, 2)", 0.5, 2},
      {"exp2", &hg::exp2, "(3, 4)", 0, 0},        {"reciprocal", &hg::reciprocal, "(3, 4) in (0.5, 2)", 0.5, 2},
      {"rsqrt", &hg::rsqrt, "(3, 4) in (0.5, 2)", 0.5, 2}, {"square", &hg::square, "(3, 4)", 0, 0},
      {"log10", &hg::log10, "(3, 4) in (0.5, 2)", 0.5, 2}, {"erf", &hg::erf, "(3, 4)", 0, 0},
      {"erfc", &hg::erfc, "(3, 4)", 0, 0},        {"erfinv", &hg::erfinv, "(3, 4) in (−0.9, 0.9)", -0.9, 0.9},
  };
  for (const auto& m : math) {
    Fn fn = m.fn;
    out.push_back({m.name, m.where, [fn](const V& x) { return fn(x[0], Site::current()); },
                   {m.lo == m.hi ? leaf({3, 4}, gen) : within(m.lo, m.hi)}});
  }
  // abs, sign and the roundings away from 0 and from their jumps (fractional parts 0.2 to 0.4):
  // central differences see a flat function there, and abs's slope ±1
  const std::vector<double> off_jumps{-1.7, 0.3, 2.25, -0.6, 1.35, -2.8, 0.8, -0.25, 3.3, -1.2, 0.65, 2.6};
  for (auto [name, fn] : {std::pair{"abs", Fn{&hg::abs}}, std::pair{"sign", Fn{&hg::sign}}, std::pair{"floor", Fn{&hg::floor}},
                          std::pair{"ceil", Fn{&hg::ceil}}, std::pair{"round", Fn{&hg::round}}, std::pair{"trunc", Fn{&hg::trunc}}})
    out.push_back({name, "(3, 4) away from its jumps", [fn](const V& x) { return fn(x[0], Site::current()); },
                   {tensor(off_jumps, {3, 4}, DType::f64).requires_grad_()}});

  // ops/pointwise.cpp: each binary function, broadcast, on inputs away from its jumps and kinks
  using Binary = Tensor (*)(const Tensor&, const Tensor&, Site);
  const auto binary = [&](const char* name, Binary fn, const char* where, Tensor a, Tensor b) {
    out.push_back({name, where, [fn](const V& x) { return fn(x[0], x[1], Site::current()); },
                   {a.requires_grad_(), b.requires_grad_()}});
  };
  // a / b at least 0.03 from a whole number, so the quotient's jumps are out of the differences' reach
  const Tensor dividend = tensor({-2.3, 1.7, 0.45, -0.8, 3.1, -1.35}, {2, 3}, DType::f64);
  const Tensor divisor = tensor({0.7, -1.1, 0.3}, {3}, DType::f64);
  binary("atan2", &hg::atan2, "broadcast (3, 4) and (4,)", randn({3, 4}, gen, DType::f64), randn({4}, gen, DType::f64));
  binary("fmod", &hg::fmod, "broadcast (2, 3) and (3,), signs mixed", dividend.clone(), divisor.clone());
  binary("remainder", &hg::float_remainder, "broadcast (2, 3) and (3,), signs mixed", dividend.clone(), divisor.clone());
  binary("floor_divide", &hg::float_floor_divide, "broadcast (2, 3) and (3,): zero gradient", dividend.clone(), divisor.clone());
  binary("xlogy", &hg::xlogy, "broadcast (3, 4) and (4,), y > 0", randn({3, 4}, gen, DType::f64), rand({4}, gen, DType::f64, 0.5, 2));
  binary("copysign", &hg::copysign, "(2, 3), both away from 0", dividend.clone(), tensor({1.5, -0.4, -2.0, 0.7, 0.9, -1.1}, {2, 3}, DType::f64));
  binary("fmax", &hg::fmax, "broadcast (3, 4) and (4,)", randn({3, 4}, gen, DType::f64), randn({4}, gen, DType::f64));
  binary("fmin", &hg::fmin, "broadcast (3, 4) and (4,)", randn({3, 4}, gen, DType::f64), randn({4}, gen, DType::f64));
  binary("logaddexp", &hg::logaddexp, "broadcast (3, 4) and (3, 1)", randn({3, 4}, gen, DType::f64), randn({3, 1}, gen, DType::f64));
  binary("logaddexp2", &hg::logaddexp2, "broadcast (3, 4) and (4,)", randn({3, 4}, gen, DType::f64), randn({4}, gen, DType::f64));
  binary("hypot", &hg::hypot, "broadcast (3, 4) and (4,)", randn({3, 4}, gen, DType::f64), randn({4}, gen, DType::f64));
}

}  // namespace hg::cases
