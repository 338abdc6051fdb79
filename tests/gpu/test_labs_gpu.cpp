// The labs with --device cuda: every case function of the labs' library (labs/*_case.h) run on
// the GPU and on the CPU, each number the lab prints compared, ‖gpu − cpu‖ / ‖cpu‖ < 1e-12 in
// float64, and the comparisons with the texts' numbers of tests/labs/test_labs.cpp repeated on the
// GPU's numbers. One MESSAGE per case gives its largest difference.
//
// Finite differences are the one exception to 1e-12: each is (L(x + eps) − L(x − eps)) / 2eps
// with L evaluated on the device, so a last-bit difference between the GPU's L and the CPU's
// (~1e-16) becomes ~1e-10 after the division by 2eps = 2e-6; they are compared to 1e-7.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu_compare.h"
#include "handgrad.h"
#include "labs/lookup_case.h"
#include "labs/permutation_case.h"
#include "labs/saturation_case.h"
#include "labs/shapes_case.h"
#include "labs/three_token_case.h"
#include "test_util.h"

using namespace hg;
using namespace hg::gpu_test;
using namespace hg::lab;
using hg::test::check_text;

namespace {

constexpr double kNumericTolerance = 1e-7;  // finite differences: see the top of the file

// The comparisons of one lab case, GPU run against CPU run: each CHECKed as it comes, and
// report() prints the largest as "<what> float64 <shape>: ||gpu - cpu|| / ||cpu|| = <e>".
class LabDiff {
 public:
  explicit LabDiff(std::string what) : what_(std::move(what)) {}

  // A tensor of the GPU run (on cuda unless `on_device` is false: finite differences come back
  // on the CPU) against the CPU run's.
  void tensor(const std::string& name, const Tensor& gpu, const Tensor& cpu, bool on_device = true,
              double tol = 1e-12) {
    INFO(what_, ": ", name);
    REQUIRE(gpu.defined());
    REQUIRE(cpu.defined());
    CHECK(gpu.device() == (on_device ? Device::cuda : Device::cpu));
    CHECK(cpu.device() == Device::cpu);
    CHECK(gpu.dtype() == DType::f64);
    REQUIRE(gpu.shape() == cpu.shape());
    add(name, gpu.shape(), rel_error(gpu.to_vector(), cpu.to_vector()), tol);
  }
  void numbers(const std::string& name, const std::vector<double>& gpu, const std::vector<double>& cpu) {
    INFO(what_, ": ", name);
    add(name, {static_cast<int64_t>(gpu.size())}, rel_error(gpu, cpu), 1e-12);
  }
  void number(const std::string& name, double gpu, double cpu) { numbers(name, {gpu}, {cpu}); }

  void report() const {
    MESSAGE(what_, " float64 ", shape_str(worst_shape_), ": ||gpu - cpu|| / ||cpu|| = ", worst_, " (largest of ", count_,
            " compared: ", worst_name_, ")");
    CHECK(count_ > 0);
  }

 private:
  void add(const std::string& name, const Shape& shape, double rel, double tol) {
    CHECK(rel < tol);
    ++count_;
    if (rel > worst_ || worst_name_.empty()) {
      worst_ = rel;
      worst_name_ = name;
      worst_shape_ = shape;
    }
  }

  std::string what_;
  double worst_ = 0.0;
  std::string worst_name_;
  Shape worst_shape_;
  int count_ = 0;
};

void compare_traces(LabDiff& diff, const std::string& prefix, const AttentionTrace& gpu, const AttentionTrace& cpu) {
  CHECK(gpu.scale == cpu.scale);
  const std::vector<std::pair<const char*, Tensor AttentionTrace::*>> fields = {
      {"S", &AttentionTrace::S},   {"P", &AttentionTrace::P},   {"O", &AttentionTrace::O},   {"dO", &AttentionTrace::dO},
      {"dP", &AttentionTrace::dP}, {"D", &AttentionTrace::D},   {"dS", &AttentionTrace::dS}, {"dQ", &AttentionTrace::dQ},
      {"dK", &AttentionTrace::dK}, {"dV", &AttentionTrace::dV}};
  for (const auto& [name, field] : fields) diff.tensor(prefix + name, gpu.*field, cpu.*field);
}

std::vector<double> row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

// Histograms of numbers computed on each device (the lab's bins): a number within its last-bit
// difference of a bin edge may fall in the neighbouring bin on the other device, so the counts
// may differ, but only by numbers that land in another bin, each within 1e-12 of the CPU's.
void check_histograms(const std::string& what, const std::vector<double>& gpu, const std::vector<double>& cpu, int bins,
                      double lo, double hi) {
  REQUIRE(gpu.size() == cpu.size());
  int64_t moved = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (histogram({gpu[i]}, bins, lo, hi) == histogram({cpu[i]}, bins, lo, hi)) continue;
    ++moved;
    INFO(what, ": number ", i, " is ", gpu[i], " on the GPU, ", cpu[i], " on the CPU, in another bin");
    CHECK(std::abs(gpu[i] - cpu[i]) <= 1e-12);
  }
  const std::vector<int64_t> hg = histogram(gpu, bins, lo, hi), hc = histogram(cpu, bins, lo, hi);
  int64_t differ = 0;
  for (size_t b = 0; b < hg.size(); ++b) differ += std::abs(hg[b] - hc[b]);
  MESSAGE(what, ": ", moved, " of ", gpu.size(), " numbers in another bin on the GPU");
  CHECK(differ <= 2 * moved);
}

const ThreeTokenVariant kText{.causal = true, .scaled = true};
const ThreeTokenVariant kVariants[] = {kText, {.causal = false, .scaled = true}, {.causal = true, .scaled = false}};

}  // namespace

TEST_CASE("labs on cuda: three_token inputs, scores and the three traces equal the CPU's") {
  const ThreeTokenInputs in = three_token_inputs(Device::cuda), in_cpu = three_token_inputs();
  for (const Tensor* t : {&in.Q, &in.K, &in.V}) {
    CHECK(t->device() == Device::cuda);
    CHECK(t->is_leaf());
    CHECK(t->requires_grad());
  }
  CHECK(in.Q.name() == "Q");
  LabDiff inputs("three_token inputs, dO and Q Kᵀ");
  inputs.tensor("Q", in.Q, in_cpu.Q);
  inputs.tensor("K", in.K, in_cpu.K);
  inputs.tensor("V", in.V, in_cpu.V);
  inputs.tensor("dO", three_token_dO(Device::cuda), three_token_dO());
  inputs.tensor("Q Kᵀ", three_token_scores(Device::cuda), three_token_scores());
  inputs.report();

  for (const ThreeTokenVariant& v : kVariants) {
    CAPTURE(v.name());
    LabDiff diff("three_token_trace (" + v.name() + ")");
    const AttentionTrace gpu = three_token_trace(v, Device::cuda), cpu = three_token_trace(v);
    compare_traces(diff, "", gpu, cpu);
    diff.report();
  }

  // The text's numbers, read from the GPU's trace.
  const AttentionTrace t = three_token_trace(kText, Device::cuda);
  check_text(std::exp(t.S.at({1, 1})), 2.028);
  check_text(std::exp(t.S.at({2, 2})), 4.113);
  check_text(row(t.P, 0), {1.0, 0.0, 0.0});
  check_text(row(t.O, 0), {1.0, 0.0});
  check_text(row(t.P, 1), {0.330, 0.670, 0.0});
  check_text(row(t.P, 2), {0.248, 0.248, 0.503});
  check_text(row(t.O, 2), {1.759, 2.007});
  CHECK(std::isinf(t.S.at({0, 1})));
  CHECK(t.P.at({0, 1}) == 0.0);
  const AttentionTrace sharp = three_token_trace(kVariants[2], Device::cuda);
  check_text(sharp.S.at({2, 2}) - sharp.S.at({2, 0}), 1.0);
  check_text(sharp.P.at({2, 2}), 0.576);
  check_text(row(sharp.O, 2), {1.940, 2.152});
}

TEST_CASE("labs on cuda: three_token backward — formula, fused tape, primitive tape, finite differences") {
  for (const ThreeTokenVariant& v : kVariants) {
    CAPTURE(v.name());
    const ThreeTokenBackward gpu = three_token_backward(v, {}, {}, Device::cuda), cpu = three_token_backward(v);
    LabDiff diff("three_token_backward (" + v.name() + ")");
    compare_traces(diff, "trace.", gpu.trace, cpu.trace);
    diff.tensor("J3", gpu.J3, cpu.J3);
    diff.tensor("J3 g3", gpu.Jg3, cpu.Jg3);
    for (const auto& [name, g, c] : {std::tuple{"dS", &gpu.dS, &cpu.dS}, std::tuple{"dQ", &gpu.dQ, &cpu.dQ},
                                     std::tuple{"dK", &gpu.dK, &cpu.dK}, std::tuple{"dV", &gpu.dV, &cpu.dV}}) {
      const std::string n = name;
      diff.tensor(n + " formula", g->formula, c->formula);
      diff.tensor(n + " tape", g->tape, c->tape);
      diff.tensor(n + " finite diff.", g->numeric, c->numeric, /*on_device=*/false, kNumericTolerance);
      if (n != "dS") diff.tensor(n + " primitive tape", g->primitive, c->primitive);
      // The lab's own bound between the methods holds on the GPU too.
      CHECK(g->max_diff() <= 1e-8);
    }
    diff.report();
    CHECK(gpu.steps == cpu.steps);
    CHECK(gpu.tape_listing == cpu.tape_listing);
    CHECK(max_abs_diff(gpu.dK.formula, zeros({3, 2}, DType::f64)) > 0.1);  // not all zeros
  }

  const ThreeTokenBackward b = three_token_backward(kText, {}, {}, Device::cuda);
  check_text(b.trace.D.at({2, 0}), 2.007);
  check_text(row(b.trace.dS, 2), {-0.498, -0.002, 0.500});
  check_text(row(b.trace.dQ, 2), {0.001, 0.352});
  check_text(b.Jg3.to_vector(), {-0.498, -0.002, 0.500});
  CHECK(b.steps == 8);
}

TEST_CASE("labs on cuda: three_token --step, the observer sees device tensors equal to the CPU's") {
  struct Seen {
    std::vector<std::string> ops;
    std::vector<Tensor> grads;  // each step's incoming, then its outgoing gradients
    std::vector<std::string> names;
  };
  auto watch = [](Seen& seen, Device device) {
    return three_token_backward(
        kText,
        [&seen](const BackwardStep& s) {
          seen.ops.push_back(s.op);
          for (size_t k = 0; k < s.grad_outputs.size(); ++k) {
            seen.grads.push_back(s.grad_outputs[k]);
            seen.names.push_back(fmt::format("step {} {} in: dL/d{}", seen.ops.size(), s.op, s.output_labels[k]));
          }
        },
        [&seen](const BackwardStep& s) {
          for (size_t k = 0; k < s.grad_inputs.size(); ++k) {
            if (!s.grad_inputs[k].defined()) continue;
            seen.grads.push_back(s.grad_inputs[k]);
            seen.names.push_back(fmt::format("step {} {} out: dL/d{}", seen.ops.size(), s.op, s.input_labels[k]));
          }
        },
        device);
  };
  Seen gpu, cpu;
  const ThreeTokenBackward b = watch(gpu, Device::cuda);
  watch(cpu, Device::cpu);
  CHECK(b.steps == 8);
  CHECK(gpu.ops == cpu.ops);
  CHECK(gpu.names == cpu.names);
  REQUIRE(gpu.grads.size() == cpu.grads.size());
  LabDiff diff("three_token --step (causal, scaled): every gradient the observer sees");
  for (size_t i = 0; i < gpu.grads.size(); ++i) diff.tensor(gpu.names[i], gpu.grads[i], cpu.grads[i]);
  diff.report();
}

TEST_CASE("labs on cuda: lookup, the soft lookup for every c the lab prints, and the argmax") {
  const LookupTable t = lookup_table(Device::cuda);
  CHECK(t.q.device() == Device::cuda);
  CHECK(t.K.device() == Device::cuda);
  CHECK(t.V.device() == Device::cuda);
  LabDiff diff("lookup soft_lookup (c = 0 ... 1000)");
  for (double c : {0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1000.0}) {
    CAPTURE(c);
    const SoftLookup gpu = soft_lookup(c, Device::cuda), cpu = soft_lookup(c);
    const std::string at = fmt::format(" (c = {:g})", c);
    diff.tensor("scores" + at, gpu.scores, cpu.scores);
    diff.tensor("weights" + at, gpu.weights, cpu.weights);
    diff.tensor("output" + at, gpu.output, cpu.output);
    CHECK(gpu.fused_diff < 1e-12);  // the same lookup by the attention op, on the GPU
  }
  diff.report();
  CHECK(argmax_lookup(Device::cuda) == std::vector<double>{3, 3});

  const SoftLookup one = soft_lookup(1.0, Device::cuda), ten = soft_lookup(10.0, Device::cuda),
                   flat = soft_lookup(0.0, Device::cuda);
  check_text(one.scores.to_vector(), {0.707, 0.707, 1.414});
  check_text(one.weights.to_vector(), {0.248, 0.248, 0.503});
  check_text(one.output.to_vector(), {1.759, 2.007});
  check_text(ten.weights.to_vector(), {0.001, 0.001, 0.998});
  check_text(ten.output.to_vector(), {2.996, 2.997});
  check_text(flat.weights.to_vector(), {0.333, 0.333, 0.333});
  check_text(flat.output.to_vector(), {1.333, 1.667});
}

TEST_CASE("labs on cuda: shapes, every step's shape, the view that fails, and the layer's output") {
  const MultiHeadShapes gpu = multihead_shapes(2, 16, 256, 8, 0, Device::cuda), cpu = multihead_shapes(2, 16, 256, 8, 0);
  REQUIRE(gpu.steps.size() == cpu.steps.size());
  for (size_t i = 0; i < gpu.steps.size(); ++i) {
    CAPTURE(gpu.steps[i].what);
    CHECK(gpu.steps[i].what == cpu.steps[i].what);
    CHECK(gpu.steps[i].measured == gpu.steps[i].expected);
    CHECK(gpu.steps[i].measured == cpu.steps[i].measured);
    CHECK(gpu.steps[i].contiguous == cpu.steps[i].contiguous);
  }
  CHECK(gpu.view_failed);
  CHECK(gpu.view_error == cpu.view_error);
  CHECK(gpu.view_shares_storage);
  CHECK(gpu.reshape_copied);
  CHECK(gpu.reshaped == Shape{2, 16, 256});
  CHECK(gpu.fused_vs_hand <= 1e-12);
  CHECK(gpu.per_head_writes <= 1e-12);
  LabDiff diff("shapes multihead_shapes(2, 16, 256, 8, seed 0)");
  diff.tensor("out = wo(y.reshape(B, T, d))", gpu.out, cpu.out);
  diff.report();
}

TEST_CASE("labs on cuda: saturation, 5000 draws, seed 0") {
  const Saturation gpu = saturation(5000, 0, 128, 16, Device::cuda), cpu = saturation(5000, 0);
  LabDiff diff("saturation (5000 draws, d_k = 128, 16 keys, seed 0)");
  for (const auto& [side, g, c] : {std::tuple{"unscaled", &gpu.unscaled, &cpu.unscaled},
                                   std::tuple{"scaled", &gpu.scaled, &cpu.scaled}}) {
    const std::string s = side;
    diff.numbers(s + " largest weight of each draw", g->max_weights, c->max_weights);
    diff.number(s + " median largest weight", g->median_max_weight, c->median_max_weight);
    diff.number(s + " mean entropy", g->mean_entropy, c->mean_entropy);
    diff.number(s + " score std", g->score_std, c->score_std);
    check_histograms(s + " histogram of the largest weights", g->max_weights, c->max_weights, 10, 0.0, 1.0);
  }
  diff.report();
  CHECK(std::abs(gpu.unscaled.median_max_weight - 0.978) <= 0.02);
  CHECK(std::abs(gpu.unscaled.mean_entropy - 0.28) <= 0.02);
  CHECK(std::abs(gpu.scaled.median_max_weight - 0.224) <= 0.02);
  CHECK(std::abs(gpu.scaled.mean_entropy - 2.36) <= 0.02);
  CHECK(std::abs(gpu.unscaled.score_std - std::sqrt(128.0)) < 0.3);
  CHECK(std::abs(gpu.scaled.score_std - 1.0) < 0.03);
}

TEST_CASE("labs on cuda: permutation, every order's outputs and gradients, and the two sentences") {
  LabDiff diff("permutation (three tokens in 6 orders, random Q, K, V in 5 orders, the two sentences)");
  auto compare = [&diff](const std::string& what, const PermutationCheck& gpu, const PermutationCheck& cpu) {
    REQUIRE(gpu.signals.size() == cpu.signals.size());
    for (size_t s = 0; s < gpu.signals.size(); ++s) {
      const SignalCheck &g = gpu.signals[s], &c = cpu.signals[s];
      REQUIRE(g.orders.size() == c.orders.size());
      for (size_t i = 0; i < g.orders.size(); ++i) {
        const std::string at = fmt::format("{}, {}, order {}: ", what, order_signal_name(g.signal), order_str(g.orders[i].order));
        diff.tensor(at + "O", g.orders[i].run.O, c.orders[i].run.O);
        diff.tensor(at + "dQ", g.orders[i].run.dQ, c.orders[i].run.dQ);
        diff.tensor(at + "dK", g.orders[i].run.dK, c.orders[i].run.dK);
        diff.tensor(at + "dV", g.orders[i].run.dV, c.orders[i].run.dV);
      }
    }
    // The lab's checks hold on the GPU too.
    CHECK(gpu.at(OrderSignal::none).outputs() <= 1e-12);
    CHECK(gpu.at(OrderSignal::none).gradients() <= 1e-12);
    for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
      CHECK(gpu.at(s).outputs() >= 1e-3);
  };
  compare("three tokens", permutation_check(three_token_attention_inputs(0, Device::cuda), all_orders(3)),
          permutation_check(three_token_attention_inputs(0), all_orders(3)));
  Generator gen(5);
  const std::vector<Order> orders = random_orders(6, 5, gen);
  compare("random", permutation_check(random_attention_inputs(6, 8, 0, Device::cuda), orders),
          permutation_check(random_attention_inputs(6, 8, 0), orders));

  const PressureLimit gpu = pressure_limit(0, 4, Device::cuda), cpu = pressure_limit(0);
  for (size_t s = 0; s < gpu.pairs.size(); ++s) {
    const std::string at = order_signal_name(gpu.pairs[s].signal);
    diff.tensor("sentence a, " + at, gpu.pairs[s].a.O, cpu.pairs[s].a.O);
    diff.tensor("sentence b, " + at, gpu.pairs[s].b.O, cpu.pairs[s].b.O);
  }
  diff.report();
  CHECK(gpu.at(OrderSignal::none).max_diff() <= 1e-12);
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
    CHECK(gpu.at(s).max_diff() >= 1e-3);
}

#endif  // HANDGRAD_WITH_LABKIT
