// labs/three_token_case.h — Section 3's worked example: three tokens, d_k = d_v = 2, float64.
//
//   Q = K = [[1,0],[0,1],[1,1]],  V = [[1,0],[0,2],[3,3]],  S = Q Kᵀ / √2,  P = softmax(S),  O = P V
//
// and the backward pass of L = o_{3,2} (row 3, column 2 of O; index [2][1]), computed three ways:
// the formula (attention_trace), the tape (attention(...).index({2, 1}).backward()) and finite
// differences. A fourth, the tape of attention built from primitive ops, gives one tape entry per
// step of the hand backward; the step-through lab watches it with a BackwardObserver.
//
// Every function takes the device the example runs on: the inputs are built on the CPU and moved
// there with .to(device), and the ops, the traces and the backward passes run on it. Element
// writes are CPU-only, so finite differences nudge CPU copies of the inputs and move each nudged
// input to the device to evaluate L there; their results (Ways::numeric) live on the CPU.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "compare.h"
#include "handgrad.h"

namespace hg::lab {

// The text's case is causal and scaled; the lab also runs it without the mask and without the scale.
struct ThreeTokenVariant {
  bool causal = true;
  bool scaled = true;
  std::string name() const;  // "causal, scaled by 1/√d_k", ...
  AttentionOptions options() const;
};

struct ThreeTokenInputs {
  Tensor Q, K, V;  // (3, 2) float64 leaves on the device that require grad, named "Q", "K", "V"
};
// Fresh leaves each call (Q and K equal but separate).
ThreeTokenInputs three_token_inputs(Device device = Device::cpu);

// dL/dO for L = o_{3,2}: a single 1 at row 3, column 2.  (3, 2)
Tensor three_token_dO(Device device = Device::cpu);

// Forward and the formula backward of one variant: S, P, O, dP (= g), D (= ḡ), dS, dQ, dK, dV.
AttentionTrace three_token_trace(const ThreeTokenVariant& v, Device device = Device::cpu);
// The raw scores Q Kᵀ, before scale and mask.  (3, 3)
Tensor three_token_scores(Device device = Device::cpu);

// One gradient computed by every method, and the largest disagreement between any two.
struct Ways {
  Tensor formula;    // attention_trace: the text's formulas
  Tensor tape;       // the fused attention op's recorded backward
  Tensor numeric;    // central differences of L (on the CPU; L evaluated on the device)
  Tensor primitive;  // the tape of attention built from primitive ops (the step-through graph)
  double max_diff() const;
};

// One step of the backward through the primitive graph, as the observer sees it. Labels come
// from the names the graph gives its tensors ("Q", "Kᵀ", "S", "P", ...).
struct BackwardStep {
  size_t entry = 0;  // index in the tape
  std::string op;
  std::vector<std::string> input_labels, output_labels;
  std::string rule;  // the step in the text's notation, e.g. "dS = P ∘ (dP − rowsum(P ∘ dP))"
  std::vector<Tensor> grad_outputs;  // incoming: dL/d(each output)
  std::vector<Tensor> grad_inputs;   // outgoing: dL/d(each input); empty in `before`
};
using StepHook = std::function<void(const BackwardStep&)>;

struct ThreeTokenBackward {
  ThreeTokenVariant variant;
  AttentionTrace trace;  // the formula's every intermediate
  Tensor J3;             // softmax Jacobian of row 3's weights, diag(p) − p pᵀ  (3, 3)
  Tensor Jg3;            // J3 · g3, which the row rule says equals dS row 3  (3,)
  Ways dS, dQ, dK, dV;   // dS: formula, tape (primitive graph's softmax entry), numeric
  std::vector<std::string> tape_listing;  // the primitive graph's entries, in recording order
  size_t steps = 0;                       // entries the backward visited
};

// Runs all methods. `before` / `after` (optional) are called for each entry of the primitive
// graph's backward, before and after its backward function runs; the tensors they see are on
// the device.
ThreeTokenBackward three_token_backward(const ThreeTokenVariant& v, const StepHook& before = {},
                                        const StepHook& after = {}, Device device = Device::cpu);

// The primitive graph of L = o₃,₂ drawn in Graphviz's DOT (to_dot), after a backward with
// retain_graph: every tensor by its name, each node with what it saved, the leaves Q, K, V
// with their gradients' shapes. What `three_token --graph FILE.dot` writes.
std::string three_token_graph_dot(const ThreeTokenVariant& v, Device device = Device::cpu);

}  // namespace hg::lab
