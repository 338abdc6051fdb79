// cuda/attention_mask.cuh — attention's mask rule, the only statement of it on the GPU, used by
// the scores and NaN-rule kernels (cuda/attention.cu) and the tiled kernels
// (cuda/attention_tiled_*.cu); and the NaN rule's reading of Q (ops/attention.h).
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
__device__ inline bool hidden_key(int64_t i, int64_t j, bool causal, int kind, const void* mask, int64_t entry) {
  if (causal && j > i) return true;
  if (kind == kMaskBool) return !static_cast<const uint8_t*>(mask)[entry];
  return kind == kMaskAdditive && static_cast<const T*>(mask)[entry] <= std::numeric_limits<T>::lowest() / 2;
}

// A visible key's score: score · scale (+ the additive entry).
template <typename T>
__device__ inline T visible_score(T score, T scale, int kind, const void* mask, int64_t entry) {
  const T s = mul_rn(score, scale);
  return kind == kMaskAdditive ? s + static_cast<const T*>(mask)[entry] : s;
}

template <typename T>
__device__ inline T masked_score(T score, T scale, int64_t i, int64_t j, bool causal, int kind, const void* mask,
                                 int64_t entry) {
  if (hidden_key<T>(i, j, causal, kind, mask, entry)) return neg_infinity<T>();
  return visible_score(score, scale, kind, mask, entry);
}

// x, or 0 where x is NaN or ±inf (x − x is then NaN, not 0): a query as dK = dSᵀ Q reads it under
// the NaN rule of ops/attention.h.
template <typename T>
__device__ inline T finite_or_zero(T x) {
  return x - x == T(0) ? x : T(0);
}

}  // namespace hg::cuda
