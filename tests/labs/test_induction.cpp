// The induction lab's library (labs/induction_*.h): a short training run, the measurements on
// hand-made inputs, a smoke run of the whole lab, and determinism (same seed, same bits).
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "handgrad.h"
#include "induction_lab.h"
#include "induction_run.h"
#include "test_util.h"

using namespace hg;
using namespace hg::lab;
using namespace hg::lab::induction;

namespace {

double mean(const std::vector<double>& v, size_t lo, size_t hi) {
  double s = 0;
  for (size_t i = lo; i < hi; ++i) s += v[i];
  return s / static_cast<double>(hi - lo);
}

size_t count_lines(const std::string& path) {
  std::ifstream f(path);
  size_t n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("induction: the training loop's split losses (cross_entropy through ignore_index) equal split_losses'") {
  // One step: its losses are those of the initial model on the first batch, which a second model
  // built from the same seed sees through split_losses (double precision, per target).
  const TrainSetup s{.steps = 1, .Lmin = 5, .Lmax = 40, .batch = 8, .seq = 48};
  Generator g1(11), g2(11);
  nn::TinyCharLM trained(model_config(1), g1), reference(model_config(1), g2);
  const History h = train_repeat(trained, s, g1);
  const nn::RepeatedBatch b = nn::repeated_batch(s.batch, s.seq, s.vocab, s.Lmin, s.Lmax, g2);
  const int64_t T = s.seq;
  const nn::SplitLoss l = nn::split_losses(reference.forward(b.tokens.slice(1, 0, T - 1)), b.tokens.slice(1, 1, T), b.lengths);
  REQUIRE(h.loss.size() == 1);
  CHECK(h.loss[0] == l.loss.item());  // the same op on the same logits: the same bits
  CHECK(h.first[0] == doctest::Approx(l.first).epsilon(1e-6));  // float32 rounding of the same mean
  CHECK(h.later[0] == doctest::Approx(l.later).epsilon(1e-6));
  CHECK(l.n_first > 0);
  CHECK(l.n_later > 0);
}

TEST_CASE("induction: 30 training steps on a small batch lower the loss and record both curves") {
  Generator gen(0);
  nn::TinyCharLM model(model_config(2), gen);
  Generator eg(99);
  const nn::RepeatedBatch eval = nn::repeated_batch(64, 64, 64, 16, 32, eg);
  const CopyEval before = eval_copy_on(model, eval);
  // A larger learning rate than the text's so that 30 steps of batch 16 move the loss visibly: the
  // first thing learned is copying (tokens seen earlier in the context get likelier), which lowers
  // the later-copy loss and, at first, raises the first-copy loss a little.
  const History h = train_repeat(model, {.steps = 30, .Lmin = 16, .Lmax = 32, .batch = 16, .lr = 1e-2}, gen);
  REQUIRE(h.first.size() == 30);
  REQUIRE(h.later.size() == 30);
  CHECK(h.seconds > 0);
  CHECK(mean(h.first, 0, 5) == doctest::Approx(std::log(64.0)).epsilon(0.01));  // chance level at the start
  CHECK(mean(h.later, 25, 30) < mean(h.later, 0, 5) - 0.01);
  const CopyEval after = eval_copy_on(model, eval);
  CHECK(before.later == doctest::Approx(std::log(64.0)).epsilon(0.01));
  CHECK(after.later < before.later - 0.01);
}

TEST_CASE("induction: same seed, bit-identical losses and weights; another seed, different ones") {
  auto run = [](uint64_t seed) {
    Generator gen(seed);
    nn::TinyCharLM model(model_config(2), gen);
    History h = train_repeat(model, {.steps = 5, .batch = 32}, gen);
    std::vector<double> w = model.parameters()[1].to_vector();
    return std::make_pair(h, w);
  };
  const auto [a, wa] = run(7);
  const auto [b, wb] = run(7);
  const auto [c, wc] = run(8);
  CHECK(a.first == b.first);  // exact equality, not a tolerance
  CHECK(a.later == b.later);
  CHECK(wa == wb);
  CHECK(a.later != c.later);
}

TEST_CASE("offset_mass, diagonal_fraction and the transition step on hand-made inputs") {
  // maps (1, 2, 4, 4): head 0 puts weight 1 on offset 1 (query i, key i-1), head 1 on offset 0.
  Tensor m = zeros({1, 2, 4, 4}, DType::f64);
  m.set_at({0, 0, 0, 0}, 1.0);
  for (int64_t i = 1; i < 4; ++i) m.set_at({0, 0, i, i - 1}, 1.0);
  for (int64_t i = 0; i < 4; ++i) m.set_at({0, 1, i, i}, 1.0);
  CHECK(offset_mass(m, 1) == doctest::Approx(0.5));  // (3 + 0) / (2 heads · 3 positions)
  CHECK(offset_mass(m, 0) == doctest::Approx(5.0 / 8.0));
  CHECK_THROWS_AS(offset_mass(m, 4), Error);

  Tensor C = tensor({3, 1, 0, /**/ 0, 1, 2, /**/ 0, 0, 5}, {3, 3}, DType::f64);  // rows 0 and 2 peak on the diagonal
  CHECK(diagonal_fraction(C) == doctest::Approx(2.0 / 3.0));

  // A plateau at 3.6 for 500 steps, a linear fall of 0.032 a step to 0.4 by step 600, flat after;
  // the 1-block model sits at 3.61. Worked by hand: the 25-step trailing mean first drops below
  // 3.289 (10%) at step 522, below 2.005 (the midpoint) at 562 and below 0.721 (90%) at 603.
  std::vector<double> two, one(700, 3.61);
  for (int k = 1; k <= 700; ++k) two.push_back(k <= 500 ? 3.6 : k <= 600 ? 3.6 - 0.032 * (k - 500) : 0.4);
  const Transition t = transition_step(two, one);
  CHECK(t.plateau == doctest::Approx(3.61));
  CHECK(t.final_level == doctest::Approx(0.4));
  CHECK(t.onset == 522);
  CHECK(t.midpoint == 562);
  CHECK(t.end == 603);
  // The whole fall of 3.2 fits in 200 steps: from any window ending on the plateau (step <= 500)
  // to one lying wholly at 0.4 (steps >= 600, so ending at step >= 624): the earliest start is 424.
  CHECK(t.steepest_fall == doctest::Approx(3.2));
  CHECK(t.steepest_from >= 424);
  CHECK(t.steepest_from <= 500);
  CHECK(transition_step(one, one).midpoint == -1);  // no drop, no transition
  CHECK(chunk_means({1, 2, 3, 4, 5}, 2) == std::vector<double>{1.5, 3.5});
  CHECK(moving_average({1, 2, 3, 4}, 2) == std::vector<double>{1.5, 2.5, 3.5});
}

TEST_CASE("the OV copying matrix sums the heads' slices: C = E (W_proj W_v)ᵀ Eᵀ") {
  Generator gen(4);
  nn::TinyCharLMConfig cfg = model_config(2);
  cfg.vocab = 7, cfg.d = 8, cfg.heads = 2, cfg.dtype = DType::f64;
  nn::TinyCharLM model(cfg, gen);
  NoGradGuard ng;
  for (const Tensor& p : model.parameters()) p.detach().copy_(randn(p.shape(), gen, DType::f64));
  const Tensor E = model.token_emb->weight.detach();
  const Tensor Wv = model.blks[1]->qkv->weight.detach().slice(0, 16, 24), Wo = model.blks[1]->proj->weight.detach();
  // The per-head sum of proj's column blocks times W_v's row blocks is the full product W_o W_v.
  const Tensor expect = matmul(matmul(E, matmul(Wo, Wv).transpose(0, 1)), E.transpose(0, 1));
  const Tensor C = ov_copy_matrix(model, 1);
  CHECK(C.shape() == Shape{7, 7});
  CHECK(hg::test::max_abs_diff(C, expect) < 1e-12);
  CHECK_THROWS_AS(ov_copy_matrix(model, 2), Error);
}

TEST_CASE("induction: a short run of the whole lab fills every section, the criteria and the CSV curves") {
  const std::string dir = (std::filesystem::temp_directory_path() / "handgrad_test_induction").string();
  std::filesystem::remove_all(dir);
  LabOptions o;
  o.steps = 12;
  o.shortcut_steps = 4;
  o.batch = 8;
  o.out = dir;
  o.pictures = false;
  o.progress = false;
  Report rep("induction");
  run_induction(rep, o);
  const nlohmann::json& j = rep.json();
  for (const char* s : {"a fixed-offset solution: 1 block, bias on, L = 32", "a two-block induction circuit: L uniform in 16..32",
                        "inspecting the learned heads (2 blocks)", "accuracy per target position, period-24 patterns",
                        "verifying the circuit in the weights: OV copying", "exercise 2: ablating heads (later-copy loss)"}) {
    CAPTURE(s);
    CHECK(j["sections"].contains(s));
  }
  CHECK(j["sections"]["a two-block induction circuit: L uniform in 16..32"].contains("2 blocks: accuracy"));
  CHECK(j["sections"]["accuracy per target position, period-24 patterns"]["per position"].size() == 63);
  // 12 steps decide only the checks that hold at any length; the other six say why they cannot.
  CHECK(j["criteria"].size() + j["criteria_not_applicable"].size() == 9);
  CHECK(j["criteria"].size() == 3);
  REQUIRE(j["criteria_not_applicable"].contains("OV diagonal fraction"));
  CHECK(j["criteria_not_applicable"]["OV diagonal fraction"].get<std::string>().find("needs") != std::string::npos);
  CHECK(j["timing"].contains("2 blocks"));
  CHECK(count_lines(dir + "/curves.csv") == 1 + 12);
  CHECK(count_lines(dir + "/shortcut_curve.csv") == 1 + 4);
  CHECK(count_lines(dir + "/accuracy_per_position.csv") == 1 + 63);
  CHECK(count_lines(dir + "/ov_matrix.csv") == 64);
  CHECK(count_lines(dir + "/attention_block2_head3.csv") == 63);
  std::filesystem::remove_all(dir);
}

TEST_CASE("induction: the training loss per step, curve_difference, and --compare-devices without a GPU") {
  Generator gen(2);
  nn::TinyCharLM model(model_config(2), gen);
  const History h = train_repeat(model, {.steps = 3, .batch = 4}, gen);
  REQUIRE(h.loss.size() == 3);
  for (size_t i = 0; i < 3; ++i) {  // the mean over all targets lies between the two splits' means
    CHECK(h.loss[i] >= std::min(h.first[i], h.later[i]) - 1e-6);
    CHECK(h.loss[i] <= std::max(h.first[i], h.later[i]) + 1e-6);
  }

  const CurveDiff d = curve_difference({4.0, 2.0, 1.0}, {4.0, 2.004, 0.999});
  CHECK(d.abs[0] == 0.0);
  CHECK(d.rel[1] == doctest::Approx(2e-3));
  CHECK(d.rel[2] == doctest::Approx(1e-3));
  CHECK(d.max_rel == doctest::Approx(2e-3));
  CHECK(d.max_rel_step == 2);  // 1-based
  CHECK(d.norm_rel == doctest::Approx(std::sqrt((16e-6 + 1e-6) / 21.0)));
  CHECK(curve_difference({1.0, 2.0}, {1.0, NAN}).max_rel == HUGE_VAL);  // a NaN is the largest difference
  CHECK(curve_difference({1.0}, {1.0}).max_rel == 0.0);
  CHECK_THROWS_AS(curve_difference({1.0}, {1.0, 2.0}), Error);

  const CudaBackend* cu = cuda_backend();
  if (!cu || !cu->device_available()) {
    Report rep("induction");
    LabOptions o;
    o.progress = false;
    CHECK_THROWS_WITH_AS(run_compare_devices(rep, o, 2), doctest::Contains("--device cuda"), Error);
  }
}

#endif  // HANDGRAD_WITH_LABKIT
