// labs/exercises_run.cpp — the reports of exercises 3, 5 and 6 of "What Attention Computes":
// each number beside the text's where it gives one, a sentence said from the numbers, the CSV
// files and gnuplot pictures, and the acceptance checks.
#include "exercises_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <numeric>

#include "exercises_case.h"
#include "kit.h"
#include "nn/checkpoint.h"

namespace hg::lab::exercises {

using induction::TrainSetup;
namespace fs = std::filesystem;

namespace {

// Exercise 3's bounds on later-copy accuracy (the reasons are printed with the checks).
constexpr double kCircuitAccuracy = 0.8, kNoCircuitAccuracy = 0.3, kAlibiAccuracy = 0.6;
// A scheme "grew the circuit" when its later-copy accuracy reaches this: far above any model without it.
constexpr double kGrewAccuracy = 0.6;

std::string acc_str(const Tally& t) { return t.n ? fmt::format("{:.3f} ({} of {})", t.acc(), t.hits, t.n) : "-"; }

// Draws `script` (gnuplot) into --out, or says why not; prints the PNG's path.
void draw(Report& rep, const ExerciseOptions& o, const std::string& name, const std::string& png, const std::string& script) {
  if (!o.pictures) return;
  if (!gnuplot_available()) {
    rep.text(gnuplot_missing_note());
    return;
  }
  run_gnuplot(o.out, name, "set datafile separator ','\nset terminal pngcairo size 900,560 font ',10'\n" + script,
              "exercises");
  rep.text("  wrote " + (fs::path(o.out) / png).string());
}

// Writes a CSV file into --out, says so, and draws its picture.
void write_csv_and_draw(Report& rep, const ExerciseOptions& o, const std::string& csv, const std::string& content,
                        const std::string& note, const std::string& script_name, const std::string& png,
                        const std::string& script) {
  write_file((fs::path(o.out) / csv).string(), content, "exercises");
  rep.text(fmt::format("  {}/{}{}", o.out, csv, note));
  draw(rep, o, script_name, png, script);
}

}  // namespace

// ---------------------------------------------------------------- exercise 3

void run_positions(Report& rep, const ExerciseOptions& o) {
  const Stopwatch t0;
  const int64_t steps = o.steps_for(kPositionsSteps);
  rep.section("exercise 3: positional schemes and the induction circuit");
  rep.text(fmt::format("The variable-period experiment (2 blocks, L uniform in 16..32, {} steps, seed {}, the induction "
                       "lab's setup) trained three times: pos = rope (the text's scheme, the control), none and alibi; "
                       "and once a 1-block rope model, whose final later-copy loss is the plateau the transition step "
                       "is measured from.", steps, o.seed));
  rep.text("The text asks to predict first. The circuit needs a previous-token head in block 1. RoPE rotates query "
           "and key by their positions, so their score can depend on the offset alone: a head can make offset -1 "
           "score highest whatever the tokens. ALiBi adds -m·(i - j) to the score: it favours recent keys, but never "
           "the previous one over the current one (offset 0 always gets the largest bias), so it offers 'the last few "
           "tokens' rather than 'exactly one back'. With no positions, attention sees only contents, and nothing "
           "marks which earlier key is the previous token (the causal mask alone says where the sequence starts). "
           "ALiBi's recency bias also works against block 2's match: the induction target lies L - 1 = 15..31 "
           "positions back, where its four heads (slopes 1/4, 1/16, 1/64, 1/256) lose 3.8-7.8, 0.9-1.9, 0.2-0.5 and "
           "0.06-0.12 of score.");
  const TrainSetup setup{.steps = steps, .Lmin = 16, .Lmax = 32, .batch = o.batch()};
  std::vector<SchemeRun> runs;
  for (const std::string& pos : kSchemes) {
    ProgressLine line("2 blocks, " + pos, o.progress);
    runs.push_back(train_scheme(pos, setup, o.seed, o.eval_batch, o.device, line.callback()));
  }
  induction::History control;
  {
    ProgressLine line("1 block, rope", o.progress);
    Generator g(o.seed);
    nn::TinyCharLM one(induction::model_config(1), g);
    one.to(o.device);
    control = induction::train_repeat(one, setup, g, line.callback());
  }
  for (SchemeRun& r : runs) r.transition = induction::transition_step(r.history.later, control.later);
  // The 1-block model's final level: the mean of its last 100 later-copy losses (transition_step's plateau),
  // or of all of them in a run shorter than that.
  const size_t tail = std::min<size_t>(100, control.later.size());
  const double plateau = tail ? std::accumulate(control.later.end() - static_cast<std::ptrdiff_t>(tail), control.later.end(), 0.0) /
                                    static_cast<double>(tail)
                              : 0.0;

  rep.text(fmt::format("  {:<6} {:>8} {:>8} {:>8} {:>11} {:>12} {:>16} {:>16}", "pos", "first", "later", "accuracy",
                       "transition", "steepest 200", "prev-token head", "induction head"));
  nlohmann::json& js = rep.json()["sections"]["exercise 3"];
  for (const SchemeRun& r : runs) {
    const auto& tr = r.transition;
    rep.text(fmt::format("  {:<6} {:>8.2f} {:>8.2f} {:>8.2f} {:>11} {:>5.2f} @{:>5} {:>9.2f} (h{}) {:>9.2f} (h{})", r.pos,
                         r.eval.first, r.eval.later, r.eval.acc, tr.midpoint, tr.steepest_fall, tr.steepest_from,
                         r.prev_score, r.prev_head, r.induction_score, r.induction_head));
    js[r.pos] = {{"first_copy_loss", r.eval.first}, {"later_copy_loss", r.eval.later}, {"later_copy_accuracy", r.eval.acc},
                 {"transition_midpoint", tr.midpoint}, {"transition_onset", tr.onset}, {"transition_end", tr.end},
                 {"final_level", tr.final_level}, {"steepest_fall", tr.steepest_fall}, {"steepest_from", tr.steepest_from},
                 {"previous_token", r.scores.prev}, {"induction_target", r.scores.induction},
                 {"strongest_previous_token_head", r.prev_head}, {"strongest_previous_token", r.prev_score},
                 {"strongest_induction_head", r.induction_head}, {"strongest_induction", r.induction_score},
                 {"later_curve", r.history.later}, {"first_curve", r.history.first}, {"seconds", r.history.seconds}};
  }
  js["plateau_1_block_rope"] = plateau;
  js["control_later_curve"] = control.later;
  rep.text(fmt::format("  (first / later: eval_copy's losses in nats; transition: the step where the 25-step mean of the "
                       "later-copy loss falls below the midpoint of the 1-block plateau {:.2f} and the model's final "
                       "level, -1 = never; steepest 200: the largest fall of that mean within 200 steps and its first "
                       "step; heads: the largest block-1 previous-token and block-2 induction scores of head_scores, "
                       "with the head's index)", plateau));
  for (const SchemeRun& r : runs) {
    rep.text(fmt::format("  {:<6} block 1: previous token {} | induction target {}", r.pos, row_str(r.scores.prev[0]),
                         row_str(r.scores.induction[0])));
    rep.text(fmt::format("  {:<6} block 2: previous token {} | induction target {}", "", row_str(r.scores.prev[1]),
                         row_str(r.scores.induction[1])));
  }
  const SchemeRun& rope = runs[0];
  rep.text("  rope beside the text's 2-block run (the text's own seed; ours is the induction lab's):");
  rep.value("rope: later copies (nats)", rope.eval.later, 0.45, 2);
  rep.value("rope: accuracy", rope.eval.acc, 0.87, 2);
  rep.value("rope: best previous-token head", rope.prev_score, 0.95, 2);
  rep.value("rope: best induction head", rope.induction_score, 0.71, 2);
  rep.value("1 block rope: final later-copy loss", plateau, 3.65, 2);

  if (!o.out.empty()) {
    // Means of 25-step chunks, as the text plots them; a run too short for two of them: every step.
    const bool smoothed = rope.history.later.size() >= 50;
    std::ostringstream f;
    f << "step,later_rope,later_none,later_alibi,later_one_block_rope\n";
    std::vector<std::vector<double>> c;
    for (const SchemeRun& r : runs) c.push_back(smoothed ? induction::chunk_means(r.history.later) : r.history.later);
    c.push_back(smoothed ? induction::chunk_means(control.later) : control.later);
    for (size_t i = 0; i < c[0].size(); ++i)
      f << (smoothed ? i * 25 : i + 1) << "," << c[0][i] << "," << c[1][i] << "," << c[2][i] << ","
        << (i < c[3].size() ? c[3][i] : 0.0) << "\n";
    const std::string what = smoothed ? "means of 25-step chunks" : "every step (too few for 25-step means)";
    write_csv_and_draw(rep, o, "exercise3_curves.csv", f.str(), ": later-copy loss, " + what, "exercise3.gp", "exercise3_loss_curves.png",
         fmt::format("set output 'exercise3_loss_curves.png'\nset title 'later-copy loss, 2 blocks, L in 16..32 ({})'\n"
                     "set xlabel 'step'\nset ylabel 'later-copy loss (nats)'\nset key top right\nset grid\n"
                     "plot 'exercise3_curves.csv' every ::1 using 1:2 with linespoints lw 2 pt 7 ps 0.4 title 'rope', '' "
                     "every ::1 using 1:3 with linespoints lw 2 pt 7 ps 0.4 title 'none', '' every ::1 using 1:4 with "
                     "linespoints lw 2 pt 7 ps 0.4 title 'alibi'\n", what));
  }

  // What the numbers show, said from the numbers.
  auto learned = [](const SchemeRun& r) { return r.eval.acc >= kGrewAccuracy; };
  auto tail_drop = [](const std::vector<double>& v) {  // how much the mean of 100 steps fell over the last 500
    if (v.size() < 600) return 0.0;
    auto mean = [&](size_t a) { return std::accumulate(v.begin() + a, v.begin() + a + 100, 0.0) / 100.0; };
    return mean(v.size() - 600) - mean(v.size() - 100);
  };
  std::string verdict;
  for (const SchemeRun& r : runs) {
    verdict += learned(r)
        ? fmt::format("{} grew the circuit: later-copy accuracy {:.2f}, the transition at step {}, block 1's best "
                      "previous-token score {:.2f}, block 2's best induction score {:.2f}. ", r.pos, r.eval.acc,
                      r.transition.midpoint, r.prev_score, r.induction_score)
        : fmt::format("{} did not within {} steps: accuracy {:.2f}, no block-1 head with more than {:.2f} on the "
                      "previous token, no block-2 head with more than {:.2f} on the induction target, later-copy loss "
                      "{:.2f} against the 1-block plateau {:.2f} (still falling by {:.2f} nats over the last 500 "
                      "steps: a statement about this budget, not about any length of training). ", r.pos, steps,
                      r.eval.acc, r.prev_score, r.induction_score, r.eval.later, plateau, tail_drop(r.history.later));
  }
  const SchemeRun &none = runs[1], &alibi = runs[2];
  if (!learned(none) && learned(rope))
    verdict += "As predicted, without positions no head singles out the previous token, and without that half the "
               "match has nothing to read. ";
  if (learned(alibi) && learned(rope) && alibi.transition.midpoint > 0 && rope.transition.midpoint > 0)
    verdict += fmt::format(
        "ALiBi's transition came {} ({} against rope's {}) and {} (steepest 200-step fall {:.2f} nats against {:.2f}), "
        "and ended {} (later-copy loss {:.2f} against {:.2f}, accuracy {:.2f} against {:.2f}): its bias hands block 1 "
        "the last few tokens without learning (its best exact previous-token score is only {:.2f}, a blurred "
        "previous-token head), while the same bias taxes block 2's long-range match (best induction score {:.2f} "
        "against {:.2f}).",
        alibi.transition.midpoint < rope.transition.midpoint ? "earlier" : "later", alibi.transition.midpoint,
        rope.transition.midpoint, alibi.transition.steepest_fall < rope.transition.steepest_fall ? "more gradually" : "as abruptly",
        alibi.transition.steepest_fall, rope.transition.steepest_fall, alibi.eval.later > rope.eval.later ? "higher" : "lower",
        alibi.eval.later, rope.eval.later, alibi.eval.acc, rope.eval.acc, alibi.prev_score, alibi.induction_score,
        rope.induction_score);
  if (o.short_mode)
    verdict = "nothing yet — --short trains too little for any scheme to learn; the full run answers the text's question.";
  rep.text("\nWhat the numbers show: " + verdict);
  const double seconds = t0.seconds();
  rep.text(fmt::format("exercise 3 took {} ({} steps per model)", duration_str(seconds), steps));
  rep.json()["timing"]["exercise 3 seconds"] = seconds;

  rep.section("exercise 3: acceptance checks");
  for (const SchemeRun& r : runs)  // nothing about the first copy is predictable, whatever the scheme
    rep.criterion(fmt::format("exercise 3, {}: first-copy loss stays at chance", r.pos), r.eval.first, ">=", 4.0);
  if (o.trained_criteria()) {
    rep.criterion("exercise 3, rope: later-copy accuracy", runs[0].eval.acc, ">=", kCircuitAccuracy);
    rep.criterion("exercise 3, none: later-copy accuracy", runs[1].eval.acc, "<=", kNoCircuitAccuracy);
    rep.criterion("exercise 3, alibi: later-copy accuracy", runs[2].eval.acc, ">=", kAlibiAccuracy);
    rep.text(fmt::format("  Bounds: rope >= {} as in the induction lab (text 0.87). none <= {}: the text predicts no "
                         "previous-token head without positions, and a model without the circuit stays near the 1-block "
                         "level (text 0.11). alibi >= {}: the text expects ALiBi's recency bias to allow the circuit and "
                         "leaves open how well; {} is far above any model without it, with room for seed-to-seed spread "
                         "(measured 0.82 with the default seed).", kCircuitAccuracy, kNoCircuitAccuracy, kAlibiAccuracy,
                         kAlibiAccuracy));
  } else {
    rep.text("  (--short: the accuracy checks need the full training and are not made)");
  }
}

// ---------------------------------------------------------------- exercise 5

// The 2-block rope model of the induction lab: loaded from --load, or trained here.
static void trained_two_block(Report& rep, const ExerciseOptions& o, nn::TinyCharLM& model, Generator& gen) {
  if (!o.load.empty()) {
    nn::load_checkpoint(o.load, model);
    rep.text(fmt::format("The 2-block rope model loaded from {} (not trained here).", o.load));
    return;
  }
  const int64_t steps = o.steps_for(induction::kSteps);
  rep.text(fmt::format("The 2-block rope model trained here as the induction lab trains it: L in 16..32, {} steps, seed {}.",
                       steps, o.seed));
  ProgressLine line("2 blocks", o.progress);
  induction::train_repeat(model, {.steps = steps, .Lmin = 16, .Lmax = 32, .batch = o.batch()}, gen, line.callback());
}

void run_three_copies(Report& rep, const ExerciseOptions& o) {
  const Stopwatch t0;
  constexpr int64_t L = 21;
  rep.section("exercise 5: a length-21 pattern repeated three times");
  Generator gen(o.seed);
  nn::TinyCharLM model(induction::model_config(2), gen);
  model.to(o.device);
  trained_two_block(rep, o, model, gen);
  Generator ev(o.seed + 8);
  const ThreeCopies r = three_copies(model, L, 2 * o.eval_batch, ev);
  rep.text(fmt::format("{} sequences of 3·21 + 1 = 64 tokens: a random pattern x[0..20] (tokens from all 64, drawn as in "
                       "training, so a pattern may hold a token twice), tiled. Target t (x[t] predicted from x[0..t-1]) "
                       "belongs to copy t / 21: t = 1..20 the first, 21..41 the second, 42..62 the third, and t = 63 is "
                       "the first token of a fourth.", r.sequences));
  rep.text("Which targets cannot be predicted: a single-token match predicts x[t] from what followed the earlier "
           "occurrences of the current token x[t-1]. The second copy's first target x[21] = x[0] follows x[20], which "
           "has occurred nowhere before (or, if x[20] occurs earlier in the pattern, was followed there by another "
           "token): nothing announces the restart, as the text says of position 24 for period 24. The third copy's "
           "first target x[42] = x[0] is different: its current token x[41] = x[20] occurred at position 20, followed "
           "by x[21] = x[0], so the match finds it like any other target (and t = 63 likewise). So only the second "
           "copy's first target is unpredictable in principle; the others are ordinary targets.");
  const CopyTally &second = r.copies[1], &third = r.copies[2];
  rep.text(fmt::format("  {:<44} {:<22} {:<22}", "accuracy (hits of targets)", "second copy", "third copy"));
  auto line = [&](const std::string& what, const Tally& a, const Tally& b) {
    rep.text(fmt::format("  {:<44} {:<22} {:<22}", what, acc_str(a), acc_str(b)));
  };
  line("every target", second.all, third.all);
  line("its first target (t = 21 / t = 42)", second.first, third.first);
  line("without its first target", second.rest, third.rest);
  line("  current token once in the pattern", second.once, third.once);
  line("  current token twice in the pattern", second.twice, third.twice);
  line("    at the earlier of its two places", second.twice_earlier, third.twice_earlier);
  line("    at the later of its two places", second.twice_later, third.twice_later);
  line("  current token 3+ times in the pattern", second.more, third.more);
  rep.text(fmt::format("  t = 63 (the fourth copy's first target): {}; the first copy, t = 1..20: {}",
                       acc_str(r.copies[3].all), acc_str(r.copies[0].all)));
  nlohmann::json& js = rep.json()["sections"]["exercise 5"];
  auto tally_json = [](const Tally& t) { return nlohmann::json{{"n", t.n}, {"hits", t.hits}, {"accuracy", t.n ? t.acc() : -1.0}}; };
  const std::vector<std::string> names = {"first", "second", "third", "fourth"};
  for (size_t k = 0; k < r.copies.size() && k < names.size(); ++k) {
    const CopyTally& c = r.copies[k];
    js[names[k] + " copy"] = {{"all", tally_json(c.all)}, {"first_target", tally_json(c.first)}, {"rest", tally_json(c.rest)},
                              {"once", tally_json(c.once)}, {"twice", tally_json(c.twice)},
                              {"twice_earlier", tally_json(c.twice_earlier)}, {"twice_later", tally_json(c.twice_later)},
                              {"three_or_more", tally_json(c.more)}};
  }
  js["accuracy_per_position"] = r.per_position;

  if (!o.out.empty()) {
    std::ostringstream f;
    f << "target_position,accuracy\n";
    for (size_t i = 0; i < r.per_position.size(); ++i) f << i + 1 << "," << r.per_position[i] << "\n";
    write_csv_and_draw(rep, o, "exercise5_accuracy_per_position.csv", f.str(), "", "exercise5.gp", "exercise5_accuracy_per_position.png",
         fmt::format("set output 'exercise5_accuracy_per_position.png'\nset title 'accuracy per target position, a "
                     "length-{0} pattern three times'\nset xlabel 'target position'\nset ylabel 'accuracy'\nset yrange "
                     "[0:1.05]\nset xrange [1:{1}]\nset grid\nset arrow from {0},0 to {0},1.05 nohead dt 2\nset arrow "
                     "from {2},0 to {2},1.05 nohead dt 2\nset arrow from {3},0 to {3},1.05 nohead dt 2\nplot "
                     "'exercise5_accuracy_per_position.csv' every ::1 using 1:2 with linespoints pt 7 ps 0.6 notitle\n",
                     L, r.per_position.size(), 2 * L, 3 * L));
  }

  const double gap2 = second.once.acc() - second.twice.acc(), gap3 = third.once.acc() - third.twice.acc();
  const double twice_change = third.twice.acc() - second.twice.acc();
  if (o.short_mode && o.load.empty()) {
    rep.text("\nWhat the numbers show: nothing yet — --short trains too little for the model to complete anything; "
             "the full run (or --load labs_out/induction/induction_2blocks.safetensors, which induction "
             "writes) answers the text's question.");
  } else {
    const bool same_once = std::abs(third.once.acc() - second.once.acc()) < 0.02;
    const bool beyond = second.twice_earlier.acc() > 0.5 && second.twice_later.acc() > 0.5;
    rep.text(fmt::format(
        "\nWhat the numbers show: counting every target, the third copy ({:.3f}) scores {} the second ({:.3f}). The "
        "restart alone adds {:+.3f} to the third copy's score — the second copy's first target is right {:.3f} of the "
        "time, the third's {:.3f} — and the other targets {:+.3f}: without each copy's first target the third copy "
        "scores {:.3f} against the second's {:.3f}. Tokens that "
        "occur once in the pattern are completed {:.3f} / {:.3f} of the time (second / third copy): a second previous "
        "occurrence carries the same successor and {}. Tokens that occur twice score {:.3f} / {:.3f}. Their earlier "
        "occurrences were followed by two different tokens, and a match on the current token alone would split its "
        "vote between them — a tie at the earlier of the two places in the second copy, outvoted 2:1 at the later "
        "one, 2:2 and 3:2 in the third copy — so it could not score above about one half. {} In the third copy, with "
        "one more occurrence of both successors, the ambiguous tokens score {:.3f} ({:+.3f}). A second previous "
        "occurrence repeats the evidence for a token with one successor and multiplies the competitors for a token "
        "with two; resolving them needs a match on a longer prefix — deeper composition, as the text says.",
        third.all.acc(), third.all.acc() > second.all.acc() ? "above" : "no better than", second.all.acc(),
        (third.first.acc() - second.first.acc()) / static_cast<double>(L), second.first.acc(), third.first.acc(),
        (third.rest.acc() - second.rest.acc()) * static_cast<double>(L - 1) / static_cast<double>(L), third.rest.acc(),
        second.rest.acc(), second.once.acc(), third.once.acc(),
        same_once ? "changes nothing" : fmt::format("changes it by {:+.3f}", third.once.acc() - second.once.acc()),
        second.twice.acc(), third.twice.acc(),
        beyond ? fmt::format("This model does better ({:.3f} at the earlier place, {:.3f} at the later, in the second "
                             "copy), so something beyond the current token enters its match.",
                             second.twice_earlier.acc(), second.twice_later.acc())
               : fmt::format("This model scores {:.3f} at the earlier place and {:.3f} at the later, in the second copy.",
                             second.twice_earlier.acc(), second.twice_later.acc()),
        third.twice.acc(), twice_change));
  }
  const double seconds = t0.seconds();
  rep.text(fmt::format("exercise 5 took {}", duration_str(seconds)));
  rep.json()["timing"]["exercise 5 seconds"] = seconds;

  rep.section("exercise 5: acceptance checks");
  rep.criterion("exercise 5: second copy's first target (the restart)", second.first.acc(), "<=", 0.2);
  if (o.trained_criteria() || !o.load.empty()) {
    rep.criterion("exercise 5: second copy accuracy, every target", second.all.acc(), ">=", 0.8);
    rep.criterion("exercise 5: third copy accuracy, every target", third.all.acc(), ">=", 0.8);
    rep.criterion("exercise 5: second copy accuracy without its first target", second.rest.acc(), ">=", 0.8);
    rep.criterion("exercise 5: third copy accuracy without its first target", third.rest.acc(), ">=", 0.8);
    rep.criterion("exercise 5: third copy's first target", third.first.acc(), ">=", 0.7);
    rep.criterion("exercise 5: second copy, token once in the pattern", second.once.acc(), ">=", 0.95);
    rep.criterion("exercise 5: third copy, token once in the pattern", third.once.acc(), ">=", 0.95);
    rep.criterion("exercise 5: second copy, once minus twice", gap2, ">=", 0.1);
    rep.criterion("exercise 5: third copy, once minus twice", gap3, ">=", 0.1);
    rep.criterion("exercise 5: token twice, third copy minus second", twice_change, "<=", 0.0);
    rep.text("  Bounds: a trained induction circuit completes most of each copy (>= 0.8; the induction lab's "
             "later-copy check); the restart cannot be predicted (chance is 1/64; <= 0.2 leaves room for lucky "
             "repeats); the third copy's first target can (>= 0.7); a token with one successor is completed almost always "
             "(>= 0.95); one with two is at least 0.1 worse; and a further pass does not make it better (<= 0).");
  } else {
    rep.text("  (--short: only the restart is checked: it is unpredictable whether or not the model is trained)");
  }
}

// ---------------------------------------------------------------- exercise 6

static double sum_of(const std::vector<double>& v, size_t lo, size_t hi) {
  double s = 0;
  for (size_t i = lo; i < hi && i < v.size(); ++i) s += v[i];
  return s;
}
static double max_of(const std::vector<double>& v, size_t lo, size_t hi) {
  double m = 0;
  for (size_t i = lo; i < hi && i < v.size(); ++i) m = std::max(m, v[i]);
  return m;
}

void run_held_out(Report& rep, const ExerciseOptions& o) {
  const Stopwatch t0;
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

  const size_t k = static_cast<size_t>(K), V = r.lookup_squared.size();
  rep.text("  gradient of E summed over training, Σ_steps ‖dE[v, :]‖², added over the rows of each group:");
  rep.text(fmt::format("  {:<18} {:>14} {:>14} {:>16}", "rows", "lookup path", "head path", "largest lookup row"));
  rep.text(fmt::format("  {:<18} {:>14.4e} {:>14.4e} {:>16.4e}", "0-47 (trained)", sum_of(r.lookup_squared, 0, k),
                       sum_of(r.head_squared, 0, k), max_of(r.lookup_squared, 0, k)));
  rep.text(fmt::format("  {:<18} {:>14.4e} {:>14.4e} {:>16.4e}", "48-63 (held out)", sum_of(r.lookup_squared, k, V),
                       sum_of(r.head_squared, k, V), max_of(r.lookup_squared, k, V)));
  rep.text(fmt::format("  (the lookup path's gradient is the embedding op's own backward, the head path's the "
                       "transpose view's, both caught as the backward computed them; on the last step their sum "
                       "differs from E.grad by {:.1e})", r.split_sum_diff));
  auto mean_of = [](const std::vector<double>& v, size_t lo, size_t hi) { return sum_of(v, lo, hi) / static_cast<double>(hi - lo); };
  rep.text(fmt::format("  embedding rows, mean norm: 0-47 {:.3f} -> {:.3f} (moved {:.3f}); 48-63 {:.3f} -> {:.3f} (moved "
                       "{:.3f})", mean_of(r.norm_start, 0, k), mean_of(r.norm_end, 0, k), mean_of(r.moved, 0, k),
                       mean_of(r.norm_start, k, V), mean_of(r.norm_end, k, V), mean_of(r.moved, k, V)));
  rep.text(fmt::format("  mean cosine between distinct rows: 0-47 {:.3f} -> {:.3f}; 48-63 {:.3f} -> {:.3f}", r.cos_seen_start,
                       r.cos_seen_end, r.cos_held_start, r.cos_held_end));
  rep.value("OV copying check, rows 0-47", r.ov_diag_seen);
  rep.value("OV copying check, rows 48-63", r.ov_diag_held);
  rep.text("  (the fraction of rows a of C = E W_OVᵀ Eᵀ, block 2's heads summed, whose largest entry is C[a, a])");
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

  // The sentence about the held-out tokens, said from the numbers.
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
  const double seconds = t0.seconds();
  rep.text(fmt::format("exercise 6 took {}", duration_str(seconds)));
  rep.json()["timing"]["exercise 6 seconds"] = seconds;

  rep.section("exercise 6: acceptance checks");
  rep.criterion("exercise 6: rows 48-63, lookup-path Σ‖g‖²", sum_of(r.lookup_squared, k, V), "<=", 0.0);
  rep.criterion("exercise 6: rows 48-63, head-path Σ‖g‖²", sum_of(r.head_squared, k, V), ">=", 1e-12);
  rep.criterion("exercise 6: |lookup + head - E.grad|, last step", r.split_sum_diff, "<=", 0.0);
  if (o.trained_criteria()) {
    rep.criterion("exercise 6: accuracy on tokens 0-47", r.seen.acc, ">=", 0.8);
    rep.criterion("exercise 6: accuracy on tokens 48-63", r.held_out.acc, "<=", 0.2);
    rep.text("  Bounds: 0-47 >= 0.8 as the induction lab's model; 48-63 <= 0.2: the text says completion fails badly "
             "(chance among the 16 tokens is 0.06; tokens 32-47, with the same repeats, give about 0.8).");
  } else {
    rep.text("  (--short: the accuracy checks need the full training and are not made)");
  }
}

}  // namespace hg::lab::exercises
