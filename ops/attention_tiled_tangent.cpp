// ops/attention_tiled_tangent.cpp — the tiled path's tangent (forward mode) on the CPU: Ȯ along
// (Q̇, K̇, V̇) in the forward's own pass over the tiles, memory linear in T. The forward and backward
// it extends, and their derivation, are ops/attention_tiled.cpp; the shared steps, ops/attention_tiles.h.
//
// tangent (forward mode). Along (Q̇, K̇, V̇), with Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale and softmax's rule
// Ṗ_ij = P_ij (ṡ_ij − ḡ_i), ḡ_i = Σ_j P_ij ṡ_ij:
//   Ȯ_i = Σ_j Ṗ_ij v_j + Σ_j P_ij v̇_j = Σ_j P_ij ṡ_ij v_j − ḡ_i O_i + Σ_j P_ij v̇_j.
// Each sum is over a whole row of P, so it is carried through the same online softmax as A: with
// P̃ = e^(S_IJ − m') as above, two more accumulators
//   B' = e^(m − m') B + (P̃ ∘ Ṡ_IJ) V_J + P̃ V̇_J        (rows, dv)
//   g' = e^(m − m') g + rowsum(P̃ ∘ Ṡ_IJ)                (rows)
// take the same rescale, so after the last tile B = Σ_j e^(s_j − m) (ṡ_j v_j + v̇_j) and
// g = Σ_j e^(s_j − m) ṡ_j, and since P_ij = e^(s_ij − m) / ℓ,
//   Ȯ = B / ℓ − (g / ℓ) O.
// Per tile pair that is the forward's two products and four more of the same sizes (Q̇ Kᵀ, Q K̇ᵀ,
// (P̃ ∘ Ṡ) V, P̃ V̇); memory stays linear in T (a second (rows, cols) tile and the two accumulators).
// scale · K_Jᵀ and V_J are packed once per tile pair for their two products each (ops/gemm.h's PackedB).
// A row with no visible key has ℓ = 0: Ȯ = 0; a NaN row gives NaN. A hidden key has P̃ = 0, so its
// ṡ never counts.
//
#include <cmath>
#include <limits>
#include <vector>

#include "engine/dispatch.h"
#include "engine/strided.h"
#include "ops/attention_tiles.h"

namespace hg::attention_detail {

namespace {

// The tangents' slices; an undefined tangent (that input does not move) has no data.
template <typename T>
Slices<const T> tangent_slices(Tensor& x, const Shape& batch) {
  return x.defined() ? slices_of<const T>(x, batch) : Slices<const T>{};
}

// One query tile's forward and tangent (the derivation at the top of this file).
template <typename T>
struct TangentTile {
  const Problem& p;
  const Slices<const T>&Q, &K, &V, &dQ, &dK, &dV;
  const Slices<const void>& mask;
  const Shape& ms;

  void run(int64_t t, int64_t i0, int64_t rows, T* O, T* L, T* dO, aligned_vector<T>& S, aligned_vector<T>& Sd,
           PackedB<T>& kt, PackedB<T>& vj) const {
    const int64_t dv = p.dv, dk = p.dk, mask_off = p.mask.defined() ? mask.offset(t) : 0;
    const T scale = static_cast<T>(p.scale);
    RowState<T> st(rows, dv);
    aligned_vector<T> B(static_cast<size_t>(rows * dv), T(0));
    std::vector<T> g(static_cast<size_t>(rows), T(0)), factors(static_cast<size_t>(rows));
    const int64_t kend = key_end(p, i0 + rows);
    const T* Qi = Q.data + Q.offset(t) + i0 * Q.ld;
    for (int64_t j0 = 0; j0 < kend; j0 += kTileK) {
      const int64_t cols = std::min(kTileK, kend - j0);
      // scale · K_Jᵀ and V_J, packed once for the pair's two products each (the same bits as gemm's own packing)
      kt.pack(true, dk, cols, scale, K.data + K.offset(t) + j0 * K.ld, K.ld);
      vj.pack(false, cols, dv, T(1), V.data + V.offset(t) + j0 * V.ld, V.ld);
      kt.gemm(false, rows, Qi, Q.ld, T(0), S.data(), cols);  // S = scale · Q_I K_Jᵀ
      mask_tile<T>(p, mask_off, ms, i0, rows, j0, cols, S.data());
      // Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale, before S becomes P̃
      T beta = T(0);
      if (dQ.data) {
        kt.gemm(false, rows, dQ.data + dQ.offset(t) + i0 * dQ.ld, dQ.ld, beta, Sd.data(), cols);
        beta = T(1);
      }
      if (dK.data) {
        gemm<T>(false, true, rows, cols, dk, scale, Qi, Q.ld, dK.data + dK.offset(t) + j0 * dK.ld, dK.ld, Sd.data(), cols,
                beta);
        beta = T(1);
      }
      absorb_tile<T>(st, S.data(), rows, cols, dv, vj, factors.data());
      for (int64_t r = 0; r < rows; ++r) {  // the same rescale; Ṡ becomes P̃ ∘ Ṡ, g grows by its row sum
        if (factors[r] != T(1)) {
          g[r] *= factors[r];
          for (int64_t c = 0; c < dv; ++c) B[r * dv + c] *= factors[r];
        }
        if (beta == T(0)) continue;
        const T* pr = S.data() + r * cols;
        T* sd = Sd.data() + r * cols;
        g[r] += sum_lanes<T>(cols, [&](int64_t c) { return sd[c] = pr[c] == T(0) ? T(0) : pr[c] * sd[c]; });
      }
      if (beta != T(0)) vj.gemm(false, rows, Sd.data(), cols, T(1), B.data(), dv);  // B += (P̃ ∘ Ṡ) V_J
      if (dV.data)  // B += P̃ V̇_J
        gemm<T>(false, false, rows, dv, cols, T(1), S.data(), cols, dV.data + dV.offset(t) + j0 * dV.ld, dV.ld, B.data(), dv, T(1));
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* o = O + r * dv;
      T* od = dO + r * dv;
      const T inv = close_row(st, r, dv, o, L[r]);
      if (inv == T(0)) {  // a NaN row's Ȯ is NaN; a row with no visible key does not move
        std::fill(od, od + dv, L[r] != L[r] ? std::numeric_limits<T>::quiet_NaN() : T(0));
        continue;
      }
      const T gbar = g[r] * inv;
      for (int64_t c = 0; c < dv; ++c) od[c] = B[r * dv + c] * inv - gbar * o[c];  // Ȯ = B/ℓ − (g/ℓ) O
    }
  }
};

template <typename T>
void tangent_slices_run(const Problem& p, Tensor dq, Tensor dk, Tensor dv, TiledTangent& f) {
  Tensor qt = p.q, kt = p.k, vt = p.v;
  const Slices<const T> Q = slices_of<const T>(qt, p.batch), K = slices_of<const T>(kt, p.batch),
                        V = slices_of<const T>(vt, p.batch), dQ = tangent_slices<T>(dq, p.batch),
                        dK = tangent_slices<T>(dk, p.batch), dV = tangent_slices<T>(dv, p.batch);
  Shape ms;
  const Slices<const void> mask = mask_slices(p, with_last2(p.batch, p.Tq, p.Tk), ms);
  const TangentTile<T> tile{p, Q, K, V, dQ, dK, dV, mask, ms};
  T* O = f.O.data_ptr<T>();
  T* L = f.L.data_ptr<T>();
  T* Od = f.Odot.data_ptr<T>();
  const int64_t Tq = p.Tq, n_dv = p.dv, tiles = (Tq + kTileQ - 1) / kTileQ, nb = shape_numel(p.batch);
  parallel_for(nb * tiles, kTileQ * std::max<int64_t>(p.Tk, 1) * (3 * p.dk + 3 * n_dv + 8), [&](int64_t begin, int64_t end) {
    aligned_vector<T> S(static_cast<size_t>(kTileQ * kTileK)), Sd(S.size());
    PackedB<T> k_panel, v_panel;  // a key tile's scale · K_Jᵀ and V_J (TangentTile::run)
    for (int64_t w = begin; w < end; ++w) {
      const int64_t t = w / tiles, i0 = (w % tiles) * kTileQ, rows = std::min(kTileQ, Tq - i0);
      const int64_t at = t * Tq + i0;
      tile.run(t, i0, rows, O + at * n_dv, L + at, Od + at * n_dv, S, Sd, k_panel, v_panel);
    }
  });
}

}  // namespace

TiledTangent tiled_forward_tangent(const Problem& p, const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  TiledTangent f;
  f.O = empty(with_last2(p.batch, p.Tq, p.dv), p.q.dtype());
  f.Odot = empty(f.O.shape(), p.q.dtype());
  Shape lshape = p.batch;
  lshape.push_back(p.Tq);
  f.L = empty(lshape, p.q.dtype());
  if (f.O.numel() == 0 && f.L.numel() == 0) return f;
  dispatch_float(p.q.dtype(), "attention", [&]<typename T>() { tangent_slices_run<T>(p, dq, dk, dv, f); });
  return f;
}

}  // namespace hg::attention_detail
