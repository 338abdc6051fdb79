// The live page's one call (labs/three_token_live.h), natively: at the text's inputs the lab's 21
// comparisons and L = o₃,₂; its gradients equal the lab's own backward; forward mode meets the
// backward; every bad request is an answer in words, never a throw.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "labs/three_token_case.h"
#include "labs/three_token_live.h"

using namespace hg;
using namespace hg::lab;
using nlohmann::json;

namespace {

const char* kText = R"({"Q": [[1,0],[0,1],[1,1]], "K": [[1,0],[0,1],[1,1]], "V": [[1,0],[0,2],[3,3]],
                        "mask": true, "scale": true, "loss": [2, 1], "fault": "none", "jvp": null})";

json ask(const std::string& request) { return json::parse(three_token_live(request)); }

// The whole gradient of `label` the page's data gives: the last step that sends one to it.
std::vector<double> page_gradient(const json& page, const std::string& label) {
  std::vector<double> out;
  for (const json& step : page[0]["steps"])
    for (const json& g : step["gin"])
      if (g["label"] == label) {
        const json& whole = g.contains("total") ? g["total"] : g["values"];
        out = whole.get<std::vector<double>>();
      }
  return out;
}

std::string error_of(const std::string& request) {
  const json a = ask(request);
  CHECK(a["ok"] == false);
  return a.value("error", std::string());
}

}  // namespace

TEST_CASE("live page: the text's inputs give its 21 numbers, L = o32 and the lab's gradients") {
  const json a = ask(kText);
  REQUIRE(a["ok"] == true);
  CHECK(a["compared"] == 21);
  CHECK(a["mismatches"] == 0);
  CHECK(a["tolerance_failures"] == 0);
  CHECK(a["is_text"] == true);
  CHECK(std::abs(a["L"].get<double>() - 2.0069796869691077) < 1e-12);
  CHECK(a["loss"] == "o₃,₂");
  CHECK(a["tangent"].is_null());
  const ThreeTokenBackward bw = three_token_backward(ThreeTokenVariant{});
  for (const auto& [label, want] : {std::pair{"Q", bw.dQ.primitive}, std::pair{"K", bw.dK.primitive},
                                    std::pair{"V", bw.dV.primitive}}) {
    const std::vector<double> got = page_gradient(a["page"], label), w = want.to_vector();
    REQUIRE(got.size() == w.size());
    for (size_t i = 0; i < w.size(); ++i) CHECK(got[i] == doctest::Approx(w[i]).epsilon(1e-12));
  }
  // The page's every check passes, and the graph is left to the page to lay out (no Graphviz here).
  int checked = 0;
  for (const json& step : a["page"][0]["steps"])
    for (const json& g : step["gin"])
      if (g.contains("ok")) {
        ++checked;
        CHECK(g["ok"] == true);
      }
  CHECK(checked >= 8);
  CHECK(a["page"][0]["svg"].is_null());
}

TEST_CASE("live page: the text's inputs with another L are told apart from other inputs; no flag in its words") {
  const json text = ask(kText);
  REQUIRE(text["ok"] == true);
  CHECK(text["text_inputs"] == true);
  // L = o₃,₂ is in the last row, which the mask does not reach: the page says which entry to click.
  const std::string intro = text["page"][0]["intro"];
  CHECK(intro.find("click o₂,₁ in O to make it L") != std::string::npos);
  CHECK(intro.find("--") == std::string::npos);
  json request = json::parse(kText);
  request["loss"] = {1, 0};
  const json a = ask(request.dump());
  REQUIRE(a["ok"] == true);
  CHECK(a["is_text"] == false);     // the text's printed gradients are for o₃,₂
  CHECK(a["text_inputs"] == true);  // but Q, K and V are the text's
  CHECK(a["loss"] == "o₂,₁");
  request["Q"][0][0] = 2;
  CHECK(ask(request.dump())["text_inputs"] == false);
  // The text's six numbers in other shapes are not the text's inputs.
  CHECK(ask(R"({"Q": [[1,0,0],[1,1,1]], "K": [[1,0,0],[1,1,1]], "V": [[1,0,0],[2,3,3]], "loss": [1, 0]})")["text_inputs"] ==
        false);
}

TEST_CASE("live page: a fault turns its own step red; forward mode meets the backward") {
  json request = json::parse(kText);
  request["fault"] = "dV";
  const json broken = ask(request.dump());
  REQUIRE(broken["ok"] == true);
  std::string first;
  for (const json& step : broken["page"][0]["steps"]) {
    bool red = false;
    for (const json& g : step["gin"]) red = red || g.value("ok", true) == false;
    if (red) {
      first = step["gout"][0]["label"];
      break;
    }
  }
  CHECK(first == "O");
  // That step, and no other, carries the fault's rule beside the right one.
  int marked = 0;
  for (const json& step : broken["page"][0]["steps"])
    if (step.contains("broken_rule")) {
      ++marked;
      CHECK(step["gout"][0]["label"] == "O");
      CHECK(step["broken_rule"].get<std::string>().find("dV = P dO") != std::string::npos);
      CHECK(step["rule"].get<std::string>().find("dV = Pᵀ dO") != std::string::npos);
    }
  CHECK(marked == 1);

  request["fault"] = "none";
  request["jvp"] = {{"input", "q"}, {"row", 2}, {"col", 1}};
  const json a = ask(request.dump());
  REQUIRE(a["ok"] == true);
  CHECK(a["tangent"]["name"] == "Q̇ = e₃₂");
  CHECK(std::abs(a["tangent"]["dL"].get<double>() - a["tangent"]["dL_reverse"].get<double>()) < 1e-12);
  CHECK(std::abs(a["tangent"]["dL_reverse"].get<double>() - 0.352) < 5e-4);  // the text's (dL/dQ)₃₂
}

TEST_CASE("live page: another case (no mask, 4 tokens) is the lab's, and not compared with the text") {
  const json a = ask(R"({"Q": [[1,0,2],[0,1,0],[1,1,1],[0.5,-1,2]], "K": [[1,0,0],[0,1,0],[1,1,0],[2,0,1]],
                         "V": [[1],[2],[3],[4]], "mask": false, "scale": true, "loss": [1, 0]})");
  REQUIRE(a["ok"] == true);
  CHECK(a["is_text"] == false);
  CHECK(a["compared"] == 0);
  ThreeTokenVariant v{.causal = false, .scaled = true};
  v.data.Q = {1, 0, 2, 0, 1, 0, 1, 1, 1, 0.5, -1, 2};
  v.data.K = {1, 0, 0, 0, 1, 0, 1, 1, 0, 2, 0, 1};
  v.data.V = {1, 2, 3, 4};
  v.data.T = 4;
  v.data.d_k = 3;
  v.data.d_v = 1;
  v.data.row = 1;
  v.data.col = 0;
  const ThreeTokenBackward bw = three_token_backward(v);
  const std::vector<double> got = page_gradient(a["page"], "K"), want = bw.dK.primitive.to_vector();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

TEST_CASE("live page: a bad request is an answer in words") {
  CHECK(error_of("not json").size() > 0);
  CHECK(error_of("[1, 2]") == "live page: the request must be a JSON object");
  CHECK(error_of(R"({"K": [[1]], "V": [[1]]})") == "live page: the request has no Q");
  CHECK(error_of(R"({"Q": [[1,0],[0]], "K": [[1,0],[0,1]], "V": [[1],[2]]})") ==
        "live page: row 2 of Q has 1 numbers and row 1 has 2; every row needs the same");
  CHECK(error_of(R"({"Q": [[1,0],[0,1]], "K": [[1,0]], "V": [[1],[2]]})") ==
        "live page: K is (1, 2) and Q is (2, 2); K needs Q's shape");
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],[2]], "V": [[1]]})") ==
        "live page: V has 1 rows and Q has 2; V needs one row per token");
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],[2]], "V": [[1],[2]], "loss": [2, 0]})") ==
        "live page: loss's row is 2; it must be from 0 to 1");
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],["a"]], "V": [[1],[2]]})") == "live page: K[2][1] is not a number");
  CHECK(error_of(R"({"Q": [[1],[2],[3],[4],[5],[6],[7]], "K": [[1]], "V": [[1]]})") ==
        "live page: Q must be 1 to 6 rows (one per token)");
  CHECK(error_of(R"({"Q": [[1,2,3,4,5]], "K": [[1]], "V": [[1]]})") == "live page: row 1 of Q must hold 1 to 4 numbers");
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],[2]], "V": [[1],[2]], "loss": [1, 0], "fault": "dq"})").find("'dq' is not a fault") !=
        std::string::npos);
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],[2]], "V": [[1],[2]], "loss": [1, 0],
                   "jvp": {"input": "x", "row": 0, "col": 0}})") ==
        "live page: jvp's input must be \"q\", \"k\" or \"v\"");
  CHECK(error_of(R"({"Q": [[1],[2]], "K": [[1],[2]], "V": [[1],[2]], "loss": [1, 0],
                   "jvp": {"input": "v", "row": 0, "col": 1}})") ==
        "live page: jvp's column is 1; it must be from 0 to 0");
  CHECK(error_of(R"({"Q": [[1e400]], "K": [[1]], "V": [[1]]})").size() > 0);  // past a double: refused
}

#endif  // HANDGRAD_WITH_LABKIT
