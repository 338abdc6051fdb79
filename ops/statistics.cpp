// ops/statistics.cpp — var, and std = √var (ops/statistics.h).
//
// With μ = mean_j x_j over the N reduced entries and c the correction,
//   forward   var = Σ_j (x_j − μ)² / (N − c)
//   backward  ∂var/∂x_i = [2 (x_i − μ) − (2/N) Σ_j (x_j − μ)] / (N − c) = 2 (x_i − μ) / (N − c):
//             μ depends on every x_i, but its term carries Σ_j (x_j − μ) = 0. So
//             dx = g · 2 (x − μ) / (N − c), g broadcast back over the reduced dims.
//   tangent   vaṙ = 2 Σ_j (x_j − μ) ẋ_j / (N − c)   (μ̇'s term vanishes for the same reason)
// The backward saves x and recomputes x − μ from it with recorded ops, so the gradient can be
// differentiated again. std = √var is the chain rule through sqrt: dx = g / (2 std) · dvar/dx.
// Where N − c ≤ 0 the scale 1/(N − c) is inf, as PyTorch's: the variance is inf or NaN (0 · inf),
// and so is its gradient. Over no entries at all (N = 0) it is NaN, as PyTorch's (the sum of
// nothing times NaN: still on x's graph, with an empty gradient).
// Where the variance is 0, √'s slope 1/(2 std) is infinite and std's gradient would be 0 · ∞ = NaN;
// PyTorch gives 0 there (the subgradient), and so does std: √ reads a 1 in a zero variance's place
// and the result takes 0 there, so no ∞ · 0 is formed.
#include "ops/statistics.h"

#include <limits>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/reduce.h"
#include "ops/registry.h"

namespace hg {

constexpr OpDef kVar{.name = "var", .saves = {{"var input x", "x − μ, recomputed from x"}},
                     .derivation = "ops/statistics.cpp", .tangent = "vaṙ = 2 Σ (x − μ) ẋ / (N − c)"};
struct VarSaved { static constexpr SavedSlot x = kVar.slot("var input x"); };

Tensor var(const Tensor& x, const Shape& dims, double correction, bool keepdim, Site where) {
  require_float("var", x);
  const Reduction p = reduction("var", x, dims, keepdim);
  const Shape& ds = p.dims;
  if (p.ncols == 0) return mul(sum(x, ds, keepdim, where), std::numeric_limits<double>::quiet_NaN(), where);
  const double denom = static_cast<double>(p.ncols) - correction;
  const double scale = denom > 0 ? 1.0 / denom : std::numeric_limits<double>::infinity();
  const Shape& keep = p.keep_shape;  // the output's shape with keepdim, for broadcasting g back
  auto deviation = [ds](const Tensor& v) { return sub(v, mean(v, ds, true)); };
  Tensor out;
  {
    NoGradGuard ng;
    const Tensor dev = deviation(x.detach());
    out = mul(sum(mul(dev, dev), ds, keepdim), scale);
  }
  if (should_record({x})) {
    record(kVar, {x}, {out}, {save(VarSaved::x, x)},
           [deviation, keep, scale](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{mul(mul(deviation(s[VarSaved::x]), g[0].reshape(keep)), 2.0 * scale)};
           },
           [&](const std::vector<Tensor>& d) {
             return std::vector<Tensor>{mul(sum(mul(deviation(x.detach()), d[0]), ds, keepdim), 2.0 * scale)};
           },
           where);
  }
  return out;
}

Tensor std(const Tensor& x, const Shape& dims, double correction, bool keepdim, Site where) {
  const Tensor v = var(x, dims, correction, keepdim, where);
  const Tensor zero = eq(v, 0.0), nothing = zeros({}, v.dtype(), v.device());
  return hg::where(zero, nothing, sqrt(hg::where(zero, ones({}, v.dtype(), v.device()), v, where), where), where);
}

std::span<const OpDef* const> statistics_ops() {
  static const OpDef* const defs[] = {&kVar};
  return defs;
}

}  // namespace hg
