// ops/rearrange.h — ops that move entries without changing them, PyTorch's names and arguments:
// gathers along a dimension (index_select, flip, roll, diagonal, diag) and triangles (tril, triu),
// and the reshapes and permutations a learner reaches for (flatten, unflatten, movedim, narrow).
// Each is a composition of recorded ops (ops/rearrange.cpp says which), so each has their
// backward, tangent and second order, on every device they run on.
#pragma once
#include <optional>
#include <vector>

#include "engine/tensor.h"

namespace hg {

// x's entries at `index` (int64, 1-d, each in [0, x.size(dim))) along dim.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Site where = Site::current());
// The entries of x where mask (bool, broadcast with x) is true, in row-major order, as a 1-d
// tensor: x[mask]. Differentiable for float x (an index_select of x flattened).
Tensor masked_select(const Tensor& x, const Tensor& mask, Site where = Site::current());
// x with the order of each dim in `dims` reversed.
Tensor flip(const Tensor& x, const Shape& dims, Site where = Site::current());
// x's entries moved `shifts[k]` places along dims[k], wrapping round; with no dims, along x
// flattened (one shift), then shaped back.
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims = {}, Site where = Site::current());
// The diagonal x[..., i, i + offset] of the (dim1, dim2) planes, as the last dim.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1, Site where = Site::current());
// 1-d x: the square matrix with x on diagonal `offset`, zeros elsewhere; 2-d x: its diagonal.
Tensor diag(const Tensor& x, int64_t offset = 0, Site where = Site::current());
// The lower (tril) or upper (triu) triangle of the last two dims, on and below (above) diagonal
// `offset`; the rest zero (an infinity or NaN there too, as PyTorch).
Tensor tril(const Tensor& x, int64_t offset = 0, Site where = Site::current());
Tensor triu(const Tensor& x, int64_t offset = 0, Site where = Site::current());
// The tensors (one shape) joined along a new dim.
// A 1-d int64 tensor of the positions v, on device: the index the gathers here read.
Tensor positions_tensor(const std::vector<int64_t>& v, Device device);
// The side n + |offset| of the square plane a diagonal of n entries at `offset` needs, or an Error
// naming op when that plane is past any memory (diag and diag_embed).
int64_t diagonal_plane_side(const char* op, int64_t n, int64_t offset);

Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0, Site where = Site::current());
// x tiled `repeats[k]` times along dim k (repeats may have more dims than x: x gains leading dims
// of 1 first); tile is the same with fewer repeats allowed (leading 1s added to them).
Tensor repeat(const Tensor& x, const Shape& repeats, Site where = Site::current());
Tensor tile(const Tensor& x, const Shape& reps, Site where = Site::current());
// Each entry along dim taken `repeats` times in a row (x flattened when dim is absent).
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                         Site where = Site::current());
// Dims start..end (inclusive) merged into one; its inverse splits dim into `sizes` (one may be −1).
Tensor flatten(const Tensor& x, int64_t start = 0, int64_t end = -1, Site where = Site::current());
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes, Site where = Site::current());
// Dims `source` moved to the places `destination`, the others keeping their order.
Tensor movedim(const Tensor& x, const Shape& source, const Shape& destination, Site where = Site::current());
// length entries of dim from start (a negative start counts from the end).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Site where = Site::current());

}  // namespace hg
