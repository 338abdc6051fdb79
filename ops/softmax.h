// ops/softmax.h — softmax, log_softmax, the row rule and the explicit Jacobian.
//
// A row whose entries are all -inf (every key masked) has a defined result: softmax gives a row
// of zeros (not NaN, not the average), and its gradient is zero. log_softmax gives -inf there,
// and passes no gradient to that row either.
#pragma once
#include "engine/tensor.h"

namespace hg {

// p = exp(s - max s) / sum exp(s - max s) along `dim`.
Tensor softmax(const Tensor& s, int64_t dim = -1, Site where = Site::current());
// log p = s - max s - log sum exp(s - max s) along `dim`.
Tensor log_softmax(const Tensor& s, int64_t dim = -1, Site where = Site::current());

// The row rule, usable on its own: given P = softmax(S) and dP = dL/dP along the last dim,
// dS = P ∘ (dP − rowsum(P ∘ dP)). Shapes equal; returns dS.
Tensor softmax_backward(const Tensor& P, const Tensor& dP, Site where = Site::current());
// The same, also returning the row sums D = rowsum(P ∘ dP), shape (..., 1), through *D (for
// attention traces; D itself is not recorded on the tape). softmax_backward is differentiable.
Tensor softmax_backward(const Tensor& P, const Tensor& dP, Tensor* D, Site where = Site::current());
// The Jacobian of softmax for every row of p (..., n): J = diag(p) − p pᵀ, shape (..., n, n).
Tensor softmax_jacobian(const Tensor& p, Site where = Site::current());

}  // namespace hg
