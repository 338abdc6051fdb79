// cuda/softmax.cu — the softmax family along the last dimension of contiguous (rows, n) buffers.
//
// The same rules as the CPU (ops/softmax.cpp). Notation: s a row of scores, p = softmax(s) its
// weights, g = dL/dp.
//   softmax      p_j = exp(s_j − m) / Σ_k exp(s_k − m),  m = max_k s_k (every exp ≤ 1: no overflow)
//   log_softmax  y_j = s_j − m − log Σ_k exp(s_k − m)
//   row rule     D = Σ_j p_j g_j,  ds_j = p_j (g_j − D)
//   log_softmax backward  ds_j = g_j − exp(y_j) Σ_k g_k
//   Jacobian     J_ij = p_i δ_ij − p_i p_j;  its backward dp_k = G_kk − Σ_j (G_kj + G_jk) p_j
// A row whose entries are all −inf (every key masked) has m = −inf: softmax gives zeros (not the
// NaN of exp(−inf − (−inf))), log_softmax −inf, and the log_softmax backward passes no gradient.
// NaN in, NaN out, as on the CPU: m is the max of the row's non-NaN entries (MaxOp,
// cuda/device_common.cuh), so a NaN among finite scores makes the row NaN through the sum, and a
// row of NaN and −inf is found by row_has_nan and made NaN — never taken for a masked row.
//
// Row kernels run one block per row (blocks loop over rows when there are more than kMaxGrid),
// each pass a block-wide loop with stride blockDim.x followed by block_reduce, which hands every
// thread the same value: the branches on it are uniform over the block, as its barriers need.
// The Jacobian and its backward run one thread per output element. The reference is the CPU;
// tests/gpu compares. probe_kernel_image (the backend's start-up check that the build's kernels
// run on this device) asks about the softmax kernel.
#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {
namespace {

template <typename T>
__device__ inline T s_nan() {
  return static_cast<T>(NAN);
}

// Whether the row holds a NaN: a block-wide count. Every thread of the block must call it (it
// synchronises); the callers do so only in branches on a block_reduce result, uniform.
template <typename T>
__device__ bool row_has_nan(const T* row, int64_t n, ReduceScratch<T>& scratch) {
  T count = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) count += row[j] != row[j] ? T(1) : T(0);
  return block_reduce(count, SumOp<T>{}, T(0), scratch) > T(0);
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ ReduceScratch<T> scratch;
  const T neg_inf = neg_infinity<T>();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* s = x + r * cols;  // (cols,) the row's scores
    T* p = y + r * cols;        // (cols,) its weights
    T m = neg_inf;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = MaxOp<T>{}(m, s[j]);
    m = block_reduce(m, MaxOp<T>{}, neg_inf, scratch);
    if (m == neg_inf) {  // no finite entry; m is the block's: all take the branch
      const T fill = row_has_nan(s, cols, scratch) ? s_nan<T>() : T(0);  // NaN in, NaN out; else all masked
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = fill;
      continue;
    }
    T z = 0;  // Σ_k exp(s_k − m) ≥ 1: the max term alone is 1
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) z += dexp(s[j] - m);
    z = block_reduce(z, SumOp<T>{}, T(0), scratch);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = dexp(s[j] - m) / z;
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    log_softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  __shared__ ReduceScratch<T> scratch;
  const T neg_inf = neg_infinity<T>();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* s = x + r * n;  // (n,)
    T* out = y + r * n;      // (n,)
    T m = neg_inf;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp<T>{}(m, s[j]);
    m = block_reduce(m, MaxOp<T>{}, neg_inf, scratch);
    if (m == neg_inf) {  // nothing visible: log 0, unless a NaN (m is the block's: all take the branch)
      const T fill = row_has_nan(s, n, scratch) ? s_nan<T>() : neg_inf;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = fill;
      continue;
    }
    T z = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) z += dexp(s[j] - m);
    z = block_reduce(z, SumOp<T>{}, T(0), scratch);
    const T lse = m + dlog(z);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = s[j] - lse;
  }
}

// D = Σ_j p_j dp_j,  ds_j = p_j (dp_j − D)
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_backward_kernel(const T* __restrict__ p, const T* __restrict__ dp, T* __restrict__ ds, T* __restrict__ D,
                            int64_t rows, int64_t n) {
  __shared__ ReduceScratch<T> scratch;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* pr = p + r * n;   // (n,) weights
    const T* gr = dp + r * n;  // (n,) dL/dp
    T* out = ds + r * n;       // (n,) dL/ds
    T dot = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dot += pr[j] * gr[j];
    dot = block_reduce(dot, SumOp<T>{}, T(0), scratch);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = pr[j] * (gr[j] - dot);
    if (D && threadIdx.x == 0) D[r] = dot;
  }
}

// ds_j = g_j − exp(y_j) Σ_k g_k; a row of −inf passes no gradient
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    log_softmax_backward_kernel(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ ds, int64_t rows,
                                int64_t n) {
  __shared__ ReduceScratch<T> scratch;
  const T neg_inf = neg_infinity<T>();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * n;  // (n,) log-weights
    const T* gr = g + r * n;  // (n,) dL/dy
    T* out = ds + r * n;      // (n,) dL/ds
    T m = neg_inf, total = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      m = MaxOp<T>{}(m, yr[j]);
      total += gr[j];
    }
    m = block_reduce(m, MaxOp<T>{}, neg_inf, scratch);
    total = block_reduce(total, SumOp<T>{}, T(0), scratch);
    const bool none = m == neg_inf && !row_has_nan(yr, n, scratch);  // (uniform: m is the block's)
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) out[j] = none ? T(0) : gr[j] - mul_rn(dexp(yr[j]), total);
  }
}

// J (rows, n, n): J[r, i, j] = p_i δ_ij − p_i p_j, one thread per entry
template <typename T>
__global__ void jacobian_kernel(const T* __restrict__ p, T* __restrict__ J, int64_t rows, int64_t n) {
  const int64_t nn = n * n;
  HG_GRID_LOOP(e, rows * nn) {
    const int64_t r = e / nn, rem = e % nn, i = rem / n, j = rem % n;
    const T pi = p[r * n + i], pj = p[r * n + j];
    J[e] = (i == j ? pi : T(0)) - mul_rn(pi, pj);
  }
}

// dp[r, k] = G_kk − Σ_j (G_kj + G_jk) p_j, one thread per (r, k)
template <typename T>
__global__ void jacobian_backward_kernel(const T* __restrict__ p, const T* __restrict__ G, T* __restrict__ dp,
                                         int64_t rows, int64_t n) {
  HG_GRID_LOOP(e, rows * n) {
    const int64_t r = e / n, k = e % n;
    const T* pr = p + r * n;      // (n,)
    const T* Gr = G + r * n * n;  // (n, n)
    T acc = Gr[k * n + k];
    for (int64_t j = 0; j < n; ++j) acc = acc - mul_rn(Gr[k * n + j] + Gr[j * n + k], pr[j]);
    dp[e] = acc;
  }
}

}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, softmax_kernel<float>);
}

// ---------------------------------------------------------------- launchers (cuda/kernels.h)

cudaError_t launch_softmax_rows(Elem t, const void* x, void* p, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    softmax_kernel<T><<<rows_grid(rows), row_threads(n), 0, s>>>(static_cast<const T*>(x), static_cast<T*>(p), rows, n);
  });
}

cudaError_t launch_log_softmax_rows(Elem t, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    log_softmax_kernel<T>
        <<<rows_grid(rows), row_threads(n), 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), rows, n);
  });
}

cudaError_t launch_softmax_backward_rows(Elem t, const void* p, const void* dp, void* ds, void* D, int64_t rows,
                                         int64_t n, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    softmax_backward_kernel<T><<<rows_grid(rows), row_threads(n), 0, s>>>(
        static_cast<const T*>(p), static_cast<const T*>(dp), static_cast<T*>(ds), static_cast<T*>(D), rows, n);
  });
}

cudaError_t launch_log_softmax_backward_rows(Elem t, const void* y, const void* g, void* ds, int64_t rows, int64_t n,
                                             cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    log_softmax_backward_kernel<T><<<rows_grid(rows), row_threads(n), 0, s>>>(
        static_cast<const T*>(y), static_cast<const T*>(g), static_cast<T*>(ds), rows, n);
  });
}

cudaError_t launch_jacobian_rows(Elem t, const void* p, void* J, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  const unsigned grid = grid_for(rows * n * n);
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    jacobian_kernel<T><<<grid, kThreads, 0, s>>>(static_cast<const T*>(p), static_cast<T*>(J), rows, n);
  });
}

cudaError_t launch_jacobian_backward_rows(Elem t, const void* p, const void* G, void* dp, int64_t rows, int64_t n,
                                          cudaStream_t s) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  const unsigned grid = grid_for(rows * n);
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    jacobian_backward_kernel<T>
        <<<grid, kThreads, 0, s>>>(static_cast<const T*>(p), static_cast<const T*>(G), static_cast<T*>(dp), rows, n);
  });
}

}  // namespace hg::cuda
