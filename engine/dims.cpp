// engine/dims.cpp — the dim and index rule (engine/dims.h).
#include "engine/dims.h"

#include <vector>

#include "engine/error.h"

namespace hg {

namespace {

int64_t rank_of(const Shape& shape) { return static_cast<int64_t>(shape.size()); }

// "(accepted: -1, 0)", "(accepted: -3 to 2)"
std::string accepted(int64_t lo, int64_t hi) {
  if (lo > hi) return "(none)";
  if (hi - lo == 1) return fmt::format("(accepted: {}, {})", lo, hi);
  if (hi == lo) return fmt::format("(accepted: {})", lo);
  return fmt::format("(accepted: {} to {})", lo, hi);
}

[[noreturn]] void dim_out_of_range(std::string_view op, int64_t d, const Shape& shape, int64_t lo, int64_t hi) {
  throw IndexError(fmt::format("{}: dim {} is out of range for a tensor of rank {}, shape {} {}", op, d,
                               rank_of(shape), shape_str(shape), accepted(lo, hi)));
}

}  // namespace

int64_t wrap_dim(std::string_view op, int64_t d, const Shape& shape) {
  const int64_t r = rank_of(shape) == 0 ? 1 : rank_of(shape);
  if (d < -r || d >= r) dim_out_of_range(op, d, shape, -r, r - 1);
  return d < 0 ? d + r : d;
}

int64_t wrap_existing_dim(std::string_view op, int64_t d, const Shape& shape) {
  if (shape.empty())
    throw IndexError(fmt::format("{}: dim {} names no dimension of a 0-d tensor (shape ()); {} needs a tensor of "
                                 "at least one dimension: unsqueeze(0) it first", op, d, op));
  return wrap_dim(op, d, shape);
}

int64_t wrap_insert_dim(std::string_view op, int64_t d, const Shape& shape) {
  const int64_t r = rank_of(shape) + 1;
  if (d < -r || d >= r) dim_out_of_range(op, d, shape, -r, r - 1);
  return d < 0 ? d + r : d;
}

Shape wrap_dims(std::string_view op, const Shape& dims, const Shape& shape) {
  Shape out;
  out.reserve(dims.size());
  std::vector<bool> seen(shape.empty() ? 1 : shape.size(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, shape);
    if (seen[static_cast<size_t>(w)])
      throw IndexError(fmt::format("{}: dim {} appears more than once in the dims {} (tensor of shape {}); "
                                   "name each dimension once", op, w, shape_str(dims), shape_str(shape)));
    seen[static_cast<size_t>(w)] = true;
    out.push_back(w);
  }
  return out;
}

int64_t wrap_index(std::string_view op, int64_t i, int64_t d, const Shape& shape) {
  const int64_t n = shape.at(static_cast<size_t>(d));
  if (i < -n || i >= n)
    throw IndexError(fmt::format("{}: index {} is out of range for dim {} of size {} (tensor of shape {}; accepted: "
                                 "{})", op, i, d, n, shape_str(shape),
                                 n == 0 ? std::string("none, the dimension is empty") : fmt::format("{} to {}", -n, n - 1)));
  return i < 0 ? i + n : i;
}

}  // namespace hg
