// ops/registry.cpp — the table itself. A new op adds one row here (see README, "How to add an op").
#include "ops/registry.h"

#include <fmt/format.h>

namespace hg {

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> ops = {
      // name            saves, and why                                         derivation
      {"permute", "nothing: the inverse permutation is a number list", "engine/views.cpp"},
      {"slice", "nothing: the gradient goes into zeros where the slice reads", "engine/views.cpp"},
      {"select", "nothing: as slice, one index", "engine/views.cpp"},
      {"view", "nothing: the input's shape", "engine/views.cpp"},
      {"clone", "nothing: the gradient passes through", "engine/views.cpp"},
      {"to_dtype", "nothing: the gradient converts back", "engine/views.cpp", true, true, true, true, false,
       "tests/test_engine.cpp, dtype conversion is differentiable"},
      {"to_device", "nothing: the gradient moves back", "engine/views.cpp", true, true, true, true, false,
       "tests/gpu/test_dispatch.cpp, engine copies across devices"},
      {"slice_backward", "nothing: its gradient is the same slice", "engine/views.cpp", true, true, true, true, true},
      {"select_backward", "nothing: its gradient is the same select", "engine/views.cpp", true, true, true, true, true},
      {"add", "nothing: dA = sum_to(g)", "ops/elementwise.cpp"},
      {"sub", "nothing", "ops/elementwise.cpp"},
      {"mul", "a and b: each is the other's derivative", "ops/elementwise.cpp"},
      {"div", "a and b", "ops/elementwise.cpp"},
      {"add_scalar", "nothing", "ops/elementwise.cpp"},
      {"mul_scalar", "nothing: the scalar", "ops/elementwise.cpp"},
      {"rsub_scalar", "nothing", "ops/elementwise.cpp"},
      {"rdiv_scalar", "the denominator a: d(s/a) = −s/a²", "ops/elementwise.cpp"},
      {"neg", "nothing", "ops/elementwise.cpp"},
      {"exp", "the output: it is the derivative", "ops/elementwise.cpp"},
      {"log", "the input x: d log x = 1/x", "ops/elementwise.cpp"},
      {"pow", "the base x: p x^(p−1)", "ops/elementwise.cpp"},
      {"sqrt", "the output: 1 / (2 out)", "ops/elementwise.cpp"},
      {"relu", "the input x: the step [x > 0]", "ops/elementwise.cpp"},
      {"tanh", "the output y: 1 − y²", "ops/elementwise.cpp"},
      {"gelu", "the input x: Φ(x) + x φ(x)", "ops/elementwise.cpp"},
      {"gelu_slope", "the input x: φ(x) (2 − x²)", "ops/elementwise.cpp", true, true, true, true, true},
      {"expand", "nothing: sum_to the input's shape", "ops/broadcast.cpp"},
      {"sum", "nothing: the gradient expands back", "ops/reduce.cpp"},
      {"max", "a one-hot mask of the argmax (x's shape)", "ops/reduce.cpp"},
      {"matmul", "a and b (only the one the other's gradient needs)", "ops/matmul.cpp"},
      {"softmax", "the output P: dS = P ∘ (dP − rowsum(P ∘ dP))", "ops/softmax.cpp"},
      {"softmax_backward", "P and dP: the row rule is bilinear in them", "ops/softmax.cpp"},
      {"log_softmax", "the output y: p = exp(y), dS = g − p rowsum(g)", "ops/softmax.cpp"},
      {"softmax_jacobian", "the weights p: J is a polynomial in p", "ops/softmax.cpp"},
      {"attention", "Q, K, V and the weights P (the mask lives in P)", "ops/attention.cpp"},
      {"masked_fill", "the mask: masked entries pass no gradient", "ops/indexing.cpp"},
      {"where", "the condition", "ops/indexing.cpp"},
      {"embedding", "the indices: where each gradient row goes", "ops/indexing.cpp"},
      {"embedding_backward", "the indices: its gradient is embedding itself", "ops/indexing.cpp", true, true, true, true,
       true},
      {"concat", "nothing: the offsets and sizes", "ops/indexing.cpp"},
      {"split", "nothing: the offsets and sizes", "ops/indexing.cpp"},
      {"cross_entropy", "the logits, the targets and the logsumexp (N,): P is recomputed", "ops/loss.cpp"},
      {"rope", "nothing: R_θ comes from the positions, the backward rotates by −θ", "ops/positional.cpp"},
      {"rope_at", "nothing: as rope, from a given first position", "ops/positional.cpp"},
      {"rope backward", "nothing: it is rope by −θ, whose gradient is rope by +θ", "ops/positional.cpp", true, true, true,
       true, true},
      {"accumulate_grad", "nothing: a sum of two gradients, under create_graph", "engine/backward.cpp", true, true, true,
       true, true, "tests/test_graph.cpp, Hessian-vector product"},
  };
  return ops;
}

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : op_registry())
    if (op.name == name) return &op;
  return nullptr;
}

std::string registry_markdown() {
  std::string md = "| op | its backward saves | derivation | devices | 2nd order |\n|---|---|---|---|---|\n";
  for (const OpInfo& op : op_registry()) {
    std::string name = fmt::format("`{}`", op.name);
    if (op.from_backward) name += " (recorded by a backward, under create_graph)";
    md += fmt::format("| {} | {} | `{}` | {} | {} |\n", name, op.saves, op.derivation, op.cuda ? "cpu, cuda" : "cpu",
                      op.second_order ? "yes" : "no");
  }
  return md;
}

}  // namespace hg
