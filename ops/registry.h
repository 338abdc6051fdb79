// ops/registry.h — every differentiable op in one table: what its node is called on the graph,
// what its backward saves and why, where its derivation is written, the devices and dtypes it
// runs on, and whether its backward is differentiable again (create_graph).
//
// The list of ops at a glance, as tinygrad's gradient.py and PyTorch's derivatives.yaml give it.
// tests/ops/test_registry.cpp holds it to what the ops actually record and to the gradcheck cases;
// the gradcheck program orders its rows by it; README's "Where each backward lives" table is
// printed from it (`gradcheck --registry`) and checked against it by that test.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hg {

struct OpInfo {
  std::string_view name;        // the node's op on the graph ("softmax")
  std::string_view saves;       // what the backward keeps, and why ("the output P: dS = P ∘ (dP − D)")
  std::string_view derivation;  // the file whose comment derives the backward
  bool cuda = true;             // runs on CUDA tensors (every op runs on the CPU)
  bool f32 = true, f64 = true;  // the float dtypes it takes (gradcheck runs float64; float32 is
                                // held to float64 by the device and training tests)
  bool second_order = true;     // its backward is made of recorded ops: differentiable again
  // Recorded only by another op's backward under create_graph (slice's gradient placed in zeros,
  // gelu's slope, ...), never by a forward a user writes.
  bool from_backward = false;
  // Empty: the gradcheck cases cover it (the registry test insists). Otherwise the test that
  // checks its backward instead, where central differences cannot (a dtype or device move).
  std::string_view checked_by = {};
};

// Every op, in the order README and the gradcheck table list them: the engine's rows, then each
// ops/ file's rows, which that file defines beside its ops (below), then the gradient sum's.
const std::vector<OpInfo>& op_registry();

// The rows of the ops each file records, defined at the end of that file.
std::span<const OpInfo> elementwise_ops();  // ops/elementwise.cpp
std::span<const OpInfo> broadcast_ops();    // ops/broadcast.cpp
std::span<const OpInfo> reduce_ops();       // ops/reduce.cpp
std::span<const OpInfo> matmul_ops();       // ops/matmul.cpp
std::span<const OpInfo> softmax_ops();      // ops/softmax.cpp
std::span<const OpInfo> attention_ops();    // ops/attention.cpp
std::span<const OpInfo> indexing_ops();     // ops/indexing.cpp
std::span<const OpInfo> loss_ops();         // ops/loss.cpp
std::span<const OpInfo> positional_ops();   // ops/positional.cpp

// The row of op `name`, or nullptr.
const OpInfo* find_op(std::string_view name);

// README's "Where each backward lives" table (Markdown), one row per op.
std::string registry_markdown();

}  // namespace hg
