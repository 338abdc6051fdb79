// The induction lab with --device cuda (labs/induction_lab.h): a small version of
// `induction --compare-devices` — the same training run on the CPU and on the GPU, loss curves
// step for step — and every measurement the lab prints, on a model copied to the GPU, against the
// CPU's on the same weights and the same batches. Tiny sizes (d 16, 2 heads, batch 4-8, T 16):
// the emulation (tests/gpu/emulation) runs every kernel on the CPU.
//
// Float32 on both devices: results differ in their last bits (other summation orders), so the
// measurements are compared with the float32 bound of gpu_compare.h (‖gpu − cpu‖ / ‖cpu‖ < 1e-5),
// and what is decided by an argmax or an order of such numbers (accuracies, the diagonal
// fraction, which heads are strongest) may differ only where the CPU's numbers nearly tie.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "handgrad.h"
#include "labs/induction_lab.h"

using namespace hg;
using namespace hg::gpu_test;
using namespace hg::lab::induction;

namespace {

constexpr int64_t kT = 16;  // tokens per training sequence (inputs and targets: 15)

nn::TinyCharLMConfig tiny() {
  return {.vocab = 16, .d = 16, .heads = 2, .blocks = 2, .pos = "rope", .bias = false, .max_len = 64};
}

// lr 1e-2 rather than the lab's 1e-3, so that 20 AdamW steps (each moving a weight by up to lr)
// take the weights far from their start (embeddings N(0, 0.02²), linear weights within ±0.25): a
// harder test of the curves' agreement than a run that stays near its initialisation. (The loss
// itself stays near chance, log 16, in 20 steps of 4 sequences: copying is not learned that fast.)
TrainSetup tiny_setup(int64_t steps) {
  return {.steps = steps, .Lmin = 4, .Lmax = 8, .batch = 4, .seq = kT, .vocab = 16, .lr = 1e-2, .read_every = 7};
}

void check_close(const std::string& what, const std::vector<double>& gpu, const std::vector<double>& cpu) {
  const double rel = rel_error(gpu, cpu);
  MESSAGE(what, " float32 ", shape_str({static_cast<int64_t>(gpu.size())}), ": ||gpu - cpu|| / ||cpu|| = ", rel);
  CHECK(rel < tolerance(DType::f32));
}
void check_close(const std::string& what, double gpu, double cpu) {
  check_close(what, std::vector<double>{gpu}, std::vector<double>{cpu});
}

// The rows of C (V, V) whose largest entry leads the next one by at most `margin`: the rows whose
// argmax a last-bit difference can move.
int64_t near_tied_rows(const Tensor& C, double margin) {
  const int64_t V = C.size(0);
  const std::vector<double> v = C.contiguous().to_vector();
  int64_t n = 0;
  for (int64_t a = 0; a < V; ++a) {
    std::vector<double> row(v.begin() + a * V, v.begin() + (a + 1) * V);
    std::sort(row.begin(), row.end(), std::greater<>());
    n += V > 1 && row[0] - row[1] <= margin;
  }
  return n;
}

// An order of heads by score, the GPU's against the CPU's, where the GPU's scores are within
// ‖gpu − cpu‖ < tol ‖cpu‖ of the CPU's (check_close): two heads may swap places only if the CPU's
// scores of the two are within 2 tol ‖cpu‖ of each other.
void check_same_order(const std::string& what, const std::vector<int64_t>& gpu, const std::vector<int64_t>& cpu,
                      const std::vector<double>& cpu_scores) {
  REQUIRE(gpu.size() == cpu.size());
  double norm = 0.0;
  for (double s : cpu_scores) norm += s * s;
  norm = std::sqrt(norm);
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (gpu[i] == cpu[i]) continue;
    const double a = cpu_scores[static_cast<size_t>(gpu[i])], b = cpu_scores[static_cast<size_t>(cpu[i])];
    INFO(what, ": place ", i, " is head ", gpu[i], " on the GPU, head ", cpu[i], " on the CPU (CPU scores ", a, ", ", b, ")");
    CHECK(std::abs(a - b) <= 2 * tolerance(DType::f32) * norm);
  }
}

}  // namespace

TEST_CASE("induction on cuda: a tiny 2-block model's loss curve on the GPU follows the CPU's, step for step") {
  constexpr int64_t kSteps = 20;
  std::vector<int64_t> gpu_done;
  const DeviceRuns runs = train_on_both_devices(tiny(), tiny_setup(kSteps), 3, {},
                                                [&](int64_t done, int64_t total, double, double) {
                                                  CHECK(total == kSteps);
                                                  gpu_done.push_back(done);
                                                });
  REQUIRE(runs.cpu.loss.size() == kSteps);
  REQUIRE(runs.gpu.loss.size() == kSteps);
  REQUIRE(runs.gpu.first.size() == kSteps);
  REQUIRE(runs.gpu.later.size() == kSteps);
  for (int64_t i = 0; i < kSteps; ++i) CHECK(gpu_done[static_cast<size_t>(i)] == i + 1);  // every step, in order

  const CurveDiff d = curve_difference(runs.cpu.loss, runs.gpu.loss);
  const double rel = rel_error(runs.gpu.loss, runs.cpu.loss);
  MESSAGE("induction loss curve float32 ", shape_str({kSteps}), ": ||gpu - cpu|| / ||cpu|| = ", rel,
          " (largest per step: ", d.max_rel, " at step ", d.max_rel_step, "; first step ", d.rel[0], ")");
  CHECK(rel < tolerance(DType::f32));
  CHECK(d.max_rel <= kDeviceTolerance);
  // The split losses: cross_entropy's on both devices (float32, through ignore_index).
  check_close("induction first-copy loss curve", runs.gpu.first, runs.cpu.first);
  check_close("induction later-copy loss curve", runs.gpu.later, runs.cpu.later);
}

TEST_CASE("induction on cuda: a training run waits for the device twice per read_every steps, never in a step") {
  Generator gen(4);
  nn::TinyCharLM model(tiny(), gen);
  model.to(Device::cuda);
  const uint64_t waits = cu().host_waits();
  // read_every 7: chunks of 7, 7 and 6 steps, each one upload of its batches and one read-back.
  const History h = train_repeat(model, tiny_setup(20), gen);
  const uint64_t used = cu().host_waits() - waits;
  MESSAGE("host waits for the device in 20 GPU training steps (read_every 7): ", used);
  CHECK(used == 6);
  CHECK(h.loss.size() == 20);
  for (const Tensor& p : model.parameters()) CHECK(p.device() == Device::cuda);
}

TEST_CASE("induction on cuda: the lab's measurements on a model copied to the GPU equal the CPU's") {
  // A CPU model trained a little (so that attention is no longer uniform), copied into a GPU model.
  Generator gen(5);
  nn::TinyCharLM cpu_model(tiny(), gen);
  (void)train_repeat(cpu_model, tiny_setup(20), gen);
  Generator other(99);  // other initial values, all overwritten
  nn::TinyCharLM gpu_model(tiny(), other);
  gpu_model.to(Device::cuda);
  gpu_model.load_parameters(cpu_model.named_parameters());

  Generator a(6), b(6);
  const nn::RepeatedBatch hb = nn::repeated_batch(8, kT, 16, 4, 8, a);
  const nn::RepeatedBatch db = nn::repeated_batch(8, kT, 16, 4, 8, b, Device::cuda);
  REQUIRE(db.tokens.device() == Device::cuda);
  int64_t n_later = 0;  // later-copy targets t = L..T-1
  for (int64_t L : hb.lengths.to_int_vector()) n_later += kT - L;
  const double one_target = 1.0 / static_cast<double>(n_later);

  const CopyEval ce = eval_copy_on(cpu_model, hb), ge = eval_copy_on(gpu_model, db);
  check_close("eval_copy_on first", ge.first, ce.first);
  check_close("eval_copy_on later", ge.later, ce.later);
  CHECK(std::abs(ge.acc - ce.acc) <= one_target + 1e-12);  // at most one near-tied argmax flips

  Generator e1(7), e2(7);  // eval_copy draws a fresh batch of 64-token sequences on the model's device
  const CopyEval cf = eval_copy(cpu_model, 4, 8, e1, 4), gf = eval_copy(gpu_model, 4, 8, e2, 4);
  check_close("eval_copy later", gf.later, cf.later);

  const HeadScores cs = head_scores(cpu_model, hb), gs = head_scores(gpu_model, db);
  REQUIRE(gs.prev.size() == 2);
  for (size_t l = 0; l < 2; ++l) {
    check_close(fmt::format("head_scores block {} previous token", l + 1), gs.prev[l], cs.prev[l]);
    check_close(fmt::format("head_scores block {} induction target", l + 1), gs.induction[l], cs.induction[l]);
  }

  const std::vector<Tensor> cm = cpu_model.attention_weights(hb.tokens.slice(1, 0, kT - 1)),
                            gm = gpu_model.attention_weights(db.tokens.slice(1, 0, kT - 1));
  REQUIRE(gm[0].device() == Device::cuda);
  check_close("offset_mass(block 1, offset 1)", offset_mass(gm[0], 1), offset_mass(cm[0], 1));
  check_close("offset_mass(block 2, offset 5)", offset_mass(gm[1], 5), offset_mass(cm[1], 5));

  const std::vector<double> ca = accuracy_per_position(cpu_model, hb), ga = accuracy_per_position(gpu_model, db);
  REQUIRE(ga.size() == ca.size());
  for (size_t t = 0; t < ca.size(); ++t) CHECK(std::abs(ga[t] - ca[t]) <= 1.0 / 8 + 1e-12);  // one flip of 8

  // C is float64 arithmetic on the same float32 weights: it agrees to float64 rounding.
  const Tensor cc = ov_copy_matrix(cpu_model, 1), gc = ov_copy_matrix(gpu_model, 1);
  expect_close("ov_copy_matrix block 2", gc, cc, DType::f64);
  // A row's argmax may move only where its two largest entries tie: within 1e-9 max|C|, far above
  // the float64 rounding the two matrices differ by (each entry by < 1e-12 ‖C‖ ≤ 1.6e-11 max|C|).
  double scale = 0.0;
  for (double c : cc.to_vector()) scale = std::max(scale, std::abs(c));
  const int64_t ties = near_tied_rows(cc, 1e-9 * scale);
  MESSAGE("diagonal_fraction ", diagonal_fraction(gc), " (gpu) ", diagonal_fraction(cc), " (cpu), near-tied rows ", ties);
  CHECK(std::abs(diagonal_fraction(gc) - diagonal_fraction(cc)) <= static_cast<double>(ties) / cc.size(0) + 1e-12);

  const Ablations cab = ablate_heads(cpu_model, hb, cs), gab = ablate_heads(gpu_model, db, gs);
  check_close("ablate_heads baseline", gab.baseline, cab.baseline);
  for (size_t l = 0; l < 2; ++l) check_close(fmt::format("ablate_heads block {}", l + 1), gab.single[l], cab.single[l]);
  check_same_order("ablate_heads strongest", gab.strongest, cab.strongest, cs.induction.back());
  check_close("ablate_heads strongest pair", gab.strongest_pair, cab.strongest_pair);
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h) CHECK_FALSE(gpu_model.is_ablated(l, h));  // restored
}

#endif  // HANDGRAD_WITH_LABKIT
