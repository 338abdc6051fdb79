// cuda/attention_tiled_backward.cu — the tiled attention's backward on the GPU: D = rowsum(dO ∘ O),
// then dK and dV by key tile and dQ by query tile, with P recomputed from L; and a live additive
// mask's gradient (the algorithm: cuda/attention_tiled.cuh).
#include "cuda/attention_tiled.cuh"

namespace hg::cuda {
namespace {

// ---------------------------------------------------------------- backward

// D (rows) = rowsum(dO ∘ O), one thread per row.
template <typename T>
__global__ void rowsum_kernel(const T* __restrict__ dO, const T* __restrict__ O, T* __restrict__ D, int64_t rows,
                              int64_t dv) {
  HG_GRID_LOOP(r, rows) D[r] = dot(dO + r * dv, O + r * dv, dv);
}

// The query tile (rows i0 .. i0 + rows − 1 of slice b): Q, dO, L and D into shared memory.
template <typename T>
__device__ void load_queries(const TiledAttention& a, BackwardShared<T>& sh, const Operands<T>& in, int64_t b,
                             int64_t i0, int rows) {
  constexpr int R = BackwardShared<T>::R;
  const int64_t row0 = b * a.Tq + i0;
  load_rows<T, R>(sh.q, in.q + row0 * a.dk, rows, a.dk);
  load_rows<T, R>(sh.dO, in.dO + row0 * a.dv, rows, a.dv);
  if (tid() < R) {
    sh.lse[tid()] = tid() < rows ? in.L[row0 + tid()] : neg_infinity<T>();
    sh.D[tid()] = tid() < rows ? in.D[row0 + tid()] : T(0);
  }
}

// P and dS of the tile pair in shared memory: P = e^(S − L), 0 on a row with L = −inf and outside
// the tiles; dS = P ∘ (dP − D), dP = dO Vᵀ. Where the key is hidden both are exactly 0, in a NaN
// row (L = D = NaN) too — the NaN rule of ops/attention.h.
template <typename T>
__device__ void gradients_tile(const TiledAttention& a, BackwardShared<T>& sh, int64_t mask_at, int64_t i0, int rows,
                               int64_t j0, int cols) {
  constexpr int R = BackwardShared<T>::R, C = BackwardShared<T>::C;
  for (int e = tid(); e < R * C; e += kTileThreads) {
    const int r = e / C, c = e % C;
    const int64_t i = i0 + r, j = j0 + c, entry = mask_at + i * a.mask_si + j * a.mask_sj;
    T p = 0, ds = 0;
    if (r < rows && c < cols && !hidden_key<T>(i, j, a.causal, a.mask_kind, a.mask, entry)) {
      const T s =
          visible_score(dot(sh.q + r * kLd, sh.k + c * kLd, a.dk), static_cast<T>(a.scale), a.mask_kind, a.mask, entry);
      const T l = sh.lse[r];
      if (l != neg_infinity<T>()) p = dexp(s - l);
      ds = p * (dot(sh.dO + r * kLd, sh.v + c * kLd, a.dv) - sh.D[r]);
    }
    sh.p[r * (C + 1) + c] = p;
    sh.ds[r * (C + 1) + c] = ds;
  }
}

// dK and dV of one key tile, summed over the query tiles in order (those wholly above the causal
// diagonal skipped): dV_J = Σ_I P_IJᵀ dO_I, dK_J = scale · Σ_I dS_IJᵀ Q_I. Either may be null.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    key_grads_kernel(TiledAttention a, Operands<T> in, T* __restrict__ dK, T* __restrict__ dV) {
  using Sh = BackwardShared<T>;
  __shared__ Sh sh;
  const int64_t k_tiles = ceil_div(a.Tk, Sh::C);
  for (int64_t w = blockIdx.x; w < a.slices * k_tiles; w += gridDim.x) {
    const int64_t b = w / k_tiles, j0 = (w % k_tiles) * Sh::C, mask_at = mask_offset(a, b);
    const int cols = static_cast<int>(imin(Sh::C, a.Tk - j0));
    load_rows<T, Sh::C>(sh.k, in.k + (b * a.Tk + j0) * a.dk, cols, a.dk);
    load_rows<T, Sh::C>(sh.v, in.v + (b * a.Tk + j0) * a.dv, cols, a.dv);
    T dk_acc[Sh::kAccK], dv_acc[Sh::kAccK];
    for (int n = 0; n < Sh::kAccK; ++n) dk_acc[n] = dv_acc[n] = T(0);
    // Under the causal rule a query tile whose rows all come before key j0 sees none of the tile.
    for (int64_t i0 = a.causal ? j0 / Sh::R * Sh::R : 0; i0 < a.Tq; i0 += Sh::R) {
      const int rows = static_cast<int>(imin(Sh::R, a.Tq - i0));
      __syncthreads();  // the keys are loaded; the last query tile is read
      load_queries(a, sh, in, b, i0, rows);
      __syncthreads();
      gradients_tile(a, sh, mask_at, i0, rows, j0, cols);
      __syncthreads();
      add_transposed<T, Sh::R, Sh::C, true>(sh.ds, sh.q, a.dk, dk_acc);  // dK_J += dS_IJᵀ Q_I (NaN rule: Q finite)
      add_transposed<T, Sh::R, Sh::C>(sh.p, sh.dO, a.dv, dv_acc);  // dV_J += P_IJᵀ dO_I
    }
    if (dK) store_rows(dK + (b * a.Tk + j0) * a.dk, dk_acc, cols, a.dk, static_cast<T>(a.scale));
    if (dV) store_rows(dV + (b * a.Tk + j0) * a.dv, dv_acc, cols, a.dv, T(1));
    __syncthreads();  // the tiles are read before the next work item's loads
  }
}

// dQ of one query tile, summed over the key tiles in order: dQ_I = scale · Σ_J dS_IJ K_J; and dS
// in full when asked (0 on the key tiles above the causal diagonal). Either may be null.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    query_grads_kernel(TiledAttention a, Operands<T> in, T* __restrict__ dQ, T* __restrict__ dS) {
  using Sh = BackwardShared<T>;
  constexpr int P = Sh::C + 1;
  __shared__ Sh sh;
  const int64_t q_tiles = ceil_div(a.Tq, Sh::R);
  for (int64_t w = blockIdx.x; w < a.slices * q_tiles; w += gridDim.x) {
    const int64_t b = w / q_tiles, i0 = (w % q_tiles) * Sh::R, mask_at = mask_offset(a, b);
    const int rows = static_cast<int>(imin(Sh::R, a.Tq - i0));
    T* ds_rows = dS ? dS + (b * a.Tq + i0) * a.Tk : nullptr;  // (rows, Tk)
    load_queries(a, sh, in, b, i0, rows);
    T acc[Sh::kAccQ];
    for (T& x : acc) x = T(0);
    int64_t j0 = 0;
    for (const int64_t key_end = a.causal ? imin(a.Tk, i0 + rows) : a.Tk; j0 < key_end; j0 += Sh::C) {
      const int cols = static_cast<int>(imin(Sh::C, a.Tk - j0));
      __syncthreads();  // the queries are loaded; the last key tile is read
      load_rows<T, Sh::C>(sh.k, in.k + (b * a.Tk + j0) * a.dk, cols, a.dk);
      load_rows<T, Sh::C>(sh.v, in.v + (b * a.Tk + j0) * a.dv, cols, a.dv);
      __syncthreads();
      gradients_tile(a, sh, mask_at, i0, rows, j0, cols);
      __syncthreads();
      if (dQ) add_product<T, Sh::R, Sh::C>(sh.ds, sh.k, a.dk, acc, nullptr);  // dQ_I += dS_IJ K_J
      if (ds_rows)
        for (int e = tid(); e < rows * cols; e += kTileThreads)
          ds_rows[(e / cols) * a.Tk + j0 + e % cols] = sh.ds[(e / cols) * P + e % cols];
    }
    if (ds_rows) {  // the key tiles not visited (above the causal diagonal): 0
      const int64_t from = imin(j0, a.Tk), n = a.Tk - from;
      for (int64_t e = tid(); e < rows * n; e += kTileThreads) ds_rows[(e / n) * a.Tk + from + e % n] = T(0);
    }
    if (dQ) store_rows(dQ + (b * a.Tq + i0) * a.dk, acc, rows, a.dk, static_cast<T>(a.scale));
    __syncthreads();  // the tiles are read before the next work item's loads
  }
}

// ---------------------------------------------------------------- the additive mask's gradient

// dM = dS summed to the mask's own shape — over the slices that read a mask entry, and over the
// queries (keys) where the mask has no query (key) dimension — without dS in full. One block per
// work item: a batch entry e of the mask and, where the mask has them, one query tile and one key
// tile. The block walks the slices that read e (in order, entry and reps: cuda/attention.cpp) and
// the query and key tiles of the dimensions the mask lacks (in order, the pairs wholly above the
// causal diagonal skipped), recomputes each tile pair's dS as the backward does (gradients_tile),
// and adds it into the entries of dM it owns, each summed in that fixed order: the same bits run
// after run. The mask in `a` is dense in its own shape, so dM's entry for (slice b, i, j) is at
// the mask's offset of it.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    mask_grad_kernel(TiledAttention a, Operands<T> in, T* __restrict__ dM, Geometry<1> entry, Geometry<1> reps) {
  using Sh = BackwardShared<T>;
  constexpr int R = Sh::R, C = Sh::C, P = C + 1, N = (R * C + kTileThreads - 1) / kTileThreads;
  __shared__ Sh sh;
  const bool own_rows = a.mask_si != 0, own_cols = a.mask_sj != 0;  // the mask has a query / key dimension
  const int64_t q_tiles = ceil_div(a.Tq, R), k_tiles = ceil_div(a.Tk, C);
  const int64_t qt = own_rows ? q_tiles : 1, kt = own_cols ? k_tiles : 1;
  const int64_t Tq_m = own_rows ? a.Tq : 1, Tk_m = own_cols ? a.Tk : 1;  // the mask's last two sizes
  const int out_rows = own_rows ? R : 1, out_cols = own_cols ? C : 1;     // the entries a work item owns
  for (int64_t w = blockIdx.x; w < entry.numel * qt * kt; w += gridDim.x) {
    const int64_t m = w / (qt * kt), I = (w / kt) % qt, J = w % kt;
    int64_t first[1];
    offsets_of(entry, m, first);
    T acc[N];
    for (T& x : acc) x = T(0);
    for (int64_t rep = 0; rep < reps.numel; ++rep) {
      int64_t more[1];
      offsets_of(reps, rep, more);
      const int64_t b = first[0] + more[0], mask_at = mask_offset(a, b);
      for (int64_t ti = own_rows ? I : 0; ti < (own_rows ? I + 1 : q_tiles); ++ti) {
        const int64_t i0 = ti * R;
        const int rows = static_cast<int>(imin(R, a.Tq - i0));
        __syncthreads();  // the last tile pair's queries and dS are read
        load_queries(a, sh, in, b, i0, rows);
        for (int64_t tj = own_cols ? J : 0; tj < (own_cols ? J + 1 : k_tiles); ++tj) {
          const int64_t j0 = tj * C;
          if (a.causal && j0 >= i0 + rows) break;  // this key tile and the later ones: hidden from every row
          const int cols = static_cast<int>(imin(C, a.Tk - j0));
          __syncthreads();  // the last key tile and dS are read
          load_rows<T, C>(sh.k, in.k + (b * a.Tk + j0) * a.dk, cols, a.dk);
          load_rows<T, C>(sh.v, in.v + (b * a.Tk + j0) * a.dv, cols, a.dv);
          __syncthreads();
          gradients_tile(a, sh, mask_at, i0, rows, j0, cols);
          __syncthreads();
          HG_UNROLL for (int n = 0; n < N; ++n) {  // this thread's entries (ro, co) of the work item
            const int e = tid() + n * kTileThreads;
            if (e >= out_rows * out_cols) continue;
            const int ro = e / out_cols, co = e % out_cols;
            T sum = 0;
            for (int r = own_rows ? ro : 0; r < (own_rows ? ro + 1 : R); ++r)
              for (int c = own_cols ? co : 0; c < (own_cols ? co + 1 : C); ++c) sum += sh.ds[r * P + c];
            acc[n] += sum;
          }
        }
      }
    }
    T* out = dM + m * Tq_m * Tk_m;
    HG_UNROLL for (int n = 0; n < N; ++n) {
      const int e = tid() + n * kTileThreads;
      if (e >= out_rows * out_cols) continue;
      const int64_t i = (own_rows ? I * R : 0) + e / out_cols, j = (own_cols ? J * C : 0) + e % out_cols;
      if (i < Tq_m && j < Tk_m) out[i * Tk_m + j] = acc[n];
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers (cuda/kernels.h)

cudaError_t launch_attention_tiled_backward(Elem t, const TiledAttention& a, const void* q, const void* k,
                                            const void* v, const void* O, const void* L, const void* dO, void* D,
                                            void* dQ, void* dK, void* dV, void* dS, cudaStream_t s) {
  if (!valid(a)) return cudaErrorInvalidValue;
  if (a.slices <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    using Sh = BackwardShared<T>;
    const Operands<T> in{static_cast<const T*>(q), static_cast<const T*>(k),  static_cast<const T*>(v),
                         static_cast<const T*>(dO), static_cast<const T*>(L), static_cast<const T*>(D)};
    const int64_t rows = a.slices * a.Tq;
    if (rows > 0)
      rowsum_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(in.dO, static_cast<const T*>(O), static_cast<T*>(D), rows,
                                                           a.dv);
    if ((dK || dV) && a.Tk > 0)
      key_grads_kernel<T><<<rows_grid(a.slices * ceil_div(a.Tk, Sh::C)), kTileThreads, 0, s>>>(
          a, in, static_cast<T*>(dK), static_cast<T*>(dV));
    if ((dQ || dS) && a.Tq > 0)
      query_grads_kernel<T><<<rows_grid(a.slices * ceil_div(a.Tq, Sh::R)), kTileThreads, 0, s>>>(
          a, in, static_cast<T*>(dQ), static_cast<T*>(dS));
  });
}

cudaError_t launch_attention_tiled_mask_grad(Elem t, const TiledAttention& a, const void* q, const void* k,
                                             const void* v, const void* O, const void* L, const void* dO, void* D,
                                             void* dM, const Geometry<1>& entry, const Geometry<1>& reps, bool rows,
                                             bool cols, cudaStream_t s) {
  if (!valid(a) || a.mask_kind != kMaskAdditive || rows != (a.mask_si != 0) || cols != (a.mask_sj != 0) ||
      entry.numel * reps.numel != a.slices)
    return cudaErrorInvalidValue;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    using Sh = BackwardShared<T>;
    const Operands<T> in{static_cast<const T*>(q), static_cast<const T*>(k),  static_cast<const T*>(v),
                         static_cast<const T*>(dO), static_cast<const T*>(L), static_cast<const T*>(D)};
    const int64_t n_rows = a.slices * a.Tq;
    if (n_rows > 0)
      rowsum_kernel<T><<<grid_for(n_rows), kThreads, 0, s>>>(in.dO, static_cast<const T*>(O), static_cast<T*>(D),
                                                             n_rows, a.dv);
    const int64_t work = entry.numel * (rows ? ceil_div(a.Tq, Sh::R) : 1) * (cols ? ceil_div(a.Tk, Sh::C) : 1);
    if (work > 0)
      mask_grad_kernel<T><<<rows_grid(work), kTileThreads, 0, s>>>(a, in, static_cast<T*>(dM), entry, reps);
  });
}

}  // namespace hg::cuda
