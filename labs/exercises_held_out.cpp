// labs/exercises_held_out.cpp — exercise 6 of "What Attention Computes": a model trained on tokens
// 0-47 and tested on 48-63, the gradient each embedding row received by path, a sentence said from
// the numbers, and its acceptance checks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <numeric>

#include "exercises_case.h"
#include "exercises_run.h"
#include "kit.h"

namespace hg::lab::exercises {

namespace {

double sum_of(const std::vector<double>& v, size_t lo, size_t hi) {
  double s = 0;
  for (size_t i = lo; i < hi && i < v.size(); ++i) s += v[i];
  return s;
}
double max_of(const std::vector<double>& v, size_t lo, size_t hi) {
  double m = 0;
  for (size_t i = lo; i < hi && i < v.size(); ++i) m = std::max(m, v[i]);
  return m;
}
double mean_of(const std::vector<double>& v, size_t lo, size_t hi) { return sum_of(v, lo, hi) / static_cast<double>(hi - lo); }

// The gradient each group of embedding rows received, by path, and how the rows moved.
void print_embedding_rows(Report& rep, const HeldOut& r) {
  const size_t k = static_cast<size_t>(kHeldOutTokens), V = r.lookup_squared.size();
  rep.text("  gradient of E summed over training, Σ_steps ‖dE[v, :]‖², added over the rows of each group:");
  rep.text(fmt::format("  {:<18} {:>14} {:>14} {:>16}", "rows", "lookup path", "head path", "largest lookup row"));
  rep.text(fmt::format("  {:<18} {:>14.4e} {:>14.4e} {:>16.4e}", "0-47 (trained)", sum_of(r.lookup_squared, 0, k),
                       sum_of(r.head_squared, 0, k), max_of(r.lookup_squared, 0, k)));
  rep.text(fmt::format("  {:<18} {:>14.4e} {:>14.4e} {:>16.4e}", "48-63 (held out)", sum_of(r.lookup_squared, k, V),
                       sum_of(r.head_squared, k, V), max_of(r.lookup_squared, k, V)));
  rep.text(fmt::format("  (the lookup path's gradient is the embedding op's own backward, the head path's the "
                       "transpose view's, both caught as the backward computed them; on the last step their sum "
                       "differs from E.grad by {:.1e})", r.split_sum_diff));
  rep.text(fmt::format("  embedding rows, mean norm: 0-47 {:.3f} -> {:.3f} (moved {:.3f}); 48-63 {:.3f} -> {:.3f} (moved "
                       "{:.3f})", mean_of(r.norm_start, 0, k), mean_of(r.norm_end, 0, k), mean_of(r.moved, 0, k),
                       mean_of(r.norm_start, k, V), mean_of(r.norm_end, k, V), mean_of(r.moved, k, V)));
  rep.text(fmt::format("  mean cosine between distinct rows: 0-47 {:.3f} -> {:.3f}; 48-63 {:.3f} -> {:.3f}", r.cos_seen_start,
                       r.cos_seen_end, r.cos_held_start, r.cos_held_end));
  rep.value("OV copying check, rows 0-47", r.ov_diag_seen);
  rep.value("OV copying check, rows 48-63", r.ov_diag_held);
  rep.text("  (the fraction of rows a of C = E W_OVᵀ Eᵀ, block 2's heads summed, whose largest entry is C[a, a])");
}

void held_out_json(Report& rep, const HeldOut& r) {
  const size_t k = static_cast<size_t>(kHeldOutTokens), V = r.lookup_squared.size();
  nlohmann::json& js = rep.json()["sections"]["exercise 6"];
  js["lookup_squared_per_row"] = r.lookup_squared;
  js["head_squared_per_row"] = r.head_squared;
  js["moved_per_row"] = r.moved;
  js["norm_start_per_row"] = r.norm_start;
  js["norm_end_per_row"] = r.norm_end;
  js["split_sum_diff"] = r.split_sum_diff;
  js["rows 0-47"] = {{"lookup_squared", sum_of(r.lookup_squared, 0, k)}, {"head_squared", sum_of(r.head_squared, 0, k)},
                     {"mean_norm_start", mean_of(r.norm_start, 0, k)}, {"mean_norm_end", mean_of(r.norm_end, 0, k)},
                     {"mean_moved", mean_of(r.moved, 0, k)}, {"mean_cosine_start", r.cos_seen_start},
                     {"mean_cosine_end", r.cos_seen_end}, {"ov_diagonal_fraction", r.ov_diag_seen}};
  js["rows 48-63"] = {{"lookup_squared", sum_of(r.lookup_squared, k, V)}, {"head_squared", sum_of(r.head_squared, k, V)},
                      {"mean_norm_start", mean_of(r.norm_start, k, V)}, {"mean_norm_end", mean_of(r.norm_end, k, V)},
                      {"mean_moved", mean_of(r.moved, k, V)}, {"mean_cosine_start", r.cos_held_start},
                      {"mean_cosine_end", r.cos_held_end}, {"ov_diagonal_fraction", r.ov_diag_held}};
  for (const auto& [name, e] : {std::pair{"tokens 0-47", r.seen}, std::pair{"tokens 32-47", r.seen16},
                                std::pair{"tokens 48-63", r.held_out}})
    js[name] = {{"first_copy_loss", e.first}, {"later_copy_loss", e.later}, {"later_copy_accuracy", e.acc}};
  js["later_curve"] = r.history.later;
}

// The gradient per embedding row: a CSV file in --out and its picture.
void draw_held_out(Report& rep, const ExerciseOptions& o, const HeldOut& r) {
  const int64_t K = kHeldOutTokens;
  const size_t V = r.lookup_squared.size();
  if (!o.out.empty()) {
    std::ostringstream f;
    f << "row,lookup_squared,head_squared,moved\n";
    for (size_t v = 0; v < V; ++v) f << v << "," << r.lookup_squared[v] << "," << r.head_squared[v] << "," << r.moved[v] << "\n";
    write_csv_and_draw(rep, o, "exercise6_embedding_gradients.csv", f.str(),
                       ": per row, both paths' Σ‖g‖² and how far it moved", "exercise6.gp", "exercise6_embedding_gradients.png",
         fmt::format("set output 'exercise6_embedding_gradients.png'\nset title \"gradient each embedding row received "
                     "over training\\nrows {0}-63 are never looked up: their lookup path is exactly 0 (not drawn on "
                     "the log scale)\"\nset xrange [-1:{2}]\nset xlabel 'embedding row (token)'\nset ylabel 'sum over steps of |dE[v]|^2'\nset logscale "
                     "y\nset grid\nset key top right\nset arrow from {1},graph 0 to {1},graph 1 nohead dt 2\n"
                     "plot 'exercise6_embedding_gradients.csv' every ::1 using 1:($2 > 0 ? $2 : 1/0) with points pt 7 "
                     "title 'lookup path (E[x])', '' every ::1 using 1:3 with points pt 5 title 'head path (h E^T)'\n",
                     K, K - 0.5, V));
  }
}

// The sentence about the held-out tokens and what the numbers show, said from the numbers.
void say_held_out(Report& rep, const ExerciseOptions& o, const HeldOut& r) {
  const size_t k = static_cast<size_t>(kHeldOutTokens), V = r.lookup_squared.size();
  const double ln16 = std::log(16.0);
  const bool fails = r.held_out.acc <= 0.2, at_ln16 = std::abs(r.held_out.later - ln16) < 0.15;
  const bool collapsed = r.cos_held_end >= 0.9;
  const std::string held_out_sentence =
      !fails ? fmt::format("Completion does not fail here, against the text's prediction (later copies {:.2f} nats).",
                           r.held_out.later)
      : at_ln16 ? fmt::format("Completion fails, as the text says: chance among 16 tokens is 1/16 = 0.06, and the loss "
                              "there ({:.2f} nats on the first copy, {:.2f} on the later ones) is about ln 16 = 2.77 "
                              "on both — the model knows the next token is one of the sixteen, not which.",
                              r.held_out.first, r.held_out.later)
                : fmt::format("Completion fails, as the text says (chance among 16 tokens is 1/16 = 0.06; the loss "
                              "there is {:.2f} nats on the first copy, {:.2f} on the later ones).",
                              r.held_out.first, r.held_out.later);
  if (o.short_mode)
    rep.text("\nWhat the numbers show: --short trains too little for completion; what it shows already is the exact "
             "split: rows 48-63 got no gradient through the lookup, and the tied head moved them anyway.");
  else rep.text(fmt::format(
      "\nWhat the numbers show: on patterns of the tokens it trained on the model completes {:.2f} of the later-copy "
      "targets ({:.2f} with only tokens 32-47, as many repeats as the held-out test has); on tokens 48-63 {:.2f}. "
      "{} Rows 48-63 of E received exactly zero gradient through the lookup (they were "
      "never the input x); only the tied head's softmax moved them (Σ‖g‖² {:.2e}, against {:.2e} for rows 0-47 "
      "through both paths), always as wrong answers pushed down, all sixteen in nearly the same direction (against "
      "the hidden states), so they ended {}: mean cosine {:.2f} between them (rows 0-47: {:.2f}; "
      "{:.2f} and {:.2f} before training). Every matrix that reads a token as input was fitted on rows 0-47 only: "
      "block 1's W_OV, which writes the previous token's identity into the stream; block 2's W_QK = W_qᵀ W_k, which "
      "matches the current token's e_a against it (Equation 10.6.2); block 2's W_OV, whose copying boost "
      "C_ab = e_bᵀ W_OV e_a (Equation 10.6.4) needs the attended token's e_a — its diagonal is largest in {:.2f} of "
      "the rows 0-47 and {:.2f} of the rows 48-63.{} In large models every token's embedding is trained, and the heads read "
      "features built by normalisation and feed-forward layers (and earlier blocks) that this attention-only model "
      "lacks.",
      r.seen.acc, r.seen16.acc, r.held_out.acc, held_out_sentence, sum_of(r.head_squared, k, V),
      sum_of(r.lookup_squared, 0, k) + sum_of(r.head_squared, 0, k), collapsed ? "almost one vector" : "more alike",
      r.cos_held_end, r.cos_seen_end, r.cos_held_start, r.cos_seen_start, r.ov_diag_seen, r.ov_diag_held,
      collapsed ? " Even perfect circuits could not tell the held-out tokens apart through embeddings this alike." : ""));
}

void check_held_out(Report& rep, const ExerciseOptions& o, const HeldOut& r) {
  const size_t k = static_cast<size_t>(kHeldOutTokens), V = r.lookup_squared.size();
  rep.section("exercise 6: acceptance checks");
  rep.criterion("exercise 6: rows 48-63, lookup-path Σ‖g‖²", sum_of(r.lookup_squared, k, V), "<=", 0.0);
  rep.criterion("exercise 6: rows 48-63, head-path Σ‖g‖²", sum_of(r.head_squared, k, V), ">=", 1e-12);
  rep.criterion("exercise 6: |lookup + head - E.grad|, last step", r.split_sum_diff, "<=", 0.0);
  const bool trained = o.trained_criteria();
  const std::string why = o.untrained_why(induction::kSteps);
  rep.criterion_when(trained, why, "exercise 6: accuracy on tokens 0-47", r.seen.acc, ">=", 0.8);
  rep.criterion_when(trained, why, "exercise 6: accuracy on tokens 48-63", r.held_out.acc, "<=", 0.2);
  if (trained)
    rep.text("  Bounds: 0-47 >= 0.8 as the induction lab's model; 48-63 <= 0.2: the text says completion fails badly "
             "(chance among the 16 tokens is 0.06; tokens 32-47, with the same repeats, give about 0.8).");
}

}  // namespace

void run_held_out(Report& rep, const ExerciseOptions& o) {
  const int64_t steps = o.steps_for(induction::kSteps), K = kHeldOutTokens;
  rep.section("exercise 6: trained on tokens 0-47, tested on 48-63");
  rep.text(fmt::format("The 2-block rope model of the induction lab (L in 16..32, {} steps, seed {}), its training "
                       "patterns drawn from tokens 0-47 only; it still scores all 64 tokens.", steps, o.seed));
  ProgressLine line("2 blocks, tokens 0-47", o.progress);
  const HeldOut r = held_out_tokens({.steps = steps, .Lmin = 16, .Lmax = 32, .batch = o.batch()}, o.seed, K, o.eval_batch, o.device,
                                    line.callback());
  rep.text("  later-copy accuracy and losses (nats) on fresh patterns, L in 16..32:");
  auto eval_line = [&](const std::string& what, const induction::CopyEval& e) {
    rep.value(what + ": accuracy", e.acc);
    rep.text(fmt::format("    (first copy {:.2f}, later copies {:.2f})", e.first, e.later));
  };
  eval_line("tokens 0-47 (as trained)", r.seen);
  eval_line("tokens 32-47 (16 seen tokens)", r.seen16);
  eval_line("tokens 48-63 (never trained on)", r.held_out);
  rep.text("  (patterns of 16 tokens, L >= 16, hold every token once or more, so a single-token match is often "
           "ambiguous there whatever the tokens: 32-47 is the control with the same repeats as 48-63. Chance: ln 48 = "
           "3.87 nats over the training tokens, ln 16 = 2.77 over 16 of them; the first copy sits a little above "
           "chance because repeating a token is penalised when the pattern does not repeat it)");
  print_embedding_rows(rep, r);
  draw_held_out(rep, o, r);
  held_out_json(rep, r);
  say_held_out(rep, o, r);
  check_held_out(rep, o, r);
}

}  // namespace hg::lab::exercises
