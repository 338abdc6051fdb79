// cuda/attention.cu — the materialized path's attention kernels: the scores kernel, which scales
// the scores and applies the mask in place, one thread per element of S, before the softmax
// (cuda/softmax.cu) turns them into weights; and the NaN rule of ops/attention.h after the softmax
// and after the row rule (zero_hidden_kernel: a NaN row's P and dS are 0 at its hidden keys) and
// in dK's product (finite_part_kernel: Q with its NaN and ±inf entries 0).
//
// The mask rule is masked_score and hidden_key (cuda/attention_mask.cuh, shared with the tiled
// kernels of cuda/attention_tiled_*.cu); a key hidden here is −inf, so a row with no visible key
// gets zero weights from the softmax.
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

// The NaN rule's zero (ops/attention.h), one thread per row r (query i of slice b) of X
// (rows, Tk), contiguous: when the row's `w` flags (rows, w) hold a NaN, X_ij = 0 at every key the
// mask rule hides from i. g spans (batch..., Tq) with the mask's strides (query i's row of the
// mask); sj: its stride along keys. A row without a NaN reads its flags only.
template <typename T>
__global__ void zero_hidden_kernel(T* X, const T* flags, int64_t w, int64_t Tq, int64_t Tk, bool causal, int kind,
                                   const void* mask, int64_t sj, Geometry<1> g) {
  HG_GRID_LOOP(r, g.numel) {
    bool nan = false;
    for (int64_t c = 0; c < w; ++c) nan = nan || flags[r * w + c] != flags[r * w + c];
    if (!nan) continue;
    const int64_t i = r % Tq;
    int64_t off[1] = {0};
    if (kind != kMaskNone) offsets_of(g, r, off);
    T* row = X + r * Tk;
    for (int64_t j = 0; j < Tk; ++j)
      if (hidden_key<T>(i, j, causal, kind, mask, off[0] + j * sj)) row[j] = T(0);
  }
}

// out = x with every NaN and ±inf entry 0; g spans x's shape, operands 0 out (contiguous), 1 x.
template <typename T>
__global__ void finite_part_kernel(T* out, const T* x, Geometry<2> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[2];
    offsets_of(g, e, off);
    out[off[0]] = finite_or_zero(x[off[1]]);
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers (cuda/attention.cpp)

// Declared in cuda/attention.cpp, their caller, until cuda/kernels.h takes them.
cudaError_t launch_attention_zero_hidden(Elem t, void* X, const void* flags, int64_t w, int64_t Tq, int64_t Tk,
                                         bool causal, int mask_kind, const void* mask, int64_t mask_sj,
                                         const Geometry<1>& g, cudaStream_t s) {
  if (g.numel <= 0 || Tk <= 0) return cudaSuccess;
  if (Tq <= 0 || w < 0 || mask_kind < kMaskNone || mask_kind > kMaskAdditive) return cudaErrorInvalidValue;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    zero_hidden_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(X), static_cast<const T*>(flags), w,
                                                                  Tq, Tk, causal, mask_kind, mask, mask_sj, g);
  });
}

cudaError_t launch_attention_finite_part(Elem t, void* out, const void* x, const Geometry<2>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    finite_part_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(x), g);
  });
}

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
