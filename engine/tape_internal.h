// engine/tape_internal.h — what engine/tape.cpp shares with the walk in engine/backward.cpp.
// Not part of the API.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/tape.h"

namespace hg {

// Every node the roots reach through inputs that need a gradient, in recording order: their tape.
std::vector<std::shared_ptr<Node>> reach(const std::vector<std::shared_ptr<Node>>& roots);

// Anomaly mode, backward: finite gradients in and NaN/Inf out names the op and its call site.
void check_backward(const Node& n, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin);

// record() without a definition to check against: a node named `op` (def may be null).
std::shared_ptr<Node> record_node(std::string op, const OpDef* def, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs, std::vector<SavedTensor> saved,
                                  BackwardFn backward, BackwardFn fused, Site where);

}  // namespace hg
