// shapes — Section 4: the shapes of multi-head attention, step by step, the view that fails after
// the transpose, the reshape that works, and the hand-formed scores equal to the fused op.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kit.h"
#include "report.h"
#include "shapes_case.h"

using namespace hg;
using namespace hg::lab;

int main(int argc, char** argv) {
  CLI::App app{"'Module 6: The transformer', Section 4, 'The shapes, step by step': multi-head attention's "
               "shapes, B = 2, T = 16, d = 256, h = 8, dk = 32 (docs/texts.md)."};
  uint64_t seed = 0;
  Device device = Device::cpu;
  std::string json;
  app.add_option("--seed", seed, "seed of the random input and weights")->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  add_device_option(app, device);
  add_json_option(app, json);
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;

  return run_lab("shapes", json, device, [&](Report& rep) {
    const MultiHeadShapes m = multihead_shapes(2, 16, 256, 8, seed, device);

    rep.section(fmt::format("B = {}, T = {}, d = {}, h = {}, dk = d / h = {} (float64)", m.B, m.T, m.d, m.h, m.dk));
    rep.text("Each shape beside the text's, its symbols with the values above substituted:");
    for (const ShapeStep& s : m.steps) {
      rep.fact(fmt::format("{:<21}{}", s.what, s.text_shape), shape_str(s.measured), shape_str(s.expected));
      // The text marks y = (p @ v).transpose(1, 2) "not contiguous"; q's transpose is not either.
      const bool text_says = s.what.starts_with("y =");
      if (!s.contiguous || text_says)
        rep.fact(s.what + ": contiguous", s.contiguous ? "yes" : "no", text_says ? std::optional<std::string>("no") : std::nullopt);
    }

    rep.section("view after the transpose, and reshape");
    rep.fact("wq(x).view(...) moves no data", m.view_shares_storage ? "shares storage" : "copied", std::string("shares storage"));
    rep.fact("y.view(B, T, d)", m.view_failed ? "fails" : "works", std::string("fails"));
    if (m.view_failed) rep.text("  the engine says: " + m.view_error);
    rep.fact("y.reshape(B, T, d)", shape_str(m.reshaped), shape_str({m.B, m.T, m.d}));
    rep.fact("... and, since view cannot, it", m.reshape_copied ? "copies" : "is a view", std::string("copies"));

    rep.section("the hand-formed scores against the fused op");
    rep.tolerance("max |p @ v − attention(q, k, v)|", m.fused_vs_hand, 1e-12);
    rep.tolerance("max |wo(concat) − Σ_i head_i W_O^(i)|", m.per_head_writes, 1e-12);
    rep.text("  concatenate-then-project is a sum of per-head writes, each through its own d_k rows of W_O");

  });
}
