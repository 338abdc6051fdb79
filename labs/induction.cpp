// induction — Sections 10.6.2–10.6.3 of "What Attention Computes": an attention-only TinyCharLM
// trained on repeated random sequences learns an induction circuit (a previous-token head in
// block 1 composed with a match-and-copy head in block 2) after an abrupt drop in loss, while a
// one-block control cannot; a fixed-period version is solved by a positional shortcut instead.
// The computations are in induction_lab.cpp / induction_run.cpp (the labkit); this file parses flags.
// --device cuda runs the whole lab on a GPU; --compare-devices N trains the 2-block model for N steps
// on the CPU and on the GPU and compares the two loss curves (exit status 1 when they differ by more
// than float32 rounding explains). --live FILE writes the page where the trained model is studied in
// a browser, every number recomputed there by the library built as WebAssembly (labs/induction_page.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "induction_run.h"
#include "kit.h"
#include "report.h"
#include "viz/html.h"

using namespace hg::lab;
using namespace hg::lab::induction;

int main(int argc, char** argv) {
  CLI::App app{"Sections 10.6.2-10.6.3 of 'What Attention Computes': the fixed-offset shortcut, 2 blocks vs 1 block "
               "on repeated random sequences, head scores, accuracy per position, the OV copying check and head "
               "ablations. Progress goes to stderr, the report to stdout, curves and pictures to --out."};
  setup_app(app);
  LabOptions o;
  std::string json;
  bool no_pictures = false, quiet = false;
  add_training_flags(app, {.steps = &o.steps, .seed = &o.seed, .out = &o.out, .load = &o.load, .save = &o.save,
                           .no_pictures = &no_pictures, .quiet = &quiet},
                     "the 2-block and the 1-block model (0: skip the 1-block run)");
  app.add_option("--shortcut-steps", o.shortcut_steps, "training steps of the shortcut experiment (0: skip it)")
      ->capture_default_str()->check(whole_number_in(0, kMaxSteps));
  app.add_option("--batch", o.batch, "training batch size (the text's 128)")
      ->capture_default_str()->check(whole_number_in(1, kMaxBatch));
  app.add_option("--eval-batch", o.eval_batch,
                 "sequences per evaluation batch (twice as many for the accuracy per position); smaller is faster "
                 "and noisier")
      ->capture_default_str()->check(whole_number_in(1, kMaxBatch));
  add_json_option(app, json);
  CLI::Option* device = add_device_option(app, o.device);
  CLI::Option* live = app.add_option("--live", o.live,
                 "write the live page: the 2-block model (trained here, or --load's) in a browser, every head's "
                 "attention, the losses, head ablations, the gradient behind a prediction and the circuits, recomputed "
                 "there by the library built as WebAssembly (one self-contained file, works offline; needs the full "
                 "build with Emscripten installed). The shortcut experiment and the 1-block control are left out")
      ->check(writable_file());
  int64_t compare_steps = 0;
  app.add_option("--compare-devices", compare_steps,
                 "instead of the lab: train the 2-block model for N steps (100 when N is left out) on the CPU and on "
                 "the GPU from --seed at --batch and compare the loss curves; exit status 1 if they differ by more "
                 "than float32 rounding explains; off unless given")
      ->expected(0, 1)
      ->default_str("100")
      ->check(whole_number_in(1, kMaxSteps))
      ->excludes(device);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;
  if (live->count() > 0) {
    // The page's module, read before any work: without it, say how to build it (exit status 3).
    try {
      o.live_module = hg::read_live_module(HANDGRAD_INDUCTION_MODULE, "handgradInduction");
    } catch (const hg::Error& e) {
      fmt::print(stderr, "error: --live: {}\n", e.what());
      return kExitCannotRun;
    }
    o.one_block = false;
    if (app.count("--shortcut-steps") == 0) o.shortcut_steps = 0;
  }
  o.pictures = !no_pictures;
  o.progress = !quiet;

  // Under mpirun (nn/comm.h): each rank trains on its share of --batch; only rank 0 writes files.
  if (const int rc = split_across_ranks(o.batch, {&o.out, &o.save, &o.live}, o.progress); rc != 0) return rc;

  if (app.count("--compare-devices") > 0) {
    bool within = false;
    const int rc =
        run_lab("induction", json, [&](Report& rep) { within = run_compare_devices(rep, o, compare_steps); });
    return rc != 0 ? rc : within ? 0 : 1;
  }
  return run_lab("induction", json, o.device, [&](Report& rep) { run_induction(rep, o); });
}
