// cuda/optim.h — the optimizer's step on the GPU, as nn/optim.cpp calls it (kernel in
// cuda/optim.cu, host side in cuda/optim.cpp). Plain C++: no CUDA header.
#pragma once
#include "engine/tensor.h"

namespace hg::cuda {

// One AdamW step's constants (nn/optim.cpp computes them on the host from the step count):
// w ← w · decay + neg_step · m / (√v / bc2_sqrt + eps) after m, v take in the gradient.
struct AdamWStep {
  double decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
};

// One AdamW step in place on contiguous w, m, v (same shape and dtype as the gradient g), with
// nn/optim.cpp's operations, order and roundings: the same bits as the CPU update.
void adamw(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWStep& c);

}  // namespace hg::cuda
