// three_token — Section 3's worked example: three tokens, d_k = d_v = 2, in float64.
// The forward (causal, then without the mask, then without the scale), the geometry, and the
// backward pass of L = o_{3,2} computed by the formula, the tape and finite differences.
// --step walks the backward one tape entry at a time. --graph FILE.dot draws its graph.
// --device cuda runs it all on the GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "report.h"
#include "three_token_case.h"

using namespace hg;
using namespace hg::lab;

namespace {

std::vector<double> row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

void forward_case(Report& rep, const AttentionTrace& t) {
  rep.matrix("S (scores, scaled and masked)", t.S);
  rep.matrix("P = softmax(S) (weights)", t.P);
  rep.matrix("O = P V (outputs)", t.O);
}

// Prints one step of the backward through the primitive graph; pauses when asked to.
struct Stepper {
  Report& rep;
  bool pause;
  int n = 0;

  void before(const BackwardStep& s) {
    ++n;
    rep.text(fmt::format("\n-- step {}: tape entry #{} {}  ({}) -> ({})", n, s.entry, s.op, fmt::join(s.input_labels, ", "),
                         fmt::join(s.output_labels, ", ")));
    if (!s.rule.empty()) rep.text("   " + s.rule);
    std::vector<std::string> names;
    for (const std::string& l : s.output_labels) names.push_back("dL/d" + l);
    rep.matrices(fmt::format("step {} in", n), names, s.grad_outputs);
    if (pause) {
      fmt::print("   [Enter: run this step's backward] ");
      std::fflush(stdout);
      std::string line;
      std::getline(std::cin, line);
    }
  }

  void after(const BackwardStep& s) {
    std::vector<std::string> names;
    std::vector<Tensor> grads;
    for (size_t k = 0; k < s.grad_inputs.size(); ++k) {
      if (!s.grad_inputs[k].defined()) continue;
      names.push_back("dL/d" + s.input_labels[k]);
      grads.push_back(s.grad_inputs[k]);
    }
    if (!grads.empty()) rep.matrices(fmt::format("step {} out", n), names, grads);
  }
};

// Writes the DOT to `dot_path` and, when Graphviz is installed, renders it to an SVG beside it
// (FILE.dot -> FILE.svg, any other name gets .svg appended); reports which files it wrote.
void write_graph(Report& rep, const std::string& dot_path, const std::string& dot) {
  {
    std::ofstream f(dot_path);
    if (!(f << dot)) fail("three_token", "cannot write the graph to '{}'", dot_path);
  }
  rep.text("  wrote " + dot_path);
  std::filesystem::path svg = dot_path;
  if (svg.extension() == ".dot") svg.replace_extension(".svg");
  else svg += ".svg";
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    rep.text(fmt::format("  no SVG: Graphviz's dot is not on PATH (Debian: apt-get install graphviz); "
                         "where it is: dot -Tsvg {} -o {}", dot_path, svg.string()));
    return;
  }
  // Our own DOT failing to render is a bug in to_dot, not the user's: fail loudly.
  const std::string cmd = fmt::format("dot -Tsvg {} -o {}", shell_quote(dot_path), shell_quote(svg.string()));
  if (std::system(cmd.c_str()) != 0)
    fail("three_token", "Graphviz's dot could not render {} (its messages are above); the DOT file is there to inspect",
         dot_path);
  rep.text("  wrote " + svg.string() + " (rendered by Graphviz's dot)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Section 3's worked example: three tokens, the causal mask, the scale, and the backward pass of "
               "L = o_{3,2} by formula, tape and finite differences."};
  bool step = false, no_mask = false, no_scale = false;
  Device device = Device::cpu;
  std::string json, graph;
  app.add_flag("--step", step, "walk the backward one tape entry at a time (pauses when stdout is a terminal)");
  app.add_flag("--no-mask", no_mask, "step through / report the backward of the variant without the causal mask");
  app.add_flag("--no-scale", no_scale, "step through / report the backward of the variant without 1/sqrt(d_k)");
  add_device_option(app, device);
  add_json_option(app, json);
  app.add_option("--graph", graph,
                 "write the primitive graph of L = o_{3,2} (after its backward) as Graphviz DOT to this file, and "
                 "an SVG beside it when Graphviz's dot is installed")
      ->check(writable_file());
  CLI11_PARSE(app, argc, argv);

  return run_lab("three_token", json, device, [&](Report& rep) {
    const ThreeTokenInputs in = three_token_inputs(device);

    rep.section("the three tokens (projected vectors taken directly)");
    rep.matrix("Q", in.Q, 0);
    rep.matrix("K", in.K, 0);
    rep.matrix("V", in.V, 0);

    rep.section("scores");
    const AttentionTrace causal = three_token_trace({.causal = true, .scaled = true}, device);
    const AttentionTrace open = three_token_trace({.causal = false, .scaled = true}, device);
    const AttentionTrace sharp = three_token_trace({.causal = true, .scaled = false}, device);
    rep.matrix("Q Kᵀ", three_token_scores(device), 0);
    rep.value("√d_k = 1 / scale", 1.0 / causal.scale, 1.414);
    rep.matrix("S = Q Kᵀ / √2 (no mask)", open.S);
    std::vector<double> distinct = open.S.to_vector();
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end(),
                               [](double a, double b) { return std::abs(a - b) < 1e-12; }),
                   distinct.end());
    std::vector<double> exps;
    for (double s : distinct) exps.push_back(std::exp(s));
    rep.values("the distinct scaled scores", distinct, {0.0, 0.707, 1.414});
    rep.values("their exponentials", exps, {1.0, 2.028, 4.113});

    rep.section("the causal case");
    forward_case(rep, causal);
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
    forward_case(rep, open);
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
    forward_case(rep, sharp);
    rep.value("row 3: gap s33 - s31, scaled", causal.S.at({2, 2}) - causal.S.at({2, 0}), 0.707);
    rep.value("row 3: gap s33 - s31, unscaled", sharp.S.at({2, 2}) - sharp.S.at({2, 0}), 1.0);
    rep.value("row 3 weight on v3, scaled", causal.P.at({2, 2}), 0.503);
    rep.value("row 3 weight on v3, unscaled", sharp.P.at({2, 2}), 0.576);
    rep.values("o3, unscaled", row(sharp.O, 2), {1.940, 2.152});

    // ---------------------------------------------------------------- the backward pass
    const ThreeTokenVariant variant{.causal = !no_mask, .scaled = !no_scale};
    const ThreeTokenBackward bw = three_token_backward(variant, {}, {}, device);
    const AttentionTrace& t = bw.trace;
    // Row 3 sees every key, so the mask changes nothing in this backward: the text's numbers hold
    // for both scaled variants; without the scale they do not apply.
    auto text = [&](std::vector<double> v) { return variant.scaled ? v : std::vector<double>{}; };
    rep.section(fmt::format("backward of L = o_3,2 ({})", variant.name()));
    rep.value("L = o_3,2", t.O.at({2, 1}), variant.scaled ? std::optional<double>(2.007) : std::nullopt);
    rep.matrix("dO = dL/dO", t.dO, 0);
    rep.matrix("g = dP = dO Vᵀ", t.dP);
    rep.matrix("ḡ = D = rowsum(P ∘ dP)", t.D);
    rep.value("ḡ3 (= L: the current average)", t.D.at({2, 0}), variant.scaled ? std::optional<double>(2.007) : std::nullopt);
    rep.matrix("dS = P ∘ (g − ḡ)", t.dS);
    rep.values("dS row 3", row(t.dS, 2), text({-0.498, -0.002, 0.500}));
    rep.matrix("J3 = diag(p3) − p3 p3ᵀ (row 3's softmax Jacobian)", bw.J3);
    rep.values("J3 · g3", bw.Jg3.to_vector(), text({-0.498, -0.002, 0.500}));
    rep.tolerance("|J3 g3 − dS row 3|", max_abs_diff(bw.Jg3, t.dS.select(0, 2)), 1e-12);
    rep.matrix("dQ = dS K · scale", t.dQ);
    rep.values("dQ row 3", row(t.dQ, 2), text({0.001, 0.352}));
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
    if (step) {
      const bool pause = stdout_is_terminal();
      rep.text(pause ? "Stepping through the backward: press Enter before each step."
                     : "Stepping through the backward (stdout is not a terminal: no pauses).");
      Stepper s{rep, pause};
      three_token_backward(
          variant, [&s](const BackwardStep& x) { s.before(x); }, [&s](const BackwardStep& x) { s.after(x); }, device);
      rep.text(fmt::format("\n{} steps: the gradients now sit in Q.grad, K.grad and V.grad.", s.n));
    } else {
      rep.text(fmt::format("({} steps; run with --step to walk them one at a time)", bw.steps));
    }

    if (!graph.empty()) {
      rep.section(fmt::format("the graph of L = o_3,2 ({}), drawn", variant.name()));
      write_graph(rep, graph, three_token_graph_dot(variant, device));
    }
  });
}
