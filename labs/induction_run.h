// labs/induction_run.h — the whole induction lab as one call, so labs/induction.cpp only parses
// flags and tests can run a short version of it.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "induction_lab.h"
#include "kit.h"
#include "report.h"

namespace hg::lab::induction {

struct LabOptions {
  int64_t steps = kSteps;                   // 2-block and 1-block training steps (0: skip the 1-block run)
  int64_t shortcut_steps = kShortcutSteps;  // 0: skip the shortcut experiment
  uint64_t seed = kSeed;
  int64_t batch = 128;                      // training batch (the text's 128)
  int64_t eval_batch = 256;                 // sequences per evaluation batch (twice as many for accuracy per position)
  std::string out = default_out("induction");  // CSV, PNG and the model; empty: write none
  std::string save, load;                   // checkpoint of the 2-block model (save: default beside --out's files)
  bool pictures = true;                     // draw PNGs when gnuplot is installed
  bool progress = true;                     // the progress line on stderr
  Device device = Device::cpu;              // where the models train and every measurement runs
  bool one_block = true;                    // train the 1-block control (with steps > 0)
  std::string live;                         // write the live page here (labs/induction_page.h); empty: none
  std::string live_module;                  // the page's WebAssembly module's script, with `live`
};

// Runs every experiment and reports each number beside the text's. Also records, under the JSON
// key "criteria", the acceptance checks (met or not) and under "timing" the measured speed.
void run_induction(Report& rep, const LabOptions& o);

// --compare-devices: the 2-block model trained for `steps` steps from o.seed at batch o.batch on the
// CPU and on the GPU; both loss curves side by side (every 10th step and the largest difference),
// recorded in the JSON under "compare_devices". Returns whether the largest relative difference
// over the first kDeviceCheckedSteps steps is within kDeviceTolerance (later steps are reported, not
// bounded: they drift apart). Throws hg::Error when no GPU is usable.
bool run_compare_devices(Report& rep, const LabOptions& o, int64_t steps);

}  // namespace hg::lab::induction
