// Gradcheck cases for ops/reduce.h.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_reduce_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"sum", "all", [](const V& x) { return sum(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"sum", "dims {0, 2}, keepdim", [](const V& x) { return sum(x[0], {0, 2}, true); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"sum", "dim 1", [](const V& x) { return sum(x[0], {1}); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"mean", "all", [](const V& x) { return mean(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"mean", "dim -1, keepdim", [](const V& x) { return mean(x[0], {-1}, true); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"max", "dim 1", [](const V& x) { return max(x[0], 1); }, {leaf({2, 5, 3}, gen)}});
  out.push_back({"max", "dim -1, keepdim", [](const V& x) { return max(x[0], -1, true); }, {leaf({3, 4}, gen)}});
}

}  // namespace hg::cases
