// ops/normalization.cpp — layer norm and RMS norm over the trailing dims (ops/normalization.h).
//
// Layer norm. Over the N entries of one normalized slice (the trailing dims normalized_shape
// names), with μ = mean(x), σ² = mean((x − μ)²) (biased) and σ = √(σ² + ε):
//   forward   x̂ = (x − μ) / σ,   y = γ ∘ x̂ + β
//   backward  with dy = dL/dy and g = dy ∘ γ (g = dy without a weight), dL/dx̂ = g, and
//             ∂x̂_i/∂x_j = (δ_ij − 1/N) / σ − (x_i − μ) ∂σ/∂x_j / σ²,  ∂σ/∂x_j = (x_j − μ) / (N σ),
//             so ∂x̂_i/∂x_j = (δ_ij − 1/N − x̂_i x̂_j / N) / σ and, summing g_i over i:
//               dx = (g − mean(g) − x̂ ∘ mean(g ∘ x̂)) / σ
//             γ and β are read by every leading index (the dims before the normalized ones):
//               dγ = Σ_leading dy ∘ x̂,   dβ = Σ_leading dy
//   tangent   ẏ = γ ∘ (ẋ − mean(ẋ) − x̂ ∘ mean(ẋ ∘ x̂)) / σ + γ̇ ∘ x̂ + β̇
//             (the same Jacobian ∂x̂/∂x applied to ẋ instead of transposed onto g: it is symmetric).
//
// RMS norm. No centring: r = √(mean(x²) + ε), x̂ = x / r, y = γ ∘ x̂. Then ∂r/∂x_j = x_j / (N r),
// ∂x̂_i/∂x_j = (δ_ij − x̂_i x̂_j / N) / r, and
//   backward  dx = (g − x̂ ∘ mean(g ∘ x̂)) / r,   dγ = Σ_leading dy ∘ x̂
//   tangent   ẏ = γ ∘ (ẋ − x̂ ∘ mean(ẋ ∘ x̂)) / r + γ̇ ∘ x̂
//
// Both backwards save x (and γ when given) and recompute x̂ and σ from x with recorded ops, as
// var's does, so the gradient can be differentiated again (create_graph). Each mean is over the
// normalized dims with keepdim, so it broadcasts back over the slice.
#include "ops/normalization.h"

#include <cmath>
#include <limits>
#include <utility>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

namespace normalization_detail {

// The trailing dims of x that normalized_shape names, once every argument has been checked.
Shape normalized_dims(const char* op, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                      const Tensor& bias, double eps) {
  require_float(op, x);
  if (normalized_shape.empty())
    fail(op, "normalized_shape is empty; name at least the last dim of {} (e.g. ({}))", x.describe(),
         x.dim() > 0 ? x.size(-1) : 1);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const Shape trailing = x.dim() >= k ? Shape(x.shape().end() - k, x.shape().end()) : Shape();
  if (trailing != normalized_shape)
    fail(op, "normalized_shape {} does not match the trailing dims of the input {}; it must equal the last {} "
         "dim(s) of the input's shape", shape_str(normalized_shape), x.describe(), k);
  for (const auto& [param, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!param->defined()) continue;
    if (param->shape() != normalized_shape)
      fail(op, "{} has shape {} but must have normalized_shape {} (input {})", name, shape_str(param->shape()),
           shape_str(normalized_shape), x.describe());
    check_same_dtype_device(op, x, *param);
  }
  // Any number, as PyTorch (a negative one may leave the root of a negative: NaN, as there); not NaN.
  if (std::isnan(eps)) fail(op, "eps is NaN; give a number (it keeps the divisor away from zero)");
  Shape dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// x̂ = (x − μ)/σ with σ = √(mean((x − μ)²) + ε) (layer norm), or x̂ = x/r with r = √(mean(x²) + ε)
// (RMS norm, centre false), over dims with keepdim: recorded ops, on any device.
struct Standardized {
  Tensor xhat, sigma;
};
Standardized standardize(const Tensor& x, const Shape& dims, double eps, bool centre) {
  const Tensor xc = centre ? sub(x, mean(x, dims, true)) : x;
  const Tensor sigma = sqrt(add(mean(mul(xc, xc), dims, true), eps));
  return {div(xc, sigma), sigma};
}

// dx = (g − mean(g) − x̂ ∘ mean(g ∘ x̂)) / σ, without the mean(g) term for RMS norm. The tangent
// is the same map applied to ẋ.
Tensor through_standardize(const Tensor& g, const Standardized& n, const Shape& dims, bool centre) {
  Tensor centred = sub(g, mul(n.xhat, mean(mul(g, n.xhat), dims, true)));
  if (centre) centred = sub(centred, mean(g, dims, true));
  return div(centred, n.sigma);
}

// Where each op's definition saves x and γ (both list them, in that order).
struct NormalizationSaved {
  SavedSlot x, weight;
};

// Both ops, one body: y = γ ∘ x̂ + β recorded as `def`, saving into `slots`.
Tensor normalize(const OpDef& def, const NormalizationSaved& slots, const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                 const Tensor& bias, double eps, bool centre, Site where) {
  const Shape dims = normalized_dims(def.c_str(), x, normalized_shape, weight, bias, eps);
  const auto affine = [&](Tensor y, const Tensor& w, const Tensor& b) {
    if (w.defined()) y = mul(y, w);
    if (b.defined()) y = add(y, b);
    return y;
  };
  if (x.numel() == 0)  // nothing to normalize: an empty result, and zero gradients for γ and β
    return affine(mul(x, 0.0, where), weight.defined() ? mul(weight, 0.0) : weight, bias.defined() ? mul(bias, 0.0) : bias);
  Tensor out;
  {
    NoGradGuard ng;
    const auto value = [](const Tensor& t) { return t.defined() ? t.detach() : t; };
    out = affine(standardize(x.detach(), dims, eps, centre).xhat, value(weight), value(bias));
  }
  if (!should_record({x, weight, bias})) return out;
  const bool gx = x.requires_grad(), gw = weight.defined() && weight.requires_grad(),
             gb = bias.defined() && bias.requires_grad(), has_weight = weight.defined();
  std::vector<SavedTensor> saved{save(slots.x, x)};
  if (has_weight) saved.push_back(save(slots.weight, weight));
  record(def, {x, weight, bias}, {out}, std::move(saved),
         [=](const std::vector<Tensor>& g, const Saved& s) {
           const Standardized n = standardize(s[slots.x], dims, eps, centre);
           const Tensor& dy = g[0];
           Tensor dx, dw, db;
           if (gx) dx = through_standardize(has_weight ? mul(dy, s[slots.weight]) : dy, n, dims, centre);
           if (gw) dw = sum_to(mul(dy, n.xhat), normalized_shape);
           if (gb) db = sum_to(dy, normalized_shape);
           return std::vector<Tensor>{dx, dw, db};
         },
         [&](const std::vector<Tensor>& d) {
           const Standardized n = standardize(x, dims, eps, centre);
           return std::vector<Tensor>{tangent_sum(
               {if_tangent(d[0], [&](const Tensor& t) { return affine(through_standardize(t, n, dims, centre), weight, Tensor()); }),
                if_tangent(d[1], [&](const Tensor& t) { return mul(n.xhat, t); }), d[2]},
               out.shape())};
         },
         where);
  return out;
}

}  // namespace normalization_detail

constexpr OpDef kLayerNorm{.name = "layer_norm",
                           .saves = {{"input x", "x̂ and σ, recomputed from x"},
                                     {"weight γ", "g = dy ∘ γ in dx", "when a weight is given"}},
                           .derivation = "ops/normalization.cpp",
                           .tangent = "ẏ = γ ∘ (ẋ − mean(ẋ) − x̂ ∘ mean(ẋ ∘ x̂)) / σ + γ̇ ∘ x̂ + β̇"};
constexpr OpDef kRmsNorm{.name = "rms_norm",
                         .saves = {{"input x", "x̂ and r, recomputed from x"},
                                   {"weight γ", "g = dy ∘ γ in dx", "when a weight is given"}},
                         .derivation = "ops/normalization.cpp",
                         .tangent = "ẏ = γ ∘ (ẋ − x̂ ∘ mean(ẋ ∘ x̂)) / r + γ̇ ∘ x̂"};

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps,
                  Site where) {
  return normalization_detail::normalize(kLayerNorm, {kLayerNorm.slot("input x"), kLayerNorm.slot("weight γ")}, x, normalized_shape, weight, bias, eps, true, where);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps,
                Site where) {
  if (!eps && x.defined())  // torch.finfo(dtype).eps
    eps = x.dtype() == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  return normalization_detail::normalize(kRmsNorm, {kRmsNorm.slot("input x"), kRmsNorm.slot("weight γ")}, x, normalized_shape, weight, Tensor(), eps.value_or(0.0), false, where);
}

std::span<const OpDef* const> normalization_ops() {
  static const OpDef* const defs[] = {&kLayerNorm, &kRmsNorm};
  return defs;
}

}  // namespace hg
