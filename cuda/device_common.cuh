// cuda/device_common.cuh — helpers shared by the kernel files: the launch sizes, the launchers'
// float32/float64 switch (launch_float), typed math, the strided offsets of a Geometry, the
// grid-stride loop, and a block-wide reduction.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels.h"

namespace hg::cuda {

constexpr int kThreads = 256;          // per block, for one-thread-per-element kernels
constexpr int64_t kMaxGrid = 1 << 20;  // more elements than blocks·threads: the grid-stride loop covers them
constexpr int kRowThreads = 512;       // at most, per block of a one-block-per-row kernel

inline unsigned grid_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b < kMaxGrid ? b : kMaxGrid));
}
inline unsigned rows_grid(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxGrid ? (rows < 1 ? 1 : rows) : kMaxGrid);
}
// A power of two from 32 to kRowThreads, about the row length (block_reduce needs whole warps).
inline unsigned row_threads(int64_t cols) {
  int t = 32;
  while (t < cols && t < kRowThreads) t *= 2;
  return static_cast<unsigned>(t);
}

// The launchers' float32/float64 switch: calls launch(float{}) or launch(double{}) for t, and
// returns cudaGetLastError(); any other Elem launches nothing and is cudaErrorInvalidValue.
// launch is a generic lambda that launches the kernel for T = decltype(its argument):
//   return launch_float(t, [&](auto zero) {
//     using T = decltype(zero);
//     kernel<T><<<grid, threads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(x), n);
//   });
template <typename F>
cudaError_t launch_float(Elem t, F&& launch) {
  switch (t) {
    case Elem::f32: launch(float{}); break;
    case Elem::f64: launch(double{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// Typed math: the float overloads are the single-precision functions, as std:: picks on the CPU.
__device__ inline float dexp(float v) { return expf(v); }
__device__ inline double dexp(double v) { return exp(v); }
__device__ inline float dlog(float v) { return logf(v); }
__device__ inline double dlog(double v) { return log(v); }
__device__ inline float dsqrt(float v) { return sqrtf(v); }
__device__ inline double dsqrt(double v) { return sqrt(v); }
__device__ inline float dtanh(float v) { return tanhf(v); }
__device__ inline double dtanh(double v) { return tanh(v); }
__device__ inline float dpow(float v, float p) { return powf(v, p); }
__device__ inline double dpow(double v, double p) { return pow(v, p); }
// A product nvcc may not fuse into a multiply-add: keeps a − b·c rounded as the CPU rounds it.
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
__device__ inline T neg_infinity() {
  return static_cast<T>(-INFINITY);
}

// The offsets in each operand of element e (row-major over g.size).
template <size_t N>
__device__ inline void offsets_of(const Geometry<N>& g, int64_t e, int64_t (&off)[N]) {
  for (size_t k = 0; k < N; ++k) off[k] = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const int64_t n = g.size[d];
    const int64_t i = e % n;
    e /= n;
    for (size_t k = 0; k < N; ++k) off[k] += i * g.stride[k][d];
  }
}

// Before a loop with a constant trip count over a thread's array (an accumulator): unrolled, the
// array stays in registers instead of local memory. (Nothing in the emulation: tests/gpu/emulation.)
#ifdef __CUDACC__
#define HG_UNROLL _Pragma("unroll")
#else
#define HG_UNROLL
#endif

// for (e = this thread's first; e < n; e += all threads)
#define HG_GRID_LOOP(e, n)                                                               \
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < (n); \
       e += static_cast<int64_t>(blockDim.x) * gridDim.x)

// The reductions' operators, symmetric in their arguments so that the order in which threads
// combine partial results cannot change the answer. The NaN rule is the CPU's (ops/softmax.cpp,
// ops/cpu_map.h: a running std::max from −inf never takes a NaN): the max of a row is the max of
// its non-NaN entries, −inf if there are none; the NaN reaches the output through the sum,
// Σ exp(s − m), which NaN in makes NaN out. (±0 compare equal: either may come back.)
template <typename T>
struct MaxOp {
  __device__ T operator()(T a, T b) const { return (b > a || a != a) ? b : a; }
};
template <typename T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};

// block_reduce's shared memory: a partial result per warp, and the block's result.
template <typename T>
struct ReduceScratch {
  T warp[32];
  T result;
};

// Reduces v over the block with op and hands every thread the same value: thread 0's, broadcast
// through shared memory, so that a branch on the result is uniform over the block (a butterfly of
// shuffles alone may leave lanes with different bits). blockDim.x: a multiple of 32, at most 1024.
// Every thread of the block must call it (it synchronises), never under a condition that can
// differ between them. Two barriers: the first before the warps' partials are read, the second
// before the result is; each also orders this call's reads before the next call's writes.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, ReduceScratch<T>& scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  if (lane == 0) scratch.warp[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch.warp[lane] : identity;  // every warp finishes the reduction itself
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) scratch.result = v;
  __syncthreads();
  return scratch.result;
}

}  // namespace hg::cuda
