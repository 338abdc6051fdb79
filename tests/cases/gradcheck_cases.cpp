#include "cases/gradcheck_cases.h"

namespace hg::cases {

Tensor leaf(const Shape& shape, Generator& gen) { return randn(shape, gen, DType::f64).requires_grad_(); }

std::vector<GradcheckCase> all_cases(uint64_t seed) {
  Generator gen(seed);
  std::vector<GradcheckCase> out;
  add_view_cases(out, gen);
  add_elementwise_cases(out, gen);
  add_reduce_cases(out, gen);
  add_matmul_cases(out, gen);
  add_softmax_cases(out, gen);
  add_attention_cases(out, gen);
  add_indexing_cases(out, gen);
  add_loss_cases(out, gen);
  add_positional_cases(out, gen);
  add_nn_cases(out, gen);
  return out;
}

bool claims_second_order(const GradcheckCase& c) {
  GradModeGuard on(true);
  Tensor out = c.fn(c.inputs);
  for (const auto& node : tape_of(out))
    if (!node->second_order()) return false;
  return true;
}

}  // namespace hg::cases
