// exercises — exercises 3, 5 and 6 of "What Attention Computes" (10.6.6), each over the induction
// lab's trained TinyCharLM: 3, the variable-period experiment with pos = none and alibi beside
// rope; 5, a length-21 pattern repeated three times; 6, training on tokens 0-47 and testing on
// 48-63, with the gradient of each embedding row split into the lookup and the tied head's path.
// The computations are in exercises_case.cpp, the reports in exercises_positions.cpp,
// exercises_copies.cpp and exercises_held_out.cpp (the labkit); this file parses flags. Exit status 1 unless every acceptance check of the exercises run is met.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "exercises_run.h"
#include "nn/checkpoint.h"
#include "kit.h"
#include "report.h"

using namespace hg;
using namespace hg::lab;
using namespace hg::lab::exercises;

int main(int argc, char** argv) {
  CLI::App app{"Exercises 3, 5 and 6 of 'What Attention Computes' (10.6.6), over the induction lab's TinyCharLM. "
               "3: the variable-period experiment with pos = none and alibi beside rope (four models of 2,000 "
               "steps: 9 minutes on an idle 2-core machine, up to 21 on a busy one); 5: a length-21 pattern "
               "repeated three times, second copy against third, tokens that occur once or twice in the pattern "
               "(about 5 minutes; seconds with --load); 6: trained on tokens 0-47, tested on 48-63, each embedding "
               "row's gradient split into the lookup and the tied head's path (about 5 minutes). Exit status 1 unless every acceptance check is met. --short trains 30 steps and "
               "checks only what holds without training (first-copy loss at chance, the restart of the second copy "
               "unpredictable, the exact path split of the gradient); the full run adds the accuracy checks."};
  ExerciseOptions o;
  std::string json;
  bool no_pictures = false, quiet = false;
  int64_t steps = 0;
  app.add_option("--exercise", o.exercise, "which exercise: 3, 5, 6, or all (one after another)")
      ->required()->check(CLI::IsMember({"3", "5", "6", "all"}));
  app.add_option("--eval-batch", o.eval_batch, "sequences per evaluation batch (exercise 5 uses twice as many)")
      ->capture_default_str()->check(whole_number_in(1, kMaxBatch));
  add_training_flags(app, {.steps = &steps, .seed = &o.seed, .out = &o.out, .load = &o.load, .no_pictures = &no_pictures,
                           .quiet = &quiet, .min_steps = 1,
                           .steps_help = "training steps of every model the exercise trains (default: the text's "
                                         "2000; 30 with --short)",
                           .load_help = "exercise 5: load the 2-block rope model from this safetensors file (induction "
                                        "writes one by default: labs_out/induction/induction_2blocks.safetensors) "
                                        "instead of training it"},
                     "");
  app.add_flag("--short", o.short_mode, "a quick run: 30 training steps (unless --steps) of batch 32, evaluation batches "
                                        "of 64, and only the checks that hold without training");
  add_json_option(app, json);
  add_device_option(app, o.device);
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;
  if (app.count("--steps") > 0) o.steps = steps;
  o.pictures = !no_pictures;
  o.progress = !quiet;
  if (o.short_mode && app.count("--eval-batch") == 0) o.eval_batch = 64;
  if (!o.load.empty() && o.exercise != "5" && o.exercise != "all") {
    fmt::print(stderr, "--load: only exercise 5 uses a trained model from a file (exercises 3 and 6 train their own)\n");
    return kExitUsage;
  }
  if (!o.load.empty()) {  // read the checkpoint now, so a bad file is refused before any training
    try {
      Generator g(o.seed);
      nn::TinyCharLM probe(induction::model_config(2), g);
      nn::load_checkpoint(o.load, probe);
    } catch (const std::exception& e) {
      fmt::print(stderr, "--load: {}\n", e.what());
      return kExitUsage;
    }
  }

  // Under mpirun (nn/comm.h): each rank trains on its share of the batch; only rank 0 writes files.
  if (const int rc = split_across_ranks(o.batch(), {&o.out}, o.progress); rc != 0) return rc;

  int unmet = 0;
  const int rc = run_lab("exercises", json, o.device, [&](Report& rep) {
    rep.json()["criteria"] = nlohmann::json::object();
    auto run = [&](const std::string& n, void (*exercise)(Report&, const ExerciseOptions&), const std::string& detail) {
      if (o.exercise != n && o.exercise != "all") return;
      const Stopwatch t0;
      exercise(rep, o);
      report_time(rep, std::stoi(n), t0, detail);
    };
    run("3", run_positions, fmt::format("{} steps per model", o.steps_for(kPositionsSteps)));
    run("5", run_three_copies, "");
    run("6", run_held_out, "");
    unmet = rep.criteria_unmet();
  });
  return rc != 0 ? rc : unmet == 0 ? 0 : 1;
}
