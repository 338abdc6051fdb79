// labs/induction_lab.h — the computations of the induction lab (Sections 10.6.2–10.6.3 of "What
// Attention Computes"), kept in the labkit so tests can run them: training on repeated random
// sequences, the copy evaluation, the shortcut probe, head scores, accuracy per position, the OV
// copying check, head ablations, the step of the loss transition, and the same training run's loss
// curve on the CPU and on a GPU side by side.
//
// Devices: every function runs on the model's device (Module::to). Batches are drawn on the host
// from the generator — the same draws, so the same tokens, on every device — and uploaded; the
// measurements are read back to the host where they are returned.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "handgrad.h"
#include "nn/comm.h"
#include "nn/data.h"
#include "nn/tinycharlm.h"

namespace hg::lab::induction {

// The number of training steps of each experiment, and the seed, in one place. The text trains
// 800 steps for the shortcut and 2,000 for the 2-vs-1-block comparison.
constexpr int64_t kShortcutSteps = 800;
// The 2-block transition's timing varies by hundreds of steps between seeds (a PyTorch
// reproduction of this setup saw it begin between steps 1,200 and 1,800, still under way at 2,000
// for two of three seeds). Measured here (midpoint of the fall of the 25-step mean later-copy
// loss): seed 0 ≈ 2,190 (onset ≈ 1,970, in two stages; later-copy accuracy 0.81 only at 3,000
// steps), seed 1 ≈ 1,520, seed 2 ≈ 1,750. With seed 1, 2,000 steps leave ~500 steps after the
// transition (later-copy accuracy 0.88; 0.90 at 2,500) and the whole lab ran in 5m22s on the
// 2-core machine (2-block step 88 ms, 1-block 49 ms); 2,500 steps took 6m40s there.
constexpr int64_t kSteps = 2000;
// Seed 1's transition lies inside PyTorch's observed range; seed 0's is the latest of the three
// we measured and needs --steps 3000.
constexpr uint64_t kSeed = 1;

// The text's training setup (train_repeat): AdamW lr 1e-3, weight decay 0, batch 128, sequences
// of 64 tokens (inputs x[:, :-1], targets x[:, 1:]), vocab 64, a fresh batch every step.
struct TrainSetup {
  int64_t steps = kSteps;
  int64_t Lmin = 16, Lmax = 32;
  int64_t batch = 128;
  int64_t seq = 64;
  int64_t vocab = 64;
  double lr = 1e-3;
  int64_t read_every = 50;  // on a GPU: batches uploaded and losses read back once every this many steps
  // Data-parallel training: every rank draws the same global batch and trains on its rows
  // (nn/data_parallel.h). Null: nn::world(), which is one process unless the lab runs under mpirun.
  nn::Communicator* comm = nullptr;
  // Sees every node of every training step's backward (engine/tape.h), e.g. to split a parameter's
  // gradient by the path it came along; null: none.
  const BackwardObserver* observer = nullptr;
};

struct History {
  std::vector<double> first, later;  // per step: first-copy and later-copy loss of the batch
  std::vector<double> loss;          // per step: the training loss (float32 cross-entropy over all targets)
  double seconds = 0;                // wall time of the training loop (on a GPU: until its last result was read)
};

// Called for every step with the step count done (1-based) and that batch's losses. On the CPU it
// comes after each step; on a GPU the losses stay on the device and are read back every
// TrainSetup::read_every steps (and after the last), then reported step by step.
using Progress = std::function<void(int64_t done, int64_t total, double first, double later)>;

// The model TinyCharLM(vocab 64, d 128, 4 heads, `blocks` blocks, `bias`, positions `pos`: the
// text's rope unless an exercise asks for another scheme).
nn::TinyCharLMConfig model_config(int64_t blocks, bool bias = false, const std::string& pos = "rope");

// Trains `model` in place on its device; the batches come from `gen` (the same generator that
// initialised the model, as the text's torch.manual_seed(0) covers both), drawn on the host.
// One loop and one loss rule on either device: the training loss and the two split losses are
// cross_entropy's where the logits are (in the model's dtype; the first/later splits through
// targets set to ignore_index). No step waits for a GPU: the run goes in chunks of
// setup.read_every steps there, each with one upload of its batches and one read-back of its
// losses (two host waits per chunk); on the CPU a chunk is one step.
// With several ranks (setup.comm, or nn::world() under mpirun) the parameters are first broadcast
// from rank 0, each rank trains on its rows of every global batch of setup.batch (which the rank
// count must divide), the gradients are averaged before each step, and the History holds the
// global batch's losses (the split means weighted by how many targets each rank had), the same on
// every rank.
History train_repeat(nn::TinyCharLM& model, const TrainSetup& setup, Generator& gen, const Progress& progress = {});

// eval_copy: first-copy loss, later-copy loss and later-copy accuracy on a fresh batch.
struct CopyEval {
  double first = 0, later = 0, acc = 0;
  int64_t n_first = 0, n_later = 0;  // how many targets each mean is over (acc: the later ones)
};
CopyEval eval_copy(const nn::TinyCharLM& model, int64_t Lmin, int64_t Lmax, Generator& gen, int64_t batch = 256);
// The same numbers on a given batch, on the model's device (for comparing ablations on identical inputs).
CopyEval eval_copy_on(const nn::TinyCharLM& model, const nn::RepeatedBatch& data);

// Mean attention mass at relative offset `offset` (key j = i − offset) of maps (B, H, T, T):
// m.diagonal(-offset, dim1=2, dim2=3).mean() — over batch, heads and the T − offset positions.
double offset_mass(const Tensor& maps, int64_t offset);

// head_scores of the text: for each block and head, the mean weight on the previous token
// (diagonal −1) and on the induction target j = i + 1 − L (over the positions where j >= 0).
struct HeadScores {
  std::vector<std::vector<double>> prev, induction;  // [block][head]
  int64_t n_prev = 0, n_induction = 0;  // how many (sequence, position) entries each mean is over
};
HeadScores head_scores(const nn::TinyCharLM& model, const nn::RepeatedBatch& data);
// The last block's `k` heads with the largest induction score, strongest first (ties: the lower head).
std::vector<int64_t> strongest_induction_heads(const HeadScores& scores, size_t k = 2);

// Accuracy of argmax per target position t = 1..T-1 on the batch's inputs x[:, :-1].
std::vector<double> accuracy_per_position(const nn::TinyCharLM& model, const nn::RepeatedBatch& data);

// The copy evaluation and the accuracy per position of one batch from one forward (what the live
// page asks of each piece of its batch, and the figures the lab gives it to compare with).
struct BatchFigures {
  CopyEval copy;
  std::vector<double> acc_per_position;
};
BatchFigures batch_figures(const nn::TinyCharLM& model, const nn::RepeatedBatch& data);

// C = E W_OVᵀ Eᵀ (V, V), W_OV = Σ_h proj.weight[:, h] qkv.weight[2D + h] summed over `block`'s heads:
// C[a, b] = e_bᵀ W_OV e_a is the boost that attending to token a gives to the logit of token b.
// Computed in float64 on the model's device; C is on that device.
Tensor ov_copy_matrix(const nn::TinyCharLM& model, int64_t block);
// The fraction of rows of C whose largest entry is on the diagonal.
double diagonal_fraction(const Tensor& C);

// Exercise 2: later-copy loss on `data` with heads zeroed (the model's ablations are restored).
struct Ablations {
  double baseline = 0;
  std::vector<std::vector<double>> single;  // [block][head]: that head alone zeroed
  std::vector<int64_t> strongest;           // strongest_induction_heads(scores, 2)
  double strongest_pair = 0;                // both zeroed together
};
Ablations ablate_heads(nn::TinyCharLM& model, const nn::RepeatedBatch& data, const HeadScores& scores);

// The mean of each window of k consecutive values (the last window ends at the last value):
// s[i] = mean(v[i-k+1 .. i]) for i >= k-1. Trailing, so s[i] uses only steps up to i.
std::vector<double> moving_average(const std::vector<double>& v, int64_t k = 25);
// The text's plotted curve: means of consecutive, non-overlapping chunks of k steps.
std::vector<double> chunk_means(const std::vector<double>& v, int64_t k = 25);

// When the 2-block later-copy loss falls. With s the 25-step trailing moving average of the later
// loss, the plateau is the 1-block model's final level (the mean of its last 100 later-copy
// losses: what a model without the circuit reaches) and `final` the 2-block model's (the mean of
// its last 100). The transition step is the first step at which s drops below the midpoint
// (plateau + final) / 2; onset and end are the first steps below plateau − 10% and − 90% of the
// drop. −1 where the curve never gets there (no transition, or not yet finished). The steepest
// fall is the largest s[a] − s[a + 200] (the text: "falls by several nats within roughly one or
// two hundred steps"), with a its first step (1-based); it needs no 1-block curve.
struct Transition {
  double plateau = 0, final_level = 0;
  int64_t onset = -1, midpoint = -1, end = -1;  // 1-based step numbers
  double steepest_fall = 0;
  int64_t steepest_from = -1;
};
Transition transition_step(const std::vector<double>& later_two, const std::vector<double>& later_one);

// The same training run on the CPU and on a GPU: a model built from `seed` on the host (so both
// start from the same float32 weights), moved to each device, and trained with the batches that
// generator then draws (the same tokens on both), its per-step training loss recorded.
struct DeviceRuns {
  History cpu, gpu;
};
DeviceRuns train_on_both_devices(const nn::TinyCharLMConfig& cfg, const TrainSetup& setup, uint64_t seed,
                                 const Progress& cpu_progress = {}, const Progress& gpu_progress = {});

// Two loss curves step by step: |gpu − cpu| and |gpu − cpu| / |cpu| per step, the largest
// relative difference and its step (1-based), and the norm-wise ‖gpu − cpu‖ / ‖cpu‖.
struct CurveDiff {
  std::vector<double> abs, rel;
  double max_rel = 0;
  int64_t max_rel_step = 0;  // 0 when the curves are equal
  double norm_rel = 0;
};
CurveDiff curve_difference(const std::vector<double>& cpu, const std::vector<double>& gpu);

// The bound on CurveDiff::max_rel over the first kDeviceCheckedSteps steps of the lab's 2-block
// model (float32; the reasoning and the measurements are in induction_lab.cpp). Later steps drift
// further apart, as training amplifies last-bit differences: they are reported, not bounded.
constexpr double kDeviceTolerance = 1e-5;
constexpr int64_t kDeviceCheckedSteps = 100;

}  // namespace hg::lab::induction
