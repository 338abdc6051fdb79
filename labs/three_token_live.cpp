// labs/three_token_live.cpp — the live page's call (three_token_live.h): reads the learner's inputs,
// runs the lab's own functions on them (the report, the step-through page's data, forward mode)
// and answers in JSON. Every number comes from the library; the page only draws.
#include "three_token_live.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "kit.h"
#include "three_token_report.h"
#include "three_token_tangent.h"

namespace hg::lab {

namespace {

using nlohmann::json;

json tensor_json(const Tensor& t) {
  const Tensor c = t.detach().to(Device::cpu).to(DType::f64).contiguous();
  json values = json::array();
  for (double v : c.to_vector()) values.push_back(json_number(v));
  return {{"shape", c.shape()}, {"values", values}};
}

// One matrix of the request: rows of finite numbers, each row as long as the first.
std::vector<double> read_matrix(const json& request, const char* name, int64_t& rows, int64_t& cols) {
  if (!request.contains(name)) fail("live page", "the request has no {}", name);
  const json& m = request.at(name);
  if (!m.is_array() || m.empty() || m.size() > static_cast<size_t>(kLiveMaxTokens))
    fail("live page", "{} must be 1 to {} rows (one per token)", name, kLiveMaxTokens);
  std::vector<double> out;
  rows = static_cast<int64_t>(m.size());
  cols = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    const json& r = m[i];
    if (!r.is_array() || r.empty() || r.size() > static_cast<size_t>(kLiveMaxWidth))
      fail("live page", "row {} of {} must hold 1 to {} numbers", i + 1, name, kLiveMaxWidth);
    if (i == 0) cols = static_cast<int64_t>(r.size());
    if (static_cast<int64_t>(r.size()) != cols)
      fail("live page", "row {} of {} has {} numbers and row 1 has {}; every row needs the same", i + 1, name, r.size(), cols);
    for (size_t j = 0; j < r.size(); ++j) {
      if (!r[j].is_number()) fail("live page", "{}[{}][{}] is not a number", name, i + 1, j + 1);
      const double v = r[j].get<double>();
      if (!std::isfinite(v)) fail("live page", "{}[{}][{}] is {}; give a finite number", name, i + 1, j + 1, v);
      out.push_back(v);
    }
  }
  return out;
}

int64_t read_index(const json& j, const char* what, int64_t size) {
  return whole_number_field(j, "live page", what, 0, size - 1);
}

// The request as the lab's own types: the case and the variant, the fault, the direction.
struct LiveRequest {
  ThreeTokenVariant variant;
  ThreeTokenFault fault = ThreeTokenFault::none;
  std::optional<ThreeTokenDirection> dir;
};

LiveRequest read_request(const std::string& text) {
  const json request = json::parse(text);
  if (!request.is_object()) fail("live page", "the request must be a JSON object");
  LiveRequest r;
  ThreeTokenData& d = r.variant.data;
  int64_t rows = 0, cols = 0;
  d.Q = read_matrix(request, "Q", d.T, d.d_k);
  d.K = read_matrix(request, "K", rows, cols);
  if (rows != d.T || cols != d.d_k)
    fail("live page", "K is ({}, {}) and Q is ({}, {}); K needs Q's shape", rows, cols, d.T, d.d_k);
  d.V = read_matrix(request, "V", rows, d.d_v);
  if (rows != d.T) fail("live page", "V has {} rows and Q has {}; V needs one row per token", rows, d.T);
  r.variant.causal = request.value("mask", true);
  r.variant.scaled = request.value("scale", true);
  const json loss = request.value("loss", json::array({2, 1}));
  if (!loss.is_array() || loss.size() != 2) fail("live page", "loss must be [row, column] of O, from 0");
  d.row = read_index(loss[0], "loss's row", d.T);
  d.col = read_index(loss[1], "loss's column", d.d_v);
  const std::string fault = request.value("fault", std::string("none"));
  if (fault != "none") r.fault = parse_fault(fault);
  const json jvp = request.value("jvp", json());
  if (!jvp.is_null()) {
    ThreeTokenDirection dir;
    const std::string input = jvp.value("input", std::string());
    if (input != "q" && input != "k" && input != "v") fail("live page", "jvp's input must be \"q\", \"k\" or \"v\"");
    dir.input = input[0];
    dir.row = read_index(jvp.value("row", json()), "jvp's row", d.T);
    dir.col = read_index(jvp.value("col", json()), "jvp's column", dir.input == 'v' ? d.d_v : d.d_k);
    r.dir = dir;
  }
  return r;
}

json tangent_json(const ThreeTokenVariant& v, const ThreeTokenDirection& dir) {
  const ThreeTokenTangent t = three_token_tangent(v, dir);
  return {{"name", dir.name()},           {"S", tensor_json(t.trace.dotS)},     {"D", tensor_json(t.trace.dotD)},
          {"P", tensor_json(t.trace.dotP)}, {"O", tensor_json(t.trace.dotO)},   {"O_engine", tensor_json(t.engine)},
          {"O_numeric", tensor_json(t.numeric_O)}, {"P_numeric", tensor_json(t.numeric_P)},
          {"dL", json_number(t.dL)},        {"dL_reverse", json_number(t.dL_reverse)}};
}

}  // namespace

std::string three_token_live(const std::string& request) {
  try {
    const LiveRequest r = read_request(request);
    const ThreeTokenVariant& v = r.variant;
    const ThreeTokenData& d = v.data;

    // The lab's report, kept rather than printed: the comparisons with the text it makes.
    Report rep("three_token");
    rep.set_printing(false);
    const ThreeTokenInputs in = three_token_inputs(Device::cpu, d);
    const ThreeTokenVariant causal{.causal = true, .scaled = true, .data = d};
    const ThreeTokenVariant open{.causal = false, .scaled = true, .data = d};
    const ThreeTokenVariant sharp{.causal = true, .scaled = false, .data = d};
    three_token_forward_report(rep, in, {causal, open, sharp}, Device::cpu);
    three_token_backward_report(rep, v, false, Device::cpu);

    const AttentionTrace t = three_token_trace(v);
    json answer = {{"ok", true},
                   {"loss", d.loss_name()},
                   {"L", json_number(t.O.at({d.row, d.col}))},
                   {"variant", v.name()},
                   {"is_text", d.is_text()},
                   {"text_inputs", d.inputs_are_text()},
                   {"forward", {{"S", tensor_json(t.S)}, {"P", tensor_json(t.P)}, {"O", tensor_json(t.O)}}},
                   {"page", three_token_page_data(v, r.fault)},
                   {"report", rep.json()},
                   {"compared", rep.compared()},
                   {"mismatches", rep.mismatches()},
                   {"tolerance_failures", rep.tolerance_failures()},
                   {"tangent", r.dir ? tangent_json(v, *r.dir) : json()}};
    return answer.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return json({{"ok", false}, {"error", e.what()}}).dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace hg::lab
