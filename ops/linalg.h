// ops/linalg.h — singular values and the rank of a matrix (ops/linalg.cpp), as torch.linalg's.
#pragma once
#include <optional>

#include "engine/dtype.h"
#include "engine/tensor.h"

namespace hg {

// The singular values of each matrix in A (..., m, n), largest first: (..., min(m, n)), A's dtype.
// Records nothing: its derivative is not implemented, and a call that would need it (A requires
// grad, grad mode on) is an Error that says so, never a silently constant result.
Tensor svdvals(const Tensor& A);

// The number of singular values above max(atol, rtol · σ_max) for each matrix: int64 (...).
// With neither given, rtol = max(m, n) · ε of A's dtype (PyTorch's default); with atol alone, rtol 0.
// Piecewise constant, so no gradient (as PyTorch's).
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt);

// ‖x‖_ord over dims (every dim when empty): (Σ |x|^ord)^(1/ord), max |x| for inf, min for −inf, the
// count of nonzeros for 0; torch.linalg.vector_norm. Composed of recorded ops (ops/linalg.cpp):
// its gradient where the norm is 0 is 0, as PyTorch's.
Tensor vector_norm(const Tensor& x, double ord = 2.0, const Shape& dims = {}, bool keepdim = false,
                   Site where = Site::current());

}  // namespace hg
