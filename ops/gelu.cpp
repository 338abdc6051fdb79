// ops/gelu.cpp — the Gaussian error linear unit, x Φ(x), with its fused backward, and its slope
// Φ(x) + x φ(x) as a recorded op so that create_graph differentiates it again.
#include <cmath>
#include <numbers>

#include "cuda/ops.h"
#include "engine/tape.h"
#include "ops/cpu_map.h"
#include "ops/elementwise.h"
#include "ops/registry.h"

namespace hg {

namespace {

// g * gelu'(x) with gelu'(x) = Phi(x) + x phi(x), one fused pass.
Tensor gelu_backward_kernel(const Tensor& g, const Tensor& x) {
  return map2("gelu_backward", cuda::kGeluBackward, g, x, [](auto gv, auto xv) {
    double v = static_cast<double>(xv);
    double cdf = 0.5 * (1 + std::erf(v * std::numbers::sqrt2 / 2));
    double pdf = std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
    return gv * static_cast<decltype(gv)>(cdf + v * pdf);
  });
}

constexpr OpDef kGeluSlope{.name = "gelu_slope", .saves = {{"gelu input", "φ(x) (2 − x²)"}},
                           .derivation = "ops/gelu.cpp", .from_backward = true,
                           .tangent = "ȯ = φ(x) (2 − x²) ẋ"};
struct GeluSlopeSaved { static constexpr SavedSlot x = kGeluSlope.slot("gelu input"); };
// gelu'(x) as a recorded op, for create_graph. Its derivative, by the product rule with phi' = -x phi:
//   d/dx (Phi + x phi) = phi + phi - x^2 phi = phi(x) (2 - x^2)          saves x
Tensor gelu_slope(const Tensor& x, Site where) {
  Tensor slope = gelu_backward_kernel(ones_like(x), x);
  if (should_record({x}))
    record(kGeluSlope, {x}, {slope}, {save(GeluSlopeSaved::x, x)}, [](const std::vector<Tensor>& g, const Saved& s) {
      Tensor x2 = mul(s[GeluSlopeSaved::x], s[GeluSlopeSaved::x]);
      Tensor phi = mul(exp(mul(x2, -0.5)), 1.0 / std::sqrt(2 * std::numbers::pi));
      return std::vector<Tensor>{mul(g[0], mul(phi, rsub(x2, 2.0)))};
    }, [x](const std::vector<Tensor>& d) {
      Tensor x2 = mul(x, x);
      Tensor phi = mul(exp(mul(x2, -0.5)), 1.0 / std::sqrt(2 * std::numbers::pi));
      return std::vector<Tensor>{mul(d[0], mul(phi, rsub(x2, 2.0)))};
    }, where);
  return slope;
}

}  // namespace

constexpr OpDef kGelu{.name = "gelu", .saves = {{"gelu input", "Φ(x) + x φ(x)"}}, .derivation = "ops/gelu.cpp",
                      .fused = "gelu_backward: g (Φ(x) + x φ(x)) in one pass", .tangent = "ȯ = (Φ(x) + x φ(x)) ẋ"};
struct GeluSaved { static constexpr SavedSlot x = kGelu.slot("gelu input"); };
// out = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2  =>  dx = g * (Phi(x) + x phi(x)), phi the normal pdf
Tensor gelu(const Tensor& x, Site where) {
  Tensor out = unary_map(kGelu, cuda::kGelu, 0, x, [](auto v) { return v * 0.5 * (1 + std::erf(v * std::numbers::sqrt2 / 2)); });
  if (should_record({x}))
    record(kGelu, {x}, {out}, {save(GeluSaved::x, x)}, [where](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{mul(g[0], gelu_slope(s[GeluSaved::x], where))};
    }, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{gelu_backward_kernel(g[0], s[GeluSaved::x])};
    }, [x, where](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], gelu_slope(x, where))}; }, where);
  return out;
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> gelu_ops() {
  static const OpDef* const defs[] = {&kGeluSlope, &kGelu};
  return defs;
}

}  // namespace hg
