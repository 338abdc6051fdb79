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
}

}  // namespace hg::cases
