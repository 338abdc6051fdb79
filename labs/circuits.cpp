// circuits — Section 10.6.1 of "What Attention Computes" read from the weights, with exercises 1
// and 4: every head's QK and OV circuit (shapes, ranks, singular values) at initialisation and
// after training; the zero-block model's Gram matrix E Eᵀ and what its form forbids; block 2's
// K-composition with block 1 (the exercise's matrix, then with RoPE's rotation at the offsets the
// induction head attends to) beside the attention-based head scores, and Elhage et al.'s
// composition scores; and the copying head of exercise 1, built by hand.
// The computations are in circuits_case.cpp (the labkit); this file parses flags and prints.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "circuits_case.h"
#include "induction_plots.h"
#include "report.h"

using namespace hg;
using namespace hg::lab;
using namespace hg::lab::circuits;
using nn::TinyCharLM;

namespace {

constexpr int64_t kEvalBatch = 256;      // sequences per evaluation batch (the text's eval_copy and head_scores)
constexpr int64_t kPartnerSteps = 400;   // the zero-block model on the partner task (about a second)
const std::vector<double> kScales = {1, 4, 16};  // the hand-built head's constant

struct Options {
  int64_t steps = kSteps;
  uint64_t seed = kSeed;
  std::string load, save, out = "circuits_out";
  bool pictures = true, progress = true;
  Device device = Device::cpu;
};

using Clock = std::chrono::steady_clock;

std::string row_str(const std::vector<double>& v, int decimals = 2) {
  std::string s;
  for (double x : v) s += fmt::format("{}{:.{}f}", s.empty() ? "" : " ", x, decimals);
  return s;
}

int64_t argmax(const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

// ------------------------------------------------------------------ item 1
struct RankSummary {
  int64_t lowest = 0, highest = 0;
  double kept = HUGE_VAL, dropped = 0;  // min σ32 / tol and max σ33 / tol over the matrices: the rank decision's margin
  double largest = 0;                    // the largest σ1
};

RankSummary print_ranks(Report& rep, const std::string& state, const std::vector<HeadRanks>& ranks) {
  RankSummary s{INT64_MAX, 0};
  fmt::print("  {}: singular values σ1 ≥ σ2 ≥ … of each product (float32), tol = σ1 · 128 · eps(float32)\n", state);
  fmt::print("    {:<12} {:<6} {:>5} {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9}\n", "block head", "matrix", "rank", "σ1", "σ31",
             "σ32", "σ33", "σ34", "tol");
  nlohmann::json rows = nlohmann::json::array();
  for (const HeadRanks& r : ranks) {
    for (const auto& [name, m] : {std::pair<std::string, const MatrixRank&>{"W_QK", r.qk}, {"W_OV", r.ov}}) {
      auto sv = [&](size_t i) { return i < m.s.size() ? m.s[i] : 0.0; };
      fmt::print("    {:<12} {:<6} {:>5} {:>9.3g} {:>9.3g} {:>9.3g} | {:>9.2e} {:>9.2e} {:>9.2e}\n",
                 fmt::format("{} {}", r.block + 1, r.head), name, m.rank, sv(0), sv(30), sv(31), sv(32), sv(33), m.tol);
      s.lowest = std::min(s.lowest, m.rank);
      s.highest = std::max(s.highest, m.rank);
      s.kept = std::min(s.kept, sv(31) / m.tol);
      s.dropped = std::max(s.dropped, sv(32) / m.tol);
      s.largest = std::max(s.largest, sv(0));
      rows.push_back({{"block", r.block + 1}, {"head", r.head}, {"matrix", name}, {"rank", m.rank}, {"tol", m.tol},
                      {"singular_values", m.s}});
    }
  }
  rep.json()["sections"]["QK and OV circuits: shapes and ranks"][state] = rows;
  return s;
}

// ------------------------------------------------------------------ item 3's tables
void print_pair_table(const std::string& title, const std::vector<std::vector<DiagonalConcentration>>& t) {
  const size_t H = t.size();
  fmt::print("  {}\n", title);
  std::string head = fmt::format("    {:<14}", "block-2 head");
  for (size_t h1 = 0; h1 < H; ++h1) head += fmt::format(" {:>13}", fmt::format("b1 head {}", h1));
  head += fmt::format(" {:>13}", "direct path");
  fmt::print("{}\n", head);
  for (size_t h2 = 0; h2 < H; ++h2) {
    std::string line = fmt::format("    {:<14}", h2);
    for (const DiagonalConcentration& d : t[h2])
      line += fmt::format(" {:>13}", fmt::format("{:.2f} ({:.1f})", d.argmax_fraction, d.z));
    fmt::print("{}\n", line);
  }
}

nlohmann::json pair_json(const std::vector<std::vector<DiagonalConcentration>>& t) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& row : t) {
    nlohmann::json r = nlohmann::json::array();
    for (const DiagonalConcentration& d : row) r.push_back({{"argmax_fraction", d.argmax_fraction}, {"z", d.z}});
    j.push_back(r);
  }
  return j;
}

void print_scores(const std::string& name, const std::vector<std::vector<double>>& s, double baseline) {
  fmt::print("    {}-composition (random: {:.3f})\n", name, baseline);
  for (size_t h2 = 0; h2 < s.size(); ++h2) fmt::print("      block-2 head {}:  {}\n", h2, row_str(s[h2], 3));
}

// The pair (h2, h1) of block-1 heads 0..H−1 (not the direct path) with the largest value of f.
template <typename F>
std::pair<int64_t, int64_t> best_pair(const std::vector<std::vector<DiagonalConcentration>>& t, F f) {
  std::pair<int64_t, int64_t> best{0, 0};
  for (size_t h2 = 0; h2 < t.size(); ++h2)
    for (size_t h1 = 0; h1 + 1 < t[h2].size(); ++h1)
      if (f(t[h2][h1]) > f(t[static_cast<size_t>(best.first)][static_cast<size_t>(best.second)]))
        best = {static_cast<int64_t>(h2), static_cast<int64_t>(h1)};
  return best;
}

// ------------------------------------------------------------------ the lab
void run(Report& rep, const Options& o, int& failures) {
  const auto t_start = Clock::now();
  rep.section("setup");
  rep.text(fmt::format("TinyCharLM(vocab 64, d 128, 4 heads of d_h = 32, rope, no bias, no layer norm, tied head), seed {}.",
                       o.seed));

  // ---------------------------------------------------------------- the models
  Generator g_init(o.seed);
  TinyCharLM init(induction::model_config(2), g_init);  // the weights the trained model starts from
  Generator g(o.seed);
  TinyCharLM two(induction::model_config(2), g);
  two.to(o.device);
  int64_t trained_steps = o.steps;
  if (!o.load.empty()) {
    nn::load_checkpoint(o.load, two);
    const auto meta = nn::load_safetensors(o.load).metadata;
    const auto it = meta.find("steps");
    trained_steps = -1;  // unknown unless the file says
    if (it != meta.end()) {
      int64_t n = 0;
      const char* end = it->second.data() + it->second.size();
      const auto [ptr, ec] = std::from_chars(it->second.data(), end, n);
      if (ec == std::errc() && ptr == end && n >= 0) trained_steps = n;
    }
    rep.text(fmt::format("2-block model loaded from {} ({}); the initialisation shown is seed {}'s.", o.load,
                         trained_steps >= 0 ? fmt::format("trained {} steps", trained_steps) : "its training steps not recorded",
                         o.seed));
  } else if (o.steps > 0) {
    rep.text(fmt::format("Training the 2-block model as the induction lab does (train_repeat: AdamW lr 1e-3, batch 128, "
                         "L uniform in 16..32), {} steps (text: 2,000)...", o.steps));
    const int64_t every = std::max<int64_t>(1, o.steps / 10);
    const induction::History h = induction::train_repeat(
        two, {.steps = o.steps, .Lmin = 16, .Lmax = 32}, g, [&](int64_t done, int64_t total, double first, double later) {
          if (o.progress && (done % every == 0 || done == total)) {
            fmt::print(stderr, "[2 blocks] step {}/{}  first {:.2f}  later {:.2f}\n", done, total, first, later);
            std::fflush(stderr);
          }
        });
    rep.text(fmt::format("  trained in {:.0f} s ({:.0f} ms/step)", h.seconds, 1000 * h.seconds / static_cast<double>(o.steps)));
  }
  if (!o.save.empty()) {
    nn::save_checkpoint(o.save, two, {{"model", "TinyCharLM vocab=64 d=128 heads=4 blocks=2 pos=rope bias=false"},
                                      {"seed", std::to_string(o.seed)}, {"steps", std::to_string(trained_steps)}});
    rep.text(fmt::format("2-block model saved to {}", o.save));
  }
  // The circuit-discovery checks need the induction circuit, which forms near step 1,500 with the
  // default seed: they apply to a model trained the text's 2,000 steps (or loaded without a count).
  const bool trained = trained_steps < 0 || trained_steps >= kSteps;
  const std::string untrained_why = fmt::format("needs the trained circuit ({} training steps, the text's; this run: {})",
                                                kSteps, trained_steps);

  // ---------------------------------------------------------------- item 1: shapes and ranks
  rep.section("QK and OV circuits: shapes and ranks");
  rep.text("W_QK = W_qᵀ W_k and W_OV = W_o W_v per head (Equation 10.6.2), each (d, d) = (128, 128), rank at most d_h = 32.");
  rep.text("Rank as numpy's matrix_rank: singular values (LAPACK sgesdd) above σ1 · max(M, N) · eps of float32, the");
  rep.text("dtype the products are formed in (the model's, as the text's).");
  const std::vector<HeadRanks> r0 = circuit_ranks(init);
  rep.fact("W_QK shape (block 1 head 0, init)", shape_str(r0[0].qk_shape), "(128, 128)");
  rep.value("W_QK rank (block 1 head 0, init)", static_cast<double>(r0[0].qk.rank), 32, 0);
  rep.fact("W_OV shape (block 1 head 0, init)", shape_str(r0[0].ov_shape), "(128, 128)");
  rep.value("W_OV rank (block 1 head 0, init)", static_cast<double>(r0[0].ov.rank), 32, 0);
  const RankSummary s0 = print_ranks(rep, "initialisation", r0);
  const std::vector<HeadRanks> r1 = circuit_ranks(two);
  const RankSummary s1 = print_ranks(rep, o.steps > 0 || !o.load.empty() ? "after training" : "after training (0 steps)", r1);
  rep.text(fmt::format("Every head's W_QK and W_OV has rank {} at initialisation and {} after training (lowest..highest "
                       "of the 16 matrices: {}..{} and {}..{}).", s0.lowest == s0.highest ? std::to_string(s0.lowest) : "varying",
                       s1.lowest == s1.highest ? std::to_string(s1.lowest) : "varying", s0.lowest, s0.highest, s1.lowest,
                       s1.highest));
  rep.text(fmt::format("The rank decision has room on both sides: σ32 ≥ {:.0f} tol and σ33 ≤ {:.1e} tol at initialisation, "
                       "σ32 ≥ {:.0f} tol and σ33 ≤ {:.1e} tol after training.", s0.kept, s0.dropped, s1.kept, s1.dropped));
  rep.text(fmt::format("Training stretches the spectra (the largest σ1 goes from {:.2f} to {:.0f}) but keeps 32 singular "
                       "values and leaves the 33rd at float32 rounding:", s0.largest, s1.largest));
  rep.text("each head reads and writes only a 32-dimensional slice of the 128-dimensional stream, the d_h bottleneck.");
  rep.json()["sections"]["QK and OV circuits: shapes and ranks"]["margins"] = {
      {"init", {{"min_s32_over_tol", s0.kept}, {"max_s33_over_tol", s0.dropped}, {"max_s1", s0.largest}}},
      {"trained", {{"min_s32_over_tol", s1.kept}, {"max_s33_over_tol", s1.dropped}, {"max_s1", s1.largest}}}};

  // ---------------------------------------------------------------- item 2: zero blocks
  rep.section("zero blocks: the Gram matrix E Eᵀ");
  rep.text("TinyCharLM with 0 blocks: the logits after token a are E e_a (tied head), so its forward on the tokens");
  rep.text("0..63 is the whole bigram table A = E Eᵀ (64 x 64), A_ab = e_bᵀ e_a = logit(a → b) (10.6.1.3).");
  Generator gz(o.seed);
  TinyCharLM zero({.vocab = 64, .d = 128, .heads = 4, .blocks = 0}, gz);
  zero.to(o.device);
  const GramCheck z0 = gram_check(zero_block_logits(zero));
  rep.value("max |A - Aᵀ| (init)", z0.asymmetry, std::nullopt, 9);
  rep.value("max |A| (init)", z0.max_abs, std::nullopt, 4);
  rep.value("rank of A (init)", static_cast<double>(z0.rank.rank), std::nullopt, 0);
  rep.text(fmt::format("  The text's bound, rank ≤ d = 128, says nothing here: V = 64 < d, and A has full rank {}.", z0.rank.rank));
  rep.text("  What does constrain it is its form: symmetric (logit(a → b) = logit(b → a)) and positive semi-definite.");
  rep.value("smallest eigenvalue (init)", z0.eigenvalues.front(), std::nullopt, 6);
  rep.value("largest eigenvalue (init)", z0.eigenvalues.back(), std::nullopt, 6);
  rep.value("tolerance λ_max · 64 · eps(f32)", z0.eig_tol, std::nullopt, 9);
  rep.value("rows with the diagonal largest (init)", z0.diagonal_argmax, std::nullopt, 2);
  rep.value("min over a≠b of A_aa+A_bb-A_ab-A_ba", z0.min_pair_gap, std::nullopt, 6);
  rep.text("  A_aa + A_bb − A_ab − A_ba = ‖e_a − e_b‖² ≥ 0: logit(a→b) + logit(b→a) ≤ logit(a→a) + logit(b→b). A PSD");
  rep.text("  Gram matrix cannot prefer both a → b and b → a to repeating the token; every off-diagonal entry is at");
  rep.text("  most √(A_aa A_bb), so the largest entry of A lies on its diagonal.");
  rep.text("The partner task shows what that forbids: each token a is followed by its partner a XOR 1 (0↔1, 2↔3, …),");
  rep.text(fmt::format("a bigram table a free 64 x 64 lookup fits exactly (loss 0, accuracy 1). The zero-block model, "
                       "trained {} steps (AdamW lr 1e-2, batches of 64 x 16 uniform tokens):", kPartnerSteps));
  Generator gp(o.seed + 10);
  TinyCharLM zp({.vocab = 64, .d = 128, .heads = 4, .blocks = 0}, gp);
  zp.to(o.device);
  const PartnerTask pt = train_partner_task(zp, kPartnerSteps, gp);
  const GramCheck zt = gram_check(pt.A);
  rep.value("training loss, first step", pt.loss.front(), std::nullopt, 3);
  rep.value("training loss, last step", pt.loss.back(), std::nullopt, 3);
  rep.value("population loss (every a once)", pt.population_loss, std::nullopt, 4);
  rep.value("bound: ln 2", std::log(2.0), std::nullopt, 4);
  rep.value("accuracy (argmax = partner)", pt.accuracy, std::nullopt, 3);
  rep.value("pairs with both directions right", static_cast<double>(pt.both_ways), std::nullopt, 0);
  rep.value("pairs with one direction right", static_cast<double>(pt.one_way), std::nullopt, 0);
  const std::vector<double> A = pt.A.to(DType::f64).contiguous().to_vector();
  const int64_t a = pt.shown, b = partner(a);
  auto Aat = [&](int64_t i, int64_t j) { return A[static_cast<size_t>(i * 64 + j)]; };
  rep.text(fmt::format("  the pair with the largest A_ab − A_aa, (a, b) = ({}, {}): A_aa {:.3f}, A_ab {:.3f} | A_ba {:.3f}, "
                       "A_bb {:.3f}", a, b, Aat(a, a), Aat(a, b), Aat(b, a), Aat(b, b)));
  rep.text(fmt::format("  A_ab + A_ba = {:.3f} ≤ A_aa + A_bb = {:.3f}: {}", Aat(a, b) + Aat(b, a), Aat(a, a) + Aat(b, b),
                       Aat(a, b) > Aat(a, a) ? "a → b beats the self-repeat, so b → a cannot."
                                             : "not even a → b beats the self-repeat."));
  rep.value("smallest eigenvalue (trained)", zt.eigenvalues.front(), std::nullopt, 6);
  rep.value("tolerance (trained)", zt.eig_tol, std::nullopt, 6);
  rep.value("max |A - Aᵀ| (trained)", zt.asymmetry, std::nullopt, 9);
  rep.text("The trained table sits on the bound: partners share nearly one embedding (e_a ≈ e_b), so a row splits");
  rep.text("its mass between the token and its partner — loss just above ln 2, argmax right for at most one of the two.");

  // ---------------------------------------------------------------- item 3: composition
  const std::string kSec = "exercise 4: K-composition, block 2 reading block 1";
  rep.section(kSec);
  const Circuits c = read_circuits(two);
  rep.text("The exercise's matrix E W_qᵀ W_k W_OV⁽¹⁾ Eᵀ (64 x 64; W_q, W_k of a block-2 head, W_OV⁽¹⁾ of a block-1 head):");
  rep.text("row a = the query's token, column b = the token a block-1 head copied into the key's stream. TinyCharLM has");
  rep.text("no layer norm to fold in and ties its head, so E stands at both ends; 1/√d_h is one constant, left out.");
  rep.text("The induction match needs the diagonal: the query holds A, the key after the earlier A holds W_OV e_A.");
  rep.text("Concentration: rows whose argmax is the diagonal (chance 1/64 = 0.016), and in brackets");
  rep.text("z = (mean diagonal − mean off-diagonal) / std off-diagonal. 'direct path': E W_qᵀ W_k Eᵀ, no block-1 head.");
  Generator p3(o.seed + 3);  // the induction lab's head-score batch
  const nn::RepeatedBatch probe = nn::repeated_batch(kEvalBatch, 64, 64, 16, 32, p3, o.device);
  const induction::HeadScores hs = induction::head_scores(two, probe);
  const Tensor maps1 = two.attention_weights(probe.tokens.slice(1, 0, 63))[0];  // block 1, (B, H, T, T)
  std::vector<double> self;
  for (int64_t h = 0; h < maps1.size(1); ++h) self.push_back(induction::offset_mass(maps1.slice(1, h, h + 1), 0));
  const int64_t prev_head = argmax(hs.prev[0]), ind_head = argmax(hs.induction[1]);
  rep.text(fmt::format("  attention on {} sequences, L in 16..32 (the induction lab's head_scores):", kEvalBatch));
  rep.text(fmt::format("    block 1: previous token {} | own position {}", row_str(hs.prev[0]), row_str(self)));
  rep.text(fmt::format("    block 2: induction target {}", row_str(hs.induction[1])));
  auto& kj = rep.json()["sections"][kSec];
  kj["attention"] = {{"block1_previous_token", hs.prev[0]}, {"block1_own_position", self},
                     {"block2_induction_target", hs.induction[1]}};

  const std::vector<int64_t> offsets = induction_offsets(16, 32);
  const Tensor Qb = query_through_block1(c, self);
  const KCompositionTable kt = k_composition_table(c, offsets, Qb);
  print_pair_table("1. the exercise's matrix: query side E, RoPE offset 0 (W_qᵀ W_k as written)", kt.text);
  print_pair_table("2. with RoPE at the induction offsets: E W_qᵀ R(δ) W_k W_OV⁽¹⁾ Eᵀ, mean over δ = j − i = −15..−31",
                   kt.rope);
  print_pair_table("3. query read through block 1: Q = E (I + Σ_h s_h W_OV⁽¹ʰ⁾)ᵀ, s_h = the own-position weights above, "
                   "offset 0", kt.block1_text);
  print_pair_table("4. query read through block 1 and RoPE at the induction offsets", kt.block1_rope);
  kj["offsets"] = offsets;
  kj["1_exercise"] = pair_json(kt.text);
  kj["2_rope"] = pair_json(kt.rope);
  kj["3_block1_query"] = pair_json(kt.block1_text);
  kj["4_block1_query_rope"] = pair_json(kt.block1_rope);
  const std::vector<double> qmatch = query_head_match(c, prev_head, offsets);
  rep.text(fmt::format("  which block-1 head the query reads (the query through head hq alone, the key through block-1 "
                       "head {}, RoPE offsets; mean over block-2 heads): {}", prev_head, row_str(qmatch)));
  kj["query_head_match"] = qmatch;

  auto best_of = [](const std::vector<std::vector<DiagonalConcentration>>& t) {
    return best_pair(t, [](const DiagonalConcentration& d) { return d.argmax_fraction; });
  };
  auto at = [](const std::vector<std::vector<DiagonalConcentration>>& t, std::pair<int64_t, int64_t> p) {
    return t[static_cast<size_t>(p.first)][static_cast<size_t>(p.second)].argmax_fraction;
  };
  const auto b_text = best_of(kt.text), b_rope = best_of(kt.rope), b_q = best_of(kt.block1_text), b_qr = best_of(kt.block1_rope);
  rep.value("1. exercise's matrix, best pair", at(kt.text, b_text), std::nullopt, 2);
  rep.value("2. RoPE offsets, best pair", at(kt.rope, b_rope), std::nullopt, 2);
  rep.value("3. query through block 1, best pair", at(kt.block1_text, b_q), std::nullopt, 2);
  rep.value("4. query through block 1 + RoPE, best", at(kt.block1_rope, b_qr), std::nullopt, 2);
  rep.text(fmt::format("  (pairs as (block-2 head, block-1 head): 1. ({}, {}), 2. ({}, {}), 3. ({}, {}), 4. ({}, {}))",
                       b_text.first, b_text.second, b_rope.first, b_rope.second, b_q.first, b_q.second, b_qr.first,
                       b_qr.second));
  std::vector<double> with_prev;
  double lowest_inductive = HUGE_VAL;  // over the block-2 heads whose induction score is at least 0.25
  for (size_t h2 = 0; h2 < kt.block1_rope.size(); ++h2) {
    with_prev.push_back(kt.block1_rope[h2][static_cast<size_t>(prev_head)].argmax_fraction);
    if (hs.induction[1][h2] >= 0.25) lowest_inductive = std::min(lowest_inductive, with_prev.back());
  }
  rep.text(fmt::format("  block-2 heads reading block-1 head {} (table 4), diagonal rows: {}", prev_head, row_str(with_prev)));
  rep.text(fmt::format("  block-2 heads' induction scores (attention):           {}", row_str(hs.induction[1])));
  const bool revealed = at(kt.block1_rope, b_qr) >= 0.5;
  rep.text(fmt::format(
      "The exercise's matrix {} the match (best {:.2f} of rows; chance 0.016), and RoPE's rotation at the induction "
      "offsets alone {} ({:.2f}). Reading the query through block 1 {} it ({:.2f} at offset 0, {:.2f} with the rotation):",
      at(kt.text, b_text) >= 0.5 ? "shows" : "does not show", at(kt.text, b_text),
      at(kt.rope, b_rope) >= 0.5 ? "shows it" : "does not either", at(kt.rope, b_rope),
      revealed ? "reveals" : "does not reveal", at(kt.block1_text, b_q), at(kt.block1_rope, b_qr)));
  rep.text(fmt::format("the key side is block-1 head {} (the previous-token head by attention, {:.2f}), the query side "
                       "block-1 head {} ({:.2f} of rows alone), a head that attends to its own position ({:.2f}).",
                       b_qr.second, hs.prev[0][static_cast<size_t>(b_qr.second)], argmax(qmatch),
                       qmatch[static_cast<size_t>(argmax(qmatch))], self[static_cast<size_t>(argmax(qmatch))]));
  double direct_z = 0;
  for (const auto& row : kt.text) direct_z += row.back().z / static_cast<double>(kt.text.size());
  if (revealed && at(kt.text, b_text) < 0.5) {
    rep.text("So block 2's query does not read the raw embedding of A but what the own-position head wrote of it —");
    rep.text("Q-composition — while its key reads the previous-token head — K-composition.");
  }
  rep.text(fmt::format("The direct path's mean z is {:.1f}: {}. RoPE's rotation {} the match across the induction offsets",
                       direct_z,
                       direct_z < 0 ? "the head avoids the earlier occurrences of A themselves" : "no avoidance of A itself",
                       std::abs(at(kt.block1_rope, b_qr) - at(kt.block1_text, b_q)) < 0.15 ? "keeps" : "changes"));
  rep.text("(offset 0 vs the mean over δ = −15..−31): a content match that does not rely on the offset, as it must not, L varying.");
  const int64_t carriers = std::count_if(with_prev.begin(), with_prev.end(), [](double v) { return v >= 0.5; });
  rep.text(fmt::format("By the weights {} of the {} block-2 heads carry the match (diagonal rows ≥ 0.5 in table 4); by "
                       "attention the strongest induction head is block-2 head {} ({:.2f}) and the weakest scores {:.2f}.",
                       carriers, with_prev.size(), ind_head, hs.induction[1][static_cast<size_t>(ind_head)],
                       *std::min_element(hs.induction[1].begin(), hs.induction[1].end())));

  const CompositionScores cs = composition_scores(c);
  const CompositionBaseline cb = random_composition_baseline(128, 32, 5, o.seed + 20);
  rep.text("Composition scores (Elhage et al.), ‖X Y‖_F / (‖X‖_F ‖Y‖_F) with Y = W_OV⁽¹⁾ of block-1 head h1 (columns) and");
  rep.text("X = W_QK⁽²⁾ᵀ (Q), W_QK⁽²⁾ (K), W_OV⁽²⁾ (V) of block-2 head h2 (rows). Column convention: y = W x (Linear's");
  rep.text(fmt::format("y = x Wᵀ). Random: the mean over {} draws of the same shapes and ranks (iid normal factors).", cb.draws));
  print_scores("Q", cs.q, cb.q);
  print_scores("K", cs.k, cb.k);
  print_scores("V", cs.v, cb.v);
  kj["composition_scores"] = {{"q", cs.q}, {"k", cs.k}, {"v", cs.v},
                              {"random", {{"q", cb.q}, {"k", cb.k}, {"v", cb.v}, {"draws", cb.draws}}}};
  auto largest = [](const std::vector<std::vector<double>>& m) {
    std::pair<int64_t, int64_t> p{0, 0};
    for (size_t i = 0; i < m.size(); ++i)
      for (size_t j = 0; j < m[i].size(); ++j)
        if (m[i][j] > m[static_cast<size_t>(p.first)][static_cast<size_t>(p.second)])
          p = {static_cast<int64_t>(i), static_cast<int64_t>(j)};
    return p;
  };
  const auto kmax = largest(cs.k), qmax = largest(cs.q);
  const double kbest = cs.k[static_cast<size_t>(kmax.first)][static_cast<size_t>(kmax.second)];
  const double qbest = cs.q[static_cast<size_t>(qmax.first)][static_cast<size_t>(qmax.second)];
  rep.value("largest K-composition score", kbest, std::nullopt, 3);
  rep.value("largest Q-composition score", qbest, std::nullopt, 3);
  const bool same_heads = kmax.second == b_qr.second && qmax.second == argmax(qmatch);
  rep.text(fmt::format("  K: block-2 head {}, block-1 head {}; Q: block-2 head {}, block-1 head {} (random: {:.3f}, {:.3f}). "
                       "The scores point at {} block-1 heads as the matrices.",
                       kmax.first, kmax.second, qmax.first, qmax.second, cb.k, cb.q, same_heads ? "the same" : "other"));

  // ---------------------------------------------------------------- item 4: the copying head by hand
  rep.section("exercise 1: a copying head by hand");
  rep.text("TinyCharLM(64, 1 block, pos none), no training: head 0's W_q = W_k = c P (P a random 32 x 128 matrix, iid");
  rep.text("N(0, 1)), W_v another, head 0's output columns W_vᵀ, the other heads' output columns 0. Then");
  rep.text("e_aᵀ W_QK e_b = c² (P e_a)·(P e_b) ≈ 32 c² e_a·e_b and W_OV = W_vᵀ W_v ≈ 32 I on the embeddings: a random");
  rep.text("projection keeps inner products (near-orthogonal random vectors stay near-orthogonal), so the head matches");
  rep.text("equal tokens and boosts the token it attends to.");
  rep.text(fmt::format("On {} random sequences of 64 uniform tokens (positions 1..63), the top-1 token of head 0's "
                       "contribution to the logits:", kEvalBatch));
  fmt::print("    {:>4}  {:>10} {:>7}  {:>10}  {:>12} {:>7}  {:>10} {:>10}\n", "c", "in context", "chance", "= current",
             "w/o current", "chance", "later acc", "later loss");
  Generator gt(o.seed + 30);
  const Tensor seqs = randint({kEvalBatch, 64}, gt, 0, 64).to(o.device);
  double worst_acc = 0, rate16 = 0, without16 = 0, chance_without16 = 0;
  nlohmann::json cj = nlohmann::json::array();
  for (double scale : kScales) {
    std::unique_ptr<TinyCharLM> m = copying_head_model(scale, o.seed);
    m->to(o.device);
    const ContextRates r = context_rates(*m, seqs);
    Generator ge(o.seed + 5);  // the induction lab's evaluation batch
    const induction::CopyEval e = induction::eval_copy(*m, 16, 32, ge, kEvalBatch);
    fmt::print("    {:>4}  {:>10.3f} {:>7.3f}  {:>10.3f}  {:>12.3f} {:>7.3f}  {:>10.3f} {:>10.2f}\n", scale, r.with_self,
               r.chance_with_self, r.top1_current, r.without_self, r.chance_without_self, e.acc, e.later);
    cj.push_back({{"scale", scale}, {"with_self", r.with_self}, {"chance_with_self", r.chance_with_self},
                  {"top1_current", r.top1_current}, {"without_self", r.without_self},
                  {"chance_without_self", r.chance_without_self}, {"later_acc", e.acc}, {"later_loss", e.later},
                  {"first_loss", e.first}});
    worst_acc = std::max(worst_acc, e.acc);
    if (scale == 16) rate16 = r.with_self, without16 = r.without_self, chance_without16 = r.chance_without_self;
  }
  rep.json()["sections"]["exercise 1: a copying head by hand"]["rates"] = cj;
  rep.text("  (in context: the top-1 is one of x_0..x_i; = current: it is x_i itself; w/o current: the top-1 of the");
  rep.text("  other 63 tokens is one of x_0..x_{i-1}; later acc/loss: eval_copy on the variable-period task, L 16..32)");
  rep.text("  the 1-block plateau (text, 10.6.2.3; the induction lab measures it): later-copy accuracy 0.11, later copies "
           "3.65 nats");
  rep.text("The hand-built head boosts tokens in the context (mostly the current one, which it matches to itself), so it");
  rep.text("is a copying skip-trigram. It cannot beat the 1-block plateau whatever c: its score sees only the query's and");
  rep.text("the key's own tokens, so it can raise 'a token I have seen' but never 'the token that followed my previous");
  rep.text("occurrence' — that needs the key to know its predecessor, i.e. a second block.");

  // ---------------------------------------------------------------- files
  if (!o.out.empty()) {
    rep.section("files");
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) fail("circuits", "cannot create the output folder '{}': {}", o.out, ec.message());
    auto path = [&](const std::string& n) { return (fs::path(o.out) / n).string(); };
    auto grid = [](const std::vector<std::vector<double>>& v) {
      std::vector<double> flat;
      for (const auto& r : v) flat.insert(flat.end(), r.begin(), r.end());
      return tensor(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(v[0].size())}, DType::f64);
    };
    write_matrix_csv(path("q_composition.csv"), grid(cs.q));
    write_matrix_csv(path("k_composition.csv"), grid(cs.k));
    write_matrix_csv(path("v_composition.csv"), grid(cs.v));
    const Tensor Mtext = k_composition(c, b_qr.first, b_qr.second, 0);  // the exercise's matrix, table 4's best pair
    Tensor Mq = zeros({64, 64}, DType::f64);
    for (int64_t d : offsets)
      Mq = add(Mq, mul(k_composition(c, b_qr.first, b_qr.second, d, Qb), 1.0 / static_cast<double>(offsets.size())));
    write_matrix_csv(path("k_matrix_exercise.csv"), Mtext);
    write_matrix_csv(path("k_matrix_block1_query_rope.csv"), Mq);
    write_matrix_csv(path("zero_block_partner_gram.csv"), pt.A);
    rep.text(fmt::format("  CSV in {}/: q/k/v_composition.csv (rows: block-2 head, columns: block-1 head), "
                         "k_matrix_exercise.csv, k_matrix_block1_query_rope.csv (table 4's best pair), "
                         "zero_block_partner_gram.csv", o.out));
    if (o.pictures) {
      if (!induction::gnuplot_available()) {
        rep.text("  gnuplot is not installed (Debian: apt-get install gnuplot-nox): no pictures drawn");
      } else {
        std::string script = "set datafile separator ','\nset palette defined (0 'white', 1 '#08306b')\nset size ratio -1\n";
        script += "set terminal pngcairo size 1200,430 font ',10'\nset output 'composition_scores.png'\n";
        script += fmt::format("set multiplot layout 1,3 title 'composition scores, rows: block-2 head, columns: block-1 head "
                          "(random matrices: Q {:.2f}, K {:.2f}, V {:.2f})'\n", cb.q, cb.k, cb.v);
        script += "set xrange [-0.5:3.5]\nset yrange [3.5:-0.5]\nset xtics 1\nset ytics 1\nset cbrange [0:*]\n"
                  "set xlabel 'block-1 head'\nset ylabel 'block-2 head'\n";
        for (const char* n : {"q", "k", "v"})
          script += fmt::format("set title '{}-composition'\nplot '{}_composition.csv' matrix with image notitle, "
                            "'' matrix using 1:2:(sprintf('%.2f', $3)) with labels notitle\n", n, n);
        script += "unset multiplot\nset autoscale\nset cbrange [*:*]\nunset xtics\nunset ytics\nset xtics\nset ytics\n";
        script += "set terminal pngcairo size 1200,560 font ',10'\nset output 'k_composition_matrices.png'\n";
        script += "set multiplot layout 1,2 title 'K-composition E W_q^T R W_k W_{OV}^{(1)} E^T (rows: query token, "
              "columns: token the block-1 head copied)'\n";
        script += "set xrange [-0.5:63.5]\nset yrange [63.5:-0.5]\nset xtics 0,8,63\nset ytics 0,8,63\n"
                  "set xlabel 'token the block-1 head copied into the key'\nset ylabel 'query token'\n";
        script += fmt::format("set title 'the exercise: query E, offset 0 (block-2 head {}, block-1 head {})'\nplot "
                              "'k_matrix_exercise.csv' matrix with image notitle\n", b_qr.first, b_qr.second);
        script += fmt::format("set title 'query through block 1, RoPE at the induction offsets (mean)'\nplot "
                              "'k_matrix_block1_query_rope.csv' matrix with image notitle\n");
        script += "unset multiplot\n";
        script += "set terminal pngcairo size 640,600 font ',10'\nset output 'zero_block_partner_gram.png'\n"
                  "set xlabel 'logit of token b'\nset ylabel 'token a'\n";
        script += "set title 'zero blocks, partner task: A = E E^T after training (rows: token, columns: logit)'\nplot "
              "'zero_block_partner_gram.csv' matrix with image notitle\n";
        run_gnuplot(o.out, "plots.gp", script, "circuits");
        for (const char* n : {"composition_scores.png", "k_composition_matrices.png", "zero_block_partner_gram.png"})
          rep.text("  " + path(n));
      }
    }
  }

  // ---------------------------------------------------------------- acceptance
  const double total = std::chrono::duration<double>(Clock::now() - t_start).count();
  rep.section("timing");
  rep.text(fmt::format("  whole lab {:.0f} s", total));
  rep.json()["timing"]["total_seconds"] = total;

  rep.section("acceptance checks");
  rep.json()["criteria"] = nlohmann::json::object();
  rep.criterion("W_QK, W_OV rank at init, lowest of 16", static_cast<double>(s0.lowest), "==", 32);
  rep.criterion("W_QK, W_OV rank at init, highest of 16", static_cast<double>(s0.highest), "==", 32);
  rep.criterion("W_QK, W_OV rank after training, lowest of 16", static_cast<double>(s1.lowest), "==", 32);
  rep.criterion("W_QK, W_OV rank after training, highest of 16", static_cast<double>(s1.highest), "==", 32);
  rep.criterion("zero blocks: max |A - Aᵀ| / max |A|", z0.asymmetry / z0.max_abs, "<=", 1e-6);
  rep.criterion("zero blocks: smallest eigenvalue + tol (init)", z0.eigenvalues.front() + z0.eig_tol, ">=", 0);
  rep.criterion("zero blocks: smallest eigenvalue + tol (trained)", zt.eigenvalues.front() + zt.eig_tol, ">=", 0);
  rep.criterion("partner task: accuracy (PSD allows 1/2)", pt.accuracy, "<=", 0.5);
  rep.criterion("partner task: population loss (PSD: >= ln 2)", pt.population_loss, ">=", std::log(2.0));
  rep.criterion("copying head, c = 16: top-1 boosted token in context", rate16, ">=", 0.95);
  rep.criterion("copying head, c = 16: |w/o current - chance|", std::abs(without16 - chance_without16), "<=", 0.05);
  rep.criterion("copying head: later-copy accuracy, best c", worst_acc, "<=", 0.11);
  const std::vector<std::string> k_names = {"K-comp. via block-1 query + RoPE: best pair's rows",
                                            "K-comp. best pair's block-1 head = prev.-token head",
                                            "K-comp. with it, lowest over induction heads",
                                            "K-comp. score: top pair's block-1 head = prev. head"};
  if (trained) {
    rep.criterion(k_names[0], at(kt.block1_rope, b_qr), ">=", 0.5);
    rep.criterion(k_names[1], b_qr.second == prev_head ? 1 : 0, "==", 1);
    rep.criterion(k_names[2], lowest_inductive, ">=", 0.5);
    rep.criterion(k_names[3], kmax.second == prev_head ? 1 : 0, "==", 1);
  } else {
    for (const std::string& n : k_names) rep.criterion_not_applicable(n, untrained_why);
  }
  failures = rep.criteria_unmet();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Section 10.6.1 of 'What Attention Computes' read from the weights, with exercises 1 and 4: QK/OV "
               "circuits and their ranks, the zero-block Gram matrix, K-composition and composition scores, and a "
               "copying head built by hand. Exit status 1 when an acceptance check is not met."};
  Options o;
  std::string json;
  bool no_pictures = false, quiet = false;
  app.add_option("--steps", o.steps, "training steps of the 2-block model when no --load is given (0: analyse it untrained)")
      ->capture_default_str()->check(whole_number_in(0, kMaxSteps));
  app.add_option("--load", o.load, "read the 2-block model from this safetensors file (induction --save writes one) "
                                   "instead of training it")->check(CLI::ExistingFile);
  app.add_option("--save", o.save, "write the 2-block model to this safetensors file")->check(writable_file());
  app.add_option("--seed", o.seed, "seed of the generator (initialisation, training batches, probes)")
      ->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  app.add_option("--out", o.out, "folder for the CSV matrices and PNG pictures")->capture_default_str()->check(writable_folder());
  add_json_option(app, json);
  app.add_flag("--no-pictures", no_pictures, "write the CSV files but do not run gnuplot");
  app.add_flag("--quiet", quiet, "no progress lines on stderr");
  add_device_option(app, o.device);
  CLI11_PARSE(app, argc, argv);
  o.pictures = !no_pictures;
  o.progress = !quiet;
  // Under mpirun (nn/comm.h): the 2-block model trains on each rank's share of the induction lab's
  // batch of 128; only rank 0 writes files.
  if (const int rc = split_across_ranks(induction::TrainSetup{}.batch, {&o.out, &o.save}, o.progress); rc != 0)
    return rc;
  int failures = 0;
  const int rc = run_lab("circuits", json, o.device, [&](Report& rep) { run(rep, o, failures); });
  return rc != 0 ? rc : failures > 0 ? 1 : 0;
}
