// cuda/attention_tiled_forward.cu — the tiled attention's forward on the GPU: the online softmax
// over key tiles, O and the row log-sum-exp L (the algorithm: cuda/attention_tiled.cuh).
#include "cuda/attention_tiled.cuh"

namespace hg::cuda {
namespace {

// ---------------------------------------------------------------- forward

// One key tile (keys j0 .. j0 + cols − 1 at k and v) into the online softmax of the block's rows.
template <typename T>
__device__ void absorb_tile(const TiledAttention& a, ForwardShared<T>& sh, T (&acc)[ForwardShared<T>::kAcc],
                            const T* k, const T* v, int64_t mask_at, int64_t i0, int rows, int64_t j0, int cols) {
  constexpr int R = ForwardShared<T>::R, C = ForwardShared<T>::C, P = C + 1;
  __syncthreads();  // the queries are loaded; the last tile's values and P̃ are read
  load_rows<T, C>(sh.kv, k, cols, a.dk);
  __syncthreads();
  for (int e = tid(); e < R * C; e += kTileThreads) {  // S_IJ, −inf outside the tile
    const int r = e / C, c = e % C;
    T s = neg_infinity<T>();
    if (r < rows && c < cols) s = score(a, dot(sh.q + r * kLd, sh.kv + c * kLd, a.dk), mask_at, i0 + r, j0 + c);
    sh.p[r * P + c] = s;
  }
  __syncthreads();
  update_row_max<T, R, C>(sh.p, sh.m, sh.rescale);  // m' = max(m, rowmax S_IJ), and e^(m − m')
  load_rows<T, C>(sh.kv, v, cols, a.dv);  // the keys' last reads were before the barrier above
  __syncthreads();
  for (int e = tid(); e < R * C; e += kTileThreads) {  // P̃ = e^(S_IJ − m')
    T& s = sh.p[(e / C) * P + e % C];
    s = weight(s, sh.m[e / C]);
  }
  __syncthreads();
  if (tid() < R) {  // ℓ' = e^(m − m') ℓ + rowsum P̃
    T sum = 0;
    for (int c = 0; c < C; ++c) sum += sh.p[tid() * P + c];
    sh.l[tid()] = sh.l[tid()] * sh.rescale[tid()] + sum;
  }
  add_product<T, R, C>(sh.p, sh.kv, a.dv, acc, sh.rescale);  // A' = e^(m − m') A + P̃ V_J
}

// O (rows, dv) = A / ℓ and L (rows) = m + log ℓ; 0 and −inf on a row with no visible key, NaN and
// NaN on a row whose ℓ is NaN.
template <typename T>
__device__ void write_rows(const ForwardShared<T>& sh, const T (&acc)[ForwardShared<T>::kAcc], int rows, int64_t dv,
                           T* O, T* L) {
  HG_UNROLL for (int n = 0; n < ForwardShared<T>::kAcc; ++n) {
    const int64_t e = tid() + static_cast<int64_t>(n) * kTileThreads;
    if (e >= rows * dv) continue;
    const T l = sh.l[e / dv];
    O[e] = l != l ? l : sh.m[e / dv] == neg_infinity<T>() ? T(0) : acc[n] / l;
  }
  write_lse(sh.l, sh.m, rows, L);
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    forward_kernel(TiledAttention a, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   T* __restrict__ O, T* __restrict__ L) {
  using Sh = ForwardShared<T>;
  __shared__ Sh sh;
  const int64_t q_tiles = ceil_div(a.Tq, Sh::R);
  for (int64_t w = blockIdx.x; w < a.slices * q_tiles; w += gridDim.x) {
    const int64_t b = w / q_tiles, i0 = (w % q_tiles) * Sh::R, mask_at = mask_offset(a, b);
    const int rows = static_cast<int>(imin(Sh::R, a.Tq - i0));
    load_rows<T, Sh::R>(sh.q, q + (b * a.Tq + i0) * a.dk, rows, a.dk);
    if (tid() < Sh::R) {
      sh.m[tid()] = neg_infinity<T>();
      sh.l[tid()] = T(0);
    }
    T acc[Sh::kAcc];
    for (T& x : acc) x = T(0);
    // Under the causal rule the key tiles past the block's last query are wholly hidden: not visited.
    const int64_t key_end = a.causal ? imin(a.Tk, i0 + rows) : a.Tk;
    for (int64_t j0 = 0; j0 < key_end; j0 += Sh::C)
      absorb_tile(a, sh, acc, k + (b * a.Tk + j0) * a.dk, v + (b * a.Tk + j0) * a.dv, mask_at, i0, rows, j0,
                  static_cast<int>(imin(Sh::C, a.Tk - j0)));
    __syncthreads();
    write_rows(sh, acc, rows, a.dv, O + (b * a.Tq + i0) * a.dv, L + b * a.Tq + i0);
    __syncthreads();  // m and ℓ are read before the next work item resets them
  }
}

}  // namespace

// ---------------------------------------------------------------- launcher (cuda/kernels.h)

cudaError_t launch_attention_tiled_forward(Elem t, const TiledAttention& a, const void* q, const void* k,
                                           const void* v, void* O, void* L, cudaStream_t s) {
  if (!valid(a)) return cudaErrorInvalidValue;
  if (a.slices <= 0 || a.Tq == 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    const int64_t work = a.slices * ceil_div(a.Tq, ForwardShared<T>::R);
    forward_kernel<T><<<rows_grid(work), kTileThreads, 0, s>>>(a, static_cast<const T*>(q), static_cast<const T*>(k),
                                                               static_cast<const T*>(v), static_cast<T*>(O),
                                                               static_cast<T*>(L));
  });
}

}  // namespace hg::cuda
