// ops/registry.cpp — the table, gathered: the engine's rows (views, the gradient sum) here, every
// other op's row beside its op, in the ops/*.cpp file that records it (see README, "How to add an op").
#include "ops/registry.h"

#include <fmt/format.h>

#include <iterator>

namespace hg {

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> ops = [] {
    // The engine's own ops (engine/ cannot include ops/, so their rows are here).
    const OpInfo views[] = {
      {"permute", "nothing: the inverse permutation is a number list", "engine/views.cpp"},
      {"slice", "nothing: the gradient goes into zeros where the slice reads", "engine/views.cpp"},
      {"select", "nothing: as slice, one index", "engine/views.cpp"},
      {"view", "nothing: the input's shape", "engine/views.cpp"},
      {"clone", "nothing: the gradient passes through", "engine/views.cpp"},
      {"to_dtype", "nothing: the gradient converts back", "engine/views.cpp", true, true, true, true, false,
       "tests/engine/test_engine.cpp, dtype conversion is differentiable"},
      {"to_device", "nothing: the gradient moves back", "engine/views.cpp", true, true, true, true, false,
       "tests/gpu/test_dispatch.cpp, engine copies across devices"},
      {"slice_backward", "nothing: its gradient is the same slice", "engine/views.cpp", true, true, true, true, true},
      {"select_backward", "nothing: its gradient is the same select", "engine/views.cpp", true, true, true, true, true},
    };
    const OpInfo walk[] = {
      {"accumulate_grad", "nothing: a sum of two gradients, under create_graph", "engine/backward.cpp", true, true, true,
       true, true, "tests/engine/test_graph.cpp, Hessian-vector product"},
    };
    std::vector<OpInfo> all(std::begin(views), std::end(views));
    for (std::span<const OpInfo> file : {elementwise_ops(), broadcast_ops(), reduce_ops(), matmul_ops(), softmax_ops(),
                                         attention_ops(), indexing_ops(), loss_ops(), positional_ops()})
      all.insert(all.end(), file.begin(), file.end());
    all.insert(all.end(), std::begin(walk), std::end(walk));
    return all;
  }();
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
