#include "three_token_case.h"
#include "three_token_faults.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>
#include "three_token_case_internal.h"

namespace hg::lab {

namespace {

// 12 -> "₁₂": the text writes indices as subscripts.
std::string subscript(int64_t n) {
  static const char* digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  std::string s;
  for (char c : std::to_string(n)) s += digits[c - '0'];
  return s;
}

}  // namespace

bool ThreeTokenData::inputs_are_text() const {
  const ThreeTokenData text;  // the shapes too: (2, 3) matrices can hold the same six numbers
  return T == text.T && d_k == text.d_k && d_v == text.d_v && Q == text.Q && K == text.K && V == text.V;
}

bool ThreeTokenData::is_text() const {
  const ThreeTokenData text;
  return inputs_are_text() && row == text.row && col == text.col;
}

std::string ThreeTokenData::loss_name() const { return fmt::format("o{},{}", subscript(row + 1), subscript(col + 1)); }
std::string ThreeTokenData::row_name() const { return fmt::format("o{}", subscript(row + 1)); }

std::vector<double> parse_matrix(const std::string& flag, const std::string& text, int64_t& rows, int64_t& cols) {
  std::vector<double> values;
  rows = 0;
  cols = -1;
  std::stringstream by_row(text);
  std::string line;
  while (std::getline(by_row, line, ';')) {
    std::stringstream by_col(line);
    std::string cell;
    int64_t n = 0;
    while (std::getline(by_col, cell, ',')) {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(cell, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || cell.find_first_not_of(" \t", used) != std::string::npos || !std::isfinite(v))
        fail(flag, "'{}' in row {} of '{}' is not a finite number; write rows of numbers, e.g. \"1,0;0,1;1,1\"", cell,
             rows + 1, text);
      values.push_back(v);
      ++n;
    }
    if (cols >= 0 && n != cols)
      fail(flag, "row {} of '{}' has {} numbers and row 1 has {}; every row needs as many, e.g. \"1,0;0,1;1,1\"",
           rows + 1, text, n, cols);
    cols = n;
    ++rows;
  }
  if (rows == 0 || cols <= 0)
    fail(flag, "'{}' holds no numbers; write rows of comma-separated numbers, e.g. \"1,0;0,1;1,1\"", text);
  if (rows > 16 || cols > 16)
    fail(flag, "'{}' is ({}, {}); the lab prints every matrix, so keep to 16 rows and 16 columns", text, rows, cols);
  return values;
}

bool parse_entry(const std::string& rest, int64_t& i, int64_t& j) {
  if (rest.size() < 2) return false;
  const size_t comma = rest.find(',');
  try {
    if (comma != std::string::npos) {
      size_t a = 0, b = 0;
      i = std::stoll(rest.substr(0, comma), &a);
      j = std::stoll(rest.substr(comma + 1), &b);
      return a == comma && b == rest.size() - comma - 1;
    }
    i = rest[0] - '0';
    j = rest[1] - '0';
    return rest.size() == 2 && std::isdigit(static_cast<unsigned char>(rest[0])) &&
           std::isdigit(static_cast<unsigned char>(rest[1]));
  } catch (const std::exception&) {
    return false;
  }
}

std::string index_subscripts(int64_t row, int64_t col) { return subscript(row + 1) + subscript(col + 1); }

void parse_loss(const std::string& text, ThreeTokenData& data) {
  int64_t i = 0, j = 0;
  const bool ok = text.size() >= 3 && text[0] == 'o' && parse_entry(text.substr(1), i, j);
  if (!ok) fail("--loss", "'{}' is not an entry of O; write o<row><column> from 1, as the text writes o₃,₂: o32, o21, or o3,2", text);
  if (i < 1 || i > data.T || j < 1 || j > data.d_v)
    fail("--loss", "'{}' is outside O, which is ({}, {}); rows run 1 to {}, columns 1 to {}", text, data.T, data.d_v,
         data.T, data.d_v);
  data.row = i - 1;
  data.col = j - 1;
}

ThreeTokenFault parse_fault(const std::string& name) {
  for (ThreeTokenFault f : {ThreeTokenFault::dS, ThreeTokenFault::dK, ThreeTokenFault::scale, ThreeTokenFault::dV})
    if (name == fault_name(f)) return f;
  fail("--break", "'{}' is not a fault the lab can build in; choose one of: dS ({}), dK ({}), scale ({}), dV ({})", name,
       fault_description(ThreeTokenFault::dS), fault_description(ThreeTokenFault::dK),
       fault_description(ThreeTokenFault::scale), fault_description(ThreeTokenFault::dV));
}

std::string fault_name(ThreeTokenFault f) {
  switch (f) {
    case ThreeTokenFault::none: return "none";
    case ThreeTokenFault::dS: return "dS";
    case ThreeTokenFault::dK: return "dK";
    case ThreeTokenFault::scale: return "scale";
    case ThreeTokenFault::dV: return "dV";
  }
  return "?";
}

std::string fault_description(ThreeTokenFault f) {
  switch (f) {
    case ThreeTokenFault::none: return "no fault";
    case ThreeTokenFault::dS: return "the row rule without −ḡ: dS = P ∘ dP";
    case ThreeTokenFault::dK: return "dK without the transpose: dK = dS Q instead of dSᵀ Q";
    case ThreeTokenFault::scale: return "the scale's backward forgotten: d(QKᵀ) = d(QKᵀ/√d_k)";
    case ThreeTokenFault::dV: return "dV without the transpose: dV = P dO instead of Pᵀ dO";
  }
  return "?";
}

std::string ThreeTokenVariant::name() const {
  return fmt::format("{}, {}", causal ? "causal" : "no mask", scaled ? "scaled by 1/√d_k" : "unscaled");
}

std::string ThreeTokenVariant::scores_label() const {
  if (causal && scaled) return "scores, scaled and masked";
  if (scaled) return "scores, scaled, no mask";
  if (causal) return "scores, masked, not scaled";
  return "scores, neither scaled nor masked";
}

std::string ThreeTokenVariant::scores_name() const { return (scaled || causal) ? "QKᵀ" : "S"; }
std::string ThreeTokenVariant::scaled_name() const { return causal ? "QKᵀ/√d_k" : "S"; }

std::string fault_step_output(ThreeTokenFault f, const ThreeTokenVariant& v) {
  switch (f) {
    case ThreeTokenFault::none: return "";
    case ThreeTokenFault::dS: return "P";
    case ThreeTokenFault::dK: return v.scores_name();
    case ThreeTokenFault::scale: return v.scaled ? v.scaled_name() : "";
    case ThreeTokenFault::dV: return "O";
  }
  return "";
}

AttentionOptions ThreeTokenVariant::options() const {
  AttentionOptions o;
  o.causal = causal;
  if (!scaled) o.scale = 1.0;  // otherwise the default, 1/√d_k
  return o;
}

ThreeTokenInputs three_token_inputs(Device device, const ThreeTokenData& data) {
  // Moved before requires_grad_, so each is a leaf on the device (no to_device entry on the tape).
  auto leaf = [device](const std::vector<double>& values, int64_t cols, const std::string& name) {
    Tensor t = tensor(values, {static_cast<int64_t>(values.size()) / cols, cols}, DType::f64).to(device);
    t.requires_grad_().set_name(name);
    return t;
  };
  ThreeTokenInputs in;
  in.Q = leaf(data.Q, data.d_k, "Q");
  in.K = leaf(data.K, data.d_k, "K");
  in.V = leaf(data.V, data.d_v, "V");
  return in;
}

Tensor three_token_dO(Device device, const ThreeTokenData& data) {
  Tensor dO = zeros({data.T, data.d_v}, DType::f64);
  dO.set_at({data.row, data.col}, 1.0);  // L = O[row][col]: dL/dO is 1 there and 0 elsewhere (written on the CPU)
  return dO.to(device);
}

AttentionTrace three_token_trace(const ThreeTokenVariant& v, Device device) {
  ThreeTokenInputs in = three_token_inputs(device, v.data);
  NoGradGuard ng;
  return attention_trace(in.Q.detach(), in.K.detach(), in.V.detach(), three_token_dO(device, v.data), v.options());
}

Tensor three_token_scores(Device device, const ThreeTokenData& data) {
  ThreeTokenInputs in = three_token_inputs(device, data);
  NoGradGuard ng;
  return matmul(in.Q.detach(), in.K.detach().transpose(0, 1));  // (T, T)
}

StepAnswer step_prompt(std::istream& in, std::ostream& out) {
  out << "   [Enter: run this step's backward, q: quit] " << std::flush;
  std::string line;
  if (!std::getline(in, line)) {
    out << "\n   (end of input: the remaining steps print without pausing)\n" << std::flush;
    return StepAnswer::end_of_input;
  }
  line.erase(0, line.find_first_not_of(" \t"));
  line.erase(line.find_last_not_of(" \t\r") + 1);
  return line == "q" || line == "quit" || line == "Q" ? StepAnswer::quit : StepAnswer::next;
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

std::string three_token_mask_effect(const ThreeTokenVariant& v, Device device, ThreeTokenReader reader) {
  ThreeTokenVariant other = v;
  other.causal = !v.causal;
  const AttentionTrace a = three_token_trace(v, device), b = three_token_trace(other, device);
  const double moved =
      std::max({max_abs_diff(a.dQ, b.dQ), max_abs_diff(a.dK, b.dK), max_abs_diff(a.dV, b.dV)});
  const ThreeTokenData& d = v.data;
  if (moved < 1e-12) {
    if (d.row != d.T - 1 || d.T < 2)
      return fmt::format("the mask changes nothing in this backward (|dQ, dK, dV with − without| = {:.1e}): L = {} is "
                         "in row {}, and the keys the mask hides from that row carry no weight here",
                         moved, d.loss_name(), d.row + 1);
    // The row above the last is one the mask reaches: it hides the last key from it.
    ThreeTokenData reached = d;
    reached.row = d.T - 2;
    reached.col = 0;
    const std::string how = reader == ThreeTokenReader::live_page
                                ? fmt::format("click {} in O to make it L: a row the mask reaches", reached.loss_name())
                                : fmt::format("--loss o{}1 puts L in a row the mask reaches", d.T - 1);
    return fmt::format("the mask changes nothing in this backward (|dQ, dK, dV with − without| = {:.1e}): L = {} is in "
                       "row {}, the last query, which sees every key with or without the mask; {}",
                       moved, d.loss_name(), d.row + 1, how);
  }
  return fmt::format("the mask changes this backward (largest change in dQ, dK, dV: {:.3f}): row {} sees keys 1 to {} "
                     "under the mask, all {} without it",
                     moved, d.row + 1, d.row + 1, d.T);
}

// The primitive graph's types (PrimitiveGraph, Replacement) are in three_token_case_internal.h.
namespace {

// The faulty twins of three primitive ops, for the page's "break it" mode: each computes the same
// forward, records one node under a name that says it is broken, and sends back a wrong gradient.
// (BackwardFn: incoming gradients, saved tensors -> one gradient per input.)
Tensor recorded_faulty(const OpDef& def, const std::vector<Tensor>& inputs, Tensor out,
                       std::vector<SavedTensor> saved, BackwardFn backward) {
  record(def, inputs, {out}, std::move(saved), std::move(backward));
  return out;
}

// softmax with dS = P ∘ dP: the row rule without its −ḡ.
Tensor softmax_without_gbar(const Tensor& S) {
  Tensor P;
  {
    NoGradGuard ng;
    P = softmax(S, -1);
  }
  static constexpr SavedSlot kOutput = kSoftmaxNoGbar.slot("output");
  return recorded_faulty(kSoftmaxNoGbar, {S}, P, {save(kOutput, P)},
                         [](const std::vector<Tensor>& g, const Saved& sv) {
                           return std::vector<Tensor>{mul(sv[kOutput], g[0])};
                         });
}

// a b with a wrong gradient for b: `transpose_db` sends (Qᵀ dX)'s transpose's twin aᵀ dXᵀ (dK =
// dS a, not dSᵀ a); otherwise (for O = P V) db = a dO, not aᵀ dO.
Tensor matmul_faulty(const Tensor& a, const Tensor& b, bool transpose_db) {
  Tensor out;
  {
    NoGradGuard ng;
    out = matmul(a, b);
  }
  // Both twins list a and b in the same places.
  static_assert(kMatmulUntransposed.slot("left operand a").index == kMatmulWrongDv.slot("left operand a").index &&
                kMatmulUntransposed.slot("right operand b").index == kMatmulWrongDv.slot("right operand b").index);
  const OpDef& def = transpose_db ? kMatmulUntransposed : kMatmulWrongDv;
  const SavedSlot a_slot{&def, kMatmulWrongDv.slot("left operand a").index},
      b_slot{&def, kMatmulWrongDv.slot("right operand b").index};
  return recorded_faulty(def, {a, b}, out, {save(a_slot, a), save(b_slot, b)},
                         [transpose_db, a_slot, b_slot](const std::vector<Tensor>& g, const Saved& sv) {
                           const Tensor da = matmul(g[0], sv[b_slot].transpose(0, 1));
                           const Tensor db = transpose_db ? matmul(sv[a_slot].transpose(0, 1), g[0].transpose(0, 1))
                                                          : matmul(sv[a_slot], g[0]);
                           return std::vector<Tensor>{da, db};
                         });
}

// x · c whose backward forgets c.
Tensor scale_forgotten(const Tensor& x, double c) {
  Tensor out;
  {
    NoGradGuard ng;
    out = mul(x, c);
  }
  return recorded_faulty(kScaleForgotten, {x}, out, {},
                         [](const std::vector<Tensor>& g, const Saved&) { return std::vector<Tensor>{g[0]}; });
}
}  // namespace
PrimitiveGraph primitive_graph(const ThreeTokenInputs& in, const ThreeTokenVariant& v, Device device,
                               ThreeTokenFault fault, const Replacement& swap) {
  PrimitiveGraph g;
  // `broken`: the step's rule as the fault computes it, when the fault is built into this step.
  auto name = [&](Tensor t, const std::string& label, const std::string& rule, const std::string& broken = "") {
    if (label == swap.name) t = swap.value.to(device);  // for central differences through this tensor
    t.set_name(label);
    g.names[t.id()] = {label, rule, broken};
    g.named.push_back(t);
    return t;
  };
  Tensor Q = in.Q, K = in.K, V = in.V;
  for (Tensor* t : {&Q, &K, &V})
    if (t->name() == swap.name) *t = swap.value.to(device).set_name(swap.name);
  for (const Tensor& t : {Q, K, V}) g.names[t.id()] = {t.name(), "", ""};
  const std::string scores_name = v.scores_name(), scaled_name = v.scaled_name();
  const ThreeTokenData& d = v.data;

  Tensor Kt = name(K.transpose(0, 1), "Kᵀ", "Kᵀ is K read transposed  →  dK = (d(Kᵀ))ᵀ");
  const bool bad_dK = fault == ThreeTokenFault::dK;
  Tensor x = name(bad_dK ? matmul_faulty(Q, Kt, true) : matmul(Q, Kt), scores_name,
                  fmt::format("{0} = Q Kᵀ  →  dQ = d({0}) K,  d(Kᵀ) = Qᵀ d({0})", scores_name),
                  bad_dK ? fmt::format("{0} = Q Kᵀ  →  dQ = d({0}) K,  d(Kᵀ) = Qᵀ d({0})ᵀ: so dK = d({0}) Q, "
                                       "without the transpose",
                                       scores_name)
                         : "");  // (T, T)
  if (v.scaled) {
    const double c = 1.0 / std::sqrt(static_cast<double>(d.d_k));
    const bool bad_scale = fault == ThreeTokenFault::scale;
    x = name(bad_scale ? scale_forgotten(x, c) : mul(x, c), scaled_name,
             fmt::format("{} = QKᵀ · (1/√d_k)  →  d(QKᵀ) = d({}) / √d_k", scaled_name, scaled_name),
             bad_scale ? fmt::format("{0} = QKᵀ · (1/√d_k)  →  d(QKᵀ) = d({0}): the 1/√d_k forgotten", scaled_name)
                       : "");
  }
  if (v.causal) {
    std::vector<bool> future;  // true above the diagonal: key j > query i
    for (int64_t i = 0; i < d.T; ++i)
      for (int64_t j = 0; j < d.T; ++j) future.push_back(j > i);
    const std::string unmasked = x.name();
    Tensor mask = bool_tensor(future, {d.T, d.T}).to(device);
    mask.set_name("future");
    g.names[mask.id()] = {"future", "", ""};
    x = name(masked_fill(x, mask, -std::numeric_limits<double>::infinity()), "S",
             fmt::format("S = {0} with the future set to −inf  →  d({0}) = dS, 0 where masked", unmasked));
  }
  g.S = x;
  const bool bad_dS = fault == ThreeTokenFault::dS, bad_dV = fault == ThreeTokenFault::dV;
  g.P = name(bad_dS ? softmax_without_gbar(g.S) : softmax(g.S, -1), "P",
             "P = softmax(S) by rows  →  dS = P ∘ (dP − rowsum(P ∘ dP)),  i.e. dS_ij = P_ij (g_ij − ḡ_i)",
             bad_dS ? "P = softmax(S) by rows  →  dS = P ∘ dP,  i.e. dS_ij = P_ij g_ij: the row rule without −ḡ" : "");
  Tensor O = name(bad_dV ? matmul_faulty(g.P, V, false) : matmul(g.P, V), "O", "O = P V  →  dP = dO Vᵀ  (= g),  dV = Pᵀ dO",
                  bad_dV ? "O = P V  →  dP = dO Vᵀ  (= g),  dV = P dO: without the transpose" : "");  // (T, d_v)
  const std::string o_i = d.row_name();
  Tensor oi = name(O.select(0, d.row), o_i, fmt::format("{} = row {} of O  →  dO = zeros, with row {} = d({})", o_i,
                                                          d.row + 1, d.row + 1, o_i));
  std::vector<std::string> unit;  // d(o_i) = (0, 1) in the text: a 1 at L's column
  for (int64_t j = 0; j < d.d_v; ++j) unit.push_back(j == d.col ? "1" : "0");
  g.L = name(oi.select(0, d.col), "L",
             fmt::format("L = {} (column {} of {})  →  d({}) = ({})", d.loss_name(), d.col + 1, o_i, o_i,
                         fmt::join(unit, ", ")));
  return g;
}

}  // namespace hg::lab
