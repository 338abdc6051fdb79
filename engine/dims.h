// engine/dims.h — the one rule for a dim, a list of dims and an index, PyTorch's
// (maybe_wrap_dim): a dim d of a tensor of rank r is accepted when −r ≤ d < r and means d mod r;
// a 0-d tensor accepts −1 and 0, as if it had one dimension of size 1. Anything else is an
// hg::IndexError naming the op, the dim, the rank, the shape and the accepted range:
//   "squeeze: dim -2 is out of range for a tensor of rank 0, shape () (accepted: -1, 0)"
// Every op and method that takes a dim or an index goes through these, so no op can read
// shape()[d] with a d that names no dimension.
#pragma once
#include <cstdint>
#include <string_view>

#include "engine/dtype.h"

namespace hg {

// d as a dimension of a tensor of `shape` (0 for a 0-d tensor, which accepts −1 and 0).
int64_t wrap_dim(std::string_view op, int64_t d, const Shape& shape);

// d as a dimension that must exist: as wrap_dim, but a 0-d tensor has none (size(d), select,
// slice, and the ops that cut or join along a dimension), so it is refused with the op's name.
int64_t wrap_existing_dim(std::string_view op, int64_t d, const Shape& shape);

// d as the place of a new dimension (unsqueeze): −r−1 ≤ d ≤ r.
int64_t wrap_insert_dim(std::string_view op, int64_t d, const Shape& shape);

// A list of dims, each wrapped, none twice (permute, reductions): "dim 1 appears more than once".
Shape wrap_dims(std::string_view op, const Shape& dims, const Shape& shape);

// An index into dimension `d` of `shape` (size n = shape[d]): −n ≤ i < n, negatives from the end.
int64_t wrap_index(std::string_view op, int64_t i, int64_t d, const Shape& shape);

}  // namespace hg
