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

Tensor integers(const char* op, IntArith kind, const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  return integer_binary(op, kind, expand(a, shape), expand(b, shape));
}

// A number beside t, in t's float dtype (float32 beside an integer tensor): s / t rounds as s ÷ t.
Tensor number(const Tensor& t, double s) {
  return full({}, s, is_integral(t) ? DType::f32 : t.dtype(), t.device());
}

void require(const char* op, const Tensor& t) {
  if (!t.defined()) fail(op, "an operand is undefined");
}

}  // namespace

Tensor floor_divide(const Tensor& a, const Tensor& b, Site where) {
  require("floor_divide", a);
  require("floor_divide", b);
  if (is_integral(a) && is_integral(b)) return integers("floor_divide", IntArith::floor_divide, a, b);
  return float_floor_divide(a, b, where);
}

Tensor remainder(const Tensor& a, const Tensor& b, Site where) {
  require("remainder", a);
  require("remainder", b);
  if (is_integral(a) && is_integral(b)) return integers("remainder", IntArith::remainder, a, b);
  return float_remainder(a, b, where);
}

Tensor floor_divide(const Tensor& a, double s, Site where) {
  require("floor_divide", a);
  if (is_integral(a) && is_whole_number(s)) return integer_scalar("floor_divide", IntArith::floor_divide, a, static_cast<int64_t>(s));
  return floor_divide(a, number(a, s), where);
}

Tensor remainder(const Tensor& a, double s, Site where) {
  require("remainder", a);
  if (is_integral(a) && is_whole_number(s)) return integer_scalar("remainder", IntArith::remainder, a, static_cast<int64_t>(s));
  return remainder(a, number(a, s), where);
}

Tensor remainder(double s, const Tensor& b, Site where) {
  require("remainder", b);
  if (is_integral(b) && is_whole_number(s)) return integer_scalar("remainder", IntArith::remainder, b, static_cast<int64_t>(s), true);
  return remainder(number(b, s), b, where);
}

}  // namespace hg
