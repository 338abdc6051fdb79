// cuda/attention_tiled.cuh — FlashAttention-2's tiled attention on the GPU: no (Tq, Tk) buffer, the
// tiles in shared memory, key tiles wholly above the causal diagonal never visited. The reference
// is the CPU's tiled path (ops/attention_tiled.cpp), whose notation this follows: S = Q Kᵀ · scale
// (+ mask), P = softmax(S) along keys, O = P V; query tile I (rows i), key tile J (columns j).
//
// forward, one block per (slice, query tile). An online softmax over the key tiles: with the
// running row max m, running sum ℓ and accumulator A (the unnormalised O rows), a tile S_IJ gives
//   m' = max(m, rowmax S_IJ),   P̃ = e^(S_IJ − m'),   ℓ' = e^(m − m') ℓ + rowsum P̃,
//   A' = e^(m − m') A + P̃ V_J
// and after the last tile O = A / ℓ, L = m + log ℓ (the row log-sum-exp: P_ij = e^(S_ij − L_i)).
// A row with no visible key keeps m = −inf: O = 0, L = −inf. A NaN among a row's visible scores
// reaches ℓ (weight() keeps it even while m = −inf), and O and L are NaN.
//
// backward, in FlashAttention-2's two stages. First D = rowsum(dO ∘ O) (= rowsum(P ∘ dP), since
// O_i = Σ_j P_ij v_j), one thread per row. Then, with each tile's P = e^(S − L) recomputed from the
// saved L (0 where a key is hidden or L = −inf):
//   dP_IJ = dO_I V_Jᵀ,  dS_IJ = P_IJ ∘ (dP_IJ − D_I),
//   dV_J = Σ_I P_IJᵀ dO_I,  dK_J = scale · Σ_I dS_IJᵀ Q_I   (key_grads_kernel, one block per key tile)
//   dQ_I = scale · Σ_J dS_IJ K_J                            (query_grads_kernel, one block per query tile)
// Each block owns the rows it writes and sums over the other tiles in a fixed order: no atomics,
// the same bits run after run. S and P are recomputed in both kernels (cheaper than storing them).
// A NaN row (L = D = NaN) follows the NaN rule of ops/attention.h: P = dS = 0 at its hidden keys
// (gradients_tile), and dK's product reads a NaN or ±inf of Q as 0.
// An additive mask that requires grad gets dM = dS summed to its own shape from mask_grad_kernel,
// which recomputes dS once more instead of writing it in full.
//
// Tiles: float32 32 queries × 32 keys forward, 16 × 16 backward; float64 16 × 16 and 8 × 8 — what
// the 48 KiB of static shared memory holds at the largest head dim, kAttentionMaxHead (128).
// Every kernel runs kTileThreads threads; thread t owns entries t, t + kTileThreads, ... (row-major)
// of the (rows, d) tile it accumulates, in registers.
//
// The forward is cuda/attention_tiled_forward.cu, the backward cuda/attention_tiled_backward.cu; this
// header holds what both read: the tiles, their shared memory, and the per-thread tile products.
#pragma once
#include "cuda/attention_mask.cuh"
#include "cuda/device_common.cuh"
#include "cuda/kernels.h"

namespace hg::cuda {
namespace {

constexpr int kTileThreads = 128;
// A tile row in shared memory: one element more than a head, so a column spreads over the banks.
constexpr int kLd = static_cast<int>(kAttentionMaxHead) + 1;
// Rows per tile, of queries and of keys alike: what 48 KiB of static shared memory holds at head
// dim kAttentionMaxHead (the static_assert below).
template <typename T>
constexpr int kForwardTile = sizeof(T) == sizeof(float) ? 32 : 16;
template <typename T>
constexpr int kBackwardTile = sizeof(T) == sizeof(float) ? 16 : 8;

template <typename T>
struct ForwardShared {
  static constexpr int R = kForwardTile<T>, C = kForwardTile<T>;
  static constexpr int kAcc = static_cast<int>(R * kAttentionMaxHead / kTileThreads);  // A's entries per thread
  T q[R * kLd];           // (R, dk) the block's queries
  T kv[C * kLd];          // (C, dk) a tile's keys, then (C, dv) its values
  T p[R * (C + 1)];       // (R, C) the tile's scores, then P̃
  T m[R], l[R], rescale[R];  // per row: running max, running sum, e^(m − m') of this tile
};

template <typename T>
struct BackwardShared {
  static constexpr int R = kBackwardTile<T>, C = kBackwardTile<T>;
  // dQ's, and dK's and dV's, entries per thread
  static constexpr int kAccQ = static_cast<int>(R * kAttentionMaxHead / kTileThreads),
                       kAccK = static_cast<int>(C * kAttentionMaxHead / kTileThreads);
  T q[R * kLd], dO[R * kLd];   // (R, dk), (R, dv) a query tile and its output gradients
  T k[C * kLd], v[C * kLd];    // (C, dk), (C, dv) a key tile and its values
  T lse[R], D[R];              // (R) the query rows' L and D
  T p[R * (C + 1)], ds[R * (C + 1)];  // (R, C) the tile pair's P and dS
};

static_assert(sizeof(ForwardShared<float>) <= 48 * 1024 && sizeof(ForwardShared<double>) <= 48 * 1024 &&
                  sizeof(BackwardShared<float>) <= 48 * 1024 && sizeof(BackwardShared<double>) <= 48 * 1024,
              "static shared memory is at most 48 KiB per block");

// The backward's inputs, (slices, ...) contiguous as in cuda/kernels.h.
template <typename T>
struct Operands { const T *q, *k, *v, *dO, *L, *D; };

__host__ __device__ inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__device__ inline int tid() { return static_cast<int>(threadIdx.x); }

// tile ← rows 0 .. n−1 of src (d elements each, contiguous), kLd apart; rows n .. R−1 zero, so
// that a partial tile's missing rows add nothing (never stale values) to the sums over the tile.
template <typename T, int R>
__device__ void load_rows(T* tile, const T* src, int n, int64_t d) {
  for (int64_t e = tid(); e < R * d; e += kTileThreads) {
    const int64_t r = e / d, c = e % d;
    tile[r * kLd + c] = r < n ? src[r * d + c] : T(0);
  }
}

template <typename T>
__device__ T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

// Slice b's offset in the mask (0 without one).
__device__ inline int64_t mask_offset(const TiledAttention& a, int64_t b) {
  int64_t off[1] = {0};
  if (a.mask_kind != kMaskNone) offsets_of(a.mask_batch, b, off);
  return off[0];
}

// The score of query i and key j from their dot product qk, by the mask rule.
template <typename T>
__device__ T score(const TiledAttention& a, T qk, int64_t mask_at, int64_t i, int64_t j) {
  return masked_score(qk, static_cast<T>(a.scale), i, j, a.causal, a.mask_kind, a.mask,
                      mask_at + i * a.mask_si + j * a.mask_sj);
}

// acc (R, d) ← acc · rescale (per row; none when null) + X Y, X (R, C) in shared memory (rows C + 1
// apart), Y (C, d) (rows kLd apart); this thread's entries of acc, as the header says.
template <typename T, int R, int C, int N>
__device__ void add_product(const T* X, const T* Y, int64_t d, T (&acc)[N], const T* rescale) {
  HG_UNROLL for (int n = 0; n < N; ++n) {
    const int64_t e = tid() + static_cast<int64_t>(n) * kTileThreads;
    if (e >= R * d) continue;
    const int64_t r = e / d, col = e % d;
    T sum = 0;
    for (int c = 0; c < C; ++c) sum += X[r * (C + 1) + c] * Y[c * kLd + col];
    acc[n] = (rescale ? acc[n] * rescale[r] : acc[n]) + sum;
  }
}

// acc (C, d) += Xᵀ Y, X (R, C) in shared memory (rows C + 1 apart), Y (R, d) (rows kLd apart);
// with finite_y, Y's NaN and ±inf entries read as 0 (dK's product under the NaN rule).
template <typename T, int R, int C, bool finite_y = false, int N>
__device__ void add_transposed(const T* X, const T* Y, int64_t d, T (&acc)[N]) {
  HG_UNROLL for (int n = 0; n < N; ++n) {
    const int64_t e = tid() + static_cast<int64_t>(n) * kTileThreads;
    if (e >= C * d) continue;
    const int64_t c = e / d, col = e % d;
    T sum = 0;
    for (int r = 0; r < R; ++r) {
      const T y = Y[r * kLd + col];
      sum += X[r * (C + 1) + c] * (finite_y ? finite_or_zero(y) : y);
    }
    acc[n] += sum;
  }
}

// dst (rows, d) contiguous ← factor · this thread's entries of acc.
template <typename T, int N>
__device__ void store_rows(T* dst, const T (&acc)[N], int rows, int64_t d, T factor) {
  HG_UNROLL for (int n = 0; n < N; ++n) {
    const int64_t e = tid() + static_cast<int64_t>(n) * kTileThreads;
    if (e >= rows * d) continue;
    dst[e] = acc[n] * factor;
  }
}

// P̃'s entry e^(s − m) under the running max m. While m = −inf (nothing visible yet) a NaN score
// stays NaN — it then carries into ℓ and A, as a NaN among visible scores must — and any other is 0.
template <typename T>
__device__ T weight(T s, T m) {
  if (m == neg_infinity<T>()) return s != s ? s : T(0);
  return dexp(s - m);
}

// m' = max(m, rowmax S_IJ) for each of the tile's R rows of scores S (rows C + 1 apart), ignoring
// NaN (MaxOp), and the rescale e^(m − m') beside it (1 where m does not change: e^(−inf − (−inf))
// would be NaN). Threads 0 .. R − 1 each take a row.
template <typename T, int R, int C>
__device__ void update_row_max(const T* S, T* m, T* rescale) {
  if (tid() >= R) return;
  const int r = tid();
  T m_tile = neg_infinity<T>();
  for (int c = 0; c < C; ++c) m_tile = MaxOp<T>{}(m_tile, S[r * (C + 1) + c]);
  const T m_old = m[r], m_new = MaxOp<T>{}(m_old, m_tile);
  rescale[r] = m_new == m_old ? T(1) : dexp(m_old - m_new);
  m[r] = m_new;
}

// L (rows) = m + log ℓ from the rows' running max and sum: −inf on a row with no visible key, NaN
// on a row whose ℓ is NaN.
template <typename T>
__device__ void write_lse(const T* l, const T* m, int rows, T* L) {
  if (tid() < rows) L[tid()] = l[tid()] != l[tid()] ? l[tid()] : m[tid()] == neg_infinity<T>() ? m[tid()] : m[tid()] + dlog(l[tid()]);
}

// Whether the launch parameters describe a problem the kernels take.
inline bool valid(const TiledAttention& a) {
  const auto head = [](int64_t d) { return d >= 0 && d <= kAttentionMaxHead; };
  return a.Tq >= 0 && a.Tk >= 0 && head(a.dk) && head(a.dv) && a.mask_kind >= kMaskNone && a.mask_kind <= kMaskAdditive;
}

}  // namespace
}  // namespace hg::cuda
