// ops/elementwise.cpp — elementwise forward kernels and their backward rules.
//
// Notation: out = f(a, b) elementwise after broadcasting; g = dL/dout. Every rule below is the
// scalar chain rule applied per element, then sum_to() folds the gradient of a broadcast operand
// back to its own shape (an element that was read k times receives the sum of k gradients).
//
// Tangents (forward mode): ȧ, ḃ, ẋ are the inputs' tangents, ȯ the output's. The same scalar chain
// rule, read forwards: ȯ = f'(x) ẋ, or ∂f/∂a ȧ + ∂f/∂b ḃ; a broadcast operand's tangent broadcasts
// with it (tangent_sum). Each rule is written as `.tangent` in the op's definition and as the
// lambda after its backward; ops/primitives.h says how a missing tangent is a missing term. A
// unary f writes v · f' once, and with_derivative (below) makes it both the backward and the tangent.
#include "ops/primitives.h"

#include <cmath>
#include <numbers>

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/cpu_map.h"
#include "ops/device.h"
#include "ops/integer.h"
#include "ops/registry.h"

namespace hg {

namespace {

// PyTorch's promotion where an operand is int64 or bool (a float op never reaches it: it is called
// only when is_integral says so): two integers take ops/integer.cpp's exact arithmetic `kind`, and
// beside a float an integer becomes that float (floated, ops/primitives.h).
using Binary = Tensor (*)(const Tensor&, const Tensor&, Site);
Tensor promoted(const char* op, Binary f, IntArith kind, const Tensor& a, const Tensor& b, Site where) {
  if (is_integral(a) && is_integral(b)) return integer_binary(op, kind, a, b);
  const auto [x, y] = floated(op, a, b);
  return f(x, y, where);
}

}  // namespace

// Records out = f(x) with dx = chain(g, saved) and ȯ = chain(ẋ, saved) (ops/primitives.h).
Tensor with_derivative(const OpDef& def, Keep keep, const Tensor& x, const Tensor& out, Chain chain, Site where,
                       Chain fused) {
  if (!should_record({x})) return out;
  const Tensor kept = keep == Keep::input ? x : out;
  std::vector<SavedTensor> saved;
  const SavedSlot slot = def.only_slot();
  if (keep != Keep::nothing) saved.push_back(save(slot, kept));
  auto backward_with = [keep, slot](Chain rule) {
    return [keep, slot, rule](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{keep == Keep::nothing ? zeros_like(g[0]) : rule(g[0], s[slot])};
    };
  };
  auto tangent = [chain, keep, kept](const std::vector<Tensor>& d) {
    return std::vector<Tensor>{keep == Keep::nothing ? zeros_like(d[0]) : chain(d[0], kept)};
  };
  if (fused) record(def, {x}, {out}, std::move(saved), backward_with(chain), backward_with(fused), tangent, where);
  else record(def, {x}, {out}, std::move(saved), backward_with(chain), tangent, where);
  return out;
}

// ---------------------------------------------------------------- add, sub
// out = a ± b  =>  da = sum_to(g), db = ±sum_to(g)

constexpr OpDef kAdd{.name = "add", .saves_nothing = "dA = sum_to(g)", .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = ȧ + ḃ"};
Tensor add(const Tensor& a, const Tensor& b, Site where) {
  if (is_integral(a) || is_integral(b)) return promoted(kAdd.c_str(), &add, IntArith::add, a, b, where);
  Tensor out = map2(kAdd.c_str(), cuda::kAdd, a, b, [](auto x, auto y) { return x + y; },
                    &cpu::Kernels::vadd);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    record(kAdd, {a, b}, {out}, {}, [sa, sb](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    }, [so = out.shape()](const std::vector<Tensor>& d) { return std::vector<Tensor>{tangent_sum({d[0], d[1]}, so)}; }, where);
  }
  return out;
}

constexpr OpDef kSub{.name = "sub", .derivation = "ops/elementwise.cpp", .tangent = "ȯ = ȧ − ḃ"};
Tensor sub(const Tensor& a, const Tensor& b, Site where) {
  if (is_integral(a) || is_integral(b)) return promoted(kSub.c_str(), &sub, IntArith::sub, a, b, where);
  Tensor out = map2(kSub.c_str(), cuda::kSub, a, b, [](auto x, auto y) { return x - y; },
                    &cpu::Kernels::vsub);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    record(kSub, {a, b}, {out}, {}, [sa, sb](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{sum_to(g[0], sa), neg(sum_to(g[0], sb))};
    }, [so = out.shape()](const std::vector<Tensor>& d) {
      return std::vector<Tensor>{tangent_sum({d[0], if_tangent(d[1], [](const Tensor& t) { return neg(t); })}, so)};
    }, where);
  }
  return out;
}

// ---------------------------------------------------------------- mul, div
// out = a * b  =>  da = sum_to(g * b), db = sum_to(g * a)          saves a, b
// out = a / b  =>  da = sum_to(g / b), db = sum_to(-g * a / b^2)   saves a, b

constexpr OpDef kMul{.name = "mul",
                     .saves = {{"left operand a", "d/db (a b) = a"}, {"right operand b", "d/da (a b) = b"}},
                     .derivation = "ops/elementwise.cpp", .tangent = "ȯ = ȧ b + a ḃ"};
struct MulSaved { static constexpr SavedSlot a = kMul.slot("left operand a"), b = kMul.slot("right operand b"); };
Tensor mul(const Tensor& a, const Tensor& b, Site where) {
  if (is_integral(a) || is_integral(b)) return promoted(kMul.c_str(), &mul, IntArith::mul, a, b, where);
  Tensor out = map2(kMul.c_str(), cuda::kMul, a, b, [](auto x, auto y) { return x * y; },
                    &cpu::Kernels::vmul);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    bool ga = a.requires_grad(), gb = b.requires_grad();
    record(kMul, {a, b}, {out}, {save(MulSaved::a, a), save(MulSaved::b, b)},
           [=](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{ga ? sum_to(mul(g[0], s[MulSaved::b]), sa) : Tensor(),
                                        gb ? sum_to(mul(g[0], s[MulSaved::a]), sb) : Tensor()};
           }, [a, b, so = out.shape()](const std::vector<Tensor>& d) {
             return std::vector<Tensor>{tangent_sum({if_tangent(d[0], [&](const Tensor& t) { return mul(t, b); }),
                                                     if_tangent(d[1], [&](const Tensor& t) { return mul(a, t); })}, so)};
           }, where);
  }
  return out;
}

constexpr OpDef kDiv{.name = "div",
                     .saves = {{"numerator a", "d/db (a/b) = −a/b²"}, {"denominator b", "both derivatives divide by it"}},
                     .derivation = "ops/elementwise.cpp", .tangent = "ȯ = (ȧ − out ḃ) / b"};
struct DivSaved { static constexpr SavedSlot a = kDiv.slot("numerator a"), b = kDiv.slot("denominator b"); };
Tensor div(const Tensor& a, const Tensor& b, Site where) {
  if (is_integral(a) || is_integral(b)) {  // true division: two integers divide as float32 (floated)
    const auto [x, y] = floated(kDiv.c_str(), a, b);
    return div(x, y, where);
  }
  Tensor out = map2(kDiv.c_str(), cuda::kDiv, a, b, [](auto x, auto y) { return x / y; },
                    &cpu::Kernels::vdiv);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    bool ga = a.requires_grad(), gb = b.requires_grad();
    record(kDiv, {a, b}, {out}, {save(DivSaved::a, a), save(DivSaved::b, b)},
           [=](const std::vector<Tensor>& g, const Saved& s) {
             const Tensor &A = s[DivSaved::a], &B = s[DivSaved::b];
             return std::vector<Tensor>{ga ? sum_to(div(g[0], B), sa) : Tensor(),
                                        gb ? sum_to(neg(div(mul(g[0], A), mul(B, B))), sb) : Tensor()};
           }, [b, out](const std::vector<Tensor>& d) {  // ȧ/b − a ḃ/b², with a/b = out
             return std::vector<Tensor>{tangent_sum({if_tangent(d[0], [&](const Tensor& t) { return div(t, b); }),
                                                     if_tangent(d[1], [&](const Tensor& t) { return neg(div(mul(out, t), b)); })},
                                                    out.shape())};
           }, where);
  }
  return out;
}

// ---------------------------------------------------------------- with a scalar
// out = a + s => da = g;  out = a * s => da = g * s;  out = s - a => da = -g;  out = s / a => da = -g * s / a^2

constexpr OpDef kAddScalar{.name = "add_scalar", .derivation = "ops/elementwise.cpp", .tangent = "ȯ = ȧ"};
Tensor add(const Tensor& a, double s, Site where) {
  if (is_integral(a))
    return is_whole_number(s) ? integer_scalar(kAddScalar.c_str(), IntArith::add, a, static_cast<int64_t>(s)) : add(a.to(DType::f32), s, where);
  Tensor out = unary_map(kAddScalar, cuda::kAddScalar, s, a, [s](auto x) { return x + s; });
  if (should_record({a}))
    record(kAddScalar, {a}, {out}, {}, [](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{g[0]};
    }, [](const std::vector<Tensor>& d) { return d; }, where);
  return out;
}

constexpr OpDef kMulScalar{.name = "mul_scalar", .saves_nothing = "the scalar", .derivation = "ops/elementwise.cpp",
                           .tangent = "ȯ = s ȧ"};
Tensor mul(const Tensor& a, double s, Site where) {
  if (is_integral(a))
    return is_whole_number(s) ? integer_scalar(kMulScalar.c_str(), IntArith::mul, a, static_cast<int64_t>(s)) : mul(a.to(DType::f32), s, where);
  Tensor out = unary_map(kMulScalar, cuda::kMulScalar, s, a, [s](auto x) { return x * s; });
  if (should_record({a}))
    record(kMulScalar, {a}, {out}, {}, [s](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{mul(g[0], s)};
    }, [s](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], s)}; }, where);
  return out;
}

constexpr OpDef kRsubScalar{.name = "rsub_scalar", .derivation = "ops/elementwise.cpp", .tangent = "ȯ = −ȧ"};
Tensor rsub(const Tensor& a, double s, Site where) {
  if (is_integral(a))
    return is_whole_number(s) ? integer_scalar(kRsubScalar.c_str(), IntArith::sub, a, static_cast<int64_t>(s), true) : rsub(a.to(DType::f32), s, where);
  Tensor out = unary_map(kRsubScalar, cuda::kRsubScalar, s, a, [s](auto x) { return s - x; });
  if (should_record({a}))
    record(kRsubScalar, {a}, {out}, {}, [](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{neg(g[0])};
    }, [](const std::vector<Tensor>& d) { return std::vector<Tensor>{neg(d[0])}; }, where);
  return out;
}

constexpr OpDef kRdivScalar{.name = "rdiv_scalar", .saves = {{"denominator a", "d(s/a) = −s/a²"}},
                            .derivation = "ops/elementwise.cpp", .tangent = "ȯ = −out ȧ / a"};
struct RdivScalarSaved { static constexpr SavedSlot a = kRdivScalar.slot("denominator a"); };
Tensor rdiv(const Tensor& a, double s, Site where) {
  if (is_integral(a)) return rdiv(a.to(DType::f32), s, where);
  Tensor out = unary_map(kRdivScalar, cuda::kRdivScalar, s, a, [s](auto x) { return s / x; });
  if (should_record({a}))
    record(kRdivScalar, {a}, {out}, {save(RdivScalarSaved::a, a)},
           [s](const std::vector<Tensor>& g, const Saved& sv) {
             return std::vector<Tensor>{mul(div(g[0], mul(sv[RdivScalarSaved::a], sv[RdivScalarSaved::a])), -s)};
           }, [a, out](const std::vector<Tensor>& d) { return std::vector<Tensor>{neg(div(mul(out, d[0]), a))}; }, where);
  return out;
}

// ---------------------------------------------------------------- unary

constexpr OpDef kNeg{.name = "neg", .derivation = "ops/elementwise.cpp", .tangent = "ȯ = −ẋ"};
Tensor neg(const Tensor& x, Site where) {
  if (is_integral(x)) {
    if (x.dtype() == DType::b8) fail("neg", "{} is bool; negation is not defined on bools (use logical_not)", x.describe());
    return integer_scalar(kNeg.c_str(), IntArith::sub, x, 0, true);
  }
  Tensor out = unary_map(kNeg, cuda::kNeg, 0, x, [](auto v) { return -v; });
  if (should_record({x}))
    record(kNeg, {x}, {out}, {}, [](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{neg(g[0])};
    }, [](const std::vector<Tensor>& d) { return std::vector<Tensor>{neg(d[0])}; }, where);
  return out;
}

constexpr OpDef kExp{.name = "exp", .saves = {{"exp output", "it is the derivative"}},
                     .derivation = "ops/elementwise.cpp", .tangent = "ȯ = out ẋ"};
// out = e^x  =>  f' = out   (saves the output: it is the derivative)
Tensor exp(const Tensor& x, Site where) {
  const Tensor out = unary_map(kExp, cuda::kExp, 0, x, [](auto v) { return std::exp(v); });
  return with_derivative(kExp, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, y); }, where);
}

constexpr OpDef kLog{.name = "log", .saves = {{"log input", "d log x = 1/x"}}, .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = ẋ / x"};
// out = ln x  =>  f' = 1 / x
Tensor log(const Tensor& x, Site where) {
  const Tensor out = unary_map(kLog, cuda::kLog, 0, x, [](auto v) { return std::log(v); });
  return with_derivative(kLog, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return div(v, in); }, where);
}

constexpr OpDef kPow{.name = "pow", .saves = {{"pow base", "p x^(p−1)"}}, .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = p x^(p−1) ẋ"};
// out = x^p  =>  f' = p x^(p−1)
Tensor pow(const Tensor& x, double p, Site where) {
  const Tensor out = unary_map(kPow, cuda::kPow, p, x, [p](auto v) { return std::pow(v, static_cast<decltype(v)>(p)); });
  return with_derivative(kPow, Keep::input, x, out, [p](const Tensor& v, const Tensor& in) {
    return mul(mul(v, pow(in, p - 1.0)), p);
  }, where);
}

constexpr OpDef kSqrt{.name = "sqrt", .saves = {{"sqrt output", "1 / (2 out)"}}, .derivation = "ops/elementwise.cpp",
                      .tangent = "ȯ = ẋ / (2 out)"};
// out = √x  =>  f' = 1 / (2 out)
Tensor sqrt(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSqrt, cuda::kSqrt, 0, x, [](auto v) { return std::sqrt(v); });
  return with_derivative(kSqrt, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return div(v, mul(y, 2.0)); }, where);
}

// The ops below have a fused backward kernel for speed, given to with_derivative beside f' written
// with recorded ops: the engine runs the fused one, and the composed one under create_graph, so the
// gradient can be differentiated again; gradgradcheck holds the two to each other.

constexpr OpDef kRelu{.name = "relu", .saves = {{"relu input", "the step [x > 0]"}},
                      .derivation = "ops/elementwise.cpp", .fused = "relu_backward: g · [x > 0] in one pass",
                      .tangent = "ȯ = [x > 0] ẋ"};
namespace {
// g · [x > 0], one element: the fused backward on g, and f' itself on ones.
constexpr auto relu_step = [](auto gv, auto xv) { return xv > 0 ? gv : decltype(gv)(0); };
Tensor relu_backward(const Tensor& g, const Tensor& x) { return map2("relu_backward", cuda::kReluBackward, g, x, relu_step); }
}  // namespace

// out = max(x, 0)  =>  f' = [x > 0]; the step is piecewise constant: its own derivative is 0.
Tensor relu(const Tensor& x, Site where) {
  if (x.defined() && !is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; });
  const Tensor out = unary_map(kRelu, cuda::kRelu, 0, x, [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); });  // NaN stays
  return with_derivative(kRelu, Keep::input, x, out, [](const Tensor& v, const Tensor& in) {
    return mul(v, relu_backward(ones_like(in), in));
  }, where, relu_backward);
}

constexpr OpDef kTanh{.name = "tanh", .saves = {{"tanh output", "1 − y²"}}, .derivation = "ops/elementwise.cpp",
                      .fused = "tanh_backward: g (1 − y²) in one pass", .tangent = "ȯ = (1 − out²) ẋ"};
// out = tanh x  =>  f' = 1 − out²
Tensor tanh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kTanh, cuda::kTanh, 0, x, [](auto v) { return std::tanh(v); });
  return with_derivative(kTanh, Keep::output, x, out, [](const Tensor& v, const Tensor& y) {
    return mul(v, rsub(mul(y, y), 1.0));
  }, where, [](const Tensor& g, const Tensor& y) {
    return map2("tanh_backward", cuda::kTanhBackward, g, y, [](auto gv, auto yv) { return gv * (1 - yv * yv); });
  });
}

// ---------------------------------------------------------------- softplus
// out = log(1 + e^x), computed as max(x, 0) + log1p(e^(−|x|)): the two agree (for x ≥ 0,
// log(1 + e^x) = x + log(e^(−x) + 1)), the exponent is never positive, so nothing overflows
// (log(1 + e^x) is inf from x ≈ 89 in float32), and log1p keeps the digits of a tiny e^(−|x|)
// that 1 + e^(−|x|) would round away. In double, rounded once, on both devices.
// backward. d/dx log(1 + e^x) = e^x / (1 + e^x) = σ(x), so dx = g σ(x), with σ(x) = 1 / (1 + e^(−x))
// for x ≥ 0 and e^x / (1 + e^x) for x < 0 (again a non-positive exponent). Saves x.
// Under create_graph σ(x) = exp(x − softplus(x)), in recorded ops: its derivative σ(x)(1 − σ(x))
// follows by the chain rule.
namespace {
double softplus_value(double x) { return (x > 0 ? x : 0.0) + std::log1p(std::exp(-std::abs(x))); }
double sigmoid_value(double x) {
  const double e = std::exp(-std::abs(x));
  return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}
}  // namespace

constexpr OpDef kSoftplus{.name = "softplus", .saves = {{"softplus input", "σ(x) = e^x / (1 + e^x)"}},
                          .derivation = "ops/elementwise.cpp", .fused = "softplus_backward: g σ(x) in one pass",
                          .tangent = "ȯ = σ(x) ẋ"};
Tensor softplus(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSoftplus, cuda::kSoftplus, 0, x, [](auto v) { return softplus_value(static_cast<double>(v)); });
  return with_derivative(kSoftplus, Keep::input, x, out, [where](const Tensor& v, const Tensor& in) {
    return mul(v, exp(sub(in, softplus(in, where))));
  }, where, [](const Tensor& g, const Tensor& in) {
    return map2("softplus_backward", cuda::kSoftplusBackward, g, in, [](auto gv, auto xv) {
      return gv * static_cast<decltype(gv)>(sigmoid_value(static_cast<double>(xv)));
    });
  });
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> elementwise_ops() {
  static const OpDef* const defs[] = {&kAdd, &kSub, &kMul, &kDiv, &kAddScalar, &kMulScalar, &kRsubScalar, &kRdivScalar, &kNeg, &kExp, &kLog, &kPow, &kSqrt, &kRelu, &kTanh, &kSoftplus};
  return defs;
}

}  // namespace hg
