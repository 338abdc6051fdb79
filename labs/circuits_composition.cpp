// labs/circuits_composition.cpp — exercise 4 of the circuits lab: K-composition tables, the
// composition scores, and the lab's files and pictures.
#include "circuits_composition.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "induction_lab.h"
#include "kit.h"

namespace hg::lab::circuits {

namespace {

int64_t argmax(const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.detach().to(DType::f64).to(Device::cpu).contiguous().to_vector()) m = std::max(m, std::abs(v));
  return m;
}

void print_pair_table(const std::string& title, const std::vector<std::vector<DiagonalConcentration>>& t) {
  const size_t H = t.size();
  print_wrapped(fmt::format("  {}\n", title));
  std::string head = fmt::format("    {:<14}", "block-2 head");
  for (size_t h1 = 0; h1 < H; ++h1) head += fmt::format(" {:>13}", fmt::format("b1 head {}", h1));
  head += fmt::format(" {:>13}", "direct path");
  print_wrapped(fmt::format("{}\n", head));
  for (size_t h2 = 0; h2 < H; ++h2) {
    std::string line = fmt::format("    {:<14}", h2);
    for (const DiagonalConcentration& d : t[h2])
      line += fmt::format(" {:>13}", fmt::format("{:.2f} ({:.1f})", d.argmax_fraction, d.z));
    print_wrapped(fmt::format("{}\n", line));
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
  print_wrapped(fmt::format("    {}-composition (random: {:.3f})\n", name, baseline));
  for (size_t h2 = 0; h2 < s.size(); ++h2) print_wrapped(fmt::format("      block-2 head {}:  {}\n", h2, row_str(s[h2], 3)));
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

// The four tables of the K-composition section, printed and kept in the JSON.
void print_k_tables(nlohmann::json& kj, const KCompositionTable& kt, const std::vector<int64_t>& offsets) {
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
}

}  // namespace

CompositionFindings report_k_composition(Report& rep, const nn::TinyCharLM& two, const CompositionInputs& in) {
  CompositionFindings f;
  rep.section(kCompositionSection);
  f.c = read_circuits(two);
  const Circuits& c = f.c;
  rep.text("The exercise's matrix E W_qᵀ W_k W_OV⁽¹⁾ Eᵀ (64 x 64; W_q, W_k of a block-2 head, W_OV⁽¹⁾ of a block-1 head):");
  rep.text("row a = the query's token, column b = the token a block-1 head copied into the key's stream. TinyCharLM has");
  rep.text("no layer norm to fold in and ties its head, so E stands at both ends; 1/√d_h is one constant, left out.");
  rep.text("The induction match needs the diagonal: the query holds A, the key after the earlier A holds W_OV e_A.");
  rep.text("Concentration: rows whose argmax is the diagonal (chance 1/64 = 0.016), and in brackets");
  rep.text("z = (mean diagonal − mean off-diagonal) / std off-diagonal. 'direct path': E W_qᵀ W_k Eᵀ, no block-1 head.");
  Generator p3(in.seed + 3);  // the induction lab's head-score batch
  const nn::RepeatedBatch probe = nn::repeated_batch(kEvalBatch, 64, 64, 16, 32, p3, in.device);
  const induction::HeadScores hs = induction::head_scores(two, probe);
  const Tensor maps1 = two.attention_weights(probe.tokens.slice(1, 0, 63))[0];  // block 1, (B, H, T, T)
  std::vector<double> self;
  for (int64_t h = 0; h < maps1.size(1); ++h) self.push_back(induction::offset_mass(maps1.slice(1, h, h + 1), 0));
  const int64_t prev_head = argmax(hs.prev[0]);
  f.ind_head = argmax(hs.induction[1]);
  f.qmatch_head = -1;
  rep.text(fmt::format("  attention on {} sequences, L in 16..32 (the induction lab's head_scores):", kEvalBatch));
  rep.text(fmt::format("    block 1: previous token {} | own position {}", row_str(hs.prev[0]), row_str(self)));
  rep.text(fmt::format("    block 2: induction target {}", row_str(hs.induction[1])));
  auto& kj = rep.json()["sections"][kCompositionSection];
  kj["attention"] = {{"block1_previous_token", hs.prev[0]}, {"block1_own_position", self},
                     {"block2_induction_target", hs.induction[1]}};

  f.offsets = induction_offsets(16, 32);
  f.Qb = query_through_block1(c, self);
  const std::vector<int64_t>& offsets = f.offsets;
  const Tensor& Qb = f.Qb;
  const KCompositionTable kt = k_composition_table(c, offsets, Qb);
  print_k_tables(kj, kt, offsets);
  const std::vector<double> qmatch = query_head_match(c, prev_head, offsets);
  rep.text(fmt::format("  which block-1 head the query reads (the query through head hq alone, the key through block-1 "
                       "head {}, RoPE offsets; mean over block-2 heads): {}", prev_head, row_str(qmatch)));
  kj["query_head_match"] = qmatch;
  f.qmatch_head = argmax(qmatch);

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
  f.best = b_qr;
  f.best_rows = at(kt.block1_rope, b_qr);
  f.prev_head = prev_head;
  f.lowest_inductive = lowest_inductive;
  f.induction = hs.induction[1];
  if (!in.trained) {
    rep.text("What these tables say about the circuit: " + in.untrained_why);
    return f;
  }
  rep.text(fmt::format(
      "The exercise's matrix {} the match (best {:.2f} of rows; chance 0.016), and RoPE's rotation at the induction "
      "offsets alone {} ({:.2f}). Reading the query through block 1 {} it ({:.2f} at offset 0, {:.2f} with the rotation):",
      at(kt.text, b_text) >= 0.5 ? "shows" : "does not show", at(kt.text, b_text),
      at(kt.rope, b_rope) >= 0.5 ? "shows it" : "does not either", at(kt.rope, b_rope),
      at(kt.block1_rope, b_qr) >= 0.5 ? "reveals" : "does not reveal", at(kt.block1_text, b_q), at(kt.block1_rope, b_qr)));
  rep.text(fmt::format("the key side is block-1 head {} (the previous-token head by attention, {:.2f}), the query side "
                       "block-1 head {} ({:.2f} of rows alone), a head that attends to its own position ({:.2f}).",
                       b_qr.second, hs.prev[0][static_cast<size_t>(b_qr.second)], argmax(qmatch),
                       qmatch[static_cast<size_t>(argmax(qmatch))], self[static_cast<size_t>(argmax(qmatch))]));
  double direct_z = 0;
  for (const auto& row : kt.text) direct_z += row.back().z / static_cast<double>(kt.text.size());
  if (at(kt.block1_rope, b_qr) >= 0.5 && at(kt.text, b_text) < 0.5) {
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
                       carriers, with_prev.size(), f.ind_head, hs.induction[1][static_cast<size_t>(f.ind_head)],
                       *std::min_element(hs.induction[1].begin(), hs.induction[1].end())));

  return f;
}

void report_composition_scores(Report& rep, CompositionFindings& f, uint64_t seed, bool trained) {
  auto& kj = rep.json()["sections"][kCompositionSection];
  const Circuits& c = f.c;
  f.cs = composition_scores(c);
  const CompositionScores& cs = f.cs;
  f.cb = random_composition_baseline(128, 32, 5, seed + 20);
  const CompositionBaseline& cb = f.cb;
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
  f.kmax = kmax;
  const double kbest = cs.k[static_cast<size_t>(kmax.first)][static_cast<size_t>(kmax.second)];
  const double qbest = cs.q[static_cast<size_t>(qmax.first)][static_cast<size_t>(qmax.second)];
  rep.value("largest K-composition score", kbest, std::nullopt, 3);
  rep.value("largest Q-composition score", qbest, std::nullopt, 3);
  const bool same_heads = kmax.second == f.best.second && qmax.second == f.qmatch_head;
  rep.text(fmt::format("  K: block-2 head {}, block-1 head {}; Q: block-2 head {}, block-1 head {} (random: {:.3f}, {:.3f}).{}",
                       kmax.first, kmax.second, qmax.first, qmax.second, cb.k, cb.q,
                       !trained ? "" : same_heads ? " The scores point at the same block-1 heads as the matrices."
                                                  : " The scores point at other block-1 heads than the matrices."));

}

void write_circuit_files(Report& rep, const std::string& out, bool pictures, const CompositionFindings& f,
                         const Tensor& partner_gram) {
  namespace fs = std::filesystem;
  rep.section("files");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) fail("circuits", "cannot create the output folder '{}': {}", out, ec.message());
  auto path = [&](const std::string& n) { return (fs::path(out) / n).string(); };
  auto grid = [](const std::vector<std::vector<double>>& v) {
    std::vector<double> flat;
    for (const auto& r : v) flat.insert(flat.end(), r.begin(), r.end());
    return tensor(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(v[0].size())}, DType::f64);
  };
  write_matrix_csv(path("q_composition.csv"), grid(f.cs.q));
  write_matrix_csv(path("k_composition.csv"), grid(f.cs.k));
  write_matrix_csv(path("v_composition.csv"), grid(f.cs.v));
  const auto [h2, h1] = f.best;
  const Tensor Mtext = k_composition(f.c, h2, h1, 0);  // the exercise's matrix, table 4's best pair
  Tensor Mq = zeros({64, 64}, DType::f64);
  for (int64_t d : f.offsets)
    Mq = add(Mq, mul(k_composition(f.c, h2, h1, d, f.Qb), 1.0 / static_cast<double>(f.offsets.size())));
  write_matrix_csv(path("k_matrix_exercise.csv"), Mtext);
  write_matrix_csv(path("k_matrix_block1_query_rope.csv"), Mq);
  write_matrix_csv(path("zero_block_partner_gram.csv"), partner_gram);
  rep.text(fmt::format("  CSV in {}/: q/k/v_composition.csv (rows: block-2 head, columns: block-1 head), "
                       "k_matrix_exercise.csv, k_matrix_block1_query_rope.csv (table 4's best pair), "
                       "zero_block_partner_gram.csv", out));
  if (!pictures) return;
  if (!gnuplot_available()) {
    rep.text(gnuplot_missing_note());
    return;
  }
  // Scores are ≥ 0: a sequential map from white at 0. The matrices are signed: a diverging map,
  // white at 0, symmetric about it, each with its colour bar.
  std::string script = "set datafile separator ','\nset palette defined (0 'white', 1 '#08306b')\nset size ratio -1\n";
  script += "set terminal pngcairo size 1260,430 font ',10'\nset output 'composition_scores.png'\nset colorbox\n";
  script += fmt::format("set multiplot layout 1,3 title 'composition scores, rows: block-2 head, columns: block-1 head "
                        "(random matrices: Q {:.2f}, K {:.2f}, V {:.2f})'\n", f.cb.q, f.cb.k, f.cb.v);
  script += "set xrange [-0.5:3.5]\nset yrange [3.5:-0.5]\nset xtics 1\nset ytics 1\nset cbrange [0:*]\n"
            "set xlabel 'block-1 head'\nset ylabel 'block-2 head'\n";
  for (const char* n : {"q", "k", "v"})
    script += fmt::format("set title '{}-composition'\nplot '{}_composition.csv' matrix with image notitle, "
                          "'' matrix using 1:2:(sprintf('%.2f', $3)) with labels notitle\n", n, n);
  script += "unset multiplot\nset autoscale\nset cbrange [*:*]\nunset xtics\nunset ytics\nset xtics\nset ytics\n";
  script += "set terminal pngcairo size 1260,560 font ',10'\nset output 'k_composition_matrices.png'\n";
  script += "set multiplot layout 1,2 title 'K-composition E W_q^T R W_k W_{OV}^{(1)} E^T (rows: query token, "
            "columns: token the block-1 head copied; red > 0 > blue)'\n";
  script += "set xrange [-0.5:63.5]\nset yrange [63.5:-0.5]\nset xtics 0,8,63\nset ytics 0,8,63\n"
            "set xlabel 'token the block-1 head copied into the key'\nset ylabel 'query token'\n";
  script += diverging_palette(max_abs(Mtext));
  script += fmt::format("set title 'the exercise: query E, offset 0 (block-2 head {}, block-1 head {})'\nplot "
                        "'k_matrix_exercise.csv' matrix with image notitle\n", h2, h1);
  script += diverging_palette(max_abs(Mq));
  script += "set title 'query through block 1, RoPE at the induction offsets (mean)'\nplot "
            "'k_matrix_block1_query_rope.csv' matrix with image notitle\n";
  script += "unset multiplot\n";
  script += "set terminal pngcairo size 700,600 font ',10'\nset output 'zero_block_partner_gram.png'\n"
            "set xlabel 'logit of token b'\nset ylabel 'token a'\n" + diverging_palette(max_abs(partner_gram));
  script += "set title 'zero blocks, partner task: A = E E^T after training (rows: token, columns: logit)'\nplot "
            "'zero_block_partner_gram.csv' matrix with image notitle\n";
  run_gnuplot(out, "plots.gp", script, "circuits");
  for (const char* n : {"composition_scores.png", "k_composition_matrices.png", "zero_block_partner_gram.png"})
    rep.text("  wrote " + path(n));
}

}  // namespace hg::lab::circuits
