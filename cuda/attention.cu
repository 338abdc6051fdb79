// cuda/attention.cu — attention's scores kernel: scale the scores and apply the mask in place,
// one thread per element of S, before the softmax (cuda/softmax.cu) turns them into weights.
//
// The mask rule is masked_score (cuda/attention_mask.cuh, shared with the tiled kernels of
// cuda/attention_tiled.cu); a key hidden here is −inf, so a row with no visible key gets zero
// weights from the softmax.
#include "cuda/attention_mask.cuh"
#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {
namespace {

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
