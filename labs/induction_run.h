// labs/induction_run.h — the whole induction lab as one call, so labs/induction.cpp only parses
// flags and tests can run a short version of it.
#pragma once
#include <cstdint>
#include <string>

#include "induction_lab.h"
#include "report.h"

namespace hg::lab::induction {

struct LabOptions {
  int64_t steps = kSteps;                   // 2-block and 1-block training steps (0: skip the 1-block run)
  int64_t shortcut_steps = kShortcutSteps;  // 0: skip the shortcut experiment
  uint64_t seed = kSeed;
  int64_t batch = 128;                      // training batch (the text's 128)
  std::string out = "induction_out";        // CSV and PNG files; empty: write none
  std::string save, load;                   // checkpoint of the 2-block model
  bool pictures = true;                     // draw PNGs when gnuplot is installed
  bool progress = true;                     // the progress line on stderr
};

// Runs every experiment and reports each number beside the text's. Also records, under the JSON
// key "criteria", the acceptance checks (met or not) and under "timing" the measured speed.
void run_induction(Report& rep, const LabOptions& o);

}  // namespace hg::lab::induction
