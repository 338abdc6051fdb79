// labs/three_token_tangent.cpp — `three_token --jvp`: the example's tangents, three ways, and the
// number where forward and reverse mode meet (labs/three_token_tangent.h).
#include "three_token_tangent.h"

#include <fmt/format.h>

#include <optional>

#include "compare.h"

namespace hg::lab {

namespace {

// The unit matrix e_rc of the shape of the input the direction moves; the other two do not move.
std::vector<Tensor> direction_tangents(const ThreeTokenInputs& in, const ThreeTokenDirection& dir) {
  const Tensor& x = dir.input == 'q' ? in.Q : dir.input == 'k' ? in.K : in.V;
  Tensor e = zeros(x.shape(), DType::f64);
  e.set_at({dir.row, dir.col}, 1.0);
  std::vector<Tensor> dots(3);
  dots[dir.input == 'q' ? 0 : dir.input == 'k' ? 1 : 2] = e.to(x.device());
  return dots;
}

}  // namespace

std::string ThreeTokenDirection::name() const {
  const char* letter = input == 'q' ? "Q̇" : input == 'k' ? "K̇" : "V̇";
  return fmt::format("{} = e{}", letter, index_subscripts(row, col));
}

ThreeTokenDirection parse_direction(const std::string& text, const ThreeTokenData& data) {
  ThreeTokenDirection d;
  int64_t i = 0, j = 0;
  const bool ok = text.size() >= 3 && (text[0] == 'q' || text[0] == 'k' || text[0] == 'v') &&
                  parse_entry(text.substr(1), i, j);
  if (!ok)
    fail("--jvp", "'{}' is not an entry of Q, K or V; write q, k or v and the entry from 1, as the text writes e₃₂: "
         "q32 (row 3, column 2 of Q), k11, v2,1", text);
  d.input = text[0];
  const int64_t rows = data.T, cols = d.input == 'v' ? data.d_v : data.d_k;
  if (i < 1 || i > rows || j < 1 || j > cols)
    fail("--jvp", "'{}' is outside {}, which is ({}, {}); rows run 1 to {}, columns 1 to {}", text,
         static_cast<char>(d.input - 'a' + 'A'), rows, cols, rows, cols);
  d.row = i - 1;
  d.col = j - 1;
  return d;
}

ThreeTokenTangent three_token_tangent(const ThreeTokenVariant& v, const ThreeTokenDirection& dir, Device device) {
  const ThreeTokenInputs in = three_token_inputs(device, v.data);
  const Tensor Q = in.Q.detach(), K = in.K.detach(), V = in.V.detach();
  const std::vector<Tensor> dots = direction_tangents(in, dir);
  const AttentionOptions o = v.options();
  ThreeTokenTangent t;
  t.trace = attention_tangent_trace(Q, K, V, dots[0], dots[1], dots[2], o);
  {
    NoGradGuard ng;
    t.engine = jvp([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2], o)}; },
                   {Q, K, V}, dots).tangents[0];
    // Central differences of the forward along the direction: (f(x + εu) − f(x − εu)) / 2ε.
    constexpr double eps = 1e-6;
    auto at = [&](double step) {
      std::vector<Tensor> x{Q, K, V};
      for (size_t i = 0; i < 3; ++i)
        if (dots[i].defined()) x[i] = add(x[i], mul(dots[i], step));
      return attention_trace(x[0], x[1], x[2], zeros_like(t.trace.O), o);
    };
    const AttentionTrace up = at(eps), down = at(-eps);
    t.numeric_O = mul(sub(up.O, down.O), 1.0 / (2 * eps));
    t.numeric_P = mul(sub(up.P, down.P), 1.0 / (2 * eps));
  }
  t.dL = t.trace.dotO.at({v.data.row, v.data.col});
  const AttentionTrace back = three_token_trace(v, device);  // dL/dQ, dL/dK, dL/dV of L
  const Tensor& grad = dir.input == 'q' ? back.dQ : dir.input == 'k' ? back.dK : back.dV;
  t.dL_reverse = grad.at({dir.row, dir.col});
  return t;
}

void tangent_report(Report& rep, const ThreeTokenVariant& v, const ThreeTokenDirection& dir, Device device) {
  const ThreeTokenTangent t = three_token_tangent(v, dir, device);
  const std::string Ls = v.data.loss_name(), X(1, static_cast<char>(dir.input - 'a' + 'A'));
  rep.section(fmt::format("forward mode: the example pushed along {} ({})", dir.name(), v.name()));
  rep.text(fmt::format("  every number of the forward moves with {}{}; its tangent is its rate of change along that "
                       "direction", X, index_subscripts(dir.row, dir.col)));
  rep.matrix("Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale (0 where the mask hides a key)", t.trace.dotS);
  rep.matrix("rowsum(P ∘ Ṡ): each row's weighted average of Ṡ", t.trace.dotD);
  rep.matrix("Ṗ = P ∘ (Ṡ − rowsum(P ∘ Ṡ))", t.trace.dotP);
  rep.matrix("Ȯ = Ṗ V + P V̇", t.trace.dotO);
  rep.value("L̇ = ȯ" + v.data.loss_name().substr(1), t.dL);

  rep.section("each tangent three ways");
  rep.matrices("Ṗ", {"formula", "finite diff."}, {t.trace.dotP, t.numeric_P});
  rep.tolerance("Ṗ: largest disagreement", max_abs_diff(t.trace.dotP, t.numeric_P), 1e-8);
  rep.matrices("Ȯ", {"formula", "jvp (engine)", "finite diff."}, {t.trace.dotO, t.engine, t.numeric_O});
  rep.tolerance("Ȯ: largest disagreement",
                std::max(max_abs_diff(t.trace.dotO, t.engine), max_abs_diff(t.trace.dotO, t.numeric_O)), 1e-8);

  rep.section("where forward and reverse mode meet");
  rep.text(fmt::format("  L̇ = ⟨dL/d{0}, {0}̇⟩ = (dL/d{0}){1}: the backward's gradient of L, read at the entry that "
                       "moves", X, index_subscripts(dir.row, dir.col)));
  // The text prints dQ's row 3, (0.001, 0.352), for its own case: along e₃₁ or e₃₂ that is L̇ as well.
  const bool text_row = v.data.is_text() && v.scaled && dir.input == 'q' && dir.row == 2;
  rep.value(fmt::format("L̇ (forward mode, one pass along {})", dir.name()), t.dL,
            text_row ? std::optional<double>(dir.col == 0 ? 0.001 : 0.352) : std::nullopt);
  rep.value(fmt::format("(dL/d{}){} (reverse mode, the backward above)", X, index_subscripts(dir.row, dir.col)),
            t.dL_reverse);
  rep.tolerance("|forward − reverse|", std::abs(t.dL - t.dL_reverse), 1e-12);
}

}  // namespace hg::lab
