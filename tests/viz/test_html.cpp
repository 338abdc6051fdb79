// to_html: the page's data (the JSON it carries) held to the lab's own numbers and to float64
// central differences; the "break it" faults turning red at their step; a TinyCharLM block's
// page; and the three-token lab's flags and prompts as a learner meets them. The browser test
// (tests/browser/page_test.py) walks the same pages in Chromium.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "handgrad.h"

#ifdef HANDGRAD_WITH_LABKIT
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "labs/three_token_case.h"
#include "nn/tinycharlm.h"
#include "browser/tinycharlm_page.h"

using namespace hg;
using namespace hg::lab;
using nlohmann::json;

namespace {

// The variants the page carries, read back from its <script id="hg-data">.
json page_data(const std::string& html) {
  const std::string open = "<script id=\"hg-data\" type=\"application/json\">";
  const size_t a = html.find(open);
  REQUIRE(a != std::string::npos);
  const size_t b = html.find("</script>", a);
  REQUIRE(b != std::string::npos);
  return json::parse(html.substr(a + open.size(), b - a - open.size()));
}

double num(const json& v) {
  if (v.is_string()) return v == "-inf" ? -INFINITY : v == "inf" ? INFINITY : NAN;
  return v.get<double>();
}

double max_diff(const json& values, const Tensor& t) {
  const std::vector<double> want = t.to_vector();
  REQUIRE(values.size() == want.size());
  double m = 0;
  for (size_t i = 0; i < want.size(); ++i) m = std::max(m, std::abs(num(values[i]) - want[i]));
  return m;
}

// The index of the first step whose check failed, or -1.
int first_red(const json& variant) {
  for (size_t i = 0; i < variant["steps"].size(); ++i)
    for (const json& g : variant["steps"][i]["gin"])
      if (g.contains("ok") && !g["ok"].get<bool>()) return static_cast<int>(i);
  return -1;
}

std::string first_output(const json& variant, int step) {
  const json& s = variant["steps"][step];
  return s["gout"].empty() ? "" : s["gout"][0]["label"].get<std::string>();
}

const ThreeTokenVariant kText{.causal = true, .scaled = true};
const ThreeTokenVariant kNoMask{.causal = false, .scaled = true};
const ThreeTokenVariant kNoScale{.causal = true, .scaled = false};

}  // namespace

TEST_CASE("to_html: the three-token page carries the lab's steps, each checked by central differences") {
  const json data = page_data(three_token_html({kText, kNoMask, kNoScale}, ThreeTokenFault::none));
  REQUIRE(data.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    const ThreeTokenVariant v = std::vector<ThreeTokenVariant>{kText, kNoMask, kNoScale}[k];
    CAPTURE(v.name());
    const json& page = data[k];
    // The same steps as the lab's --step, with the same gradients.
    std::vector<BackwardStep> lab;
    const ThreeTokenBackward b = three_token_backward(v, {}, [&](const BackwardStep& s) { lab.push_back(s); });
    REQUIRE(page["steps"].size() == lab.size());
    CHECK(first_red(page) == -1);
    int checked = 0;
    for (size_t i = 0; i < lab.size(); ++i) {
      const json& s = page["steps"][i];
      CHECK(s["entry"] == lab[i].entry);
      CHECK(s["op"] == lab[i].op);
      CHECK(s["rule"] == lab[i].rule);
      size_t g = 0;
      for (size_t in = 0; in < lab[i].grad_inputs.size(); ++in) {
        if (!lab[i].grad_inputs[in].defined()) continue;
        REQUIRE(g < s["gin"].size());
        CHECK(s["gin"][g]["label"] == lab[i].input_labels[in]);
        CHECK(max_diff(s["gin"][g]["values"], lab[i].grad_inputs[in]) == 0.0);
        if (s["gin"][g].contains("fd")) ++checked;
        ++g;
      }
    }
    CHECK(checked == static_cast<int>(lab.size()) + 2);  // one per step, two at each matmul
    // The softmax step's finite difference is the lab's dS by central differences, and the leaves'
    // are its dQ, dK, dV.
    for (size_t i = 0; i < page["steps"].size(); ++i) {
      for (const json& g : page["steps"][i]["gin"]) {
        if (g["label"] == "S" && first_output(page, static_cast<int>(i)) == "P")
          CHECK(max_diff(g["fd"], b.dS.numeric) < 1e-8);
        if (g["label"] == "Q") CHECK(max_diff(g["fd"], b.dQ.numeric) < 1e-8);
        if (g["label"] == "K") CHECK(max_diff(g["fd"], b.dK.numeric) < 1e-8);
        if (g["label"] == "V") CHECK(max_diff(g["fd"], b.dV.numeric) < 1e-8);
      }
    }
    // A node's saved tensors are named by the text where they have a name.
    bool saw_pv = false;
    for (const json& n : page["nodes"]) {
      if (n["op"] != "matmul" || n["outputs"][0]["label"] != "O") continue;
      saw_pv = true;
      std::vector<std::string> saved;
      for (const json& t : n["saved"]) saved.push_back(t["label"].get<std::string>());
      CHECK(saved == std::vector<std::string>{"V (right operand b)", "P (left operand a)"});
      CHECK(n["saved"][1]["values"].size() == 9);
    }
    CHECK(saw_pv);
  }
  // The text's numbers ride along where its case applies (dS row 3 in the scaled variants).
  bool text_seen = false;
  for (const json& s : data[0]["steps"])
    for (const json& g : s["gin"])
      if (g["label"] == "S" && g.contains("text")) text_seen = num(g["text"][8]) == 0.500;
  CHECK(text_seen);
}

TEST_CASE("to_html: each break-it fault turns the checks red first at its own step, never before") {
  for (ThreeTokenFault f : {ThreeTokenFault::dS, ThreeTokenFault::dK, ThreeTokenFault::scale, ThreeTokenFault::dV}) {
    CAPTURE(fault_name(f));
    const json data = page_data(three_token_html({kText, kNoMask, kNoScale}, f));
    for (size_t k = 0; k < data.size(); ++k) {
      const std::string named = fault_step_output(f, std::vector<ThreeTokenVariant>{kText, kNoMask, kNoScale}[k]);
      CAPTURE(k);
      const int red = first_red(data[k]);
      if (named.empty()) {  // the unscaled variant has no scale to forget
        CHECK(red == -1);
        continue;
      }
      REQUIRE(red >= 0);
      CHECK(first_output(data[k], red) == named);
      // The step it breaks shows the rule the fault computes; every other step its right rule only.
      for (size_t i = 0; i < data[k]["steps"].size(); ++i)
        CHECK(data[k]["steps"][i].contains("broken_rule") == (static_cast<int>(i) == red));
    }
  }
  CHECK_THROWS_WITH_AS(parse_fault("dq"), doctest::Contains("--break: 'dq' is not a fault"), Error);
}

TEST_CASE("to_html: one TinyCharLM block's loss on two short sequences, large matrices kept for heatmaps") {
  auto tiny = hg::test::tinycharlm_page();
  const HtmlOptions& o = tiny->options;
  const json data = page_data(to_html(tiny->loss, o));
  REQUIRE(data.size() == 1);
  const json& page = data[0];
  CHECK(page["svg"].is_string());  // Graphviz is a build dependency
  CHECK(page["steps"].size() == tape_of(tiny->loss).size());
  CHECK(first_red(page) == -1);
  int leaves_checked = 0, too_large = 0, intermediate = 0, largest = 0;
  for (const json& s : page["steps"])
    for (const json& g : s["gin"]) {
      largest = std::max(largest, static_cast<int>(g["values"].size()));
      if (g.contains("fd")) ++leaves_checked;
      const std::string why = g.value("check", "");
      if (why.find("not checked (192 elements)") != std::string::npos) ++too_large;
      if (why.find("its value is gone") != std::string::npos) ++intermediate;
    }
  CHECK(leaves_checked >= 2);  // the embeddings and proj's weight: 7·8, 8·8 and 8·8 elements
  CHECK(too_large == 2);       // qkv's weight (24, 8) and its transpose
  CHECK(intermediate > 0);     // the forward's own tensors, which the graph does not keep alive
  CHECK(largest > o.table_limit);  // drawn as a heatmap on the page
  // Not a scalar: refused, naming the shape and what to do.
  Tensor many = tiny->model->forward(tiny->x, tiny->params);
  CHECK_THROWS_WITH_AS(to_html(many, o), doctest::Contains("the root has shape (2, 5, 7)"), Error);
  CHECK_THROWS_WITH_AS(write_html("/proc/no-such-dir/page.html", "x"), doctest::Contains("cannot open '/proc/no-such-dir/page.html'"), Error);
}

TEST_CASE("three-token lab: each variant's label says what S is; the mask matters once L is in an earlier row") {
  CHECK(kText.scores_label() == "scores, scaled and masked");
  CHECK(kNoMask.scores_label() == "scores, scaled, no mask");
  CHECK(kNoScale.scores_label() == "scores, masked, not scaled");
  // L = o₃,₂: row 3 sees every key, so the mask leaves the backward as it is.
  CHECK(max_abs_diff(three_token_trace(kText).dK, three_token_trace(kNoMask).dK) < 1e-15);
  // and the lab says how to move L: by its flag in the terminal, by a click on the live page.
  CHECK(three_token_mask_effect(kText).find("; --loss o21 puts L in a row the mask reaches") != std::string::npos);
  const std::string live = three_token_mask_effect(kText, Device::cpu, ThreeTokenReader::live_page);
  CHECK(live.find("; click o₂,₁ in O to make it L: a row the mask reaches") != std::string::npos);
  CHECK(live.find("--") == std::string::npos);
  // L = o₂,₁: row 2 does not see key 3 under the mask; without it, it does.
  ThreeTokenData d;
  parse_loss("o21", d);
  CHECK(d.row == 1);
  CHECK(d.col == 0);
  CHECK(d.loss_name() == "o₂,₁");
  const ThreeTokenVariant causal{.causal = true, .scaled = true, .data = d}, open{.causal = false, .scaled = true, .data = d};
  CHECK(max_abs_diff(three_token_trace(causal).dK, three_token_trace(open).dK) > 0.05);
  const ThreeTokenBackward b = three_token_backward(causal);
  CHECK(b.dK.max_diff() < 1e-8);  // formula, tape, finite differences and the primitive tape agree there too
  CHECK_THROWS_WITH_AS(parse_loss("o41", d), doctest::Contains("--loss: 'o41' is outside O, which is (3, 2)"), Error);
  CHECK_THROWS_WITH_AS(parse_loss("x", d), doctest::Contains("--loss: 'x' is not an entry of O"), Error);
}

TEST_CASE("three-token lab: --q/--k/--v matrices") {
  int64_t r = 0, c = 0;
  CHECK(parse_matrix("--q", "1,0;0,1;1,1", r, c) == std::vector<double>{1, 0, 0, 1, 1, 1});
  CHECK(r == 3);
  CHECK(c == 2);
  CHECK_THROWS_WITH_AS(parse_matrix("--q", "1,0;0", r, c), doctest::Contains("--q: row 2 of '1,0;0' has 1 numbers and row 1 has 2"), Error);
  CHECK_THROWS_WITH_AS(parse_matrix("--v", "1,a", r, c), doctest::Contains("--v: 'a' in row 1"), Error);
  // A case of the learner's own: four tokens, the loss in row 2.
  ThreeTokenData d;
  d.Q = parse_matrix("--q", "1,0;0,1;1,1;2,0", d.T, d.d_k);
  d.K = d.Q;
  int64_t vr = 0;
  d.V = parse_matrix("--v", "1,0,1;0,2,0;3,3,1;0,1,0", vr, d.d_v);
  parse_loss("o2,3", d);
  CHECK(!d.is_text());
  const ThreeTokenBackward b = three_token_backward({.causal = true, .scaled = true, .data = d});
  CHECK(b.dQ.max_diff() < 1e-8);
  CHECK(b.dV.formula.shape() == Shape{4, 3});
  CHECK(b.dV.formula.at({3, 2}) == 0.0);  // row 2 cannot see token 4 under the mask
}

TEST_CASE("three-token lab: --step's prompt quits on q and ends its line at end of input") {
  std::istringstream enter("\n"), quit("q\n"), nothing("");
  std::ostringstream out;
  CHECK(step_prompt(enter, out) == StepAnswer::next);
  CHECK(step_prompt(quit, out) == StepAnswer::quit);
  out.str("");
  CHECK(step_prompt(nothing, out) == StepAnswer::end_of_input);
  CHECK(out.str().find("q: quit] \n") != std::string::npos);  // the prompt's line is ended before what follows
}

TEST_CASE("a view's node names its caller's line as its call site, not the library's") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, DType::f64).requires_grad_();
  Tensor s = a.permute({1, 0}).select(0, 1);
  for (const auto& n : tape_of(s)) {
    CAPTURE(n->op);
    CHECK(n->call_site().find("test_html.cpp") != std::string::npos);
  }
}

#endif

TEST_CASE("the live page: its module read and inlined, or a refusal that says how to build it") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("handgrad-live-{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto message = [](const std::string& path) {
    try {
      hg::read_live_module(path);
    } catch (const hg::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(message((dir / "missing.js").string()).find("its WebAssembly module is not at") != std::string::npos);
  CHECK(message((dir / "missing.js").string()).find("Emscripten") != std::string::npos);
  CHECK(message(write("other.js", "var x = 1;")).find("is not the live page's module") != std::string::npos);
  CHECK(message(write("ends.js", "var handgradLive = '</script>';")).find("would end the page's script") !=
        std::string::npos);
  const std::string js = hg::read_live_module(write("ok.js", "var handgradLive = () => 1;"));
  const std::string page = hg::live_page_html(js);
  CHECK(page.find(js) != std::string::npos);
  CHECK(page.find("connect-src data:") != std::string::npos);
  CHECK(page.find("id=\"edit-Q\"") != std::string::npos);
  fs::remove_all(dir);
}
