// ops/elementwise_math.cpp — the elementwise functions of a learner's API, PyTorch's names: the
// trigonometric and hyperbolic functions and their inverses, the logistic sigmoid and SiLU, the
// exp/log relatives, reciprocal, rsqrt, square, abs, sign, and the roundings.
//
// Each is out = f(x) elementwise: each op below states f' in a comment and records it once with
// with_derivative (ops/primitives.h), which serves the backward (dx = g · f') and the tangent
// (ȯ = f' · ẋ), f' computed from what the op saves (x, or out where f' reads more simply from it)
// with recorded ops, so the gradient can be differentiated again (create_graph).
// The roundings and sign are piecewise constant: f' = 0 wherever it exists, and they pass a zero
// gradient as PyTorch does (at a jump, where no derivative exists, zero too).
#include <cmath>
#include <numbers>

#include "cpu/pointwise_rules.h"
#include "ops/cpu_map.h"
#include "ops/primitives.h"
#include "ops/registry.h"

namespace hg {

namespace {

constexpr double kLn2 = std::numbers::ln2;

}  // namespace

// ---------------------------------------------------------------- trigonometric

// sin' = cos
constexpr OpDef kSin{.name = "sin", .saves = {{"sin input x", "f' = cos x"}}, .derivation = "ops/elementwise_math.cpp",
                     .tangent = "ȯ = cos(x) ẋ"};
Tensor sin(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSin, cuda::kSin, 0, x, [](auto v) { return std::sin(v); });
  return with_derivative(kSin, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, cos(in)); }, where);
}
// cos' = −sin
constexpr OpDef kCos{.name = "cos", .saves = {{"cos input x", "f' = −sin x"}}, .derivation = "ops/elementwise_math.cpp",
                     .tangent = "ȯ = −sin(x) ẋ"};
Tensor cos(const Tensor& x, Site where) {
  const Tensor out = unary_map(kCos, cuda::kCos, 0, x, [](auto v) { return std::cos(v); });
  return with_derivative(kCos, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, neg(sin(in))); }, where);
}
// tan' = 1 / cos² = 1 + tan²
constexpr OpDef kTan{.name = "tan", .saves = {{"tan output", "f' = 1 + out²"}}, .derivation = "ops/elementwise_math.cpp",
                     .tangent = "ȯ = (1 + out²) ẋ"};
Tensor tan(const Tensor& x, Site where) {
  const Tensor out = unary_map(kTan, cuda::kTan, 0, x, [](auto v) { return std::tan(v); });
  return with_derivative(kTan, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, add(mul(y, y), 1.0)); }, where);
}
// asin' = 1 / √(1 − x²),  acos' = −1 / √(1 − x²),  atan' = 1 / (1 + x²)
constexpr OpDef kAsin{.name = "asin", .saves = {{"asin input x", "f' = (1 − x²)^(−1/2)"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / √(1 − x²)"};
Tensor asin(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAsin, cuda::kAsin, 0, x, [](auto v) { return std::asin(v); });
  return with_derivative(kAsin, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, pow(rsub(mul(in, in), 1.0), -0.5)); }, where);
}
constexpr OpDef kAcos{.name = "acos", .saves = {{"acos input x", "f' = −(1 − x²)^(−1/2)"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = −ẋ / √(1 − x²)"};
Tensor acos(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAcos, cuda::kAcos, 0, x, [](auto v) { return std::acos(v); });
  return with_derivative(kAcos, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, neg(pow(rsub(mul(in, in), 1.0), -0.5))); }, where);
}
constexpr OpDef kAtan{.name = "atan", .saves = {{"atan input x", "f' = 1 / (1 + x²)"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / (1 + x²)"};
Tensor atan(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAtan, cuda::kAtan, 0, x, [](auto v) { return std::atan(v); });
  return with_derivative(kAtan, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, rdiv(add(mul(in, in), 1.0), 1.0)); }, where);
}

// ---------------------------------------------------------------- hyperbolic

// sinh' = cosh, cosh' = sinh
constexpr OpDef kSinh{.name = "sinh", .saves = {{"sinh input x", "f' = cosh x"}}, .derivation = "ops/elementwise_math.cpp",
                      .tangent = "ȯ = cosh(x) ẋ"};
Tensor sinh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSinh, cuda::kSinh, 0, x, [](auto v) { return std::sinh(v); });
  return with_derivative(kSinh, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, cosh(in)); }, where);
}
constexpr OpDef kCosh{.name = "cosh", .saves = {{"cosh input x", "f' = sinh x"}}, .derivation = "ops/elementwise_math.cpp",
                      .tangent = "ȯ = sinh(x) ẋ"};
Tensor cosh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kCosh, cuda::kCosh, 0, x, [](auto v) { return std::cosh(v); });
  return with_derivative(kCosh, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, sinh(in)); }, where);
}
// asinh' = 1 / √(x² + 1),  acosh' = 1 / √(x² − 1),  atanh' = 1 / (1 − x²)
constexpr OpDef kAsinh{.name = "asinh", .saves = {{"asinh input x", "f' = (x² + 1)^(−1/2)"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / √(x² + 1)"};
Tensor asinh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAsinh, cuda::kAsinh, 0, x, [](auto v) { return std::asinh(v); });
  return with_derivative(kAsinh, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, pow(add(mul(in, in), 1.0), -0.5)); }, where);
}
constexpr OpDef kAcosh{.name = "acosh", .saves = {{"acosh input x", "f' = (x² − 1)^(−1/2)"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / √(x² − 1)"};
Tensor acosh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAcosh, cuda::kAcosh, 0, x, [](auto v) { return std::acosh(v); });
  return with_derivative(kAcosh, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, pow(add(mul(in, in), -1.0), -0.5)); }, where);
}
constexpr OpDef kAtanh{.name = "atanh", .saves = {{"atanh input x", "f' = 1 / (1 − x²)"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / (1 − x²)"};
Tensor atanh(const Tensor& x, Site where) {
  const Tensor out = unary_map(kAtanh, cuda::kAtanh, 0, x, [](auto v) { return std::atanh(v); });
  return with_derivative(kAtanh, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, rdiv(rsub(mul(in, in), 1.0), 1.0)); }, where);
}

// ---------------------------------------------------------------- the logistic sigmoid and SiLU

// σ(x) = 1 / (1 + e^−x), computed as e^x / (1 + e^x) for x < 0 so that neither overflows; σ' = σ (1 − σ)
constexpr OpDef kSigmoid{.name = "sigmoid", .saves = {{"sigmoid output σ", "f' = σ (1 − σ)"}},
                         .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = σ (1 − σ) ẋ"};
namespace {
constexpr auto logistic = [](auto v) {
  using T = decltype(v);
  if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
  const T e = std::exp(v);
  return e / (T(1) + e);
};
}  // namespace
Tensor sigmoid(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSigmoid, cuda::kSigmoid, 0, x, logistic);
  return with_derivative(kSigmoid, Keep::output, x, out, [](const Tensor& v, const Tensor& s) { return mul(v, mul(s, rsub(s, 1.0))); }, where);
}
// silu(x) = x σ(x);  silu' = σ + x σ (1 − σ) = σ (1 + x (1 − σ))
constexpr OpDef kSilu{.name = "silu", .saves = {{"silu input x", "f' = σ(x) (1 + x (1 − σ(x)))"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = σ (1 + x (1 − σ)) ẋ"};
Tensor silu(const Tensor& x, Site where) {
  const Tensor out = unary_map(kSilu, cuda::kSilu, 0, x, [](auto v) { return v * logistic(v); });
  return with_derivative(kSilu, Keep::input, x, out, [](const Tensor& v, const Tensor& in) {
    const Tensor s = sigmoid(in);
    return mul(v, mul(s, add(mul(in, rsub(s, 1.0)), 1.0)));
  }, where);
}

// ---------------------------------------------------------------- exp and log relatives

// log1p' = 1 / (1 + x);  expm1' = e^x = out + 1;  log2' = 1 / (x ln 2);  exp2' = 2^x ln 2 = out ln 2
constexpr OpDef kLog1p{.name = "log1p", .saves = {{"log1p input x", "f' = 1 / (1 + x)"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / (1 + x)"};
Tensor log1p(const Tensor& x, Site where) {
  const Tensor out = unary_map(kLog1p, cuda::kLog1p, 0, x, [](auto v) { return std::log1p(v); });
  return with_derivative(kLog1p, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, rdiv(add(in, 1.0), 1.0)); }, where);
}
constexpr OpDef kExpm1{.name = "expm1", .saves = {{"expm1 output", "f' = out + 1"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = (out + 1) ẋ"};
Tensor expm1(const Tensor& x, Site where) {
  const Tensor out = unary_map(kExpm1, cuda::kExpm1, 0, x, [](auto v) { return std::expm1(v); });
  return with_derivative(kExpm1, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, add(y, 1.0)); }, where);
}
constexpr OpDef kLog2{.name = "log2", .saves = {{"log2 input x", "f' = 1 / (x ln 2)"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = ẋ / (x ln 2)"};
Tensor log2(const Tensor& x, Site where) {
  const Tensor out = unary_map(kLog2, cuda::kLog2, 0, x, [](auto v) { return std::log2(v); });
  return with_derivative(kLog2, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, rdiv(in, 1.0 / kLn2)); }, where);
}
// log10' = 1 / (x ln 10)
constexpr OpDef kLog10{.name = "log10", .saves = {{"log10 input x", "f' = 1 / (x ln 10)"}}, .derivation = "ops/elementwise_math.cpp",
                       .tangent = "ȯ = ẋ / (x ln 10)"};
Tensor log10(const Tensor& x, Site where) {
  const Tensor out = unary_map(kLog10, cuda::kLog10, 0, x, [](auto v) { return std::log10(v); });
  return with_derivative(kLog10, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, rdiv(in, 1.0 / std::numbers::ln10)); }, where);
}
constexpr OpDef kExp2{.name = "exp2", .saves = {{"exp2 output", "f' = out ln 2"}},
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = out ln 2 ẋ"};
Tensor exp2(const Tensor& x, Site where) {
  const Tensor out = unary_map(kExp2, cuda::kExp2, 0, x, [](auto v) { return std::exp2(v); });
  return with_derivative(kExp2, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, mul(y, kLn2)); }, where);
}

// ---------------------------------------------------------------- powers

// reciprocal' = −1/x² = −out²;  rsqrt' = −x^(−3/2) / 2 = −out³ / 2;  square' = 2x
constexpr OpDef kReciprocal{.name = "reciprocal", .saves = {{"reciprocal output", "f' = −out²"}},
                            .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = −out² ẋ"};
Tensor reciprocal(const Tensor& x, Site where) {
  const Tensor out = unary_map(kReciprocal, cuda::kReciprocal, 0, x, [](auto v) { return decltype(v)(1) / v; });
  return with_derivative(kReciprocal, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, neg(mul(y, y))); }, where);
}
constexpr OpDef kRsqrt{.name = "rsqrt", .saves = {{"rsqrt output", "f' = −out³ / 2"}},
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = −out³ ẋ / 2"};
Tensor rsqrt(const Tensor& x, Site where) {
  const Tensor out = unary_map(kRsqrt, cuda::kRsqrt, 0, x, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
  return with_derivative(kRsqrt, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, mul(mul(y, mul(y, y)), -0.5)); }, where);
}
constexpr OpDef kSquare{.name = "square", .saves = {{"square input x", "f' = 2x"}},
                        .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 2x ẋ"};
Tensor square(const Tensor& x, Site where) {
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(v)); });
  const Tensor out = unary_map(kSquare, cuda::kSquare, 0, x, [](auto v) { return v * v; });
  return with_derivative(kSquare, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, mul(in, 2.0)); }, where);
}

// ---------------------------------------------------------------- abs, sign and the roundings

// abs' = sign(x) (0 at 0, as PyTorch); sign, floor, ceil, round (half to even), trunc: f' = 0.
constexpr OpDef kAbs{.name = "abs", .saves = {{"abs input x", "f' = sign x (0 at 0)"}},
                     .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = sign(x) ẋ"};
Tensor abs(const Tensor& x, Site where) {
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v; });
  const Tensor out = unary_map(kAbs, cuda::kAbs, 0, x, [](auto v) { return std::abs(v); });
  return with_derivative(kAbs, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, sign(in)); }, where);
}
namespace {
constexpr auto signum = [](auto v) {
  using T = decltype(v);
  return v > T(0) ? T(1) : v < T(0) ? T(-1) : v == v ? v : T(0);  // ±0 stay themselves; NaN gives 0, as PyTorch's
};
}  // namespace
constexpr OpDef kSign{.name = "sign", .saves_nothing = "piecewise constant: a zero gradient",
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 0"};
Tensor sign(const Tensor& x, Site where) {
  if (x.dtype() == DType::b8) return x.clone(where);  // a bool's sign is itself, as PyTorch's
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return static_cast<int64_t>((v > 0) - (v < 0)); });
  const Tensor out = unary_map(kSign, cuda::kSign, 0, x, signum);
  return with_derivative(kSign, Keep::nothing, x, out, {}, where);
}
constexpr OpDef kFloor{.name = "floor", .saves_nothing = "piecewise constant: a zero gradient",
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 0"};
Tensor floor(const Tensor& x, Site where) {
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v; });
  const Tensor out = unary_map(kFloor, cuda::kFloor, 0, x, [](auto v) { return std::floor(v); });
  return with_derivative(kFloor, Keep::nothing, x, out, {}, where);
}
constexpr OpDef kCeil{.name = "ceil", .saves_nothing = "piecewise constant: a zero gradient",
                      .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 0"};
Tensor ceil(const Tensor& x, Site where) {
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v; });
  const Tensor out = unary_map(kCeil, cuda::kCeil, 0, x, [](auto v) { return std::ceil(v); });
  return with_derivative(kCeil, Keep::nothing, x, out, {}, where);
}
constexpr OpDef kRound{.name = "round", .saves_nothing = "piecewise constant: a zero gradient",
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 0"};
Tensor round(const Tensor& x, Site where) {  // half to even
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v; });
  const Tensor out = unary_map(kRound, cuda::kRound, 0, x, [](auto v) { return std::nearbyint(v); });
  return with_derivative(kRound, Keep::nothing, x, out, {}, where);
}
constexpr OpDef kTrunc{.name = "trunc", .saves_nothing = "piecewise constant: a zero gradient",
                       .derivation = "ops/elementwise_math.cpp", .tangent = "ȯ = 0"};
Tensor trunc(const Tensor& x, Site where) {
  if (!is_floating(x.dtype())) return integer_map(x, [](int64_t v) { return v; });
  const Tensor out = unary_map(kTrunc, cuda::kTrunc, 0, x, [](auto v) { return std::trunc(v); });
  return with_derivative(kTrunc, Keep::nothing, x, out, {}, where);
}

// ---------------------------------------------------------------- the definitions, for the registry

// ---------------------------------------------------------------- the error function
// erf x = 2/√π ∫₀ˣ e^(−t²) dt, so erf' = 2/√π e^(−x²);  erfc = 1 − erf, erfc' = −2/√π e^(−x²);
// erfinv is erf's inverse: erfinv'(x) = 1 / erf'(erfinv x) = √π/2 · e^(out²)
constexpr double kTwoOverSqrtPi = std::numbers::inv_sqrtpi * 2;
constexpr OpDef kErf{.name = "erf", .saves = {{"erf input x", "f' = 2/√π e^(−x²)"}}, .derivation = "ops/elementwise_math.cpp",
                     .tangent = "ȯ = 2/√π e^(−x²) ẋ"};
Tensor erf(const Tensor& x, Site where) {
  const Tensor out = unary_map(kErf, cuda::kErf, 0, x, [](auto v) { return std::erf(v); });
  return with_derivative(kErf, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, mul(exp(neg(mul(in, in))), kTwoOverSqrtPi)); }, where);
}
constexpr OpDef kErfc{.name = "erfc", .saves = {{"erfc input x", "f' = −2/√π e^(−x²)"}}, .derivation = "ops/elementwise_math.cpp",
                      .tangent = "ȯ = −2/√π e^(−x²) ẋ"};
Tensor erfc(const Tensor& x, Site where) {
  const Tensor out = unary_map(kErfc, cuda::kErfc, 0, x, [](auto v) { return std::erfc(v); });
  return with_derivative(kErfc, Keep::input, x, out, [](const Tensor& v, const Tensor& in) { return mul(v, mul(exp(neg(mul(in, in))), -kTwoOverSqrtPi)); }, where);
}
constexpr OpDef kErfinv{.name = "erfinv", .saves = {{"erfinv output", "f' = √π/2 e^(out²)"}}, .derivation = "ops/elementwise_math.cpp",
                        .tangent = "ȯ = √π/2 e^(out²) ẋ"};
Tensor erfinv(const Tensor& x, Site where) {
  const Tensor out = unary_map(kErfinv, cuda::kErfinv, 0, x, [](auto v) { return rules::erfinv_value(v); });
  return with_derivative(kErfinv, Keep::output, x, out, [](const Tensor& v, const Tensor& y) { return mul(v, mul(exp(mul(y, y)), 1 / kTwoOverSqrtPi)); }, where);
}

std::span<const OpDef* const> elementwise_math_ops() {
  static const OpDef* const defs[] = {&kSin,  &kCos,   &kTan,   &kAsin,  &kAcos,  &kAtan,       &kSinh,
                                      &kCosh, &kAsinh, &kAcosh, &kAtanh, &kSigmoid, &kSilu,    &kLog1p,
                                      &kExpm1, &kLog2, &kExp2,  &kReciprocal, &kRsqrt, &kSquare, &kAbs,
                                      &kSign, &kFloor, &kCeil,  &kRound, &kTrunc, &kLog10, &kErf, &kErfc, &kErfinv};
  return defs;
}

}  // namespace hg
