// ops/indexing.h — masks, selection, gathering and joining.
#pragma once
#include <vector>

#include "engine/tensor.h"

namespace hg {

// out = mask ? value : x. mask is b8 and broadcasts to x's shape. Backward: dx = mask ? 0 : g.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Site where = Site::current());
// out = cond ? a : b, all three broadcasting. Backward: da = sum_to(cond ? g : 0), db = sum_to(cond ? 0 : g).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Site where = Site::current());

// weight (V, d), indices i64 (...) -> (..., d). Backward scatter-adds g rows into dweight.
Tensor embedding(const Tensor& weight, const Tensor& indices, Site where = Site::current());
// embedding's backward as an op (recorded): rows g (..., d) added into a (V, d) table at indices.
Tensor embedding_backward(const Tensor& g, const Tensor& indices, int64_t V);

// Join along `dim` (all other dimensions equal). Backward slices g back apart.
Tensor concat(const std::vector<Tensor>& xs, int64_t dim, Site where = Site::current());
// Views of `chunks` nearly equal pieces along `dim` (the last may be smaller), like torch.chunk.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, Site where = Site::current());
// Views of the given sizes along `dim` (they must sum to x.size(dim)).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim, Site where = Site::current());

}  // namespace hg
