// ops/elementwise.cpp — elementwise forward kernels and their backward rules.
//
// Notation: out = f(a, b) elementwise after broadcasting; g = dL/dout. Every rule below is the
// scalar chain rule applied per element, then sum_to() folds the gradient of a broadcast operand
// back to its own shape (an element that was read k times receives the sum of k gradients).
#include "ops/elementwise.h"

#include <cmath>
#include <numbers>

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace hg {

namespace {

// out = f(x): the CPU loop, or on a CUDA tensor the kernel `kind` (cuda/kinds.h) with `scalar`.
template <typename F>
Tensor map1(const char* op, cuda::UnaryCode kind, double scalar, const Tensor& x, F f) {
  return on_device(op, {x}, [&] {
    return dispatch_float(x.dtype(), op, [&]<typename T>() { return cpu_map1<T>(x.detach(), [&](T v) { return static_cast<T>(f(v)); }); });
  }, HG_CUDA(cuda::unary(kind, x.detach(), scalar)));
}

// `row`, when given, names the kernel table's float32 row loop for f (cpu/kernels.h).
template <typename F>
Tensor map2(const char* op, cuda::BinaryCode kind, const Tensor& a, const Tensor& b, F f,
            cpu::BinaryRow cpu::Kernels::*row = nullptr) {
  check_same_dtype_device(op, a, b);
  return on_device(op, {a, b}, [&] {
    return dispatch_float(a.dtype(), op, [&]<typename T>() {
      return cpu_map2<T>(op, a.detach(), b.detach(), [&](T x, T y) { return static_cast<T>(f(x, y)); },
                         row ? cpu::kernels().*row : nullptr);
    });
  }, HG_CUDA(cuda::binary(kind, a.detach(), b.detach())));
}

}  // namespace

// ---------------------------------------------------------------- add, sub
// out = a ± b  =>  da = sum_to(g), db = ±sum_to(g)

Tensor add(const Tensor& a, const Tensor& b, Site where) {
  Tensor out = map2("add", cuda::kAdd, a, b, [](auto x, auto y) { return x + y; },
                    &cpu::Kernels::vadd);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    record("add", {a, b}, {out}, {}, [sa, sb](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{sum_to(g[0], sa), sum_to(g[0], sb)};
    }, DoubleBackward::composed, where);
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, Site where) {
  Tensor out = map2("sub", cuda::kSub, a, b, [](auto x, auto y) { return x - y; },
                    &cpu::Kernels::vsub);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    record("sub", {a, b}, {out}, {}, [sa, sb](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{sum_to(g[0], sa), neg(sum_to(g[0], sb))};
    }, DoubleBackward::composed, where);
  }
  return out;
}

// ---------------------------------------------------------------- mul, div
// out = a * b  =>  da = sum_to(g * b), db = sum_to(g * a)          saves a, b
// out = a / b  =>  da = sum_to(g / b), db = sum_to(-g * a / b^2)   saves a, b

Tensor mul(const Tensor& a, const Tensor& b, Site where) {
  Tensor out = map2("mul", cuda::kMul, a, b, [](auto x, auto y) { return x * y; },
                    &cpu::Kernels::vmul);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    bool ga = a.requires_grad(), gb = b.requires_grad();
    record("mul", {a, b}, {out}, {save(a, "left operand a"), save(b, "right operand b")},
           [=](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
             return std::vector<Tensor>{ga ? sum_to(mul(g[0], s[1]), sa) : Tensor(),
                                        gb ? sum_to(mul(g[0], s[0]), sb) : Tensor()};
           }, DoubleBackward::composed, where);
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b, Site where) {
  Tensor out = map2("div", cuda::kDiv, a, b, [](auto x, auto y) { return x / y; },
                    &cpu::Kernels::vdiv);
  if (should_record({a, b})) {
    Shape sa = a.shape(), sb = b.shape();
    bool ga = a.requires_grad(), gb = b.requires_grad();
    record("div", {a, b}, {out}, {save(a, "numerator a"), save(b, "denominator b")},
           [=](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
             return std::vector<Tensor>{ga ? sum_to(div(g[0], s[1]), sa) : Tensor(),
                                        gb ? sum_to(neg(div(mul(g[0], s[0]), mul(s[1], s[1]))), sb) : Tensor()};
           }, DoubleBackward::composed, where);
  }
  return out;
}

// ---------------------------------------------------------------- with a scalar
// out = a + s => da = g;  out = a * s => da = g * s;  out = s - a => da = -g;  out = s / a => da = -g * s / a^2

Tensor add(const Tensor& a, double s, Site where) {
  Tensor out = map1("add_scalar", cuda::kAddScalar, s, a, [s](auto x) { return x + s; });
  if (should_record({a}))
    record("add_scalar", {a}, {out}, {}, [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{g[0]};
    }, DoubleBackward::composed, where);
  return out;
}

Tensor mul(const Tensor& a, double s, Site where) {
  Tensor out = map1("mul_scalar", cuda::kMulScalar, s, a, [s](auto x) { return x * s; });
  if (should_record({a}))
    record("mul_scalar", {a}, {out}, {}, [s](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{mul(g[0], s)};
    }, DoubleBackward::composed, where);
  return out;
}

Tensor rsub(const Tensor& a, double s, Site where) {
  Tensor out = map1("rsub_scalar", cuda::kRsubScalar, s, a, [s](auto x) { return s - x; });
  if (should_record({a}))
    record("rsub_scalar", {a}, {out}, {}, [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{neg(g[0])};
    }, DoubleBackward::composed, where);
  return out;
}

Tensor rdiv(const Tensor& a, double s, Site where) {
  Tensor out = map1("rdiv_scalar", cuda::kRdivScalar, s, a, [s](auto x) { return s / x; });
  if (should_record({a}))
    record("rdiv_scalar", {a}, {out}, {save(a, "denominator a")},
           [s](const std::vector<Tensor>& g, const std::vector<Tensor>& sv) {
             return std::vector<Tensor>{mul(div(g[0], mul(sv[0], sv[0])), -s)};
           }, DoubleBackward::composed, where);
  return out;
}

// ---------------------------------------------------------------- unary

Tensor neg(const Tensor& x, Site where) {
  Tensor out = map1("neg", cuda::kNeg, 0, x, [](auto v) { return -v; });
  if (should_record({x}))
    record("neg", {x}, {out}, {}, [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{neg(g[0])};
    }, DoubleBackward::composed, where);
  return out;
}

// out = e^x  =>  dx = g * out   (saves the output: it is the derivative)
Tensor exp(const Tensor& x, Site where) {
  Tensor out = map1("exp", cuda::kExp, 0, x, [](auto v) { return std::exp(v); });
  if (should_record({x}))
    record("exp", {x}, {out}, {save(out, "exp output")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return std::vector<Tensor>{mul(g[0], s[0])};
    }, DoubleBackward::composed, where);
  return out;
}

// out = ln x  =>  dx = g / x
Tensor log(const Tensor& x, Site where) {
  Tensor out = map1("log", cuda::kLog, 0, x, [](auto v) { return std::log(v); });
  if (should_record({x}))
    record("log", {x}, {out}, {save(x, "log input")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return std::vector<Tensor>{div(g[0], s[0])};
    }, DoubleBackward::composed, where);
  return out;
}

// out = x^p  =>  dx = g * p * x^(p-1)
Tensor pow(const Tensor& x, double p, Site where) {
  Tensor out = map1("pow", cuda::kPow, p, x, [p](auto v) { return std::pow(v, static_cast<decltype(v)>(p)); });
  if (should_record({x}))
    record("pow", {x}, {out}, {save(x, "pow base")}, [p](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return std::vector<Tensor>{mul(mul(g[0], pow(s[0], p - 1.0)), p)};
    }, DoubleBackward::composed, where);
  return out;
}

// out = sqrt(x)  =>  dx = g / (2 out)
Tensor sqrt(const Tensor& x, Site where) {
  Tensor out = map1("sqrt", cuda::kSqrt, 0, x, [](auto v) { return std::sqrt(v); });
  if (should_record({x}))
    record("sqrt", {x}, {out}, {save(out, "sqrt output")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return std::vector<Tensor>{div(g[0], mul(s[0], 2.0))};
    }, DoubleBackward::composed, where);
  return out;
}

// The three ops below have a fused backward kernel for speed. Under create_graph (grad mode on
// inside backward) they take the same formula written with recorded ops instead, so the gradient
// can be differentiated again; tests hold the two paths to each other through gradgradcheck.

// out = max(x, 0)  =>  dx = g * [x > 0]; the step [x > 0] is piecewise constant: its own derivative is 0.
Tensor relu(const Tensor& x, Site where) {
  Tensor out = map1("relu", cuda::kRelu, 0, x, [](auto v) { return v > 0 ? v : decltype(v)(0); });
  if (should_record({x}))
    record("relu", {x}, {out}, {save(x, "relu input")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      auto step = [](auto gv, auto xv) { return xv > 0 ? gv : decltype(gv)(0); };
      if (grad_enabled()) return std::vector<Tensor>{mul(g[0], map2("relu_backward", cuda::kReluBackward, ones_like(s[0]), s[0], step))};
      return std::vector<Tensor>{map2("relu_backward", cuda::kReluBackward, g[0], s[0], step)};
    }, DoubleBackward::composed, where);
  return out;
}

// out = tanh x  =>  dx = g * (1 - out^2)
Tensor tanh(const Tensor& x, Site where) {
  Tensor out = map1("tanh", cuda::kTanh, 0, x, [](auto v) { return std::tanh(v); });
  if (should_record({x}))
    record("tanh", {x}, {out}, {save(out, "tanh output")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      if (grad_enabled()) return std::vector<Tensor>{mul(g[0], rsub(mul(s[0], s[0]), 1.0))};
      return std::vector<Tensor>{map2("tanh_backward", cuda::kTanhBackward, g[0], s[0], [](auto gv, auto y) { return gv * (1 - y * y); })};
    }, DoubleBackward::composed, where);
  return out;
}

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

// gelu'(x) as a recorded op, for create_graph. Its derivative, by the product rule with phi' = -x phi:
//   d/dx (Phi + x phi) = phi + phi - x^2 phi = phi(x) (2 - x^2)          saves x
Tensor gelu_slope(const Tensor& x, Site where) {
  Tensor slope = gelu_backward_kernel(ones_like(x), x);
  if (should_record({x}))
    record("gelu_slope", {x}, {slope}, {save(x, "gelu input")}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      Tensor x2 = mul(s[0], s[0]);
      Tensor phi = mul(exp(mul(x2, -0.5)), 1.0 / std::sqrt(2 * std::numbers::pi));
      return std::vector<Tensor>{mul(g[0], mul(phi, rsub(x2, 2.0)))};
    }, DoubleBackward::composed, where);
  return slope;
}

}  // namespace

// out = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2  =>  dx = g * (Phi(x) + x phi(x)), phi the normal pdf
Tensor gelu(const Tensor& x, Site where) {
  Tensor out = map1("gelu", cuda::kGelu, 0, x, [](auto v) { return v * 0.5 * (1 + std::erf(v * std::numbers::sqrt2 / 2)); });
  if (should_record({x}))
    record("gelu", {x}, {out}, {save(x, "gelu input")}, [where](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      if (grad_enabled()) return std::vector<Tensor>{mul(g[0], gelu_slope(s[0], where))};
      return std::vector<Tensor>{gelu_backward_kernel(g[0], s[0])};
    }, DoubleBackward::composed, where);
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

Tensor softplus(const Tensor& x, Site where) {
  Tensor out = map1("softplus", cuda::kSoftplus, 0, x, [](auto v) { return softplus_value(static_cast<double>(v)); });
  if (should_record({x}))
    record("softplus", {x}, {out}, {save(x, "softplus input")}, [where](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      if (grad_enabled()) return std::vector<Tensor>{mul(g[0], exp(sub(s[0], softplus(s[0], where))))};
      return std::vector<Tensor>{map2("softplus_backward", cuda::kSoftplusBackward, g[0], s[0], [](auto gv, auto xv) {
        return gv * static_cast<decltype(gv)>(sigmoid_value(static_cast<double>(xv)));
      })};
    }, DoubleBackward::composed, where);
  return out;
}

// ---------------------------------------------------------------- registry rows (ops/registry.h)

std::span<const OpInfo> elementwise_ops() {
  static const OpInfo rows[] = {
      {"add", "nothing: dA = sum_to(g)", "ops/elementwise.cpp"},
      {"sub", "nothing", "ops/elementwise.cpp"},
      {"mul", "a and b: each is the other's derivative", "ops/elementwise.cpp"},
      {"div", "a and b", "ops/elementwise.cpp"},
      {"add_scalar", "nothing", "ops/elementwise.cpp"},
      {"mul_scalar", "nothing: the scalar", "ops/elementwise.cpp"},
      {"rsub_scalar", "nothing", "ops/elementwise.cpp"},
      {"rdiv_scalar", "the denominator a: d(s/a) = −s/a²", "ops/elementwise.cpp"},
      {"neg", "nothing", "ops/elementwise.cpp"},
      {"exp", "the output: it is the derivative", "ops/elementwise.cpp"},
      {"log", "the input x: d log x = 1/x", "ops/elementwise.cpp"},
      {"pow", "the base x: p x^(p−1)", "ops/elementwise.cpp"},
      {"sqrt", "the output: 1 / (2 out)", "ops/elementwise.cpp"},
      {"relu", "the input x: the step [x > 0]", "ops/elementwise.cpp"},
      {"tanh", "the output y: 1 − y²", "ops/elementwise.cpp"},
      {"gelu", "the input x: Φ(x) + x φ(x)", "ops/elementwise.cpp"},
      {"gelu_slope", "the input x: φ(x) (2 − x²)", "ops/elementwise.cpp", true, true, true, true, true},
      {"softplus", "the input x: σ(x) = e^x / (1 + e^x)", "ops/elementwise.cpp"},
  };
  return rows;
}

}  // namespace hg
