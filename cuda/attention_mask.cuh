// cuda/attention_mask.cuh — attention's mask rule, the only statement of it on the GPU, used by
// the scores kernel (cuda/attention.cu) and the tiled kernels (cuda/attention_tiled.cu).
//
// The reference is the CPU's statement of the same rule (MaskRule, ops/attention_cpu.h); the GPU
// tests hold the two to each other.
#pragma once
#include <cstdint>
#include <limits>

#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {

// Key j is hidden from query i when j > i under the causal rule, when the boolean mask's entry
// is false, or when the additive mask's entry is −inf or ≤ lowest/2; a hidden key's score is
// −inf, a visible one's is score · scale + the additive entry (no entry without an additive
// mask). `entry` is the position of (i, j) in the mask, read only when there is one.
template <typename T>
__device__ inline T masked_score(T score, T scale, int64_t i, int64_t j, bool causal, int kind, const void* mask,
                                 int64_t entry) {
  if (causal && j > i) return neg_infinity<T>();
  if (kind == kMaskBool && !static_cast<const uint8_t*>(mask)[entry]) return neg_infinity<T>();
  const T s = mul_rn(score, scale);
  if (kind != kMaskAdditive) return s;
  const T a = static_cast<const T*>(mask)[entry];
  if (a <= std::numeric_limits<T>::lowest() / 2) return neg_infinity<T>();  // −inf too
  return s + a;
}

}  // namespace hg::cuda
