// labs/three_token_report.cpp — what three_token prints (and the live page shows): the scores, each
// variant's forward beside the text's numbers, and the backward of one variant three ways.
#include "three_token_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace hg::lab {

namespace {

std::vector<double> row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

void forward_case(Report& rep, const ThreeTokenVariant& v, const AttentionTrace& t) {
  rep.matrix(fmt::format("S ({})", v.scores_label()), t.S);
  rep.matrix("P = softmax(S) (weights)", t.P);
  rep.matrix("O = P V (outputs)", t.O);
}

// The text's case, variant by variant, beside the text's numbers: the causal case and its geometry,
// without the mask, without the scale.
void text_forward(Report& rep, const ThreeTokenInputs& in, const std::vector<ThreeTokenVariant>& variants,
                  const AttentionTrace& causal, const AttentionTrace& open, const AttentionTrace& sharp) {
  const ThreeTokenVariant &kCausal = variants[0], &kOpen = variants[1], &kSharp = variants[2];
  rep.section("the causal case");
  forward_case(rep, kCausal, causal);
  rep.values("o1 (copies v1)", row(causal.O, 0), {1.0, 0.0});
  rep.values("row 2 weights", {causal.P.at({1, 0}), causal.P.at({1, 1})}, {0.330, 0.670});
  rep.values("row 3 weights", row(causal.P, 2), {0.248, 0.248, 0.503});
  rep.values("o3", row(causal.O, 2), {1.759, 2.007});

  rep.section("the geometry");
  const std::vector<double> v1 = row(in.V, 0), v2 = row(in.V, 1), v3 = row(in.V, 2);
  const double a = causal.P.at({1, 0}), b = causal.P.at({1, 1});
  const std::vector<double> o2 = row(causal.O, 1);
  rep.text(fmt::format("  o2 = {:.3f} v1 + {:.3f} v2 = ({:.3f}, {:.3f}): on the segment v1-v2, {:.3f} of the way from v1",
                       a, b, a * v1[0] + b * v2[0], a * v1[1] + b * v2[1], b));
  rep.tolerance("|o2 - (P21 v1 + P22 v2)|",
                std::hypot(o2[0] - (a * v1[0] + b * v2[0]), o2[1] - (a * v1[1] + b * v2[1])), 1e-12);
  const std::vector<double> p3 = row(causal.P, 2), o3 = row(causal.O, 2);
  rep.value("row 3 weights: sum", p3[0] + p3[1] + p3[2], 1.0);
  rep.value("row 3 weights: smallest (> 0: inside)", std::min({p3[0], p3[1], p3[2]}));
  std::vector<double> dist;
  for (const auto& vj : {v1, v2, v3}) dist.push_back(std::hypot(o3[0] - vj[0], o3[1] - vj[1]));
  rep.values("distance from o3 to v1, v2, v3", dist);
  const size_t nearest = static_cast<size_t>(std::min_element(dist.begin(), dist.end()) - dist.begin());
  rep.fact("value nearest to o3", fmt::format("v{}", nearest + 1), std::string("v3"));

  rep.section("without the mask");
  forward_case(rep, kOpen, open);
  std::vector<double> p1 = row(open.P, 0), p2 = row(open.P, 1);
  rep.values("row 1 weights", p1);
  rep.values("row 2 weights", p2);
  rep.tolerance("rows 1, 2 mirror: |P1[2,1,3] - P2|",
                std::max({std::abs(p1[1] - p2[0]), std::abs(p1[0] - p2[1]), std::abs(p1[2] - p2[2])}), 1e-15);
  rep.values("o1", row(open.O, 0));
  rep.values("o2 (differs: v1 and v2 differ)", row(open.O, 1));
  rep.tolerance("row 3 unchanged: |P3 - P3 causal|", max_abs_diff(open.P.select(0, 2), causal.P.select(0, 2)), 1e-15);
  rep.values("row 3 weights", row(open.P, 2), {0.248, 0.248, 0.503});
  rep.values("o3", row(open.O, 2), {1.759, 2.007});

  rep.section("without the scale");
  forward_case(rep, kSharp, sharp);
  rep.value("row 3: gap s33 - s31, scaled", causal.S.at({2, 2}) - causal.S.at({2, 0}), 0.707);
  rep.value("row 3: gap s33 - s31, unscaled", sharp.S.at({2, 2}) - sharp.S.at({2, 0}), 1.0);
  rep.value("row 3 weight on v3, scaled", causal.P.at({2, 2}), 0.503);
  rep.value("row 3 weight on v3, unscaled", sharp.P.at({2, 2}), 0.576);
  rep.values("o3, unscaled", row(sharp.O, 2), {1.940, 2.152});
}

}  // namespace

// The scores and each variant's forward (`variants`: causal, without the mask, without the scale).
void three_token_forward_report(Report& rep, const ThreeTokenInputs& in, const std::vector<ThreeTokenVariant>& variants,
                    Device device) {
  const ThreeTokenData& data = variants[0].data;
  const bool text_case = data.is_text();
  auto text_value = [&](double v) { return text_case ? std::optional<double>(v) : std::nullopt; };
  auto text_values = [&](std::vector<double> v) { return text_case ? v : std::vector<double>{}; };
  const ThreeTokenVariant &kCausal = variants[0], &kOpen = variants[1], &kSharp = variants[2];
  const AttentionTrace causal = three_token_trace(kCausal, device);
  const AttentionTrace open = three_token_trace(kOpen, device);
  const AttentionTrace sharp = three_token_trace(kSharp, device);
  rep.section("scores");
  rep.matrix("Q Kᵀ", three_token_scores(device, data), text_case ? 0 : 3);
  rep.value("√d_k = 1 / scale", 1.0 / causal.scale, text_value(1.414));
  rep.matrix("S = Q Kᵀ / √d_k (no mask)", open.S);
  std::vector<double> distinct = open.S.to_vector();
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end(),
                             [](double a, double b) { return std::abs(a - b) < 1e-12; }),
                 distinct.end());
  std::vector<double> exps;
  for (double s : distinct) exps.push_back(std::exp(s));
  rep.values("the distinct scaled scores", distinct, text_values({0.0, 0.707, 1.414}));
  rep.values("their exponentials", exps, text_values({1.0, 2.028, 4.113}));

  if (!text_case) {  // a learner's own case: each variant's forward, without the text's comparisons
    rep.section("the causal case");
    forward_case(rep, kCausal, causal);
    rep.section("without the mask");
    forward_case(rep, kOpen, open);
    rep.section("without the scale");
    forward_case(rep, kSharp, sharp);
  } else {
    text_forward(rep, in, variants, causal, open, sharp);
  }
}

// The backward pass of the chosen variant, each gradient three ways (and a fourth), and its tape.
void three_token_backward_report(Report& rep, const ThreeTokenVariant& variant, bool step, Device device) {
  const ThreeTokenData& data = variant.data;
  const bool text_case = data.is_text();
  const ThreeTokenBackward bw = three_token_backward(variant, {}, {}, device);
  const AttentionTrace& t = bw.trace;
  // The text's backward numbers are for its scaled case (with or without the mask: see
  // three_token_mask_effect); without the scale, or in another case, they do not apply.
  const bool text_backward = text_case && variant.scaled;
  auto text = [&](std::vector<double> v) { return text_backward ? v : std::vector<double>{}; };
  const int64_t r = data.row;
  const std::string Ls = data.loss_name(), ri = std::to_string(r + 1);
  rep.section(fmt::format("backward of L = {} ({})", Ls, variant.name()));
  rep.value("L = " + Ls, t.O.at({r, data.col}), text_backward ? std::optional<double>(2.007) : std::nullopt);
  rep.text(fmt::format("  {}", three_token_mask_effect(variant, device)));
  rep.matrix("dO = dL/dO", t.dO, 0);
  rep.matrix("g = dP = dO Vᵀ", t.dP);
  rep.matrix("ḡ = D = rowsum(P ∘ dP)", t.D);
  rep.value(fmt::format("ḡ{} (= L: the current average)", ri), t.D.at({r, 0}),
            text_backward ? std::optional<double>(2.007) : std::nullopt);
  rep.matrix("dS = P ∘ (g − ḡ)", t.dS);
  rep.values("dS row " + ri, row(t.dS, r), text({-0.498, -0.002, 0.500}));
  rep.matrix(fmt::format("J{0} = diag(p{0}) − p{0} p{0}ᵀ (row {0}'s softmax Jacobian)", ri), bw.J3);
  rep.values(fmt::format("J{0} · g{0}", ri), bw.Jg3.to_vector(), text({-0.498, -0.002, 0.500}));
  rep.tolerance(fmt::format("|J{0} g{0} − dS row {0}|", ri), max_abs_diff(bw.Jg3, t.dS.select(0, r)), 1e-12);
  rep.matrix("dQ = dS K · scale", t.dQ);
  rep.values("dQ row " + ri, row(t.dQ, r), text({0.001, 0.352}));
  rep.matrix("dK = dSᵀ Q · scale", t.dK);
  rep.matrix("dV = Pᵀ dO", t.dV);

  rep.section("each gradient three ways (and a fourth: the tape of primitive ops)");
  if (device != Device::cpu)
    rep.text(fmt::format("  finite differences: each input is nudged on the CPU (element writes are CPU-only), then "
                         "moved to {} where L is evaluated",
                         device_name(device)));
  const std::vector<std::string> ways = {"formula", "tape", "finite diff.", "primitive tape"};
  rep.matrices("dS", {"formula", "tape (softmax entry)", "finite diff."}, {bw.dS.formula, bw.dS.tape, bw.dS.numeric});
  rep.tolerance("dS: largest disagreement", bw.dS.max_diff(), 1e-8);
  for (const auto& [name, w] : {std::pair{"dQ", &bw.dQ}, std::pair{"dK", &bw.dK}, std::pair{"dV", &bw.dV}}) {
    rep.matrices(name, ways, {w->formula, w->tape, w->numeric, w->primitive});
    rep.tolerance(fmt::format("{}: largest disagreement", name), w->max_diff(), 1e-8);
  }

  rep.section("the tape of attention from primitive ops (backward walks it bottom to top)");
  for (const std::string& line : bw.tape_listing) rep.text("  " + line);
  if (!step) rep.text(fmt::format("({} steps; run with --step to walk them one at a time, or --html FILE)", bw.steps));
}

}  // namespace hg::lab
