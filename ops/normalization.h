// ops/normalization.h — layer norm and RMS norm over the trailing dims, PyTorch's names and arguments.
#pragma once
#include <optional>

#include "engine/tensor.h"

namespace hg {

// y = (x − μ) / √(σ² + eps) ∘ weight + bias, with μ and the biased variance σ² taken over the
// trailing dims of x that `normalized_shape` names (it must equal them). weight and bias are
// optional (undefined: γ = 1, β = 0); when given, their shape is normalized_shape.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5, Site where = Site::current());

// y = x / √(mean(x²) + eps) ∘ weight over the same trailing dims. eps unset is the machine epsilon
// of x's dtype (PyTorch's torch.finfo(dtype).eps).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt, Site where = Site::current());

}  // namespace hg
