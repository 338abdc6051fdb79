// ops/gather.h — gather, scatter and scatter_add along a dim (ops/gather.cpp), PyTorch's forms.
#pragma once
#include "engine/tensor.h"

namespace hg {

// out[i][j][k] = x[i][index[i][j][k]][k] for dim 1 (so for each dim): out has index's shape;
// index is int64 with x's rank and index.size(d) ≤ x.size(d) for d ≠ dim.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Site where = Site::current());
// out = x with out[i][index[i][j][k]][k] += src[i][j][k] (dim 1): src read over index's shape.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site where = Site::current());
// out = x with out[i][index[i][j][k]][k] = src[i][j][k]; where index names one place twice, the
// last write (in index's row-major order) is kept. And the same with one number for every place.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site where = Site::current());
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value, Site where = Site::current());

}  // namespace hg
