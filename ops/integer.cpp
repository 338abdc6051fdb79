// ops/integer.cpp — arithmetic on int64 and bool tensors (ops/integer.h).
//
// The loops run on the CPU; a CUDA tensor's operands are copied to the host and the result back,
// as the comparisons do (integer tensors here are indices and counts, small next to the float work).
#include "ops/integer.h"

#include <array>
#include <string>
#include <tuple>

#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/cpu_map.h"

namespace hg {

namespace {

// The operations on two's-complement int64 that wrap instead of overflowing (undefined in C++).
int64_t wrap_add(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); }
int64_t wrap_sub(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); }
int64_t wrap_mul(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); }

// Python's floor division and modulo: the quotient rounds towards −∞, the remainder has the
// divisor's sign. INT64_MIN // −1 wraps to INT64_MIN (remainder 0), as PyTorch's.
int64_t floor_div(int64_t x, int64_t y) {
  if (y == -1) return wrap_sub(0, x);
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}
int64_t floor_rem(int64_t x, int64_t y) {
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

int64_t int_pow(int64_t x, int64_t y) {  // y ≥ 0 (checked before the loop)
  int64_t r = 1;
  for (; y > 0; y >>= 1, x = wrap_mul(x, x))
    if (y & 1) r = wrap_mul(r, x);
  return r;
}

int64_t apply(IntArith kind, int64_t x, int64_t y) {
  switch (kind) {
    case IntArith::add: return wrap_add(x, y);
    case IntArith::sub: return wrap_sub(x, y);
    case IntArith::mul: return wrap_mul(x, y);
    case IntArith::floor_divide: return floor_div(x, y);
    case IntArith::remainder: return floor_rem(x, y);
    case IntArith::pow: return int_pow(x, y);
  }
  return 0;
}

bool divides(IntArith kind) { return kind == IntArith::floor_divide || kind == IntArith::remainder; }

template <typename Test>
bool any_of(const Tensor& t, Test test) {  // t: int64 on the CPU
  NoGradGuard ng;
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const int64_t*>(c.raw_data());
  for (int64_t i = 0; i < c.numel(); ++i)
    if (test(p[i])) return true;
  return false;
}
bool any_zero(const Tensor& t) { return any_of(t, [](int64_t v) { return v == 0; }); }
bool any_negative(const Tensor& t) { return any_of(t, [](int64_t v) { return v < 0; }); }

void require_integer(const char* op, const Tensor& t) {
  require_defined(op, t, "an operand");
  if (is_floating(t.dtype())) fail(op, "{} is floating point; integer arithmetic takes int64 or bool", t.describe());
}

}  // namespace

Tensor integer_binary(const char* op, IntArith kind, const Tensor& a, const Tensor& b) {
  require_integer(op, a);
  require_integer(op, b);
  if (a.device() != b.device())
    fail(op, "{} and {} are on different devices; move one with .to()", a.describe(), b.describe());
  const bool both_bool = a.dtype() == DType::b8 && b.dtype() == DType::b8;
  if (both_bool && kind != IntArith::add && kind != IntArith::mul)
    fail(op, "{} and {} are both bool; this arithmetic is not defined on bools (use logical_xor, or .long() first)",
         a.describe(), b.describe());
  NoGradGuard ng;
  const Tensor x = a.detach().to(Device::cpu).to(DType::i64), y = b.detach().to(Device::cpu).to(DType::i64);
  const bool empty = x.numel() == 0 || y.numel() == 0;  // so is their broadcast: nothing divides
  if (!empty && divides(kind) && any_zero(y))
    fail(op, "integer division by zero in {} (a zero in {}); divide floats (.double()) for inf and NaN", op,
         b.describe());
  if (!empty && kind == IntArith::pow && any_negative(y))
    fail(op, "integers to negative integer powers ({}) are not integers; raise a float tensor (.double())", b.describe());
  Tensor out = strided_map2<int64_t, int64_t>(op, DType::i64, x, y, [kind](int64_t u, int64_t v) { return apply(kind, u, v); });
  if (both_bool) out = out.to(DType::b8);
  return out.to(a.device());
}

Tensor integer_scalar(const char* op, IntArith kind, const Tensor& a, int64_t s, bool reversed) {
  require_integer(op, a);
  NoGradGuard ng;
  const Tensor x = a.detach().to(Device::cpu).to(DType::i64);
  if (divides(kind) && (reversed ? any_zero(x) : s == 0))
    fail(op, "integer division by zero ({} {} {}); divide floats (.double()) for inf and NaN",
         reversed ? std::to_string(s) : a.describe(), kind == IntArith::remainder ? "%" : "//",
         reversed ? a.describe() : std::to_string(s));
  if (kind == IntArith::pow && (reversed ? any_negative(x) : s < 0))
    fail(op, "integers to negative integer powers are not integers; raise a float tensor (.double())");
  Tensor out = strided_map2<int64_t, int64_t>(op, DType::i64, x, x, [kind, s, reversed](int64_t v, int64_t) {
    return reversed ? apply(kind, s, v) : apply(kind, v, s);
  });
  return out.to(a.device());
}

Tensor integer_where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  constexpr const char* op = "where";
  require_integer(op, a);
  require_integer(op, b);
  if (cond.shape() != a.shape() || a.shape() != b.shape())
    fail(op, "{}, {} and {}: integer selection takes operands of one shape (expand them first)", cond.describe(),
         a.describe(), b.describe());
  if (a.device() != b.device() || cond.device() != a.device())
    fail(op, "{}, {} and {} are not on one device; move them with .to()", cond.describe(), a.describe(), b.describe());
  NoGradGuard ng;
  const Tensor c = cond.detach().to(Device::cpu).to(DType::i64);
  const Tensor x = a.detach().to(Device::cpu).to(DType::i64), y = b.detach().to(Device::cpu).to(DType::i64);
  Tensor out = empty(c.shape(), DType::i64);
  for_each_row<int64_t, const int64_t, const int64_t, const int64_t>(
      c.shape(), {&out.strides(), &c.strides(), &x.strides(), &y.strides()},
      std::make_tuple(out.data_ptr<int64_t>(), static_cast<const int64_t*>(c.raw_data()),
                      static_cast<const int64_t*>(x.raw_data()), static_cast<const int64_t*>(y.raw_data())),
      [&](int64_t n, std::tuple<int64_t*, const int64_t*, const int64_t*, const int64_t*> p, const std::array<int64_t, 4>& st) {
        auto [o, k, u, v] = p;
        for (int64_t i = 0; i < n; ++i) o[i * st[0]] = k[i * st[1]] != 0 ? u[i * st[2]] : v[i * st[3]];
      });
  if (a.dtype() == DType::b8 && b.dtype() == DType::b8) out = out.to(DType::b8);
  return out.to(a.device());
}

}  // namespace hg
