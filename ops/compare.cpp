// ops/compare.cpp — comparisons, logic and clamp (ops/compare.h).
//
// A comparison's result is a bool tensor: piecewise constant in its inputs, so no gradient flows
// through it and nothing is recorded (PyTorch's rule). The loops run on the CPU; a CUDA tensor's
// operands are copied to the host and the bool result back (no kernel of its own yet: masks are
// small next to the work they select).
//
// clamp is where, bound by bound: the gradient passes to x where it was kept and to a tensor bound
// where it was chosen; at a tie, PyTorch's rules: a number bound takes it all (so x's gradient
// passes strictly inside), a tensor bound shares it half and half. A NaN fails every comparison
// and stays.
#include "ops/compare.h"

#include <cmath>
#include <cstdint>

#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/reduce.h"

namespace hg {

namespace {

// out = test(a, b) elementwise over the broadcast shape, as bool, on a's device.
template <typename Test>
Tensor bool_map(const char* op, const Tensor& a, const Tensor& b, Test test) {
  require_defined(op, a, "input a");
  require_defined(op, b, "input b");
  if (a.device() != b.device())
    fail(op, "{} and {} are on different devices; move one with .to()", a.describe(), b.describe());
  const DType t = a.dtype() == b.dtype() ? a.dtype() : DType::f64;
  NoGradGuard ng;
  const Tensor x = a.detach().to(Device::cpu).to(t), y = b.detach().to(Device::cpu).to(t);
  const Tensor out = dispatch_any(t, [&]<typename T>() { return strided_map2<uint8_t, T>(op, DType::b8, x, y, test); });
  return out.to(a.device());
}

// A number as the other side of a comparison (ops/compare.h says in which dtype).
Tensor number_for(const Tensor& a, double s) {
  if (a.defined() && (a.dtype() == DType::f32 || a.dtype() == DType::f64)) return full({}, s, a.dtype(), a.device());
  return full({}, s, is_whole_number(s) ? DType::i64 : DType::f64, a.defined() ? a.device() : Device::cpu);
}

// Whether a value is nonzero (a NaN is).
template <typename T>
bool truth(T v) {
  return v != T(0);
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return bool_map("eq", a, b, [](auto x, auto y) { return x == y; }); }
Tensor ne(const Tensor& a, const Tensor& b) { return bool_map("ne", a, b, [](auto x, auto y) { return x != y; }); }
Tensor lt(const Tensor& a, const Tensor& b) { return bool_map("lt", a, b, [](auto x, auto y) { return x < y; }); }
Tensor le(const Tensor& a, const Tensor& b) { return bool_map("le", a, b, [](auto x, auto y) { return x <= y; }); }
Tensor gt(const Tensor& a, const Tensor& b) { return bool_map("gt", a, b, [](auto x, auto y) { return x > y; }); }
Tensor ge(const Tensor& a, const Tensor& b) { return bool_map("ge", a, b, [](auto x, auto y) { return x >= y; }); }
Tensor eq(const Tensor& a, double s) { return eq(a, number_for(a, s)); }
Tensor ne(const Tensor& a, double s) { return ne(a, number_for(a, s)); }
Tensor lt(const Tensor& a, double s) { return lt(a, number_for(a, s)); }
Tensor le(const Tensor& a, double s) { return le(a, number_for(a, s)); }
Tensor gt(const Tensor& a, double s) { return gt(a, number_for(a, s)); }
Tensor ge(const Tensor& a, double s) { return ge(a, number_for(a, s)); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return bool_map("logical_and", a, b, [](auto x, auto y) { return truth(x) && truth(y); });
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return bool_map("logical_or", a, b, [](auto x, auto y) { return truth(x) || truth(y); });
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return bool_map("logical_xor", a, b, [](auto x, auto y) { return truth(x) != truth(y); });
}
Tensor logical_not(const Tensor& a) {
  require_defined("logical_not", a, "the input");
  return bool_map("logical_not", a, a, [](auto x, auto) { return !truth(x); });
}

Tensor isnan(const Tensor& x) {
  require_defined("isnan", x, "the input");
  return bool_map("isnan", x, x, [](auto v, auto) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return std::isnan(v);
    else return false;
  });
}
Tensor isinf(const Tensor& x) {
  require_defined("isinf", x, "the input");
  return bool_map("isinf", x, x, [](auto v, auto) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return std::isinf(v);
    else return false;
  });
}
Tensor isfinite(const Tensor& x) {
  require_defined("isfinite", x, "the input");
  return bool_map("isfinite", x, x, [](auto v, auto) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return std::isfinite(v);
    else return true;
  });
}

// any: some entry is nonzero, i.e. the count of nonzero entries is > 0; all: none is zero.
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  require_defined("any", x, "the input");
  NoGradGuard ng;
  return gt(sum(ne(x, 0.0).to(DType::f64), dims, keepdim), 0.0);
}
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  require_defined("all", x, "the input");
  NoGradGuard ng;
  return eq(sum(eq(x, 0.0).to(DType::f64), dims, keepdim), 0.0);
}

// A tensor bound is maximum (lower) or minimum (upper) with x: beyond it the bound is chosen, and
// where x equals it the gradient is shared half and half (PyTorch's rule for tensor bounds).
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi, Site where) {
  require_defined("clamp", x);
  if (!lo.defined() && !hi.defined()) fail("clamp", "give min or max (or both)");
  Tensor out = x;
  if (lo.defined()) out = maximum(out, lo, where);
  if (hi.defined()) out = minimum(out, hi, where);
  return out;
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi, Site where) {
  require_defined("clamp", x, "the input");
  if (x.dtype() == DType::b8) fail("clamp", "{} is bool; clamp takes numbers (convert with .long() or .float())", x.describe());
  if (!lo && !hi) fail("clamp", "give min or max (or both)");
  auto whole = [](std::optional<double> b) { return !b || is_whole_number(*b); };
  if (!is_floating(x.dtype()) && !(whole(lo) && whole(hi)))  // an int tensor with a fractional bound: float32
    return clamp(x.to(DType::f32), lo, hi, where);
  // A number bound takes x's place from the bound on (x ≤ lo, x ≥ hi), so the gradient passes
  // strictly inside (PyTorch's rule for number bounds).
  Tensor out = x;
  if (lo) out = hg::where(le(out, *lo), full({}, *lo, x.dtype(), x.device()), out, where);
  if (hi) out = hg::where(ge(out, *hi), full({}, *hi, x.dtype(), x.device()), out, where);
  return out;
}

// maximum: a where a > b, b where b > a, and (a + b)/2 where neither — equal (the gradient shared)
// or a NaN on either side (which the mean carries through); minimum the same with a < b. Two
// integer operands carry no gradient: the larger (smaller) one, exactly.
namespace {
template <typename Above>
Tensor extreme(const Tensor& a, const Tensor& b, Above above, Site where) {
  if (is_integral(a) && is_integral(b)) return hg::where(above(a, b), a, b, where);
  const Tensor tie = mul(add(a, b, where), 0.5, where);
  return hg::where(above(a, b), a, hg::where(above(b, a), b, tie, where), where);
}
}  // namespace
Tensor maximum(const Tensor& a, const Tensor& b, Site where) {
  return extreme(a, b, [](const Tensor& u, const Tensor& v) { return gt(u, v); }, where);
}
Tensor minimum(const Tensor& a, const Tensor& b, Site where) {
  return extreme(a, b, [](const Tensor& u, const Tensor& v) { return lt(u, v); }, where);
}

// lerp = a + w (b − a): d/da = 1 − w, d/db = w, d/dw = b − a, through the recorded ops.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w, Site where) {
  return add(a, mul(w, sub(b, a, where), where), where);
}
Tensor lerp(const Tensor& a, const Tensor& b, double w, Site where) {
  return add(a, mul(sub(b, a, where), w, where), where);
}

}  // namespace hg
