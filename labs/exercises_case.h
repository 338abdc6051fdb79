// labs/exercises_case.h — exercises 3, 5 and 6 of "What Attention Computes" (10.6.6), computed
// over the induction lab's training and measurements (labs/induction_lab.h), kept in the labkit so
// tests can run them; labs/exercises.cpp only parses flags and prints.
//
//   3. the variable-period experiment retrained with pos = none and alibi (rope the control): which
//      schemes still grow induction heads, and how the loss transition moves.
//   5. the trained 2-block model on a length-21 pattern repeated three times: the second copy
//      against the third, split by whether the current token occurs once or twice in the pattern.
//   6. trained on patterns of tokens 0-47 only, tested on 48-63; the gradient each embedding row
//      received, split into the lookup path and the tied output head's path.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "handgrad.h"
#include "induction_lab.h"
#include "nn/data.h"
#include "nn/tinycharlm.h"

namespace hg::lab::exercises {

// ---------------------------------------------------------------- exercise 3: positional schemes

// The schemes exercise 3 compares, in the order printed (rope, the text's scheme, is the control).
inline const std::vector<std::string> kSchemes = {"rope", "none", "alibi"};

// One 2-block model trained on the variable-period task (L in 16..32) with positions `pos`, and
// what the induction lab measures of it.
struct SchemeRun {
  std::string pos;
  induction::History history;
  induction::CopyEval eval;            // eval_copy on a fresh batch (L in 16..32)
  induction::HeadScores scores;        // head_scores on another fresh batch
  induction::Transition transition;    // against the 1-block rope control's plateau
  int64_t prev_head = -1;              // block 1's head with the largest previous-token score
  double prev_score = 0;
  int64_t induction_head = -1;         // block 2's head with the largest induction score
  double induction_score = 0;
};

// The index and value of the largest entry (the first, on ties); {-1, 0} for an empty row.
std::pair<int64_t, double> strongest(const std::vector<double>& row);

// Trains TinyCharLM(2 blocks, `pos`) from `seed` for `setup.steps` steps (the text's setup) and
// measures it: the evaluation and head-score batches are drawn from seed + 5 and seed + 3, as the
// induction lab's are, so every scheme is measured on the same sequences. The transition is left
// empty: transition_step needs a 1-block curve for its plateau, which the caller trains once.
SchemeRun train_scheme(const std::string& pos, const induction::TrainSetup& setup, uint64_t seed,
                       int64_t eval_batch, Device device, const induction::Progress& progress = {});

// ---------------------------------------------------------------- exercise 5: three copies

// Hits out of targets.
struct Tally {
  int64_t n = 0, hits = 0;
  double acc() const;  // hits / n; NaN when n = 0
  void add(bool hit) {
    ++n;
    hits += hit ? 1 : 0;
  }
};

// The targets of one copy of the pattern: target t (1-based: x[t] predicted from x[0..t-1]) belongs
// to copy k = t / L (0-based), so copy k >= 1 starts with the target t = kL — a restart of the
// pattern. The current (query) token is x[t-1]; a single-token match looks up its earlier
// occurrences and copies what followed them, so the targets are also split by how many times the
// query token occurs in the pattern (once: one candidate successor; twice: two, usually different).
struct CopyTally {
  Tally all;           // every target of the copy
  Tally first;         // its first target t = kL (none in copy 0)
  Tally rest;          // every target but the first
  Tally once, twice, more;       // `rest` split by how often the query token occurs in the pattern
  Tally twice_earlier, twice_later;  // `twice` split by which of its two occurrences the query is
};

// Tallies argmax hits per copy. tokens (B, T) row-major, hits (B, T - 1) row-major with hits[b, t-1]
// for target t, one pattern length L for every row (x[t] = x[t mod L]); returns one CopyTally per
// copy k = 0 .. (T - 1) / L (the last may be partial).
std::vector<CopyTally> tally_copies(const std::vector<int64_t>& tokens, const std::vector<uint8_t>& hits, int64_t B,
                                    int64_t T, int64_t L);

// Argmax hits of `model` on a batch: (B, T - 1) for inputs tokens[:, :-1] and targets tokens[:, 1:]
// (ties: the first maximum, as split_losses).
std::vector<uint8_t> argmax_hits(const nn::TinyCharLM& model, const Tensor& tokens);

struct ThreeCopies {
  int64_t L = 21, sequences = 0;
  std::vector<CopyTally> copies;    // copy 0 (first), 1 (second), 2 (third), 3 (the lone target t = 3L)
  std::vector<double> per_position; // accuracy per target position t = 1..T-1
};
// `batch` sequences of 3L + 1 tokens: a random pattern of L tokens from [0, vocab) tiled (the
// text's repeated_batch with Lmin = Lmax = L; tokens may repeat inside a pattern, as in training).
ThreeCopies three_copies(const nn::TinyCharLM& model, int64_t L, int64_t batch, Generator& gen);

// ---------------------------------------------------------------- exercise 6: held-out tokens

// The tied embedding E (V, d) is used twice in TinyCharLM's forward: the lookup h⁰ = E[x] and the
// head z = h Eᵀ. Its gradient is the sum of what the two uses send back: in the backward the
// `embedding` node's gradient for E is the lookup path's (the scatter-add of dh⁰ by token: a row
// never looked up gets exactly 0), the `transpose` view's is the head path's (dZᵀ h). This
// observer sees both as the backward computes them (before they are summed into E.grad) and keeps,
// per row, the sum over backward passes of each path's squared norm, on E's device.
class EmbeddingPathSplit {
 public:
  explicit EmbeddingPathSplit(const Tensor& embedding_weight);
  EmbeddingPathSplit(const EmbeddingPathSplit&) = delete;
  EmbeddingPathSplit& operator=(const EmbeddingPathSplit&) = delete;

  const BackwardObserver& observer() const { return observer_; }
  // Per row v: Σ over backward passes of ‖dE_path[v, :]‖², (V,) read back to the host.
  std::vector<double> lookup_squared() const;
  std::vector<double> head_squared() const;
  int64_t passes() const { return passes_; }
  // The latest backward's two gradients (V, d), copies (E.grad of that backward is their sum).
  const Tensor& last_lookup() const { return last_lookup_; }
  const Tensor& last_head() const { return last_head_; }

 private:
  void seen(const Node& node, const std::vector<Tensor>& grad_inputs);
  const TensorImpl* weight_;
  BackwardObserver observer_;
  Tensor lookup_sq_, head_sq_;  // (V,) accumulators on E's device
  Tensor last_lookup_, last_head_;
  int64_t passes_ = 0;  // backward passes that reached E (counted by the lookup path)
};

// A batch of the repeated-sequence task whose patterns use tokens [lo, hi) only: the text's
// repeated_batch over hi - lo tokens, shifted by lo. On `device`.
nn::RepeatedBatch batch_of_tokens(int64_t batch, int64_t T, int64_t lo, int64_t hi, int64_t Lmin, int64_t Lmax,
                                  Generator& gen, Device device);

struct HeldOut {
  induction::History history;
  induction::CopyEval seen;       // patterns of tokens 0-47, L 16..32 (the training distribution)
  induction::CopyEval seen16;     // patterns of tokens 32-47 only: 16 seen tokens, as many repeats as held-out
  induction::CopyEval held_out;   // patterns of tokens 48-63 (never in training), L 16..32
  std::vector<double> lookup_squared, head_squared;  // per row, summed over training (see EmbeddingPathSplit)
  std::vector<double> moved;      // per row: ‖e_v(end) − e_v(start)‖
  std::vector<double> norm_start, norm_end;  // per row: ‖e_v‖ before and after training
  double split_sum_diff = -1;     // max |lookup + head − E.grad| over the last step's gradients
  double ov_diag_seen = 0, ov_diag_held = 0;  // OV copying check (block 2): diagonal fraction of rows 0-47 and 48-63
  // Mean cosine similarity between distinct rows of E within each group, before and after training.
  double cos_seen_start = 0, cos_held_start = 0, cos_seen_end = 0, cos_held_end = 0;
  int64_t train_tokens = 48;
};

// Trains TinyCharLM(2 blocks, rope) from `seed` on patterns of tokens [0, train_tokens) and measures
// it (evaluation batches from seed + 5, seed + 6, seed + 7).
HeldOut held_out_tokens(const induction::TrainSetup& setup, uint64_t seed, int64_t train_tokens, int64_t eval_batch,
                        Device device, const induction::Progress& progress = {});

// The mean of cos(E[u], E[v]) over the pairs u < v of rows in [lo, hi) (at least two rows).
double mean_cosine(const Tensor& E, int64_t lo, int64_t hi);

// The fraction of rows a in [lo, hi) of C whose largest entry (over all columns) is C[a, a].
double diagonal_fraction_rows(const Tensor& C, int64_t lo, int64_t hi);

}  // namespace hg::lab::exercises
