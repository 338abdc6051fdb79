// ops/registry.h — every differentiable op, as the list of their definitions (engine/op_def.h):
// what its node is called on the graph, what its backward saves and why, where its derivation is
// written, its fused backward, the devices and dtypes it runs on, and whether its backward is
// differentiable again (create_graph).
//
// Each definition is declared beside its op, and record() takes it, so the list cannot drift from
// what the ops record. tests/ops/test_registry.cpp holds it to the gradcheck cases; the gradcheck
// program orders its rows by it; docs/ops.md is printed from it (`gradcheck --registry`) and
// checked against it by that test.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/op_def.h"

namespace hg {

// Every op, in the order docs/ops.md and the gradcheck table list them: the engine's views, then
// each ops/ file's, which that file defines beside its ops (below), then the gradient sum.
const std::vector<const OpDef*>& op_registry();

// The definitions of the ops each file records, gathered at the end of that file.
std::span<const OpDef* const> elementwise_ops();  // ops/elementwise.cpp
std::span<const OpDef* const> gelu_ops();         // ops/gelu.cpp
std::span<const OpDef* const> elementwise_math_ops();  // ops/elementwise_math.cpp
std::span<const OpDef* const> pointwise_ops();         // ops/pointwise.cpp
std::span<const OpDef* const> scan_ops();              // ops/scan.cpp
std::span<const OpDef* const> broadcast_ops();    // ops/broadcast.cpp
std::span<const OpDef* const> reduce_ops();       // ops/reduce.cpp
std::span<const OpDef* const> statistics_ops();   // ops/statistics.cpp
std::span<const OpDef* const> normalization_ops();  // ops/normalization.cpp
std::span<const OpDef* const> extrema_ops();      // ops/extrema.cpp
std::span<const OpDef* const> power_ops();        // ops/power.cpp
std::span<const OpDef* const> matmul_ops();       // ops/matmul.cpp
std::span<const OpDef* const> softmax_ops();      // ops/softmax.cpp
std::span<const OpDef* const> attention_ops();    // ops/attention.cpp
std::span<const OpDef* const> attention_qkv_ops();  // ops/attention_qkv.cpp
std::span<const OpDef* const> indexing_ops();     // ops/indexing.cpp
std::span<const OpDef* const> embedding_ops();    // ops/embedding.cpp
std::span<const OpDef* const> loss_ops();         // ops/loss.cpp
std::span<const OpDef* const> positional_ops();   // ops/positional.cpp

// The definition of op `name`, or nullptr.
const OpDef* find_op(std::string_view name);

// What an op's backward saves, in Markdown: "`label`: why (when)", joined; or "nothing: why".
std::string saves_text(const OpDef& op);

// An op with no definition of its own: a composition of recorded ops (ops/rearrange.h's
// gathers, std = √var), listed so the op table names it and the tests hold it to a gradcheck case.
struct ComposedOp {
  std::string_view name, made_of, file;
};
std::span<const ComposedOp> composed_ops();

// docs/ops.md, the table of ops (Markdown), one row per op, then the composed ops.
std::string registry_markdown();

}  // namespace hg
