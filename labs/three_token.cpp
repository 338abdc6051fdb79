// three_token — Section 3's worked example: three tokens, d_k = d_v = 2, in float64.
// The forward (causal, then without the mask, then without the scale), the geometry, and the
// backward pass of L = o₃,₂ computed by the formula, the tape and finite differences.
// --html FILE writes a page to step through it in a browser (--break NAME: with a backward
// deliberately wrong). --step walks the backward one tape entry at a time in the terminal.
// --live FILE writes the same page made live: Q, K and V editable, every number recomputed in the
// browser by the library built as WebAssembly. --graph FILE.dot|.svg|.png draws its graph. --loss and --q/--k/--v make other cases.
// --jvp q32 pushes it forwards along Q̇ = e₃₂ (forward mode). --device cuda runs it all on the GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "kit.h"
#include "report.h"
#include "three_token_case.h"
#include "three_token_report.h"
#include "three_token_tangent.h"

using namespace hg;
using namespace hg::lab;

namespace {

// "dL/dS", "dL/d(QKᵀ/√d_k)": a label that is more than a name is bracketed, so the d applies to all of it.
std::string d_of(const std::string& label) {
  bool plain = true;
  for (const char* op : {"/", "·", "+", "−", "-", " "}) plain = plain && label.find(op) == std::string::npos;  // UTF-8 whole
  return plain ? "dL/d" + label : "dL/d(" + label + ")";
}

// Prints one step of the backward through the primitive graph; pauses when asked to. After `q`
// the remaining steps run silently; at end of input they print without pausing.
struct Stepper {
  Report& rep;
  bool pause;
  int n = 0;
  bool quit = false;
  int quit_at = 0;  // the step at which q was typed

  void before(const BackwardStep& s) {
    ++n;
    if (quit) return;
    rep.text(fmt::format("\n-- step {}: tape entry #{} {}  ({}) -> ({})", n, s.entry, s.op, fmt::join(s.input_labels, ", "),
                         fmt::join(s.output_labels, ", ")));
    if (!s.rule.empty()) rep.text("   " + s.rule);
    std::vector<std::string> names;
    for (const std::string& l : s.output_labels) names.push_back(d_of(l));
    rep.matrices(fmt::format("step {} in", n), names, s.grad_outputs);
    if (pause) {
      const StepAnswer a = step_prompt(std::cin, std::cout);
      if (a == StepAnswer::quit) {
        quit = true;
        quit_at = n;
      }
      if (a == StepAnswer::end_of_input) pause = false;
    }
  }

  void after(const BackwardStep& s) {
    if (quit) return;
    std::vector<std::string> names;
    std::vector<Tensor> grads;
    for (size_t k = 0; k < s.grad_inputs.size(); ++k) {
      if (!s.grad_inputs[k].defined()) continue;
      names.push_back(d_of(s.input_labels[k]));
      grads.push_back(s.grad_inputs[k]);
    }
    if (!grads.empty()) rep.matrices(fmt::format("step {} out", n), names, grads);
  }
};

// The graph's file, in the format its extension names: .dot (Graphviz's text, as is), .svg or
// .png (rendered by Graphviz's dot, which must then be on PATH).
void write_graph(Report& rep, const std::string& path, const std::string& dot) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".dot") {
    write_file(path, dot, "--graph");
    rep.text("  wrote " + path + " (Graphviz's DOT; render it with dot -Tsvg)");
    return;
  }
  if (std::system("command -v dot >/dev/null 2>&1") != 0)
    fail("--graph", "{} needs Graphviz's dot to render {}, and it is not on PATH (Debian: apt-get install graphviz); "
         "or give a .dot file", path, ext);
  const std::filesystem::path source = std::filesystem::path(path).replace_extension(".dot.tmp");
  write_file(source.string(), dot, "--graph");
  // Our own DOT failing to render is a bug in to_dot, not the user's: fail loudly.
  const std::string cmd = fmt::format("dot -T{} {} -o {}", ext.substr(1), shell_quote(source.string()), shell_quote(path));
  const int status = std::system(cmd.c_str());
  std::error_code ec;
  std::filesystem::remove(source, ec);
  if (status != 0) fail("--graph", "Graphviz's dot could not write {} (its messages are above)", path);
  rep.text(fmt::format("  wrote {} (rendered by Graphviz's dot)", path));
}

// --graph's check: the extension says the format; any other is refused before any work.
CLI::Validator graph_format() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string ext = std::filesystem::path(text).extension().string();
        if (ext == ".dot" || ext == ".svg" || ext == ".png") return "";
        return fmt::format("'{}' {}; the graph is written as .dot (Graphviz's text), .svg or .png (rendered by "
                           "Graphviz), so end the name in one of them",
                           text, ext.empty() ? "has no extension" : "ends in '" + ext + "'");
      },
      "FILE.dot|.svg|.png");
}

// The case's numbers and the page's fault from the flags, checked before any work: false (and the
// error printed) for a bad one.
bool read_case(const std::string& q_text, const std::string& k_text, const std::string& v_text, const std::string& loss,
               const std::string& fault_text, const std::string& html, const std::string& jvp_text, ThreeTokenData& data,
               ThreeTokenFault& fault, std::optional<ThreeTokenDirection>& dir) {
  try {
  int64_t rows = 0, cols = 0;
  if (!q_text.empty()) {
    data.Q = parse_matrix("--q", q_text, rows, cols);
    data.T = rows;
    data.d_k = cols;
    if (k_text.empty()) data.K = data.Q;  // as in the text: the keys are the queries
  }
  if (!k_text.empty()) {
    data.K = parse_matrix("--k", k_text, rows, cols);
    if (rows != data.T || cols != data.d_k)
      fail("--k", "K is ({}, {}) and Q is ({}, {}); K needs Q's shape (one key per token, compared with each query in "
           "d_k = {} numbers)", rows, cols, data.T, data.d_k, data.d_k);
  }
  if (!v_text.empty()) {
    data.V = parse_matrix("--v", v_text, rows, cols);
    if (rows != data.T)
      fail("--v", "V has {} rows and Q has {}; V needs one row per token", rows, data.T);
    data.d_v = cols;
  } else if (data.T != 3) {
    fail("--v", "Q has {} rows, so the text's V (3 rows) does not fit; give --v with {} rows", data.T, data.T);
  }
  if (!loss.empty()) parse_loss(loss, data);
  else if (data.row >= data.T || data.col >= data.d_v)
    fail("--loss", "the text's L = o₃,₂ is outside O, which is ({}, {}); give --loss, e.g. --loss o11", data.T, data.d_v);
  if (!fault_text.empty()) {
    fault = parse_fault(fault_text);
    if (html.empty()) fail("--break", "'{}' breaks the page's backward; give --html FILE too", fault_text);
  }
  if (!jvp_text.empty()) dir = parse_direction(jvp_text, data);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return false;
  }
  return true;
}

// --step: the backward one tape entry at a time, before the rest of the report; false when the
// learner quit.
bool step_through(Report& rep, const ThreeTokenVariant& variant, Device device) {
  const ThreeTokenData& data = variant.data;
  const bool pause = stdout_is_terminal();
  rep.section(fmt::format("stepping through the backward of L = {} ({})", data.loss_name(), variant.name()));
  rep.text(pause ? "Press Enter before each step, q to quit; the full report follows the last step."
                 : "stdout is not a terminal: no pauses.");
  Stepper s{rep, pause};
  three_token_backward(
      variant, [&s](const BackwardStep& x) { s.before(x); }, [&s](const BackwardStep& x) { s.after(x); }, device);
  if (s.quit) {
    rep.text(fmt::format("\nquit at step {} of {} (the backward finished without printing the rest).", s.quit_at, s.n));
    return false;
  }
  rep.text(fmt::format("\n{} steps: the gradients now sit in Q.grad, K.grad and V.grad.", s.n));
  return true;
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"'Module 6: The transformer', Section 3 ('The causal case' to 'The backward pass, by hand'): "
               "three tokens, the causal mask, the scale, and the backward pass of L = o₃,₂ by formula, tape and "
               "finite differences (docs/texts.md)."};
  bool step = false, no_mask = false, no_scale = false;
  Device device = Device::cpu;
  std::string json, graph, html, live, fault_text, loss, q_text, k_text, v_text, jvp_text;
  app.add_flag("--step", step,
               "walk the backward one tape entry at a time (pauses when stdout is a terminal; q quits)");
  app.add_flag("--no-mask", no_mask, "step through / report the backward of the variant without the causal mask");
  app.add_flag("--no-scale", no_scale, "step through / report the backward of the variant without 1/sqrt(d_k)");
  add_device_option(app, device);
  add_json_option(app, json);
  app.add_option("--graph", graph,
                 "write the primitive graph of L (after its backward) to this file: .dot (Graphviz's DOT), or .svg / "
                 ".png (rendered by Graphviz's dot)")
      ->check(graph_format() & writable_file());
  app.add_option("--html", html,
                 "write a page to step through the backward in a browser: the graph, each step's formula and matrices, "
                 "finite differences beside each gradient, the three variants (one self-contained file, works offline)")
      ->check(writable_file());
  app.add_option("--live", live,
                 "write the live page: the step-through page with every entry of Q, K and V editable, recomputed in "
                 "the browser by the library built as WebAssembly (one self-contained file, works offline; needs the "
                 "full build with Emscripten installed)")
      ->check(writable_file());
  app.add_option("--break", fault_text,
                 "with --html: build a wrong backward into the page, so its finite-difference checks turn red: dS (the row "
                 "rule without −ḡ), dK (dK without the transpose), scale (the scale's backward forgotten), dV (dV = P dO)");
  app.add_option("--loss", loss, "the entry of O that L is, from 1 as the text writes o₃,₂: o32 (the text's), o21, ...");
  app.add_option("--q", q_text, "Q as rows of numbers, e.g. \"1,0;0,1;1,1\" (the text's); also --k, --v");
  app.add_option("--k", k_text, "K as rows of numbers (default: the text's, equal to Q)");
  app.add_option("--v", v_text, "V as rows of numbers (default: the text's \"1,0;0,2;3,3\")");
  app.add_option("--jvp", jvp_text, "forward mode: push the example along one entry, e.g. q32 (Q̇ = e₃₂), k11, v21, and "
                 "print every tangent (Ṡ, Ṗ, Ȯ) with its finite-difference check and L̇ beside the backward's gradient");
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;

  // The case's numbers and the page's fault, checked before any work (a bad one: exit status 2).
  ThreeTokenData data;
  ThreeTokenFault fault = ThreeTokenFault::none;
  std::optional<ThreeTokenDirection> dir;
  if (!read_case(q_text, k_text, v_text, loss, fault_text, html, jvp_text, data, fault, dir)) return kExitUsage;
  const bool text_case = data.is_text();
  // The live page's module, read before any work: without it, say how to build it (exit status 3:
  // this build cannot make the page).
  std::string live_module;
  if (!live.empty()) {
    try {
      live_module = read_live_module(HANDGRAD_LIVE_MODULE);
    } catch (const Error& e) {
      fmt::print(stderr, "error: --live: {}\n", e.what());
      return kExitCannotRun;
    }
  }

  // Writing a page, the report is kept (--json, the exit status) but not printed: the page shows it,
  // and what is printed is what was written.
  const bool page_only = (!html.empty() || !live.empty()) && !step;
  return run_lab("three_token", json, device, [&](Report& rep) {
    rep.set_printing(!page_only);
    const ThreeTokenInputs in = three_token_inputs(device, data);
    rep.section(text_case ? "the three tokens (projected vectors taken directly)"
                          : fmt::format("the tokens ({} of them, given on the command line)", data.T));
    rep.matrix("Q", in.Q, text_case ? 0 : 3);
    rep.matrix("K", in.K, text_case ? 0 : 3);
    rep.matrix("V", in.V, text_case ? 0 : 3);

    const ThreeTokenVariant variant{.causal = !no_mask, .scaled = !no_scale, .data = data};
    if (step && !step_through(rep, variant, device)) return;

    const ThreeTokenVariant kCausal{.causal = true, .scaled = true, .data = data};
    const ThreeTokenVariant kOpen{.causal = false, .scaled = true, .data = data};
    const ThreeTokenVariant kSharp{.causal = true, .scaled = false, .data = data};
    three_token_forward_report(rep, in, {kCausal, kOpen, kSharp}, device);

    three_token_backward_report(rep, variant, step, device);
    if (dir) tangent_report(rep, variant, *dir, device);

    const std::string Ls = data.loss_name();
    rep.set_printing(true);
    if (!graph.empty()) {
      rep.section(fmt::format("the graph of L = {} ({}), drawn", Ls, variant.name()));
      write_graph(rep, graph, three_token_graph_dot(variant, device));
    }
    if (!html.empty()) {
      rep.section(fmt::format("the page of the backward of L = {}", Ls));
      write_html(html, three_token_html({kCausal, kOpen, kSharp}, fault, device));
      rep.text(fmt::format("  wrote {}: open it in a browser (three variants{}; works offline)", html,
                           fault == ThreeTokenFault::none ? "" : ", broken on purpose: " + fault_description(fault)));
    }
    if (!live.empty()) {
      rep.section("the live page");
      write_html(live, live_page_html(live_module));
      rep.text(fmt::format("  wrote {}: open it in a browser and edit Q, K and V; every number is recomputed there by "
                           "the library built as WebAssembly (works offline; docs/page.md)", live));
    }
  });
}
