#include "three_token_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace hg::lab {

std::string ThreeTokenVariant::name() const {
  return fmt::format("{}, {}", causal ? "causal" : "no mask", scaled ? "scaled by 1/√d_k" : "unscaled");
}

AttentionOptions ThreeTokenVariant::options() const {
  AttentionOptions o;
  o.causal = causal;
  if (!scaled) o.scale = 1.0;  // otherwise the default, 1/√d_k
  return o;
}

ThreeTokenInputs three_token_inputs(Device device) {
  // Moved before requires_grad_, so each is a leaf on the device (no to_device entry on the tape).
  auto leaf = [device](const std::vector<double>& values, const std::string& name) {
    Tensor t = tensor(values, {3, 2}, DType::f64).to(device);
    t.requires_grad_().set_name(name);
    return t;
  };
  ThreeTokenInputs in;
  in.Q = leaf({1, 0, 0, 1, 1, 1}, "Q");
  in.K = leaf({1, 0, 0, 1, 1, 1}, "K");
  in.V = leaf({1, 0, 0, 2, 3, 3}, "V");
  return in;
}

Tensor three_token_dO(Device device) {
  Tensor dO = zeros({3, 2}, DType::f64);
  dO.set_at({2, 1}, 1.0);  // L = o_{3,2}: dL/dO is 1 there and 0 elsewhere (written on the CPU)
  return dO.to(device);
}

AttentionTrace three_token_trace(const ThreeTokenVariant& v, Device device) {
  ThreeTokenInputs in = three_token_inputs(device);
  NoGradGuard ng;
  return attention_trace(in.Q.detach(), in.K.detach(), in.V.detach(), three_token_dO(device), v.options());
}

Tensor three_token_scores(Device device) {
  ThreeTokenInputs in = three_token_inputs(device);
  NoGradGuard ng;
  return matmul(in.Q.detach(), in.K.detach().transpose(0, 1));  // (3, 3)
}

double Ways::max_diff() const {
  std::vector<Tensor> ts;
  for (const Tensor& t : {formula, tape, numeric, primitive})
    if (t.defined()) ts.push_back(t);
  double m = 0.0;
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t j = i + 1; j < ts.size(); ++j) m = std::max(m, max_abs_diff(ts[i], ts[j]));
  return m;
}

namespace {

// Attention from primitive ops, each its own tape entry, every tensor named for printing. The
// tape captures an output's label when the op records it, before we can name it, so the names
// and the text's rule for each step are also kept by tensor id. The named tensors are kept
// alive too: the graph holds its tensors only weakly, and to_dot reads their names from them.
struct PrimitiveGraph {
  Tensor S, P, L;
  struct Named {
    std::string label, rule;
  };
  std::unordered_map<uint64_t, Named> names;
  std::vector<Tensor> named;
};

PrimitiveGraph primitive_graph(const ThreeTokenInputs& in, const ThreeTokenVariant& v, Device device) {
  PrimitiveGraph g;
  auto name = [&g](Tensor t, const std::string& label, const std::string& rule) {
    t.set_name(label);
    g.names[t.id()] = {label, rule};
    g.named.push_back(t);
    return t;
  };
  for (const Tensor& t : {in.Q, in.K, in.V}) g.names[t.id()] = {t.name(), ""};
  const std::string scores_name = (v.scaled || v.causal) ? "QKᵀ" : "S";
  const std::string scaled_name = v.causal ? "QKᵀ/√d_k" : "S";

  Tensor Kt = name(in.K.transpose(0, 1), "Kᵀ", "Kᵀ is K read transposed  →  dK = (d(Kᵀ))ᵀ");
  Tensor x = name(matmul(in.Q, Kt), scores_name,
                  fmt::format("{0} = Q Kᵀ  →  dQ = d({0}) K,  d(Kᵀ) = Qᵀ d({0})", scores_name));  // (3, 3)
  if (v.scaled)
    x = name(mul(x, 1.0 / std::sqrt(2.0)), scaled_name,
             fmt::format("{} = QKᵀ · (1/√d_k)  →  d(QKᵀ) = d({}) / √d_k", scaled_name, scaled_name));
  if (v.causal) {
    std::vector<bool> future;  // true above the diagonal: key j > query i
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) future.push_back(j > i);
    const std::string unmasked = x.name();
    Tensor mask = bool_tensor(future, {3, 3}).to(device);
    mask.set_name("future");
    g.names[mask.id()] = {"future", ""};
    x = name(masked_fill(x, mask, -std::numeric_limits<double>::infinity()), "S",
             fmt::format("S = {0} with the future set to −inf  →  d({0}) = dS, 0 where masked", unmasked));
  }
  g.S = x;
  g.P = name(softmax(g.S, -1), "P",
             "P = softmax(S) by rows  →  dS = P ∘ (dP − rowsum(P ∘ dP)),  i.e. dS_ij = P_ij (g_ij − ḡ_i)");
  Tensor O = name(matmul(g.P, in.V), "O", "O = P V  →  dP = dO Vᵀ  (= g),  dV = Pᵀ dO");  // (3, 2)
  Tensor o3 = name(O.select(0, 2), "o₃", "o₃ = row 3 of O  →  dO = zeros, with row 3 = d(o₃)");
  g.L = name(o3.select(0, 1), "L", "L = o₃,₂ (the second component)  →  d(o₃) = (0, 1)");
  return g;
}

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
    r.J3 = softmax_jacobian(r.trace.P.select(0, 2));       // (3, 3)
    r.Jg3 = matmul(r.J3, r.trace.dP.select(0, 2));         // (3,)
  }

  // 2. The tape of the fused op: L = attention(Q, K, V)[3][2]; L.backward().
  {
    ThreeTokenInputs in = three_token_inputs(device);
    Tensor L = attention(in.Q, in.K, in.V, opts).index({2, 1});
    L.backward();
    r.dQ.tape = in.Q.grad();
    r.dK.tape = in.K.grad();
    r.dV.tape = in.V.grad();
  }

  // 3. Finite differences of L, one input at a time (and of L as a function of S, for dS). The
  //    nudges are element writes, so they happen on CPU copies; L is evaluated on the device.
  {
    ThreeTokenInputs in = three_token_inputs();  // on the CPU
    TensorFn f = [opts, device](const std::vector<Tensor>& x) {
      return attention(x[0].to(device), x[1].to(device), x[2].to(device), opts).index({2, 1});
    };
    r.dQ.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 0);
    r.dK.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 1);
    r.dV.numeric = numeric_gradient(f, {in.Q, in.K, in.V}, 2);
    TensorFn fs = [device](const std::vector<Tensor>& x) {
      return matmul(softmax(x[0].to(device), -1), x[1].to(device)).index({2, 1});
    };
    r.dS.numeric = numeric_gradient(fs, {r.trace.S.to(Device::cpu), in.V.detach()}, 0);  // masked stay −inf: 0
  }

  // 4. The primitive graph, walked with an observer: its softmax entry hands out dS.
  {
    ThreeTokenInputs in = three_token_inputs(device);
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
  ThreeTokenInputs in = three_token_inputs(device);
  PrimitiveGraph g = primitive_graph(in, v, device);
  BackwardOptions bo;
  bo.retain_graph = true;  // the picture shows what each node saved, not "freed by backward"
  backward(g.L, Tensor(), bo);
  return to_dot(g.L);
}

}  // namespace hg::lab
