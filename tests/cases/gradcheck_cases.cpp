#include "cases/gradcheck_cases.h"

namespace hg::cases {

Tensor leaf(const Shape& shape, Generator& gen) { return randn(shape, gen, DType::f64).requires_grad_(); }

constexpr OpDef kWrongSquare{.name = "wrong_square", .saves = {{"input", "2x (claimed: 3x)"}},
                             .derivation = "tests/cases/gradcheck_cases.cpp", .second_order = false};
Tensor wrong_square(const std::vector<Tensor>& x) {
  Tensor out;
  {
    NoGradGuard ng;
    out = mul(x[0], x[0]);
  }
  record(kWrongSquare, {x[0]}, {out}, {save(kWrongSquare.slot("input"), x[0])},
         [](const std::vector<Tensor>& g, const Saved& s) { return std::vector<Tensor>{mul(mul(g[0], s[kWrongSquare.slot("input")]), 3.0)}; });
  return out;
}

std::vector<GradcheckCase> all_cases(uint64_t seed) {
  Generator gen(seed);
  std::vector<GradcheckCase> out;
  add_view_cases(out, gen);
  add_elementwise_cases(out, gen);
  add_reduce_cases(out, gen);
  add_rearrange_cases(out, gen);
  add_matmul_cases(out, gen);
  add_softmax_cases(out, gen);
  add_attention_cases(out, gen);
  add_indexing_cases(out, gen);
  add_loss_cases(out, gen);
  add_positional_cases(out, gen);
  add_nn_cases(out, gen);
  add_normalization_cases(out, gen);  // last, so the cases before it draw the inputs they always drew
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
