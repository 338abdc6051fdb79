// ops/composed.cpp — prod, unfold and diag_embed (ops/composed.h), compositions of recorded ops.
//
// prod multiplies halves in a tree: with the reduced dim first, rows [0, h) times rows [h, 2h)
// (and an odd last row carried along), until one row is left. log₂ n recorded muls, each with
// mul's derivative, so the chain rule gives ∂/∂x_i = Π_{j≠i} x_j exactly, zeros included (the
// quotient out / x_i would be 0/0 there), and the second order too.
// unfold reads every window with index_select (positions w·step + j), then splits the dim.
// diag_embed is diag's placement for every leading index: index_select into x's last dim with a
// zero appended, then the plane moved to (dim1, dim2).
#include "ops/composed.h"

#include <vector>

#include "engine/dims.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/rearrange.h"

namespace hg {

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim, Site where) {
  constexpr const char* op = "prod";
  require_defined(op, x);
  if (x.dtype() == DType::b8) return prod(x.to(DType::i64), dim, keepdim, where);
  if (!dim) {
    Tensor all = prod(x.reshape({-1}, where), 0, false, where);
    return keepdim ? all.reshape(Shape(static_cast<size_t>(x.dim()), 1), where) : all;
  }
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(op, *dim, x.shape());
  Tensor rows = x.dim() == 0 ? x.reshape({1}, where) : movedim(x, {d}, {0}, where);  // the reduced dim first
  if (rows.size(0) == 0) {
    Shape shape = rows.shape();
    shape[0] = 1;
    rows = ones(shape, x.dtype(), x.device());  // the empty product
  }
  while (rows.size(0) > 1) {
    const int64_t n = rows.size(0), h = n / 2;
    Tensor half = mul(rows.slice(0, 0, h), rows.slice(0, h, 2 * h), where);
    rows = n % 2 ? concat({half, rows.slice(0, n - 1, n)}, 0, where) : half;
  }
  Tensor out = rows.squeeze(0, where);
  return keepdim && x.dim() > 0 ? out.unsqueeze(d, where) : out;
}

Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step, Site where) {
  constexpr const char* op = "unfold";
  require_defined(op, x);
  const Tensor v = x.dim() == 0 ? x.reshape({1}, where) : x;
  const int64_t d = wrap_dim(op, dim, v.shape()), n = v.size(d);
  if (size < 0 || size > n)
    fail(op, "size {} does not fit dim {} of {} (length {}); give 0 ≤ size ≤ {}", size, dim, x.describe(), n, n);
  if (step <= 0) fail(op, "step must be positive, got {}", step);
  const int64_t windows = (n - size) / step + 1;
  std::vector<int64_t> from;
  for (int64_t w = 0; w < windows; ++w)
    for (int64_t j = 0; j < size; ++j) from.push_back(w * step + j);
  const Tensor picked = index_select(v, d, positions_tensor(from, x.device()), where);
  return movedim(unflatten(picked, d, {windows, size}, where), {d + 1}, {-1}, where);
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2, Site where) {
  constexpr const char* op = "diag_embed";
  require_defined(op, x);
  if (x.dim() == 0) fail(op, "{} is 0-d; diag_embed places a last dim on a diagonal", x.describe());
  Shape out_shape = x.shape();
  out_shape.push_back(1);  // one more dim than x: dim1 and dim2 are among x.dim() + 1
  const int64_t d1 = wrap_dim(op, dim1, out_shape), d2 = wrap_dim(op, dim2, out_shape);
  if (d1 == d2) fail(op, "dim1 and dim2 are both dim {}; the diagonal's plane needs two", d1);
  const int64_t k = x.size(-1), N = diagonal_plane_side(op, k, offset);
  Shape zero_shape = x.shape();
  zero_shape.back() = 1;
  const Tensor padded = concat({x, zeros(zero_shape, x.dtype(), x.device())}, -1, where);  // a zero at index k
  std::vector<int64_t> from(static_cast<size_t>(N * N), k);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t r = offset >= 0 ? i : i - offset, c = offset >= 0 ? i + offset : i;
    from[static_cast<size_t>(r * N + c)] = i;
  }
  Shape planes = x.shape();
  planes.back() = N;
  planes.push_back(N);
  const Tensor square = index_select(padded, -1, positions_tensor(from, x.device()), where).reshape(planes, where);  // (..., N, N)
  const int64_t r = static_cast<int64_t>(planes.size());
  return movedim(square, {r - 2, r - 1}, {d1, d2}, where);
}

}  // namespace hg
