// labs/exercises_run.h — the exercises lab's reports: exercises 3, 5 and 6 of "What Attention
// Computes" (10.6.6), each printed beside the text and checked, so labs/exercises.cpp only parses
// flags and tests can run a short version. The computations are in exercises_case.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "induction_lab.h"
#include "kit.h"
#include "report.h"

namespace hg::lab::exercises {

// --short: enough steps to run every line, not to learn anything.
constexpr int64_t kShortSteps = 30, kShortBatch = 32;
// Exercise 3's default steps: three 2-block models and a 1-block control (the text's 2,000).
constexpr int64_t kPositionsSteps = 2000;
constexpr int64_t kHeldOutTokens = 48;  // exercise 6 trains on tokens 0-47

struct ExerciseOptions {
  std::string exercise;
  std::optional<int64_t> steps;  // unset: each exercise's own default
  uint64_t seed = induction::kSeed;
  int64_t eval_batch = 256;
  std::string out = default_out("exercises");
  std::string load;  // exercise 5's model
  bool pictures = true, progress = true, short_mode = false;
  Device device = Device::cpu;

  int64_t steps_for(int64_t full) const { return steps ? *steps : short_mode ? kShortSteps : full; }
  int64_t batch() const { return short_mode ? kShortBatch : 128; }  // the text's training batch, 32 with --short
  // The criteria that need a trained model apply unless --short (or a model loaded for exercise 5).
  bool trained_criteria() const { return !short_mode; }
  // Why they are not made in a --short run: "not applicable at 30 steps (needs ≥ 2000)".
  std::string untrained_why(int64_t full) const { return too_short(steps_for(full), full); }
};

// The end of exercise `n`: "exercise n took 1m05s" (with `detail` in parentheses, when given) and
// its seconds in the JSON ("timing": {"exercise n seconds": ...}).
void report_time(Report& rep, int n, const Stopwatch& t0, const std::string& detail = {});

// Each exercise's report: its numbers beside the text's, a sentence on what they show, CSV files
// and PNG pictures in o.out, and its acceptance checks (Report::criterion).
void run_positions(Report& rep, const ExerciseOptions& o);     // exercise 3
void run_three_copies(Report& rep, const ExerciseOptions& o);  // exercise 5
void run_held_out(Report& rep, const ExerciseOptions& o);      // exercise 6

// Shared by the reports (exercises_run.cpp). Draws `script` (gnuplot) into o.out, or says why not,
// and prints the PNG's path; the second writes a CSV file into o.out first and says so.
void draw(Report& rep, const ExerciseOptions& o, const std::string& name, const std::string& png, const std::string& script);
void write_csv_and_draw(Report& rep, const ExerciseOptions& o, const std::string& csv, const std::string& content,
                        const std::string& note, const std::string& script_name, const std::string& png,
                        const std::string& script);

}  // namespace hg::lab::exercises
