// ops/pointwise.cpp — PyTorch's pointwise functions of two tensors (ops/pointwise.h).
//
// Each is out = f(a, b) elementwise after broadcasting, so by the chain rule, per element
// (g = dL/dout):
//   backward  da = sum_to(g · ∂f/∂a, a.shape)    db = sum_to(g · ∂f/∂b, b.shape)
//   tangent   ȯ = ∂f/∂a · ȧ + ∂f/∂b · ḃ
// — one pair of partial derivatives serves both (the binary twin of elementwise_math.cpp's
// with_derivative). Each op states its partials in a comment and computes them from what it saves
// with recorded ops, so its gradient can be differentiated again; a partial that is piecewise
// constant (fmod's −trunc(a/b), fmax's choice) is a constant of the graph. The values' edge rules
// (division through fmod, never a rounded quotient) are cpu/pointwise_rules.h's, shared with CUDA.
#include "ops/pointwise.h"

#include <cmath>
#include <numbers>
#include <utility>

#include "cpu/pointwise_rules.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/compare.h"
#include "ops/cpu_map.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/integer.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

namespace {

// ∂f/∂a and ∂f/∂b at the saved a, b (and out, for a definition that saves it).
using Partials = std::pair<Tensor, Tensor> (*)(const Tensor& a, const Tensor& b, const Tensor& out);

// Records out = f(a, b) with the partials above; the definition saves a, b and, as its third
// label, out where the partials read it.
Tensor with_partials(const OpDef& def, const Tensor& a, const Tensor& b, const Tensor& out, Partials partials,
                     Site where) {
  if (!should_record({a, b})) return out;
  const SavedSlot sa{&def, 0}, sb{&def, 1}, so{&def, 2};
  std::vector<SavedTensor> saved{save(sa, a), save(sb, b)};
  const bool keeps_out = def.saved_labels().size() == 3;
  if (keeps_out) saved.push_back(save(so, out));
  const Shape shape_a = a.shape(), shape_b = b.shape();
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  record(def, {a, b}, {out}, std::move(saved),
         [=](const std::vector<Tensor>& g, const Saved& s) {
           const auto [pa, pb] = partials(s[sa], s[sb], keeps_out ? s[so] : Tensor());
           return std::vector<Tensor>{ga ? sum_to(mul(g[0], pa), shape_a) : Tensor(),
                                      gb ? sum_to(mul(g[0], pb), shape_b) : Tensor()};
         },
         [=](const std::vector<Tensor>& d) {
           const std::pair<Tensor, Tensor> p = partials(a, b, out);  // (∂f/∂a, ∂f/∂b)
           return std::vector<Tensor>{tangent_sum({if_tangent(d[0], [&](const Tensor& t) { return mul(p.first, t); }),
                                                   if_tangent(d[1], [&](const Tensor& t) { return mul(p.second, t); })},
                                                  out.shape())};
         },
         where);
  return out;
}

Tensor number_like(const Tensor& t, double v) { return full({}, v, t.dtype(), t.device()); }
// A bool mask as 1.0 / 0.0 in t's dtype: a constant of the graph.
Tensor indicator(const Tensor& mask, const Tensor& t) { return mask.to(t.dtype()); }


}  // namespace

// ---------------------------------------------------------------- atan2
// out = atan2(a, b), the angle of (b, a): with r² = a² + b²,
//   ∂/∂a = b / r²    ∂/∂b = −a / r²     (NaN at the origin, where the angle has no derivative)
constexpr OpDef kAtan2{.name = "atan2", .saves = {{"atan2 input a", "∂/∂a = b / (a² + b²)"}, {"atan2 input b", "∂/∂b = −a / (a² + b²)"}},
                       .derivation = "ops/pointwise.cpp", .tangent = "ȯ = (b ȧ − a ḃ) / (a² + b²)"};
Tensor atan2(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kAtan2.c_str(), a0, b0);
  const Tensor out = map2(kAtan2.c_str(), cuda::kAtan2, a, b, [](auto y, auto x) { return std::atan2(y, x); });
  return with_partials(kAtan2, a, b, out, [](const Tensor& y, const Tensor& x, const Tensor&) {
    const Tensor r2 = add(mul(y, y), mul(x, x));
    return std::pair{div(x, r2), neg(div(y, r2))};
  }, where);
}

// ---------------------------------------------------------------- fmod, remainder, floor division
// fmod(a, b) = a − q b with q = trunc(a/b), the exact quotient (C's fmod), a whole number that is
// constant between its jumps:   ∂/∂a = 1    ∂/∂b = −q
// remainder(a, b) = a − q b with q = ⌊a/b⌋:   ∂/∂a = 1    ∂/∂b = −q
// floor_divide(a, b) = ⌊a/b⌋ is piecewise constant: both partials are 0 (PyTorch's zero gradient).
constexpr OpDef kFmod{.name = "fmod", .saves = {{"fmod dividend a", "q = (a − out) / b, rounded to the whole number it is"},
                                                {"fmod divisor b", "q = (a − out) / b"}, {"fmod output", "q = (a − out) / b"}},
                      .derivation = "ops/pointwise.cpp", .tangent = "ȯ = ȧ − trunc(a/b) ḃ"};
constexpr OpDef kRemainder{.name = "remainder", .saves = {{"remainder dividend a", "q = ⌊a/b⌋, exactly"}, {"remainder divisor b", "q = ⌊a/b⌋, exactly"}},
                           .derivation = "ops/pointwise.cpp", .tangent = "ȯ = ȧ − ⌊a/b⌋ ḃ"};
constexpr OpDef kFloorDivide{.name = "floor_divide", .saves = {{"floor_divide dividend a", "its shape and dtype: the partials are 0"},
                                                             {"floor_divide divisor b", "its shape and dtype: the partials are 0"}},
                             .derivation = "ops/pointwise.cpp", .tangent = "ȯ = 0"};

namespace {
// The exact whole quotients, as constants of the graph (no gradient flows through a jump).
// (a − fmod(a, b)) / b is a whole number in exact arithmetic and within a rounding of one in floats.
Tensor trunc_quotient(const Tensor& a, const Tensor& b, const Tensor& mod) {
  NoGradGuard constant;
  return round(div(sub(a.detach(), mod.detach()), b.detach()));
}
Tensor floor_quotient(const Tensor& a, const Tensor& b) {
  NoGradGuard constant;
  return map2("remainder", cuda::kFloorDivide, a.detach(), b.detach(), [](auto x, auto y) { return rules::floor_divide_value(x, y); });
}
}  // namespace

Tensor fmod(const Tensor& a0, const Tensor& b0, Site where) {
  if (is_integral(a0) && is_integral(b0)) {  // exact, the dividend's sign: Python's % moved back by b where the signs differ
    const Shape shape = broadcast_shapes(kFmod.c_str(), a0.shape(), b0.shape());
    const Tensor a = expand(a0, shape, where), b = expand(b0, shape, where);
    const Tensor r = integer_binary(kFmod.c_str(), IntArith::remainder, a, b);
    const Tensor moved = logical_and(ne(r, 0.0), ne(lt(a, 0.0), lt(b, 0.0)));
    return hg::where(moved, sub(r, b, where), r, where);
  }
  const auto [a, b] = floated(kFmod.c_str(), a0, b0);
  const Tensor out = map2(kFmod.c_str(), cuda::kFmod, a, b, [](auto x, auto y) { return std::fmod(x, y); });
  return with_partials(kFmod, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor& mod) {
    return std::pair{number_like(x, 1.0), neg(trunc_quotient(x, y, mod))};
  }, where);
}

Tensor float_remainder(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kRemainder.c_str(), a0, b0);
  const Tensor out = map2(kRemainder.c_str(), cuda::kRemainder, a, b, [](auto x, auto y) { return rules::remainder_value(x, y); });
  return with_partials(kRemainder, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor&) {
    return std::pair{number_like(x, 1.0), neg(floor_quotient(x, y))};
  }, where);
}

Tensor float_floor_divide(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kFloorDivide.c_str(), a0, b0);
  const Tensor out = map2(kFloorDivide.c_str(), cuda::kFloorDivide, a, b, [](auto x, auto y) { return rules::floor_divide_value(x, y); });
  return with_partials(kFloorDivide, a, b, out, [](const Tensor& x, const Tensor&, const Tensor&) {
    return std::pair{number_like(x, 0.0), number_like(x, 0.0)};
  }, where);
}

// ---------------------------------------------------------------- xlogy
// out = a ln b (0 where a = 0):   ∂/∂a = ln b, but 0 where a = 0 and b ≤ 0 (PyTorch's: the
// product is held at 0 there, so a step off a = 0 sees ln b only where it exists)
//                                 ∂/∂b = a / b
constexpr OpDef kXlogy{.name = "xlogy", .saves = {{"xlogy input a", "∂/∂b = a / b"}, {"xlogy input b", "∂/∂a = ln b"}},
                       .derivation = "ops/pointwise.cpp", .tangent = "ȯ = ln(b) ȧ + (a / b) ḃ"};
Tensor xlogy(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kXlogy.c_str(), a0, b0);
  const Tensor out = map2(kXlogy.c_str(), cuda::kXlogy, a, b, [](auto x, auto y) { return rules::xlogy_value(x, y); });
  return with_partials(kXlogy, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor&) {
    const Tensor held = logical_and(eq(x, 0.0), le(y, 0.0));
    return std::pair{hg::where(held, number_like(y, 0.0), log(y)), div(x, y)};
  }, where);
}

// ---------------------------------------------------------------- copysign, fmax, fmin
// copysign(a, b) = |a| · s(b), s the sign of b's sign bit (±1):
//   ∂/∂a = sign(a) s(b), 0 at a = 0 (PyTorch's)    ∂/∂b = 0
// fmax(a, b) picks a where a ≥ b or b is NaN, else b:  ∂/∂a = [picked a]   ∂/∂b = [picked b]
// fmin(a, b) picks a where a ≤ b or b is NaN, else b; the same partials.
constexpr OpDef kCopysign{.name = "copysign", .saves = {{"copysign input a", "∂/∂a = sign(a) s(b)"}, {"copysign input b", "s(b), its sign bit"}},
                          .derivation = "ops/pointwise.cpp", .tangent = "ȯ = sign(a) s(b) ȧ"};
constexpr OpDef kFmax{.name = "fmax", .saves = {{"fmax input a", "which was picked"}, {"fmax input b", "which was picked"}},
                      .derivation = "ops/pointwise.cpp", .tangent = "ȯ = [a picked] ȧ + [b picked] ḃ"};
constexpr OpDef kFmin{.name = "fmin", .saves = {{"fmin input a", "which was picked"}, {"fmin input b", "which was picked"}},
                      .derivation = "ops/pointwise.cpp", .tangent = "ȯ = [a picked] ȧ + [b picked] ḃ"};

Tensor copysign(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kCopysign.c_str(), a0, b0);
  const Tensor out = map2(kCopysign.c_str(), cuda::kCopysign, a, b, [](auto x, auto y) { return std::copysign(x, y); });
  return with_partials(kCopysign, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor&) {
    NoGradGuard constant;
    const Tensor s = copysign(ones_like(y.detach()), y.detach());
    return std::pair{mul(sign(x.detach()), s), number_like(y, 0.0)};
  }, where);
}

namespace {
std::pair<Tensor, Tensor> picked_partials(const Tensor& a_picked) { return {a_picked, rsub(a_picked, 1.0)}; }
}  // namespace

Tensor fmax(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kFmax.c_str(), a0, b0);
  const Tensor out = map2(kFmax.c_str(), cuda::kFmax, a, b, [](auto x, auto y) { return rules::fmax_value(x, y); });
  return with_partials(kFmax, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor&) {
    return picked_partials(indicator(logical_or(ge(x, y), isnan(y)), x));
  }, where);
}

Tensor fmin(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kFmin.c_str(), a0, b0);
  const Tensor out = map2(kFmin.c_str(), cuda::kFmin, a, b, [](auto x, auto y) { return rules::fmin_value(x, y); });
  return with_partials(kFmin, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor&) {
    return picked_partials(indicator(logical_or(le(x, y), isnan(y)), x));
  }, where);
}

// ---------------------------------------------------------------- logaddexp, logaddexp2, hypot
// out = ln(eᵃ + eᵇ): the partials are softmax's weights of (a, b),
//   ∂/∂a = eᵃ / (eᵃ + eᵇ) = e^(a − out)    ∂/∂b = e^(b − out)
// out = log₂(2ᵃ + 2ᵇ):   ∂/∂a = 2^(a − out)    ∂/∂b = 2^(b − out)
// out = √(a² + b²):      ∂/∂a = a / out         ∂/∂b = b / out
constexpr OpDef kLogaddexp{.name = "logaddexp",
                           .saves = {{"logaddexp input a", "∂/∂a = e^(a − out)"}, {"logaddexp input b", "∂/∂b = e^(b − out)"},
                                     {"logaddexp output", "the weights' denominator, ln(eᵃ + eᵇ)"}},
                           .derivation = "ops/pointwise.cpp", .tangent = "ȯ = e^(a − out) ȧ + e^(b − out) ḃ"};
constexpr OpDef kLogaddexp2{.name = "logaddexp2",
                            .saves = {{"logaddexp2 input a", "∂/∂a = 2^(a − out)"}, {"logaddexp2 input b", "∂/∂b = 2^(b − out)"},
                                      {"logaddexp2 output", "the weights' denominator, log₂(2ᵃ + 2ᵇ)"}},
                            .derivation = "ops/pointwise.cpp", .tangent = "ȯ = 2^(a − out) ȧ + 2^(b − out) ḃ"};
constexpr OpDef kHypot{.name = "hypot",
                       .saves = {{"hypot input a", "∂/∂a = a / out"}, {"hypot input b", "∂/∂b = b / out"}, {"hypot output", "√(a² + b²)"}},
                       .derivation = "ops/pointwise.cpp", .tangent = "ȯ = (a ȧ + b ḃ) / out"};

Tensor logaddexp(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kLogaddexp.c_str(), a0, b0);
  const Tensor out = map2(kLogaddexp.c_str(), cuda::kLogaddexp, a, b, [](auto x, auto y) { return rules::logaddexp_value(x, y); });
  return with_partials(kLogaddexp, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor& o) {
    return std::pair{exp(sub(x, o)), exp(sub(y, o))};
  }, where);
}

Tensor logaddexp2(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kLogaddexp2.c_str(), a0, b0);
  const Tensor out = map2(kLogaddexp2.c_str(), cuda::kLogaddexp2, a, b, [](auto x, auto y) { return rules::logaddexp2_value(x, y); });
  return with_partials(kLogaddexp2, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor& o) {
    return std::pair{exp(mul(sub(x, o), std::numbers::ln2)), exp(mul(sub(y, o), std::numbers::ln2))};
  }, where);
}

Tensor hypot(const Tensor& a0, const Tensor& b0, Site where) {
  const auto [a, b] = floated(kHypot.c_str(), a0, b0);
  const Tensor out = map2(kHypot.c_str(), cuda::kHypot, a, b, [](auto x, auto y) { return std::hypot(x, y); });
  return with_partials(kHypot, a, b, out, [](const Tensor& x, const Tensor& y, const Tensor& o) {
    return std::pair{div(x, o), div(y, o)};
  }, where);
}

std::span<const OpDef* const> pointwise_ops() {
  static const OpDef* const defs[] = {&kAtan2, &kFmod, &kRemainder, &kFloorDivide, &kXlogy, &kCopysign,
                                      &kFmax, &kFmin, &kLogaddexp, &kLogaddexp2, &kHypot};
  return defs;
}

}  // namespace hg
