// ops/elementwise.cpp — elementwise forward kernels and their backward rules.
//
// Notation: out = f(a, b) elementwise after broadcasting; g = dL/dout. Every rule below is the
// scalar chain rule applied per element, then sum_to() folds the gradient of a broadcast operand
// back to its own shape (an element that was read k times receives the sum of k gradients).
//
// Tangents (forward mode): ȧ, ḃ, ẋ are the inputs' tangents, ȯ the output's. The same scalar chain
// rule, read forwards: ȯ = f'(x) ẋ, or ∂f/∂a ȧ + ∂f/∂b ḃ; a broadcast operand's tangent broadcasts
// with it (tangent_sum). Each rule is written as `.tangent` in the op's definition and as the
// lambda after its backward; ops/primitives.h says how a missing tangent is a missing term.
#include "ops/primitives.h"

#include <cmath>
#include <numbers>
#include <optional>

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/cpu_map.h"
#include "ops/device.h"
#include "ops/integer.h"
#include "ops/registry.h"

namespace hg {

namespace {

// PyTorch's promotion where an operand is int64 or bool (ops/integer.h): beside a float it becomes
// that float (it carries no gradient); two integers take integer arithmetic, or float32 to divide.
// Two floats of different widths stay the library's dtype-mismatch error. Empty when both are float.
using Binary = Tensor (*)(const Tensor&, const Tensor&, Site);
std::optional<Tensor> promoted(const char* op, IntArith kind, Binary f, const Tensor& a, const Tensor& b, Site where) {
  if (!a.defined() || !b.defined() || (is_floating(a.dtype()) && is_floating(b.dtype()))) return std::nullopt;
  if (is_floating(a.dtype())) return f(a, b.to(a.dtype()), where);
  if (is_floating(b.dtype())) return f(a.to(b.dtype()), b, where);
  if (f == &div) return f(a.to(DType::f32), b.to(DType::f32), where);
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  return integer_binary(op, kind, expand(a, shape), expand(b, shape));
}

// A number beside an int64 or bool tensor: a whole one keeps it integer, another makes it float32.

}  // namespace

// ---------------------------------------------------------------- add, sub
// out = a ± b  =>  da = sum_to(g), db = ±sum_to(g)

constexpr OpDef kAdd{.name = "add", .saves_nothing = "dA = sum_to(g)", .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = ȧ + ḃ"};
Tensor add(const Tensor& a, const Tensor& b, Site where) {
  if (auto r = promoted(kAdd.c_str(), IntArith::add, &add, a, b, where)) return *r;
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
  if (auto r = promoted(kSub.c_str(), IntArith::sub, &sub, a, b, where)) return *r;
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
  if (auto r = promoted(kMul.c_str(), IntArith::mul, &mul, a, b, where)) return *r;
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
  if (auto r = promoted(kDiv.c_str(), IntArith::mul, &div, a, b, where)) return *r;
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
struct ExpSaved { static constexpr SavedSlot out = kExp.slot("exp output"); };
// out = e^x  =>  dx = g * out   (saves the output: it is the derivative)
Tensor exp(const Tensor& x, Site where) {
  Tensor out = unary_map(kExp, cuda::kExp, 0, x, [](auto v) { return std::exp(v); });
  if (should_record({x}))
    record(kExp, {x}, {out}, {save(ExpSaved::out, out)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{mul(g[0], s[ExpSaved::out])};
    }, [out](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], out)}; }, where);
  return out;
}

constexpr OpDef kLog{.name = "log", .saves = {{"log input", "d log x = 1/x"}}, .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = ẋ / x"};
struct LogSaved { static constexpr SavedSlot x = kLog.slot("log input"); };
// out = ln x  =>  dx = g / x
Tensor log(const Tensor& x, Site where) {
  Tensor out = unary_map(kLog, cuda::kLog, 0, x, [](auto v) { return std::log(v); });
  if (should_record({x}))
    record(kLog, {x}, {out}, {save(LogSaved::x, x)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{div(g[0], s[LogSaved::x])};
    }, [x](const std::vector<Tensor>& d) { return std::vector<Tensor>{div(d[0], x)}; }, where);
  return out;
}

constexpr OpDef kPow{.name = "pow", .saves = {{"pow base", "p x^(p−1)"}}, .derivation = "ops/elementwise.cpp",
                     .tangent = "ȯ = p x^(p−1) ẋ"};
struct PowSaved { static constexpr SavedSlot x = kPow.slot("pow base"); };
// out = x^p  =>  dx = g * p * x^(p-1)
Tensor pow(const Tensor& x, double p, Site where) {
  Tensor out = unary_map(kPow, cuda::kPow, p, x, [p](auto v) { return std::pow(v, static_cast<decltype(v)>(p)); });
  if (should_record({x}))
    record(kPow, {x}, {out}, {save(PowSaved::x, x)}, [p](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{mul(mul(g[0], pow(s[PowSaved::x], p - 1.0)), p)};
    }, [x, p](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(mul(d[0], pow(x, p - 1.0)), p)}; }, where);
  return out;
}

constexpr OpDef kSqrt{.name = "sqrt", .saves = {{"sqrt output", "1 / (2 out)"}}, .derivation = "ops/elementwise.cpp",
                      .tangent = "ȯ = ẋ / (2 out)"};
struct SqrtSaved { static constexpr SavedSlot out = kSqrt.slot("sqrt output"); };
// out = sqrt(x)  =>  dx = g / (2 out)
Tensor sqrt(const Tensor& x, Site where) {
  Tensor out = unary_map(kSqrt, cuda::kSqrt, 0, x, [](auto v) { return std::sqrt(v); });
  if (should_record({x}))
    record(kSqrt, {x}, {out}, {save(SqrtSaved::out, out)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{div(g[0], mul(s[SqrtSaved::out], 2.0))};
    }, [out](const std::vector<Tensor>& d) { return std::vector<Tensor>{div(d[0], mul(out, 2.0))}; }, where);
  return out;
}

// The ops below (and softplus) have a fused backward kernel for speed, given to record() beside
// the same formula written with recorded ops: the engine runs the fused one, and the composed one
// under create_graph, so the gradient can be differentiated again; gradgradcheck holds the two to
// each other.

constexpr OpDef kRelu{.name = "relu", .saves = {{"relu input", "the step [x > 0]"}},
                      .derivation = "ops/elementwise.cpp", .fused = "relu_backward: g · [x > 0] in one pass",
                      .tangent = "ȯ = [x > 0] ẋ"};
struct ReluSaved { static constexpr SavedSlot x = kRelu.slot("relu input"); };
namespace {
constexpr auto relu_step = [](auto gv, auto xv) { return xv > 0 ? gv : decltype(gv)(0); };
}  // namespace

// out = max(x, 0)  =>  dx = g * [x > 0]; the step [x > 0] is piecewise constant: its own derivative is 0.
Tensor relu(const Tensor& x, Site where) {
  if (x.defined() && !is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; });
  Tensor out = unary_map(kRelu, cuda::kRelu, 0, x, [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); });  // NaN stays
  if (should_record({x}))
    record(kRelu, {x}, {out}, {save(ReluSaved::x, x)}, [](const std::vector<Tensor>& g, const Saved& s) {
      const Tensor& xs = s[ReluSaved::x];
      return std::vector<Tensor>{mul(g[0], map2("relu_backward", cuda::kReluBackward, ones_like(xs), xs, relu_step))};
    }, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{map2("relu_backward", cuda::kReluBackward, g[0], s[ReluSaved::x], relu_step)};
    }, [x](const std::vector<Tensor>& d) {
      return std::vector<Tensor>{mul(d[0], map2("relu_backward", cuda::kReluBackward, ones_like(x), x.detach(), relu_step))};
    }, where);
  return out;
}

constexpr OpDef kTanh{.name = "tanh", .saves = {{"tanh output", "1 − y²"}}, .derivation = "ops/elementwise.cpp",
                      .fused = "tanh_backward: g (1 − y²) in one pass", .tangent = "ȯ = (1 − out²) ẋ"};
struct TanhSaved { static constexpr SavedSlot out = kTanh.slot("tanh output"); };
// out = tanh x  =>  dx = g * (1 - out^2)
Tensor tanh(const Tensor& x, Site where) {
  Tensor out = unary_map(kTanh, cuda::kTanh, 0, x, [](auto v) { return std::tanh(v); });
  if (should_record({x}))
    record(kTanh, {x}, {out}, {save(TanhSaved::out, out)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{mul(g[0], rsub(mul(s[TanhSaved::out], s[TanhSaved::out]), 1.0))};
    }, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{
          map2("tanh_backward", cuda::kTanhBackward, g[0], s[TanhSaved::out], [](auto gv, auto y) { return gv * (1 - y * y); })};
    }, [out](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], rsub(mul(out, out), 1.0))}; }, where);
  return out;
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
struct SoftplusSaved { static constexpr SavedSlot x = kSoftplus.slot("softplus input"); };
Tensor softplus(const Tensor& x, Site where) {
  Tensor out = unary_map(kSoftplus, cuda::kSoftplus, 0, x, [](auto v) { return softplus_value(static_cast<double>(v)); });
  if (should_record({x}))
    record(kSoftplus, {x}, {out}, {save(SoftplusSaved::x, x)}, [where](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{mul(g[0], exp(sub(s[SoftplusSaved::x], softplus(s[SoftplusSaved::x], where))))};
    }, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{map2("softplus_backward", cuda::kSoftplusBackward, g[0], s[SoftplusSaved::x], [](auto gv, auto xv) {
        return gv * static_cast<decltype(gv)>(sigmoid_value(static_cast<double>(xv)));
      })};
    }, [x, where](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], exp(sub(x, softplus(x, where))))}; }, where);
  return out;
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> elementwise_ops() {
  static const OpDef* const defs[] = {&kAdd, &kSub, &kMul, &kDiv, &kAddScalar, &kMulScalar, &kRsubScalar, &kRdivScalar, &kNeg, &kExp, &kLog, &kPow, &kSqrt, &kRelu, &kTanh, &kSoftplus};
  return defs;
}

}  // namespace hg
