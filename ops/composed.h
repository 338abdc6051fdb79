// ops/composed.h — prod, unfold and diag_embed (ops/composed.cpp), PyTorch's forms, each a
// composition of recorded ops: their gradients, tangents and second order are those ops'.
#pragma once
#include <optional>

#include "engine/tensor.h"

namespace hg {

// The product over dim (every entry when dim is empty), keepdim as sum's. int64 and bool give int64.
Tensor prod(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false, Site where = Site::current());

// Every window of `size` entries along dim, `step` apart: dim becomes the window count
// (n − size)/step + 1 and a last dim of `size` is added (Tensor.unfold).
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step, Site where = Site::current());

// x's last dim placed on the `offset` diagonal of the (dim1, dim2) plane of a new tensor, zeros
// elsewhere; the plane is n + |offset| square (torch.diag_embed).
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1, Site where = Site::current());

}  // namespace hg
