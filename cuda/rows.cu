// cuda/rows.cu — reductions along rows, cross-entropy, and the embedding gather / scatter-add.
//
// Reductions and cross-entropy run one block per row of a contiguous (rows, cols) buffer (the
// CPU's layout: reduced dimensions moved last, ops/reduce.cpp); the embedding runs one thread
// per element, its backward one block per row of the table. Indices are checked on the device:
// an out-of-range one records its position in status[kBadIndex] (atomicMin keeps the first) and
// the host turns that into an hg::Error.
#include <climits>

#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {
namespace {

// ---------------------------------------------------------------- sum, max
// out[r] = Σ_j x[r, j]
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    sum_rows_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t cols) {
  __shared__ ReduceScratch<T> scratch;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;  // (cols,)
    T acc = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) acc += xr[j];
    acc = block_reduce(acc, SumOp<T>{}, T(0), scratch);
    if (threadIdx.x == 0) out[r] = acc;
  }
}

// (v, j) beats (bv, bj): a NaN beats every number and an earlier NaN beats a later one (the first
// NaN is the maximum, as PyTorch's); else a larger value, or the same value earlier in the row.
// (−inf, cols) is "no candidate yet", which any entry of the row beats.
template <typename T>
__device__ inline bool beats(T v, int64_t j, T bv, int64_t bj) {
  const bool v_nan = v != v, b_nan = bv != bv;
  if (v_nan || b_nan) return v_nan && (!b_nan || j < bj);
  return v > bv || (v == bv && j < bj);
}

// values[r] = x[r, j*], j* the first position of the row's maximum, or of its first NaN (the
// CPU's scan, ops/reduce.cpp's first_max).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    max_rows_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ argmax,
                    T* __restrict__ onehot, int64_t rows, int64_t cols) {
  __shared__ T best_v[kRowThreads];
  __shared__ int64_t best_j[kRowThreads];
  const unsigned tid = threadIdx.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;  // (cols,)
    T bv = neg_infinity<T>();
    int64_t bj = cols;
    for (int64_t j = tid; j < cols; j += blockDim.x)
      if (beats(xr[j], j, bv, bj)) bv = xr[j], bj = j;
    best_v[tid] = bv;
    best_j[tid] = bj;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {  // blockDim.x is a power of two
      if (tid < h && beats(best_v[tid + h], best_j[tid + h], best_v[tid], best_j[tid])) {
        best_v[tid] = best_v[tid + h];
        best_j[tid] = best_j[tid + h];
      }
      __syncthreads();
    }
    int64_t best = best_j[0];
    if (best >= cols) best = 0;  // unreachable for cols > 0: every entry beats "no candidate"
    __syncthreads();                               // every thread has read best_j[0] before the next row writes it
    if (tid == 0) {
      values[r] = xr[best];
      if (argmax) argmax[r] = best;
    }
    if (onehot)
      for (int64_t j = tid; j < cols; j += blockDim.x) onehot[r * cols + j] = j == best ? T(1) : T(0);
  }
}

// ---------------------------------------------------------------- cross-entropy
// For a kept row r: lse_r = m + log Σ_c exp(x_rc − m), loss_r = lse_r − x_r,t_r, in double.
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    cross_entropy_rows_kernel(const T* __restrict__ x, const int64_t* __restrict__ targets, int64_t N, int64_t C,
                              int64_t ignore_index, T* __restrict__ lse, double* __restrict__ loss, long long* status) {
  __shared__ ReduceScratch<double> scratch;
  const double neg_inf = -INFINITY;
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
    const int64_t t = targets[r];  // the same for the whole block: the branches below are uniform
    if (t == ignore_index || t < 0 || t >= C) {
      if (threadIdx.x == 0) {
        if (t != ignore_index) atomicMin(&status[kBadIndex], static_cast<long long>(r));
        lse[r] = T(0);
        loss[r] = 0.0;
      }
      continue;
    }
    const T* xr = x + r * C;  // (C,) logits
    double m = neg_inf;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = MaxOp<double>{}(m, static_cast<double>(xr[c]));
    m = block_reduce(m, MaxOp<double>{}, neg_inf, scratch);
    double z = 0.0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) z += exp(static_cast<double>(xr[c]) - m);
    z = block_reduce(z, SumOp<double>{}, 0.0, scratch);
    if (threadIdx.x == 0) {
      const double l = m + log(z);
      const double loss_r = l - static_cast<double>(xr[t]);
      if (loss_r != loss_r) atomicMin(&status[kNanRow], static_cast<long long>(r));
      lse[r] = static_cast<T>(l);
      loss[r] = loss_r;
    }
  }
}

// out = Σ_{kept r} loss_r / n_kept, one block
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    cross_entropy_mean_kernel(const double* __restrict__ loss, const int64_t* __restrict__ targets, int64_t N,
                              int64_t ignore_index, T* __restrict__ out, long long* status) {
  __shared__ ReduceScratch<double> scratch;
  __shared__ ReduceScratch<long long> scratch_n;
  double total = 0.0;
  long long kept = 0;
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x)
    if (targets[r] != ignore_index) {
      total += loss[r];
      ++kept;
    }
  total = block_reduce(total, SumOp<double>{}, 0.0, scratch);
  kept = block_reduce(kept, SumOp<long long>{}, 0LL, scratch_n);
  if (threadIdx.x == 0) {
    out[0] = static_cast<T>(kept > 0 ? total / static_cast<double>(kept) : 0.0);
    status[kKept] = kept;
  }
}

// dx[r, c] = scale (p_rc − [c = t_r]), p_rc = exp(x_rc − lse_r), on kept rows; 0 on ignored rows.
// scale = g / n_kept, read on the device (g the incoming 0-d gradient, n_kept the forward's count),
// so the host never waits for either.
template <typename T>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ x, const int64_t* __restrict__ targets,
                                              const T* __restrict__ lse, int64_t N, int64_t C, int64_t ignore_index,
                                              const T* __restrict__ g, const long long* __restrict__ n_kept,
                                              T* __restrict__ dx, long long* status) {
  const long long kept = *n_kept;
  const double scale = kept > 0 ? static_cast<double>(*g) / static_cast<double>(kept) : 0.0;
  HG_GRID_LOOP(e, N * C) {
    const int64_t r = e / C, c = e % C, t = targets[r];
    if (t == ignore_index || t < 0 || t >= C) {
      if (t != ignore_index && c == 0) atomicMin(&status[kBadIndex], static_cast<long long>(r));
      dx[e] = T(0);
      continue;
    }
    const double p = exp(static_cast<double>(x[e]) - static_cast<double>(lse[r]));
    dx[e] = static_cast<T>(scale * (p - (c == t ? 1.0 : 0.0)));
  }
}

// ---------------------------------------------------------------- status

// The status buffer's starting values, written on the device (a copy from the host would wait).
__global__ void status_init_kernel(long long* status) {
  status[kBadIndex] = LLONG_MAX;
  status[kNanRow] = LLONG_MAX;
  status[kKept] = 0;
}

// ---------------------------------------------------------------- embedding
// forward: out[p, j] = w[idx[p], j]. With d = 0 one thread per position still checks the index.
template <typename T>
__global__ void embedding_kernel(const T* __restrict__ w, int64_t sv, int64_t sd, int64_t V, int64_t d,
                                 const int64_t* __restrict__ idx, int64_t P, T* __restrict__ out, long long* status) {
  const int64_t dd = d > 0 ? d : 1;
  HG_GRID_LOOP(e, P * dd) {
    const int64_t p = e / dd, j = e % dd, id = idx[p];
    if (id < 0 || id >= V) {
      if (j == 0) atomicMin(&status[kBadIndex], static_cast<long long>(p));
      if (d > 0) out[e] = T(0);
      continue;
    }
    if (d > 0) out[e] = w[id * sv + j * sd];
  }
}

// backward: dw[v, j] = Σ_{p: idx[p] = v} g[p, j] — a row read k times receives the sum of its k
// gradients, added in position order as the CPU adds them (ops/indexing.cpp): the same bits, run
// after run, where atomicAdd would add in whatever order the threads arrive.
// One block per (row v, `threads` columns from j0): the block reads the ids a tile at a time into
// shared memory, and each thread scans the tile in order, adding g[p, j] where ids[p] = v (the
// whole block takes the same branch; the reads of g along j are coalesced). V · P id reads from
// shared memory, P · d adds: for TinyCharLM (V = 64, d = 128, P = 128 · 63) 64 blocks of 128
// threads, each scanning 8064 ids. Block 0 also checks every id (the first bad one's position).
constexpr int kIdsTile = 1024;

template <typename T>
__global__ void embedding_backward_kernel(const T* __restrict__ g, const int64_t* __restrict__ idx, int64_t P,
                                          int64_t V, int64_t d, int64_t col_blocks, T* __restrict__ dw,
                                          long long* status) {
  __shared__ int64_t ids[kIdsTile];
  const int64_t blocks = (V > 0 ? V : 1) * col_blocks;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {  // b is the same for the whole block
    const int64_t v = b / col_blocks, j = (b % col_blocks) * blockDim.x + threadIdx.x;
    T sum = T(0);
    for (int64_t p0 = 0; p0 < P; p0 += kIdsTile) {
      const int64_t n = P - p0 < kIdsTile ? P - p0 : kIdsTile;
      __syncthreads();  // every thread is done with the previous tile
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
        const int64_t id = idx[p0 + k];
        ids[k] = id;
        if (b == 0 && (id < 0 || id >= V)) atomicMin(&status[kBadIndex], static_cast<long long>(p0 + k));
      }
      __syncthreads();
      if (j < d)
        for (int64_t k = 0; k < n; ++k)
          if (ids[k] == v) sum += g[(p0 + k) * d + j];
    }
    if (v < V && j < d) dw[v * d + j] = sum;
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

cudaError_t launch_sum_rows(Elem t, const void* x, void* out, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    sum_rows_kernel<T>
        <<<rows_grid(rows), row_threads(cols), 0, s>>>(static_cast<const T*>(x), static_cast<T*>(out), rows, cols);
  });
}

cudaError_t launch_max_rows(Elem t, const void* x, void* values, int64_t* argmax, void* onehot, int64_t rows,
                            int64_t cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    max_rows_kernel<T><<<rows_grid(rows), row_threads(cols), 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(values), argmax, static_cast<T*>(onehot), rows, cols);
  });
}

cudaError_t launch_cross_entropy_rows(Elem t, const void* x, const int64_t* targets, int64_t N, int64_t C,
                                      int64_t ignore_index, void* lse, double* loss, long long* status,
                                      cudaStream_t s) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_rows_kernel<T><<<rows_grid(N), row_threads(C), 0, s>>>(
        static_cast<const T*>(x), targets, N, C, ignore_index, static_cast<T*>(lse), loss, status);
  });
}

cudaError_t launch_cross_entropy_mean(Elem t, const double* loss, const int64_t* targets, int64_t N,
                                      int64_t ignore_index, void* out, long long* status, cudaStream_t s) {
  // Launched even for N = 0: it writes the loss 0 and n_kept = 0.
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_mean_kernel<T>
        <<<1, kRowThreads, 0, s>>>(loss, targets, N, ignore_index, static_cast<T*>(out), status);
  });
}

cudaError_t launch_cross_entropy_backward(Elem t, const void* x, const int64_t* targets, const void* lse, int64_t N,
                                          int64_t C, int64_t ignore_index, const void* g, const long long* n_kept,
                                          void* dx, long long* status, cudaStream_t s) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_backward_kernel<T><<<grid_for(N * C), kThreads, 0, s>>>(
        static_cast<const T*>(x), targets, static_cast<const T*>(lse), N, C, ignore_index, static_cast<const T*>(g),
        n_kept, static_cast<T*>(dx), status);
  });
}

cudaError_t launch_status_init(long long* status, cudaStream_t s) {
  status_init_kernel<<<1, 1, 0, s>>>(status);
  return cudaGetLastError();
}

cudaError_t launch_embedding(Elem t, const void* w, int64_t sv, int64_t sd, int64_t V, int64_t d, const int64_t* idx,
                             int64_t P, void* out, long long* status, cudaStream_t s) {
  if (P <= 0) return cudaSuccess;
  const unsigned grid = grid_for(P * (d > 0 ? d : 1));
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    embedding_kernel<T>
        <<<grid, kThreads, 0, s>>>(static_cast<const T*>(w), sv, sd, V, d, idx, P, static_cast<T*>(out), status);
  });
}

cudaError_t launch_embedding_backward(Elem t, const void* g, const int64_t* idx, int64_t P, int64_t V, int64_t d,
                                      void* dw, long long* status, cudaStream_t s) {
  if (P < 0 || V < 0 || d < 0) return cudaErrorInvalidValue;
  if (P == 0 && (V == 0 || d == 0)) return cudaSuccess;  // no id to check, no element to write
  // A block spans up to kThreads columns, whole warps, about d: 128 threads for d = 128.
  const int64_t threads = d >= kThreads ? kThreads : (d < 32 ? 32 : (d + 31) / 32 * 32);
  const int64_t col_blocks = d > 0 ? (d + threads - 1) / threads : 1;
  const int64_t blocks = (V > 0 ? V : 1) * col_blocks;
  const unsigned grid = static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid);
  const unsigned block = static_cast<unsigned>(threads);
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    embedding_backward_kernel<T>
        <<<grid, block, 0, s>>>(static_cast<const T*>(g), idx, P, V, d, col_blocks, static_cast<T*>(dw), status);
  });
}

}  // namespace hg::cuda
