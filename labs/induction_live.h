// labs/induction_live.h — the induction lab's trained model answering what a page about it asks
// ("What Attention Computes", Sections 10.6.2–10.6.3): one JSON request in, one JSON answer out,
// the same function natively and built as WebAssembly (tests/wasm/induction_live_numbers.cpp holds
// the two to each other, and to the lab's own --json).
//
// The model is the 2-block TinyCharLM that `induction --save FILE` writes (safetensors bytes).
// Requests, each a JSON object with one of:
//   {"sequence": {"seed": 7, "Lmin": 16, "Lmax": 32}}
//       -> {"tokens": [64 ints], "L": 23}: the text's repeated random sequence, drawn as the lab
//          draws its batches (nn::repeated_batch, a Generator of that seed)
//   {"study": {"tokens": [...], "L": 23}, "ablate": [[block, head], ...]}
//       -> {"patterns": [block][head] the (T, T) attention weights, row-major,
//           "loss": [T] each target's cross-entropy, "predicted": [T], "correct": [T] (0/1),
//           "prev": [block][head], "induction": [block][head]: the head scores on this sequence}
//          over inputs x[:-1] and targets x[1:] (T = len(tokens) − 1), with those heads zeroed
//   {"batch": {"seed": 4, "n": 256, "Lmin": 16, "Lmax": 32, "from": 0, "count": 32}, "ablate": [...]}
//       -> over sequences [from, from + count) of that batch (all of it without from and count):
//          {"prev", "induction": the head scores, "n_prev", "n_induction": how many entries each is a
//           mean of, "first", "later", "acc": the first- and later-copy loss and later-copy accuracy,
//           "n_first", "n_later": their counts, "acc_per_position": [T], "n": count}; pieces combine
//          exactly as means weighted by their counts
//   {"why": {"tokens": [...], "L": 23, "position": t, "check": {"embedding": j} or
//            {"weight": [block, head, query, key]}}, "ablate": [...]}
//       -> {"loss": target t's loss, "target": its token, "embedding": [T] ‖∂loss/∂e_j‖,
//           "weights": [block][head] (T, T) ∂loss/∂P, "check": {"what", "analytic", "numeric", "eps"}:
//           the chosen entry beside its central difference (labs/induction_why.h)}
//   {"circuits": {}}
//       -> {"qk": [block][head] (V, V) E W_qᵀ W_k Eᵀ/√d_h, "qk_diagonal": [block][head],
//           "ov": [block] (V, V) the OV copying matrix, "ov_diagonal": [block]: the fraction of rows
//           whose largest entry is on the diagonal, "rope": what RoPE does to the QK maps, in words}
// Blocks and heads count from 0. A request the model cannot answer (a token past the vocabulary,
// a head it does not have, a malformed field) is {"ok": false, "error": "..."}, never a crash.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "nn/tinycharlm.h"

namespace hg::lab::induction {

class InductionLive {
 public:
  // The model from safetensors bytes (`induction --save`'s file); an hg::Error when they are not
  // the 2-block model's parameters.
  explicit InductionLive(std::span<const std::byte> safetensors);
  std::string answer(const std::string& request);

 private:
  std::unique_ptr<nn::TinyCharLM> model_;
};

}  // namespace hg::lab::induction
