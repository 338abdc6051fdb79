// The labs' numbers: each against the text's printed value (at the text's precision), and each
// gradient of the three-token example by formula, tape and finite differences against each other.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include <cmath>

#include "labs/lookup_case.h"
#include "labs/report.h"
#include "labs/saturation_case.h"
#include "labs/shapes_case.h"
#include "labs/three_token_case.h"
#include "labs/three_token_tangent.h"
#include "test_util.h"

using namespace hg;
using namespace hg::lab;
using hg::test::check_text;

namespace {

std::vector<double> row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

const ThreeTokenVariant kText{.causal = true, .scaled = true};
const ThreeTokenVariant kNoMask{.causal = false, .scaled = true};
const ThreeTokenVariant kNoScale{.causal = true, .scaled = false};

}  // namespace

TEST_CASE("three tokens, forward mode: along Q̇ = e₃₂ the tangent of L is the text's dQ₃,₂, and every tangent is its finite difference") {
  const ThreeTokenTangent t = three_token_tangent(kText, parse_direction("q32", kText.data));
  check_text(t.dL, 0.352);  // the text's dQ row 3 is (0.001, 0.352): the same number, forwards
  CHECK(std::abs(t.dL - t.dL_reverse) < 1e-12);
  CHECK(test::max_abs_diff(t.trace.dotO, t.engine) < 1e-14);
  CHECK(test::max_abs_diff(t.trace.dotO, t.numeric_O) < 1e-8);
  CHECK(test::max_abs_diff(t.trace.dotP, t.numeric_P) < 1e-8);
  // Q̇ = e₃₂ moves query 3 only: rows 1 and 2 of Ṡ, Ṗ and Ȯ stay 0
  for (int64_t i : {0, 1}) {
    CHECK(test::all_zero(t.trace.dotS.select(0, i)));
    CHECK(test::all_zero(t.trace.dotO.select(0, i)));
  }
  // V̇ = e₃₁ moves only what reads v₃: Ṡ is 0, Ȯ = P V̇, whose row i is p_i3 e₁
  const ThreeTokenTangent tv = three_token_tangent(kText, parse_direction("v31", kText.data));
  CHECK(test::all_zero(tv.trace.dotS));
  CHECK(tv.trace.dotO.at({2, 0}) == doctest::Approx(three_token_trace(kText).P.at({2, 2})).epsilon(1e-14));
  CHECK(std::abs(tv.dL - tv.dL_reverse) < 1e-12);
  CHECK(parse_direction("k1,2", kText.data).name() == "K̇ = e₁₂");
  CHECK_THROWS_WITH_AS(parse_direction("q42", kText.data), doctest::Contains("outside Q, which is (3, 2)"), Error);
  CHECK_THROWS_WITH_AS(parse_direction("x11", kText.data), doctest::Contains("not an entry of Q, K or V"), Error);
}

TEST_CASE("three tokens, causal and scaled: the text's weights and outputs") {
  AttentionTrace t = three_token_trace(kText);
  check_text(1.0 / t.scale, 1.414);
  check_text(std::exp(t.S.at({1, 1})), 2.028);  // e^0.707
  check_text(std::exp(t.S.at({2, 2})), 4.113);  // e^1.414
  check_text(row(t.P, 0), {1.0, 0.0, 0.0});      // token 1 can only copy v1
  check_text(row(t.O, 0), {1.0, 0.0});
  check_text(row(t.P, 1), {0.330, 0.670, 0.0});
  check_text(row(t.P, 2), {0.248, 0.248, 0.503});
  check_text(row(t.O, 2), {1.759, 2.007});
  CHECK(std::isinf(t.S.at({0, 1})));  // the future is −inf, its weight exactly 0
  CHECK(t.P.at({0, 1}) == 0.0);
  // o2 = 0.330 v1 + 0.670 v2, on the segment v1-v2
  CHECK(t.O.at({1, 0}) == doctest::Approx(t.P.at({1, 0}) * 1.0));
  CHECK(t.O.at({1, 1}) == doctest::Approx(t.P.at({1, 1}) * 2.0));
}

TEST_CASE("three tokens without the mask: rows 1 and 2 mirror each other, row 3 is unchanged") {
  AttentionTrace open = three_token_trace(kNoMask), causal = three_token_trace(kText);
  std::vector<double> p1 = row(open.P, 0), p2 = row(open.P, 1);
  CHECK(p1[0] == doctest::Approx(p2[1]).epsilon(1e-15));
  CHECK(p1[1] == doctest::Approx(p2[0]).epsilon(1e-15));
  CHECK(p1[2] == doctest::Approx(p2[2]).epsilon(1e-15));
  CHECK(p1[0] != doctest::Approx(p1[1]));                     // not trivially uniform
  CHECK(open.O.at({0, 0}) != doctest::Approx(open.O.at({1, 0})));  // outputs differ: v1 ≠ v2
  CHECK(max_abs_diff(open.P.select(0, 2), causal.P.select(0, 2)) == 0.0);
  check_text(row(open.O, 2), {1.759, 2.007});
}

TEST_CASE("three tokens without the scale: row 3 sharpens to 0.576 on v3, o3 = (1.940, 2.152)") {
  AttentionTrace t = three_token_trace(kNoScale);
  check_text(t.S.at({2, 2}) - t.S.at({2, 0}), 1.0);
  check_text(t.P.at({2, 2}), 0.576);
  check_text(row(t.O, 2), {1.940, 2.152});
}

TEST_CASE("three tokens, backward of L = o_{3,2}: the text's numbers") {
  ThreeTokenBackward b = three_token_backward(kText);
  const AttentionTrace& t = b.trace;
  check_text(t.D.at({2, 0}), 2.007);  // ḡ3 = the current o_{3,2}
  check_text(row(t.dS, 2), {-0.498, -0.002, 0.500});
  check_text(row(t.dQ, 2), {0.001, 0.352});
  // Only row 3 of dO is non-zero, so only row 3 of dS and dQ is.
  CHECK(row(t.dS, 0) == std::vector<double>{0, 0, 0});
  CHECK(row(t.dS, 1) == std::vector<double>{0, 0, 0});
  CHECK(row(t.dQ, 0) == std::vector<double>{0, 0});
  // The materialised Jacobian applied to g gives the row rule's dS row.
  REQUIRE(b.J3.shape() == Shape{3, 3});
  CHECK(max_abs_diff(b.Jg3, t.dS.select(0, 2)) < 1e-12);
  for (int64_t i = 0; i < 3; ++i) {  // each row of J sums to zero
    double s = 0;
    for (int64_t j = 0; j < 3; ++j) s += b.J3.at({i, j});
    CHECK(std::abs(s) < 1e-15);
  }
}

TEST_CASE("three tokens, backward: formula, tape and finite differences agree to 1e-8") {
  for (const ThreeTokenVariant& v : {kText, kNoMask, kNoScale}) {
    CAPTURE(v.name());
    ThreeTokenBackward b = three_token_backward(v);
    for (const auto& [name, w] : {std::pair{"dS", &b.dS}, std::pair{"dQ", &b.dQ}, std::pair{"dK", &b.dK},
                                  std::pair{"dV", &b.dV}}) {
      CAPTURE(name);
      REQUIRE(w->formula.defined());
      REQUIRE(w->tape.defined());
      REQUIRE(w->numeric.defined());
      CHECK(w->max_diff() <= 1e-8);
    }
    for (const Ways* w : {&b.dQ, &b.dK, &b.dV}) REQUIRE(w->primitive.defined());
    // The gradients are not all zero (agreement of zeros would prove nothing).
    CHECK(max_abs_diff(b.dK.formula, zeros({3, 2}, DType::f64)) > 0.1);
  }
}

TEST_CASE("three tokens, step-through: one tape entry per step, each seen before and after") {
  std::vector<std::string> ops_before, ops_after, rules;
  std::vector<Tensor> dS_from_steps;
  ThreeTokenBackward b = three_token_backward(
      kText,
      [&](const BackwardStep& s) {
        ops_before.push_back(s.op);
        rules.push_back(s.rule);
        CHECK(s.grad_inputs.empty());
        CHECK(s.grad_outputs.size() == s.output_labels.size());
      },
      [&](const BackwardStep& s) {
        ops_after.push_back(s.op);
        CHECK(s.grad_inputs.size() == s.input_labels.size());
        if (s.output_labels == std::vector<std::string>{"P"}) {
          CHECK(s.input_labels == std::vector<std::string>{"S"});
          dS_from_steps.push_back(s.grad_inputs[0]);
        }
      });
  // L <- select <- select <- matmul (P V) <- softmax <- masked_fill <- mul <- matmul (Q Kᵀ) <- transpose
  CHECK(b.steps == 8);
  CHECK(b.tape_listing.size() == 8);
  CHECK(ops_before == ops_after);
  REQUIRE(ops_before.size() == 8);
  CHECK(ops_before[3] == "softmax");
  CHECK(rules[3].find("rowsum") != std::string::npos);
  REQUIRE(dS_from_steps.size() == 1);
  CHECK(max_abs_diff(dS_from_steps[0], b.trace.dS) < 1e-12);
  // Without the mask and the scale the graph loses its masked_fill and mul entries.
  CHECK(three_token_backward({.causal = false, .scaled = false}).steps == 6);
}

TEST_CASE("lookup: the soft lookup and its two limits") {
  SoftLookup one = soft_lookup(1.0);
  check_text(one.weights.to_vector(), {0.248, 0.248, 0.503});
  check_text(one.output.to_vector(), {1.759, 2.007});
  CHECK(one.fused_diff < 1e-12);
  SoftLookup ten = soft_lookup(10.0);
  check_text(ten.weights.to_vector(), {0.001, 0.001, 0.998});
  check_text(ten.output.to_vector(), {2.996, 2.997});
  SoftLookup flat = soft_lookup(0.0);
  check_text(flat.weights.to_vector(), {0.333, 0.333, 0.333});
  check_text(flat.output.to_vector(), {1.333, 1.667});
  CHECK(hard_lookup("tank") == std::vector<double>{3, 3});
  CHECK(argmax_lookup() == std::vector<double>{3, 3});
  CHECK_THROWS_WITH_AS(hard_lookup("hose"), doctest::Contains("no key 'hose'"), Error);
}

TEST_CASE("shapes: every step has the text's shape; view after transpose fails, reshape works; fused == hand") {
  MultiHeadShapes m = multihead_shapes(2, 16, 256, 8, 0);
  CHECK(m.dk == 32);
  REQUIRE(m.steps.size() >= 10);
  for (const ShapeStep& s : m.steps) {
    CAPTURE(s.what);
    CHECK(s.measured == s.expected);
  }
  CHECK(expand_shape("(B, h, T, dk)", 2, 16, 256, 8, 32) == Shape{2, 8, 16, 32});
  CHECK(m.view_failed);
  CHECK(m.view_error.find("view") != std::string::npos);
  CHECK(m.view_error.find("reshape") != std::string::npos);  // the engine's message names the fix
  CHECK(m.view_shares_storage);
  CHECK(m.reshaped == Shape{2, 16, 256});
  CHECK(m.reshape_copied);
  CHECK(m.fused_vs_hand <= 1e-12);
  CHECK(m.per_head_writes <= 1e-12);
}

TEST_CASE("saturation: 5000 draws, seed 0, within 0.02 of the text's medians and means") {
  Saturation s = saturation(5000, 0);
  CHECK(std::abs(s.unscaled.median_max_weight - 0.978) <= 0.02);
  CHECK(std::abs(s.unscaled.mean_entropy - 0.28) <= 0.02);
  CHECK(std::abs(s.scaled.median_max_weight - 0.224) <= 0.02);
  CHECK(std::abs(s.scaled.mean_entropy - 2.36) <= 0.02);
  CHECK(s.scaled.mean_entropy < std::log(16.0));
  CHECK(std::abs(s.unscaled.score_std - std::sqrt(128.0)) < 0.3);
  CHECK(std::abs(s.scaled.score_std - 1.0) < 0.03);
  REQUIRE(s.scaled.max_weights.size() == 5000);
  int64_t n = 0;
  for (int64_t c : histogram(s.scaled.max_weights, 10, 0.0, 1.0)) n += c;
  CHECK(n == 5000);
  CHECK_THROWS_AS(saturation(0, 0), Error);
}


TEST_CASE("labs: a criterion is printed, kept in the JSON as {measured, op, bound, met} and counted when unmet") {
  Report rep("test");
  CHECK(rep.criterion("small", 1e-15, "<=", 1e-12));
  CHECK_FALSE(rep.criterion("large", 0.5, "<=", 1e-12));
  CHECK(rep.criterion("broken", 0.5, ">=", 1e-3));
  CHECK_FALSE(rep.criterion("nan", std::nan(""), ">=", 1e-3));  // a NaN meets no bound
  CHECK(rep.criteria_unmet() == 2);
  const nlohmann::json& c = rep.json()["criteria"];
  REQUIRE(c.size() == 4);
  CHECK(c["small"]["measured"] == 1e-15);
  CHECK(c["small"]["op"] == "<=");
  CHECK(c["small"]["bound"] == 1e-12);
  CHECK(c["small"]["met"] == true);
  CHECK(c["large"]["met"] == false);
  CHECK_THROWS_WITH_AS(rep.criterion("strict", 1.0, ">", 0.0), doctest::Contains("use \">=\", \"<=\" or \"==\""), Error);
  CHECK(rep.criterion("exactly", 32, "==", 32));
  CHECK_FALSE(rep.criterion("not exactly", 31, "==", 32));
  CHECK(c["exactly"]["op"] == "==");
  rep.criterion_not_applicable("needs training", "a short run");  // reported, never counted as met
  CHECK(rep.criteria_unmet() == 3);
  CHECK(rep.json()["criteria_not_applicable"]["needs training"] == "a short run");
  CHECK_FALSE(rep.json()["criteria"].contains("needs training"));
}

TEST_CASE("labs: criterion_when makes the check or records why not; too_short says how many steps it needs") {
  Report rep("test");
  CHECK(rep.criterion_when(true, "unused", "made", 1.0, ">=", 0.5));
  CHECK_FALSE(rep.criterion_when(true, "unused", "made, unmet", 0.1, ">=", 0.5));
  CHECK_FALSE(rep.criterion_when(false, too_short(30, 2000), "not made", 0.1, ">=", 0.5));
  CHECK(rep.criteria_unmet() == 1);  // only the check that was made and failed
  CHECK(rep.json()["criteria"].size() == 2);
  CHECK(rep.json()["criteria_not_applicable"]["not made"] == "not applicable at 30 steps (needs ≥ 2000)");
}

TEST_CASE("labs: the saturation histogram's bars tell small counts apart, and line up in columns") {
  const std::vector<std::string> lines = histogram_lines({1, 34, 97, 3375}, {0, 0, 0, 0}, "a", "b", 0.0, 1.0);
  REQUIRE(lines.size() == 5);
  auto bar_of = [](const std::string& line) {  // the left bar: after the bin's range, up to the first space
    const size_t p = line.find("    ") + 4;
    return line.substr(p, line.find(' ', p) - p);
  };
  CHECK(bar_of(lines[1]) == "▏");  // 1 of 3,375 over 28 columns: 0.07 eighths, drawn as one
  CHECK(bar_of(lines[2]) == "▎");  // 34: 2.3 eighths
  CHECK(bar_of(lines[3]) == "▊");  // 97: 6.4 eighths
  CHECK(bar_of(lines[4]) == "████████████████████████████");  // the largest: all 28 columns
}

TEST_CASE("labs: a value within the seed spread agrees only when it and the text's value both lie in it") {
  Report rep("test");
  rep.value_within_spread("both inside", 0.90, 0.87, 0.85, 0.92, "seeds");
  rep.value_within_spread("ours outside", 0.80, 0.87, 0.85, 0.92, "seeds");
  rep.value_within_spread("the text's outside", 0.90, 0.95, 0.85, 0.92, "seeds");
  rep.value_within_spread("nan", std::nan(""), 0.87, 0.85, 0.92, "seeds");
  // The text's 0.02 stands for 0.015-0.025: it meets a spread 0.0147-0.0168; 0.03 does not.
  rep.value_within_spread("rounded in", 0.0158, 0.02, 0.0147, 0.0168, "seeds");
  rep.value_within_spread("rounded out", 0.0158, 0.03, 0.0147, 0.0168, "seeds");
  CHECK(rep.compared() == 6);
  CHECK(rep.mismatches() == 4);
  const nlohmann::json& j = rep.json()["sections"]["main"];
  CHECK(j["both inside"]["agrees"] == true);
  CHECK(j["ours outside"]["agrees"] == false);
  CHECK(j["the text's outside"]["agrees"] == false);
  CHECK(j["both inside"]["seed_spread"][0] == 0.85);
  CHECK(j["both inside"]["seed_spread_source"] == "seeds");
  CHECK(j["rounded in"]["agrees"] == true);
  CHECK(j["rounded out"]["agrees"] == false);
}

TEST_CASE("labs: a spread measured at one run compares only that run; another prints the text's number, uncounted") {
  Report rep("test");
  const SeedSpread s{0.87, 0.85, 0.92, "seeds"};
  rep.value_within_spread("at the defaults", 0.80, s, true, "unused");
  rep.value_within_spread("a shorter run", 0.10, s, false, "the spread is of 2,000-step runs");
  CHECK(rep.compared() == 1);
  CHECK(rep.mismatches() == 1);  // 0.80 lies outside 0.85-0.92
  const nlohmann::json& j = rep.json()["sections"]["main"];
  CHECK(j["at the defaults"]["agrees"] == false);
  CHECK(j["at the defaults"]["seed_spread"][1] == 0.92);
  CHECK(j["a shorter run"]["text"] == 0.87);
  CHECK(j["a shorter run"]["measured"] == 0.10);
  CHECK(j["a shorter run"]["not_compared"] == "the spread is of 2,000-step runs");
  CHECK_FALSE(j["a shorter run"].contains("agrees"));
}

TEST_CASE("labs: --device takes cpu or cuda; cuda without a usable GPU is an error naming why, before any work") {
  Device d = Device::cpu;
  CLI::App app;
  add_device_option(app, d);
  const char* bad[] = {"lab", "--device", "gpu"};
  CHECK_THROWS_AS(app.parse(3, bad), CLI::ParseError);
  const char* good[] = {"lab", "--device", "cuda"};
  app.parse(3, good);
  CHECK(d == Device::cuda);
  CHECK(device_description(Device::cpu) == "cpu");
  const CudaBackend* cu = cuda_backend();
  if (cu && cu->device_available()) {
    CHECK(device_description(Device::cuda).find("cuda") == 0);
  } else {
    CHECK_THROWS_WITH_AS(device_description(Device::cuda), doctest::Contains("--device cuda: "), Error);
    bool ran = false;
    CHECK(run_lab("test", "", Device::cuda, [&](Report&) { ran = true; }) == kExitCannotRun);  // the environment cannot run it
    CHECK_FALSE(ran);
  }
}

#endif  // HANDGRAD_WITH_LABKIT
