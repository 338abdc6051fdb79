// Gradcheck cases for ops/loss.h: cross_entropy with and without ignored targets.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_loss_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"cross_entropy", "logits (4, 5)", [](const V& x) { return cross_entropy(x[0], x[1]); },
                 {leaf({4, 5}, gen), index_tensor({1, 0, 4, 4}, {4})}});
  out.push_back({"cross_entropy", "(2, 3, 4), batch shape (2, 3)",
                 [](const V& x) { return cross_entropy(x[0], x[1]); },
                 {leaf({2, 3, 4}, gen), index_tensor({3, 0, 1, 2, 2, 0}, {2, 3})}});
  out.push_back({"cross_entropy", "(2, 3, 4), two rows ignored (-100)",
                 [](const V& x) { return cross_entropy(x[0], x[1]); },
                 {leaf({2, 3, 4}, gen), index_tensor({3, -100, 1, 2, -100, 0}, {2, 3})}});
  out.push_back({"cross_entropy", "(5, 3), ignore_index 1 (a class)",
                 [](const V& x) { return cross_entropy(x[0], x[1], 1); },
                 {leaf({5, 3}, gen), index_tensor({0, 1, 2, 1, 0}, {5})}});
  out.push_back({"cross_entropy", "(2, 4) + 800: naive exp overflows",
                 [](const V& x) { return cross_entropy(x[0] + 800.0, x[1]); },
                 {leaf({2, 4}, gen), index_tensor({2, 1}, {2})}});
}

}  // namespace hg::cases
