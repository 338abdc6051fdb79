// labs/induction_why.h — why the trained model predicts what it does at one position: the gradient
// of that target's loss with respect to the embedding of every input token and to every attention
// weight of every head, and one entry of it beside its central difference (the induction live
// page's "why this prediction", labs/induction_live.h).
//
// The forward is the model's own (nn/tinycharlm.cpp: token embedding, per block qkv, RoPE on q and
// k, causal softmax(q kᵀ/√d_h), the ablated heads' outputs zeroed, proj into the residual stream,
// the tied head), written out step by step in float64 so that each block's attention weights P are
// a tensor of their own: P + δP and e + δe, with the perturbations δ zero leaves, make
// ∂loss/∂P = ∂loss/∂δP and ∂loss/∂e = ∂loss/∂δe, and the same function with one δ entry at ±ε
// gives the central difference. Upstream of a perturbed P nothing changes; downstream everything
// is recomputed (block 1's weights feed block 2's input).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/tinycharlm.h"

namespace hg::lab::induction {

// The entry checked against its central difference.
struct WhyCheck {
  enum class Kind { none, embedding, weight } kind = Kind::none;
  int64_t block = 0, head = 0, query = 0;  // weight: P[block][head][query, key]
  int64_t key = 0;                         // embedding: the input position `key`
};

struct Why {
  double loss = 0;                               // target t's cross-entropy, float64
  std::vector<double> embedding;                 // [T] ‖∂loss/∂e_j‖ (0 for j > t)
  std::vector<std::vector<Tensor>> weights;      // [block][head] ∂loss/∂P, (T, T) float64
  std::vector<std::vector<Tensor>> patterns;     // [block][head] P, (T, T) float64 (the forward's own)
  bool checked = false;
  std::string what;                              // the checked entry, in words
  double analytic = 0, numeric = 0, eps = 0;
};

// tokens: the sequence (inputs tokens[0..n-2], targets tokens[1..n-1]); t: the target's index
// (0 <= t < n − 1). The model's ablated heads stay zeroed. An embedding check is the derivative
// along ∂loss/∂e_key's own direction, so its analytic value is the norm shown. Errors are hg::Error.
Why why_prediction(const nn::TinyCharLM& model, const std::vector<int64_t>& tokens, int64_t t, const WhyCheck& check);

}  // namespace hg::lab::induction
