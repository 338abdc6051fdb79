// labs/shapes_case.h — Section 4: multi-head attention's shapes, step by step.
//
//   q = wq(x).view(B, T, h, dk).transpose(1, 2)          (B, h, T, dk), and likewise k, v
//   s = q @ kᵀ / √dk;  p = softmax(masked_fill(s, future, −inf))   (B, h, T, T)
//   y = (p @ v).transpose(1, 2)                           (B, T, h, dk), not contiguous
//   out = wo(y.reshape(B, T, d))                          (B, T, d)
//
// Linear layers are plain matmuls with seeded random weights (d, d), scaled by 1/√d. The input
// and weights are drawn on the CPU and moved to the device given; every step runs there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

struct ShapeStep {
  std::string what;        // "wq(x).view(B, T, h, dk)"
  std::string text_shape;  // the text's shape, in its symbols: "(B, T, h, dk)"
  Shape expected;          // the text's shape with the lab's B, T, d, h, dk substituted
  Shape measured;          // what the engine produced
  bool contiguous = true;
};

struct MultiHeadShapes {
  int64_t B = 0, T = 0, d = 0, h = 0, dk = 0;
  std::vector<ShapeStep> steps;
  bool view_failed = false;     // y.view(B, T, d) after the transpose
  std::string view_error;       // the engine's message
  bool view_shares_storage = false;  // wq(x).view(...) moved no data
  bool reshape_copied = false;       // y.reshape(B, T, d) had to copy
  Shape reshaped;                    // its shape
  Tensor out;                        // wo(y.reshape(B, T, d)), the layer's output (B, T, d), on the device
  double fused_vs_hand = 0.0;   // max |p @ v − attention(q, k, v, causal)|
  double per_head_writes = 0.0; // max |wo(concat heads) − Σ_i head_i W_O^(i)|
};

MultiHeadShapes multihead_shapes(int64_t B = 2, int64_t T = 16, int64_t d = 256, int64_t h = 8, uint64_t seed = 0,
                                 Device device = Device::cpu);

// "(B, h, T, dk)" with B, T, d, h, dk substituted; numbers pass through. Fails on an unknown symbol.
Shape expand_shape(const std::string& text_shape, int64_t B, int64_t T, int64_t d, int64_t h, int64_t dk);

}  // namespace hg::lab
