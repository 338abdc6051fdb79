// cuda/attention_tiled_tangent.cu — the tiled attention's forward with its tangent (forward mode)
// on the GPU: O, L and Ȯ in one pass over the key tiles, no (Tq, Tk) buffer.
//
// The CPU's tiled tangent (ops/attention_tiled.cpp) derives it: along (Q̇, K̇, V̇), with
// Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale and P̃ = e^(S_IJ − m') the tile's weights under the running max, two
// accumulators beside A,
//   B' = e^(m − m') B + (P̃ ∘ Ṡ_IJ) V_J + P̃ V̇_J        (rows, dv), in registers as A is
//   g' = e^(m − m') g + rowsum(P̃ ∘ Ṡ_IJ)                (rows), in shared memory as ℓ is
// take the same rescale, and at the end Ȯ = B / ℓ − (g / ℓ) O. A hidden key's Ṡ is 0 (its score is
// −inf whatever Q and K hold); a row with no visible key gets O = Ȯ = 0, a NaN row NaN.
//
// One block per (slice, query tile), as the forward (cuda/attention_tiled_forward.cu); its tiles
// are the backward's size (16 × 16 float32, 8 × 8 float64) since the block holds twice the
// forward's rows in shared memory: Q and Q̇, a key tile and its tangent (then V_J and V̇_J).
#include "cuda/attention_tiled.cuh"

namespace hg::cuda {
namespace {

template <typename T>
struct TangentShared {
  static constexpr int R = kBackwardTile<T>, C = kBackwardTile<T>;
  static constexpr int kAcc = static_cast<int>(R * kAttentionMaxHead / kTileThreads);  // A's and B's entries per thread
  T q[R * kLd], dq[R * kLd];     // (R, dk) the block's queries and their tangents
  T kv[C * kLd], dkv[C * kLd];   // (C, dk) a tile's keys and tangents, then (C, dv) its values and tangents
  T p[R * (C + 1)], ds[R * (C + 1)];  // (R, C) the scores, then P̃; Ṡ, then P̃ ∘ Ṡ
  T m[R], l[R], g[R], rescale[R];     // per row: running max, sum, rowsum(P̃ ∘ Ṡ), this tile's e^(m − m')
};
static_assert(sizeof(TangentShared<float>) <= 48 * 1024 && sizeof(TangentShared<double>) <= 48 * 1024,
              "static shared memory is at most 48 KiB per block");

// The tangents of the operands, null where that input does not move.
template <typename T>
struct Moving { const T *dq, *dk, *dv; };

template <typename T>
__device__ void absorb_tangent_tile(const TiledAttention& a, TangentShared<T>& sh, T (&acc)[TangentShared<T>::kAcc],
                                    T (&B)[TangentShared<T>::kAcc], const T* k, const T* v, const Moving<T>& mv,
                                    int64_t mask_at, int64_t i0, int rows, int64_t j0, int cols) {
  using Sh = TangentShared<T>;
  constexpr int R = Sh::R, C = Sh::C, P = C + 1;
  const T scale = static_cast<T>(a.scale);
  __syncthreads();  // the queries are loaded; the last tile's values and weights are read
  load_rows<T, C>(sh.kv, k, cols, a.dk);
  if (mv.dk) load_rows<T, C>(sh.dkv, mv.dk + j0 * a.dk, cols, a.dk);
  __syncthreads();
  for (int e = tid(); e < R * C; e += kTileThreads) {  // S_IJ and Ṡ_IJ (0 where hidden), −inf / 0 outside the tile
    const int r = e / C, c = e % C;
    T s = neg_infinity<T>(), sd = T(0);
    if (r < rows && c < cols) {
      s = score(a, dot(sh.q + r * kLd, sh.kv + c * kLd, a.dk), mask_at, i0 + r, j0 + c);
      if (s != neg_infinity<T>()) {
        if (mv.dq) sd += dot(sh.dq + r * kLd, sh.kv + c * kLd, a.dk);
        if (mv.dk) sd += dot(sh.q + r * kLd, sh.dkv + c * kLd, a.dk);
        sd *= scale;
      }
    }
    sh.p[r * P + c] = s;
    sh.ds[r * P + c] = sd;
  }
  __syncthreads();
  update_row_max<T, R, C>(sh.p, sh.m, sh.rescale);  // m' = max(m, rowmax S_IJ), and e^(m − m')
  load_rows<T, C>(sh.kv, v, cols, a.dv);  // the keys' last reads were before the barrier above
  if (mv.dv) load_rows<T, C>(sh.dkv, mv.dv + j0 * a.dv, cols, a.dv);
  __syncthreads();
  for (int e = tid(); e < R * C; e += kTileThreads) {  // P̃ = e^(S_IJ − m'), Ṡ ← P̃ ∘ Ṡ
    const int at = (e / C) * P + e % C;
    T& s = sh.p[at];
    s = weight(s, sh.m[e / C]);
    sh.ds[at] = s == T(0) ? T(0) : s * sh.ds[at];
  }
  __syncthreads();
  if (tid() < R) {  // ℓ' = e^(m − m') ℓ + rowsum P̃, g' = e^(m − m') g + rowsum(P̃ ∘ Ṡ)
    T sum = 0, gsum = 0;
    for (int c = 0; c < C; ++c) {
      sum += sh.p[tid() * P + c];
      gsum += sh.ds[tid() * P + c];
    }
    sh.l[tid()] = sh.l[tid()] * sh.rescale[tid()] + sum;
    sh.g[tid()] = sh.g[tid()] * sh.rescale[tid()] + gsum;
  }
  add_product<T, R, C>(sh.p, sh.kv, a.dv, acc, sh.rescale);   // A' = e^(m − m') A + P̃ V_J
  add_product<T, R, C>(sh.ds, sh.kv, a.dv, B, sh.rescale);    // B' = e^(m − m') B + (P̃ ∘ Ṡ) V_J ...
  if (mv.dv) add_product<T, R, C>(sh.p, sh.dkv, a.dv, B, static_cast<const T*>(nullptr));  // ... + P̃ V̇_J
}

// O = A / ℓ, Ȯ = B / ℓ − (g / ℓ) O, L = m + log ℓ; 0, 0 and −inf on a row with no visible key, NaN
// on a row whose ℓ is NaN.
template <typename T>
__device__ void write_tangent_rows(const TangentShared<T>& sh, const T (&acc)[TangentShared<T>::kAcc],
                                   const T (&B)[TangentShared<T>::kAcc], int rows, int64_t dv, T* O, T* Od, T* L) {
  HG_UNROLL for (int n = 0; n < TangentShared<T>::kAcc; ++n) {
    const int64_t e = tid() + static_cast<int64_t>(n) * kTileThreads;
    if (e >= rows * dv) continue;
    const T l = sh.l[e / dv];
    if (l != l) {
      O[e] = Od[e] = l;
    } else if (sh.m[e / dv] == neg_infinity<T>()) {
      O[e] = Od[e] = T(0);
    } else {
      const T o = acc[n] / l;
      O[e] = o;
      Od[e] = B[n] / l - (sh.g[e / dv] / l) * o;
    }
  }
  write_lse(sh.l, sh.m, rows, L);
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    tangent_kernel(TiledAttention a, const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   Moving<T> moving, T* __restrict__ O, T* __restrict__ Od, T* __restrict__ L) {
  using Sh = TangentShared<T>;
  __shared__ Sh sh;
  const int64_t q_tiles = ceil_div(a.Tq, Sh::R);
  for (int64_t w = blockIdx.x; w < a.slices * q_tiles; w += gridDim.x) {
    const int64_t b = w / q_tiles, i0 = (w % q_tiles) * Sh::R, mask_at = mask_offset(a, b);
    const int rows = static_cast<int>(imin(Sh::R, a.Tq - i0));
    load_rows<T, Sh::R>(sh.q, q + (b * a.Tq + i0) * a.dk, rows, a.dk);
    if (moving.dq) load_rows<T, Sh::R>(sh.dq, moving.dq + (b * a.Tq + i0) * a.dk, rows, a.dk);
    if (tid() < Sh::R) {
      sh.m[tid()] = neg_infinity<T>();
      sh.l[tid()] = T(0);
      sh.g[tid()] = T(0);
    }
    T acc[Sh::kAcc], B[Sh::kAcc];
    for (int n = 0; n < Sh::kAcc; ++n) acc[n] = B[n] = T(0);
    // The slice's tangents: null where that input does not move.
    const Moving<T> mv{moving.dq ? moving.dq + b * a.Tq * a.dk : nullptr,
                       moving.dk ? moving.dk + b * a.Tk * a.dk : nullptr,
                       moving.dv ? moving.dv + b * a.Tk * a.dv : nullptr};
    const int64_t key_end = a.causal ? imin(a.Tk, i0 + rows) : a.Tk;  // tiles past the diagonal: not visited
    for (int64_t j0 = 0; j0 < key_end; j0 += Sh::C)
      absorb_tangent_tile(a, sh, acc, B, k + (b * a.Tk + j0) * a.dk, v + (b * a.Tk + j0) * a.dv, mv, mask_at, i0,
                          rows, j0, static_cast<int>(imin(Sh::C, a.Tk - j0)));
    __syncthreads();
    const int64_t at = b * a.Tq + i0;
    write_tangent_rows(sh, acc, B, rows, a.dv, O + at * a.dv, Od + at * a.dv, L + at);
    __syncthreads();  // m, ℓ and g are read before the next work item resets them
  }
}

}  // namespace

// ---------------------------------------------------------------- launcher (cuda/kernels.h)

cudaError_t launch_attention_tiled_tangent(Elem t, const TiledAttention& a, const void* q, const void* k,
                                           const void* v, const void* dq, const void* dk, const void* dv, void* O,
                                           void* Od, void* L, cudaStream_t s) {
  if (!valid(a)) return cudaErrorInvalidValue;
  if (a.slices <= 0 || a.Tq == 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    const int64_t work = a.slices * ceil_div(a.Tq, TangentShared<T>::R);
    const Moving<T> moving{static_cast<const T*>(dq), static_cast<const T*>(dk), static_cast<const T*>(dv)};
    tangent_kernel<T><<<rows_grid(work), kTileThreads, 0, s>>>(a, static_cast<const T*>(q), static_cast<const T*>(k),
                                                               static_cast<const T*>(v), moving, static_cast<T*>(O),
                                                               static_cast<T*>(Od), static_cast<T*>(L));
  });
}

}  // namespace hg::cuda
