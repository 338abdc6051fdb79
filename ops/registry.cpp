// ops/registry.cpp — the list, gathered: the engine's definitions (views, the gradient sum) and
// every other op's, each declared beside its op in the file that records it (docs/adding-an-op.md).
#include "ops/registry.h"

#include <fmt/format.h>

namespace hg {

const std::vector<const OpDef*>& op_registry() {
  static const std::vector<const OpDef*> ops = [] {
    std::vector<const OpDef*> all;
    for (std::span<const OpDef* const> file :
         {view_defs(), elementwise_ops(), gelu_ops(), elementwise_math_ops(), pointwise_ops(), scan_ops(), broadcast_ops(), reduce_ops(), statistics_ops(), normalization_ops(), extrema_ops(), power_ops(), matmul_ops(), softmax_ops(), attention_ops(),
          indexing_ops(), embedding_ops(), loss_ops(), positional_ops(), attention_qkv_ops(), gradient_defs(), forward_defs()})
      all.insert(all.end(), file.begin(), file.end());
    return all;
  }();
  return ops;
}

const OpDef* find_op(std::string_view name) {
  for (const OpDef* op : op_registry())
    if (op->name == name) return op;
  return nullptr;
}

std::string saves_text(const OpDef& op) {
  std::string s;
  for (const SavedLabel& l : op.saved_labels()) {
    if (!s.empty()) s += "; ";
    s += fmt::format("`{}`: {}", l.label, l.why);
    if (!l.when.empty()) s += fmt::format(" ({})", l.when);
  }
  if (s.empty()) s = op.saves_nothing.empty() ? "nothing" : fmt::format("nothing: {}", op.saves_nothing);
  return s;
}

std::string registry_markdown() {
  std::string md =
      "| op | its backward saves | derivation | fused backward | devices | 2nd order | tangent (forward mode) |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const OpDef* op : op_registry()) {
    std::string name = fmt::format("`{}`", op->name);
    if (op->from_backward) name += " (recorded by a backward, under create_graph)";
    md += fmt::format("| {} | {} | `{}` | {} | {} | {} | {} |\n", name, saves_text(*op), op->derivation,
                      op->fused.empty() ? "—" : op->fused, op->cuda ? "cpu, cuda" : "cpu", op->second_order ? "yes" : "no",
                      op->tangent.empty() ? "— (fails by name)" : op->tangent);
  }
  md += "\nComposed of the ops above (each records those ops, so it has their backward, tangent, second order "
        "and devices):\n\n| op | made of | where |\n|---|---|---|\n";
  for (const ComposedOp& c : composed_ops()) md += fmt::format("| `{}` | {} | `{}` |\n", c.name, c.made_of, c.file);
  return md;
}

std::span<const ComposedOp> composed_ops() {
  static const ComposedOp ops[] = {
      {"vector_norm", "abs, pow or mul, sum, where (a 1 under the root where the sum is 0: gradient 0 there), pow; amax for inf", "ops/linalg.cpp"},
      {"prod", "mul of halves in a tree (log₂ n muls: Π of the others by the chain rule, zeros included)", "ops/composed.cpp"},
      {"unfold", "index_select of every window's positions, unflatten, movedim", "ops/composed.cpp"},
      {"diag_embed", "concat with a zero, index_select onto the diagonal, reshape, movedim", "ops/composed.cpp"},
      {"gather", "reshape, index_select of the flat places index names (its backward adds g back there), reshape", "ops/gather.cpp"},
      {"scatter_add", "index_select of src, embedding's backward as an op (adds src at the places), add", "ops/gather.cpp"},
      {"scatter", "index_select of src, embedding's backward (places the last write to each), where", "ops/gather.cpp"},
      {"std", "var, sqrt", "ops/statistics.cpp"},
      {"amin", "neg, amax, neg", "ops/extrema.cpp"},
      {"sort", "gather at the sorting positions (found on the CPU): the gradient goes back where each value came from", "ops/sort.cpp"},
      {"topk", "sort, narrow", "ops/sort.cpp"},
      {"min", "neg, max (one dim), neg: the gradient to the first minimum", "ops/extrema.cpp"},
      {"logsumexp", "sub (the maximum, held fixed), exp, sum, log, add", "ops/extrema.cpp"},
      {"index_select", "permute, reshape, embedding (its backward adds each row back where it came from)", "ops/rearrange.cpp"},
      {"masked_select", "expand, reshape, index_select of the chosen entries", "ops/rearrange.cpp"},
      {"flip", "index_select with the reversed order", "ops/rearrange.cpp"},
      {"roll", "index_select with the rotated order (reshape when flattened)", "ops/rearrange.cpp"},
      {"diagonal", "permute, reshape, index_select of the diagonal's entries", "ops/rearrange.cpp"},
      {"diag", "diagonal (2-d); concat with a zero, index_select, reshape (1-d)", "ops/rearrange.cpp"},
      {"tril", "where with a fixed lower-triangle mask", "ops/rearrange.cpp"},
      {"triu", "where with a fixed upper-triangle mask", "ops/rearrange.cpp"},
      {"flatten", "reshape", "ops/rearrange.cpp"},
      {"unflatten", "reshape", "ops/rearrange.cpp"},
      {"movedim", "permute", "ops/rearrange.cpp"},
      {"narrow", "slice", "ops/rearrange.cpp"},
      {"maximum", "where, where, and (a + b)/2 where equal: the tie's gradient shared", "ops/compare.cpp"},
      {"minimum", "where, where, and (a + b)/2 where equal: the tie's gradient shared", "ops/compare.cpp"},
      {"lerp", "sub, mul, add", "ops/compare.cpp"},
      {"stack", "unsqueeze, concat", "ops/rearrange.cpp"},
      {"repeat", "reshape, expand (its backward sums the copies), reshape", "ops/rearrange.cpp"},
      {"tile", "repeat", "ops/rearrange.cpp"},
      {"repeat_interleave", "index_select with each index repeated", "ops/rearrange.cpp"},
      {"clamp", "where, bound by bound (beyond it: the bound; at a tensor bound's tie: (x + bound)/2, shared); the comparisons record nothing", "ops/compare.cpp"},
  };
  return ops;
}

}  // namespace hg
