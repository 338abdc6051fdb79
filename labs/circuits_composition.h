// labs/circuits_composition.h — the circuits lab's exercise 4: block 2's K-composition with
// block 1 (the exercise's matrix, RoPE's rotation at the induction offsets, the query read through
// block 1) beside the attention-based head scores, Elhage et al.'s composition scores, and the
// lab's CSV files and pictures.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "circuits_case.h"
#include "report.h"

namespace hg::lab::circuits {

constexpr int64_t kEvalBatch = 256;  // sequences per evaluation batch (the text's eval_copy and head_scores)
inline const std::string kCompositionSection = "exercise 4: K-composition, block 2 reading block 1";

struct CompositionInputs {
  uint64_t seed = 0;
  Device device = Device::cpu;
  bool trained = false;      // the model trained the text's 2,000 steps (or was loaded): conclusions apply
  std::string untrained_why;  // what is printed instead of them
};

// What the section found: for the acceptance checks and the files.
struct CompositionFindings {
  Circuits c;
  std::vector<int64_t> offsets;  // the induction offsets δ = j − i
  Tensor Qb;                     // the query read through block 1
  std::pair<int64_t, int64_t> best{0, 0};  // table 4's best pair (block-2 head, block-1 head)
  double best_rows = 0;                    // its rows with the diagonal largest
  int64_t prev_head = 0, ind_head = 0, qmatch_head = -1;
  double lowest_inductive = HUGE_VAL;  // table 4 with the previous-token head, lowest over induction heads
  std::vector<double> induction;       // block 2's induction scores by attention
  CompositionScores cs;
  CompositionBaseline cb;
  std::pair<int64_t, int64_t> kmax{0, 0};  // the largest K-composition score's pair
};

CompositionFindings report_k_composition(Report& rep, const nn::TinyCharLM& two, const CompositionInputs& in);
void report_composition_scores(Report& rep, CompositionFindings& f, uint64_t seed, bool trained);

// The CSV matrices and (with `pictures`, when gnuplot is installed) the PNGs in `out`.
void write_circuit_files(Report& rep, const std::string& out, bool pictures, const CompositionFindings& f,
                         const Tensor& partner_gram);

}  // namespace hg::lab::circuits
