// cuda/attention.cu — attention's scores kernel: scale the scores and apply the mask in place,
// one thread per element of S, before the softmax (cuda/softmax.cu) turns them into weights.
//
// The reference is the CPU's statement of the rule (MaskRule, ops/attention_cpu.cpp); a key hidden here is −inf, so a row with
// no visible key gets zero weights from the softmax.
#include <limits>

#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {
namespace {

// The mask rule, the only statement of it on the GPU: key j is hidden from query i when j > i
// under the causal rule, when the boolean mask's entry is false, or when the additive mask's
// entry is −inf or ≤ lowest/2; a hidden key's score is −inf, a visible one's is
// score · scale + the additive entry (no entry without an additive mask). `entry` is the
// position of (i, j) in the mask, read only when there is one.
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

// S (batch..., Tq, Tk) contiguous, in place; g spans S's shape with the mask's strides.
template <typename T>
__global__ void scale_mask_kernel(T* S, int64_t Tq, int64_t Tk, T scale, bool causal, int kind, const void* mask,
                                  Geometry<1> g) {
  HG_GRID_LOOP(e, g.numel) {
    const int64_t j = e % Tk, i = (e / Tk) % Tq;
    int64_t off[1] = {0};
    if (kind != kMaskNone) offsets_of(g, e, off);
    S[e] = masked_score(S[e], scale, i, j, causal, kind, mask, off[0]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers (cuda/kernels.h)

cudaError_t launch_scale_mask(Elem t, void* S, int64_t Tq, int64_t Tk, double scale, bool causal, int mask_kind,
                              const void* mask, const Geometry<1>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  if (Tq <= 0 || Tk <= 0 || mask_kind < kMaskNone || mask_kind > kMaskAdditive) return cudaErrorInvalidValue;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    scale_mask_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(S), Tq, Tk, static_cast<T>(scale),
                                                                 causal, mask_kind, mask, g);
  });
}

}  // namespace hg::cuda
