// labs/three_token_backward.cpp — the three-token lab's walks of its primitive graph (built in
// three_token_case.cpp): the step-through backward and its four ways, the graph's picture and the
// HTML page.
#include "three_token_case.h"
#include "three_token_case_internal.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace hg::lab {

namespace {

std::string entry_line(size_t i, const Node& e, const PrimitiveGraph& g) {
  auto label = [&g](uint64_t id, const std::string& fallback) {
    auto it = g.names.find(id);
    return it == g.names.end() ? fallback : it->second.label;
  };
  std::vector<std::string> ins, outs, saved;
  for (const InputSlot& s : e.inputs)
    ins.push_back(fmt::format("{} {}{}", label(s.id, s.label), shape_str(s.shape), s.needs_grad ? "" : " (constant)"));
  for (const OutputSlot& s : e.outputs) outs.push_back(fmt::format("{} {}", label(s.id, s.label), shape_str(s.shape)));
  for (const SavedTensor& s : e.saved) saved.push_back(s.what);
  std::string line = fmt::format("#{:<2} {:<12} {} -> {}", i, e.op, fmt::join(ins, ", "), fmt::join(outs, ", "));
  if (!saved.empty()) line += fmt::format("   saves: {}", fmt::join(saved, ", "));
  return line;
}

BackwardStep make_step(size_t i, const Node& e, const PrimitiveGraph& g, const std::vector<Tensor>& gout,
                       const std::vector<Tensor>& gin) {
  BackwardStep s;
  s.entry = i;
  s.op = e.op;
  auto lookup = [&g](uint64_t id, const std::string& fallback) {
    auto it = g.names.find(id);
    return it == g.names.end() ? fallback : it->second.label;
  };
  for (const InputSlot& in : e.inputs) s.input_labels.push_back(lookup(in.id, in.label));
  for (const OutputSlot& out : e.outputs) s.output_labels.push_back(lookup(out.id, out.label));
  if (!e.outputs.empty()) {
    auto it = g.names.find(e.outputs[0].id);
    if (it != g.names.end()) s.rule = it->second.rule;
  }
  s.grad_outputs = gout;
  s.grad_inputs = gin;
  return s;
}

}  // namespace

ThreeTokenBackward three_token_backward(const ThreeTokenVariant& v, const StepHook& before, const StepHook& after,
                                        Device device) {
  ThreeTokenBackward r;
  r.variant = v;
  const AttentionOptions opts = v.options();

  // 1. The formula: every intermediate of the hand backward, and row 3's Jacobian.
  r.trace = three_token_trace(v, device);
  {
    NoGradGuard ng;
    r.J3 = softmax_jacobian(r.trace.P.select(0, v.data.row));  // (T, T)
    r.Jg3 = matmul(r.J3, r.trace.dP.select(0, v.data.row));    // (T,)
  }

  // 2. The tape of the fused op: L = attention(Q, K, V)[3][2]; L.backward().
  {
    ThreeTokenInputs in = three_token_inputs(device, v.data);
    Tensor L = attention(in.Q, in.K, in.V, opts).index({v.data.row, v.data.col});
    L.backward();
    r.dQ.tape = in.Q.grad();
    r.dK.tape = in.K.grad();
    r.dV.tape = in.V.grad();
  }

  // 3. Finite differences of L, one input at a time (and of L as a function of S, for dS). The
  //    nudges are element writes, so they happen on CPU copies; L is evaluated on the device.
  {
    ThreeTokenInputs in = three_token_inputs(Device::cpu, v.data);
    const int64_t row = v.data.row, col = v.data.col;
    TensorFn f = [opts, device, row, col](const std::vector<Tensor>& x) {
      return attention(x[0].to(device), x[1].to(device), x[2].to(device), opts).index({row, col});
    };
    r.dQ.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 0);
    r.dK.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 1);
    r.dV.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 2);
    TensorFn fs = [device, row, col](const std::vector<Tensor>& x) {
      return matmul(softmax(x[0].to(device), -1), x[1].to(device)).index({row, col});
    };
    r.dS.numeric = numeric_gradient(fs, {r.trace.S.to(Device::cpu), in.V.detach()}, 0);  // masked stay −inf: 0
  }

  // 4. The primitive graph, walked with an observer: its softmax entry hands out dS.
  {
    ThreeTokenInputs in = three_token_inputs(device, v.data);
    PrimitiveGraph g = primitive_graph(in, v, device);
    const std::vector<std::shared_ptr<Node>> tape = tape_of(g.L);
    for (size_t i = 0; i < tape.size(); ++i) r.tape_listing.push_back(entry_line(i, *tape[i], g));
    const uint64_t P_id = g.P.id();
    BackwardObserver obs;
    obs.before = [&](size_t i, const Node& e, const std::vector<Tensor>& gout) {
      ++r.steps;
      if (before) before(make_step(i, e, g, gout, {}));
    };
    obs.after = [&](size_t i, const Node& e, const std::vector<Tensor>& gout, const std::vector<Tensor>& gin) {
      if (e.outputs.size() == 1 && e.outputs[0].id == P_id) r.dS.tape = gin[0].clone();
      if (after) after(make_step(i, e, g, gout, gin));
    };
    BackwardOptions bo;
    bo.observer = &obs;
    backward(g.L, Tensor(), bo);
    r.dQ.primitive = in.Q.grad();
    r.dK.primitive = in.K.grad();
    r.dV.primitive = in.V.grad();
  }

  r.dS.formula = r.trace.dS;
  r.dQ.formula = r.trace.dQ;
  r.dK.formula = r.trace.dK;
  r.dV.formula = r.trace.dV;
  return r;
}

std::string three_token_graph_dot(const ThreeTokenVariant& v, Device device) {
  ThreeTokenInputs in = three_token_inputs(device, v.data);
  PrimitiveGraph g = primitive_graph(in, v, device);
  BackwardOptions bo;
  bo.retain_graph = true;  // the picture shows what each node saved, not "freed by backward"
  backward(g.L, Tensor(), bo);
  return to_dot(g.L);
}

namespace {

// The page's variants, one per `variants`; `keep` holds each graph's named tensors alive until the
// page is written (the graph holds them weakly), so the page shows every forward value. The page
// the command writes draws its graph with Graphviz; the live page lays it out itself, and its
// reader changes the case by clicking, not by flags.
std::vector<HtmlVariant> page_variants(const std::vector<ThreeTokenVariant>& variants, ThreeTokenFault fault,
                                       Device device, ThreeTokenReader reader, std::vector<PrimitiveGraph>& keep) {
  std::vector<HtmlVariant> pages;
  keep.reserve(variants.size());
  for (const ThreeTokenVariant& v : variants) {
    ThreeTokenInputs in = three_token_inputs(device, v.data);
    keep.push_back(primitive_graph(in, v, device, fault));
    PrimitiveGraph& g = keep.back();
    HtmlOptions o;
    o.draw_graph = reader == ThreeTokenReader::terminal;
    o.title = fmt::format("backward of L = {}", v.data.loss_name());
    o.intro = fmt::format("The primitive graph of L = {} ({}), walked by backward from the last tape entry to the first. "
                          "Each outgoing gradient sits beside its float64 central difference.",
                          v.data.loss_name(), v.name());
    o.intro += fmt::format(" In this case {}.", three_token_mask_effect(v, device, reader));
    if (fault != ThreeTokenFault::none)
      o.intro += fmt::format(" Broken on purpose: {}. The checks turn red at that step and at every step after it "
                             "that depends on it: what gradcheck exists to catch.",
                             fault_description(fault));
    for (const auto& [id, n] : g.names) {
      if (!n.rule.empty()) o.rules[n.label] = n.rule;
      if (!n.broken_rule.empty()) o.broken_rules[n.label] = n.broken_rule;
    }
    // Central differences through any named tensor: rebuild the (correct) graph with it replaced.
    o.recompute = [v, device](const std::string& name, const Tensor& value) {
      NoGradGuard ng;
      ThreeTokenInputs fresh = three_token_inputs(device, v.data);
      PrimitiveGraph h = primitive_graph(fresh, v, device, ThreeTokenFault::none, {name, value});
      const bool known = name == "Q" || name == "K" || name == "V" ||
                         std::any_of(h.names.begin(), h.names.end(), [&](const auto& e) { return e.second.label == name; });
      return known ? h.L : Tensor();
    };
    if (v.data.is_text() && v.scaled) {  // the text's printed numbers, where its case applies
      const double nan = std::nan("");
      o.text_values["S"] = {nan, nan, nan, nan, nan, nan, -0.498, -0.002, 0.500};
      o.text_values["Q"] = {nan, nan, nan, nan, 0.001, 0.352};
    }
    std::string name = v.name();
    if (fault != ThreeTokenFault::none) name += " (broken: " + fault_name(fault) + ")";
    pages.push_back({name, g.L, o});
  }
  return pages;
}

}  // namespace

std::string three_token_html(const std::vector<ThreeTokenVariant>& variants, ThreeTokenFault fault, Device device) {
  std::vector<PrimitiveGraph> keep;
  const std::vector<HtmlVariant> pages = page_variants(variants, fault, device, ThreeTokenReader::terminal, keep);
  return to_html(pages, fmt::format("three tokens: the backward of L = {}, step by step", variants.at(0).data.loss_name()));
}

nlohmann::json three_token_page_data(const ThreeTokenVariant& variant, ThreeTokenFault fault, Device device) {
  std::vector<PrimitiveGraph> keep;
  return page_data(page_variants({variant}, fault, device, ThreeTokenReader::live_page, keep));
}

}  // namespace hg::lab
