#include "engine/dtype.h"

#include <fmt/format.h>

#include "engine/error.h"

namespace hg {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i64: return 8;
    case DType::b8: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
  }
  return "?";
}

const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

std::string shape_str(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::string index_str(const Shape& s, int64_t flat) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? flat % s[d] : 0;
    flat = s[d] ? flat / s[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(fmt::format("shape {}: the element count overflows int64 (2^63 − 1)", shape_str(s)));
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    if (i > 0 && __builtin_mul_overflow(acc, s[i], &acc))
      throw Error(fmt::format("shape {}: a stride overflows int64 (2^63 − 1)", shape_str(s)));
  }
  return st;
}

void check_shape(std::string_view op, const Shape& s, DType t) {
  int64_t bytes = static_cast<int64_t>(dtype_size(t));
  for (int64_t d : s) {
    if (d < 0) fail(op, "shape {} has a negative size ({}); sizes must be 0 or more", shape_str(s), d);
    if (d > 0 && __builtin_mul_overflow(bytes, d, &bytes))
      fail(op, "shape {} of {} is too large: its elements would take more than 2^63 − 1 bytes (even a size of 0 "
           "elsewhere in the shape leaves its strides that large)", shape_str(s), dtype_name(t));
  }
}

std::string no_i64_value(DType from, double v, const std::string& where) {
  return fmt::format("{} value {} {} has no int64 value: NaN, ±inf and values outside [-2^63, 2^63) cannot be "
                     "converted to an integer; replace them first (through a boolean mask and a fill value) or keep a floating dtype",
                     dtype_name(from), v, where);
}

}  // namespace hg
