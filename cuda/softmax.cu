// cuda/softmax.cu — softmax forward along the last dimension: one block per row.
//
// The same rule as the CPU (ops/softmax.cpp): with m = max_k s_k,
//   p_j = exp(s_j − m) / Σ_k exp(s_k − m)
// Subtracting m keeps every exp in (0, 1], so no row overflows however large its scores.
// A row whose entries are all −inf (every key masked) has m = −inf; it gives a row of zeros
// (not NaN, which exp(−inf − (−inf)) would give).
//
// Three passes over the row, each a block-wide loop with stride blockDim.x: the max, the sum of
// exponentials, the normalised write. The reference is the CPU softmax; tests/gpu compares them.
#include <cmath>

#include "cuda/softmax.h"

namespace hg::cuda {
namespace {

constexpr int kMaxThreads = 512;       // per block (a row); a multiple of the warp size
constexpr int64_t kMaxBlocks = 1 << 20;  // more rows than this: blocks loop over rows

template <typename T>
struct MaxOp {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
template <typename T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};

__device__ inline float exp_of(float v) { return expf(v); }
__device__ inline double exp_of(double v) { return exp(v); }

// Reduces v over the block with op; every thread gets the result. scratch: one slot per warp.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, T* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : identity;  // every warp finishes the reduction itself
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // scratch is reused by the next reduction
  return v;
}

template <typename T>
__global__ void softmax_lastdim_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ T scratch[32];
  const T neg_inf = static_cast<T>(-INFINITY);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* s = x + r * cols;  // (cols,) the row's scores
    T* p = y + r * cols;        // (cols,) its weights
    T m = neg_inf;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = MaxOp<T>{}(m, s[j]);
    m = block_reduce(m, MaxOp<T>{}, neg_inf, scratch);
    if (m == neg_inf) {  // every entry masked (the whole block takes this branch)
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = T(0);
      continue;
    }
    T z = 0;  // Σ_k exp(s_k − m) ≥ 1: the max term alone is 1
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) z += exp_of(s[j] - m);
    z = block_reduce(z, SumOp<T>{}, T(0), scratch);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = exp_of(s[j] - m) / z;
  }
}

template <typename T>
cudaError_t launch_softmax_lastdim(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  int threads = 32;
  while (threads < cols && threads < kMaxThreads) threads *= 2;
  const int64_t blocks = rows < kMaxBlocks ? rows : kMaxBlocks;
  softmax_lastdim_kernel<T><<<static_cast<unsigned>(blocks), static_cast<unsigned>(threads), 0, s>>>(x, y, rows, cols);
  return cudaGetLastError();
}

}  // namespace

cudaError_t softmax_lastdim_f32(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  return launch_softmax_lastdim(x, y, rows, cols, s);
}

cudaError_t softmax_lastdim_f64(const double* x, double* y, int64_t rows, int64_t cols, cudaStream_t s) {
  return launch_softmax_lastdim(x, y, rows, cols, s);
}

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, softmax_lastdim_kernel<float>);
}

}  // namespace hg::cuda
