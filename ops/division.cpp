// ops/division.cpp — floor division and remainder (ops/division.h).
//
// On floats they are ops/pointwise.cpp's ops, which divide through fmod (the exact quotient, never
// a rounded a / b) and carry their derivation; on integers they are ops/integer.cpp's exact loops.
#include "ops/division.h"

#include <cmath>

#include "engine/error.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/integer.h"
#include "ops/pointwise.h"

namespace hg {

namespace {

// A number beside t, in t's float dtype (float32 beside an integer tensor): s / t rounds as s ÷ t.
Tensor number(const Tensor& t, double s) {
  return full({}, s, is_integral(t) ? DType::f32 : t.dtype(), t.device());
}

}  // namespace

Tensor floor_divide(const Tensor& a, const Tensor& b, Site where) {
  require_defined("floor_divide", a, "an operand");
  require_defined("floor_divide", b, "an operand");
  if (is_integral(a) && is_integral(b)) return integer_binary("floor_divide", IntArith::floor_divide, a, b);
  return float_floor_divide(a, b, where);
}

Tensor remainder(const Tensor& a, const Tensor& b, Site where) {
  require_defined("remainder", a, "an operand");
  require_defined("remainder", b, "an operand");
  if (is_integral(a) && is_integral(b)) return integer_binary("remainder", IntArith::remainder, a, b);
  return float_remainder(a, b, where);
}

Tensor floor_divide(const Tensor& a, double s, Site where) {
  require_defined("floor_divide", a, "an operand");
  if (is_integral(a) && is_whole_number(s)) return integer_scalar("floor_divide", IntArith::floor_divide, a, static_cast<int64_t>(s));
  return floor_divide(a, number(a, s), where);
}

Tensor remainder(const Tensor& a, double s, Site where) {
  require_defined("remainder", a, "an operand");
  if (is_integral(a) && is_whole_number(s)) return integer_scalar("remainder", IntArith::remainder, a, static_cast<int64_t>(s));
  return remainder(a, number(a, s), where);
}

Tensor remainder(double s, const Tensor& b, Site where) {
  require_defined("remainder", b, "an operand");
  if (is_integral(b) && is_whole_number(s)) return integer_scalar("remainder", IntArith::remainder, b, static_cast<int64_t>(s), true);
  return remainder(number(b, s), b, where);
}

}  // namespace hg
