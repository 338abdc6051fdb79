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
#include <iosfwd>
#include <string>
#include <vector>

#include "compare.h"
#include "handgrad.h"

namespace hg::lab {

// The example's numbers: the text's by default; `three_token --q/--k/--v/--loss` change them so a
// learner can make cases of their own (say, a loss in a row the mask reaches).
struct ThreeTokenData {
  std::vector<double> Q = {1, 0, 0, 1, 1, 1}, K = {1, 0, 0, 1, 1, 1}, V = {1, 0, 0, 2, 3, 3};  // row-major
  int64_t T = 3, d_k = 2, d_v = 2;  // Q, K: (T, d_k); V: (T, d_v)
  int64_t row = 2, col = 1;         // L = O[row][col], 0-based: the text's o₃,₂
  bool inputs_are_text() const;     // Q, K and V are the text's (its L may not be)
  bool is_text() const;             // the text's matrices and loss: its printed numbers apply
  std::string loss_name() const;    // "o₃,₂"
  std::string row_name() const;     // "o₃", the row of O that L is in
};

// A matrix written as rows of comma-separated numbers, "1,0;0,1;1,1" -> {1,0,0,1,1,1} of (3, 2).
// Throws hg::Error naming `flag` and saying what to write for text that is not such a matrix.
std::vector<double> parse_matrix(const std::string& flag, const std::string& text, int64_t& rows, int64_t& cols);
// "o21" or "o2,1" (1-based, as the text writes o₃,₂) -> data.row, data.col; throws hg::Error naming
// --loss and the shape of O when the entry is not one of O's.
void parse_loss(const std::string& text, ThreeTokenData& data);
// "32" or "3,2" -> i = 3, j = 2 (as written, 1-based); false for text that is not such a pair.
bool parse_entry(const std::string& rest, int64_t& i, int64_t& j);
// 0-based (2, 1) -> "₃₂", the text's subscripts.
std::string index_subscripts(int64_t row, int64_t col);

// A backward deliberately wrong, for the page's "break it" mode: the finite-difference column
// turns red at the step named and at every step after it that depends on it.
enum class ThreeTokenFault {
  none,
  dS,     // the row rule without −ḡ: dS = P ∘ dP (softmax's step)
  dK,     // dK without the transpose: dK = dS Q instead of dSᵀ Q (the step of Q Kᵀ)
  scale,  // the scale's backward forgotten: d(QKᵀ) = d(QKᵀ/√d_k) (the scale's step)
  dV,     // dV = P dO instead of Pᵀ dO (the step of O = P V)
};
// "dS", "dK", "scale", "dV" -> the fault; throws hg::Error listing the names for any other.
ThreeTokenFault parse_fault(const std::string& name);
std::string fault_name(ThreeTokenFault f);         // "dS", ...
std::string fault_description(ThreeTokenFault f);  // "the row rule without −ḡ: dS = P ∘ dP"

// The text's case is causal and scaled; the lab also runs it without the mask and without the scale.
struct ThreeTokenVariant {
  bool causal = true;
  bool scaled = true;
  ThreeTokenData data = {};
  std::string name() const;  // "causal, scaled by 1/√d_k", ...
  // What S is in this variant, for its label: "scores, scaled and masked", "scores, scaled, no mask", ...
  std::string scores_label() const;
  // The names the primitive graph gives Q Kᵀ and its scaled value ("QKᵀ", "QKᵀ/√d_k"; the last
  // of the chain before softmax is always "S").
  std::string scores_name() const;
  std::string scaled_name() const;
  AttentionOptions options() const;
};

// The name of the tensor whose step the fault breaks first ("P": the softmax step, whose output
// is P), or "" for a fault the variant has no step for (scale, unscaled).
std::string fault_step_output(ThreeTokenFault f, const ThreeTokenVariant& v);

struct ThreeTokenInputs {
  Tensor Q, K, V;  // (T, d_k), (T, d_k), (T, d_v) float64 leaves on the device that require grad, named "Q", "K", "V"
};
// Fresh leaves each call (Q and K equal but separate in the text's case).
ThreeTokenInputs three_token_inputs(Device device = Device::cpu, const ThreeTokenData& data = {});

// dL/dO for L = O[row][col]: a single 1 there.  (T, d_v)
Tensor three_token_dO(Device device = Device::cpu, const ThreeTokenData& data = {});

// Forward and the formula backward of one variant: S, P, O, dP (= g), D (= ḡ), dS, dQ, dK, dV.
AttentionTrace three_token_trace(const ThreeTokenVariant& v, Device device = Device::cpu);
// The raw scores Q Kᵀ, before scale and mask.  (T, T)
Tensor three_token_scores(Device device = Device::cpu, const ThreeTokenData& data = {});

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

// What the learner answers at a --step pause. The prompt goes to `out`; one line is read from
// `in`: "q" (or "quit") quits, anything else (Enter) runs the step. At end of input (Ctrl-D,
// < /dev/null) the prompt's line is ended, so what follows does not run into it.
enum class StepAnswer { next, quit, end_of_input };
StepAnswer step_prompt(std::istream& in, std::ostream& out);

struct ThreeTokenBackward {
  ThreeTokenVariant variant;
  AttentionTrace trace;  // the formula's every intermediate
  Tensor J3;             // softmax Jacobian of the weights of L's row (row 3 in the text), diag(p) − p pᵀ  (T, T)
  Tensor Jg3;            // J3 · g3, which the row rule says equals that row of dS  (T,)
  Ways dS, dQ, dK, dV;   // dS: formula, tape (primitive graph's softmax entry), numeric
  std::vector<std::string> tape_listing;  // the primitive graph's entries, in recording order
  size_t steps = 0;                       // entries the backward visited
};

// Runs all methods. `before` / `after` (optional) are called for each entry of the primitive
// graph's backward, before and after its backward function runs; the tensors they see are on
// the device.
ThreeTokenBackward three_token_backward(const ThreeTokenVariant& v, const StepHook& before = {},
                                        const StepHook& after = {}, Device device = Device::cpu);

// Whether the mask changes the backward of `v` (compared with the same case with the mask
// flipped), and why, in a sentence: "the mask changes nothing in this backward (...): L = o₃,₂ is
// in row 3, the last query, which sees every key with or without the mask; ...". That sentence
// ends by saying how to put L in a row the mask reaches: for the reader of the terminal and of
// the page it writes, the flag (`--loss o21`); for the live page's, the entry of O to click.
enum class ThreeTokenReader { terminal, live_page };
std::string three_token_mask_effect(const ThreeTokenVariant& v, Device device = Device::cpu,
                                    ThreeTokenReader reader = ThreeTokenReader::terminal);

// The primitive graph of L = o₃,₂ drawn in Graphviz's DOT (to_dot), after a backward with
// retain_graph: every tensor by its name, each node with what it saved, the leaves Q, K, V
// with their gradients' shapes. What `three_token --graph FILE.dot` writes.
std::string three_token_graph_dot(const ThreeTokenVariant& v, Device device = Device::cpu);

// The page of `three_token --html`: the primitive graph of each variant (to_html), with the
// text's formula at each step, finite differences of every named tensor, the text's numbers
// where they apply, and `fault` built into each variant's backward.
std::string three_token_html(const std::vector<ThreeTokenVariant>& variants, ThreeTokenFault fault,
                             Device device = Device::cpu);
// The same page's data for one variant, without Graphviz (the page lays the graph out itself):
// what the live page's WebAssembly build returns on every edit (viz/html.h: page_data).
nlohmann::json three_token_page_data(const ThreeTokenVariant& variant, ThreeTokenFault fault, Device device = Device::cpu);

}  // namespace hg::lab
