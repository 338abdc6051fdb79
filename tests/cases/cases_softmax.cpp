// Gradcheck cases for ops/softmax.h: softmax and log_softmax along the last and the first
// dimension, with a fully masked (-inf) row, the row rule as an op, and the Jacobian.
#include <limits>

#include "cases/gradcheck_cases.h"

namespace hg::cases {

namespace {
// A constant additive mask (3, 4): row 1 fully hidden (-inf), row 2 partly.
Tensor row_mask() {
  const double h = -std::numeric_limits<double>::infinity();
  return tensor({0, 0, 0, 0, h, h, h, h, 0, h, 0, h}, {3, 4}, DType::f64);
}
}  // namespace

void add_softmax_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"softmax", "dim -1, (3, 5)", [](const V& x) { return softmax(x[0], -1); }, {leaf({3, 5}, gen)}});
  out.push_back({"softmax", "dim 0, (4, 3)", [](const V& x) { return softmax(x[0], 0); }, {leaf({4, 3}, gen)}});
  out.push_back({"softmax", "dim 1, (2, 4, 3)", [](const V& x) { return softmax(x[0], 1); }, {leaf({2, 4, 3}, gen)}});
  out.push_back({"softmax", "-inf entries, one row fully masked", [](const V& x) { return softmax(add(x[0], x[1]), -1); },
                 {leaf({3, 4}, gen), row_mask()}});  // the mask: an input held fixed, on the device checked
  out.push_back({"log_softmax", "dim -1, (3, 5)", [](const V& x) { return log_softmax(x[0], -1); }, {leaf({3, 5}, gen)}});
  out.push_back({"log_softmax", "dim 0, (4, 3)", [](const V& x) { return log_softmax(x[0], 0); }, {leaf({4, 3}, gen)}});
  out.push_back({"softmax_backward", "P, dP (3, 4)", [](const V& x) { return softmax_backward(x[0], x[1]); },
                 {leaf({3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"softmax_jacobian", "p (2, 4), any values", [](const V& x) { return softmax_jacobian(x[0]); }, {leaf({2, 4}, gen)}});
  out.push_back({"softmax_jacobian", "of softmax(s), s (3,)", [](const V& x) { return softmax_jacobian(softmax(x[0])); },
                 {leaf({3}, gen)}});
}

}  // namespace hg::cases
