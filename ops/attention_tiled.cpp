// ops/attention_tiled.cpp — the tiled path's forward and backward on the CPU (FlashAttention-2's
// algorithm): memory linear in T, and key tiles wholly above the causal diagonal never visited. Its
// tangent is ops/attention_tiled_tangent.cpp; the tile steps both share, ops/attention_tiles.h.
//
// Notation as in ops/attention.h: S = Q Kᵀ · scale (+ mask), P = softmax(S) along keys, O = P V.
// One batch slice (a sequence and head), query tile i (rows I), key tiles j (columns J).
//
// forward. For each query tile, an online softmax over the key tiles: with the running row max
// m, running sum ℓ and accumulator A (the unnormalised O rows), a new tile S_IJ gives
//   m' = max(m, rowmax S_IJ),   P̃ = e^(S_IJ − m'),   ℓ' = e^(m − m') ℓ + rowsum P̃,
//   A' = e^(m − m') A + P̃ V_J
// — every earlier term was e^(s − m); multiplying by e^(m − m') makes it e^(s − m'), so after the
// last tile ℓ = Σ_j e^(s_j − m) and A = Σ_j e^(s_j − m) v_j over every visible key, and
//   O = A / ℓ,   L = m + log ℓ   (the row log-sum-exp: P_ij = e^(S_ij − L_i)).
// Only O and L are kept (T · (dv + 1) numbers per slice instead of T²). A row with no visible key
// has m = −inf throughout: O = 0, L = −inf. A NaN among a row's visible scores makes its O and L
// NaN; a hidden key's score is −inf whatever Q and K hold (the mask rule, ops/attention_cpu.h).
//
// backward. The explicit path's formulas, tile by tile, with P recomputed from L:
//   P_IJ = e^(S_IJ − L_I),  dV_J += P_IJᵀ dO_I,  dP_IJ = dO_I V_Jᵀ,  dS_IJ = P_IJ ∘ (dP_IJ − D_I),
//   dQ_I += scale · dS_IJ K_J,  dK_J += scale · dS_IJᵀ Q_I.
// D_i needs a whole row of P and dP; it is instead read from O:
//   D_i = Σ_j P_ij dP_ij = Σ_j P_ij (dO_i · v_j) = dO_i · (Σ_j P_ij v_j) = dO_i · O_i,
// i.e. D = rowsum(dO ∘ O), one pass over (Tq, dv) before the tiles. A row with L = −inf has P = 0
// (not e^(−inf + inf)), so its dS, its dQ row and its share of dK and dV are 0. A NaN row has
// L = D = NaN: its P and dS are NaN by the arithmetic, then 0 again at its hidden keys, and dK
// reads a NaN or ±inf of Q as 0 — the NaN rule of ops/attention.h.
//
// Threads: the forward (and its tangent) splits (slice, query tile) pairs, each writing its own
// rows of O, L (and Ȯ); the backward splits slices, each thread accumulating its slice's dQ, dK, dV in a fixed tile order.
// Nothing is summed across threads, so the bits are the same run after run and for any number of
// threads.
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/row_rules.h"
#include "engine/dispatch.h"
#include "engine/strided.h"
#include "ops/attention_cpu.h"
#include "ops/attention_paths.h"
#include "ops/attention_tiles.h"

namespace hg::attention_detail {

namespace {

template <typename T>
void forward_slices(const Problem& p, TiledForward& f) {
  Tensor qt = p.q, kt = p.k, vt = p.v;
  const Slices<const T> Q = slices_of<const T>(qt, p.batch), K = slices_of<const T>(kt, p.batch),
                        V = slices_of<const T>(vt, p.batch);
  Shape ms;
  const Slices<const void> mask = mask_slices(p, with_last2(p.batch, p.Tq, p.Tk), ms);
  T* O = f.O.data_ptr<T>();
  T* L = f.L.data_ptr<T>();
  const int64_t Tq = p.Tq, dv = p.dv, tiles = (Tq + kTileQ - 1) / kTileQ, nb = shape_numel(p.batch);
  parallel_for(nb * tiles, kTileQ * std::max<int64_t>(p.Tk, 1) * (p.dk + dv + 8), [&](int64_t begin, int64_t end) {
    aligned_vector<T> S(static_cast<size_t>(kTileQ * kTileK));  // rows 64-byte aligned (engine/aligned.h)
    PackedB<T> vj;
    for (int64_t w = begin; w < end; ++w) {
      const int64_t t = w / tiles, i0 = (w % tiles) * kTileQ, rows = std::min(kTileQ, Tq - i0);
      const int64_t mask_off = p.mask.defined() ? mask.offset(t) : 0;
      RowState<T> st(rows, dv);
      const int64_t kend = key_end(p, i0 + rows);
      for (int64_t j0 = 0; j0 < kend; j0 += kTileK) {
        const int64_t cols = std::min(kTileK, kend - j0);
        scores_tile<T>(p, Q, K, t, mask_off, ms, i0, rows, j0, cols, S.data());
        vj.pack(false, cols, dv, T(1), V.data + V.offset(t) + j0 * V.ld, V.ld);
        absorb_tile<T>(st, S.data(), rows, cols, dv, vj);
      }
      for (int64_t r = 0; r < rows; ++r) close_row(st, r, dv, O + (t * Tq + i0 + r) * dv, L[t * Tq + i0 + r]);
    }
  });
}

}  // namespace

TiledForward tiled_forward(const Problem& p) {
  TiledForward f;
  f.O = empty(with_last2(p.batch, p.Tq, p.dv), p.q.dtype());
  Shape lshape = p.batch;
  lshape.push_back(p.Tq);
  f.L = empty(lshape, p.q.dtype());
  if (f.O.numel() == 0 && f.L.numel() == 0) return f;
  dispatch_float(p.q.dtype(), "attention", [&]<typename T>() { forward_slices<T>(p, f); });
  return f;
}

namespace {

// The buffers of one slice's backward: row-major blocks of the expanded-batch gradients.
template <typename T>
struct SliceGrads {
  T *dQ = nullptr, *dK = nullptr, *dV = nullptr, *dS = nullptr;  // null when not asked for
};

// A key tile's three operands, packed once for every query tile that reads it (ops/gemm.h):
// scale · K_Jᵀ (the scores), V_Jᵀ (dP = dO Vᵀ), scale · K_J (dQ += dS K).
template <typename T>
struct KeyPanels {
  PackedB<T> kt, vt, k;
  int64_t cols = -1;  // the keys packed (the causal rule cuts the last tile of a query tile)
  void pack(const Problem& p, const T* Kj, int64_t ldk, const T* Vj, int64_t ldv, int64_t n) {
    const T scale = static_cast<T>(p.scale);
    kt.pack(true, p.dk, n, scale, Kj, ldk);
    vt.pack(true, p.dv, n, T(1), Vj, ldv);
    k.pack(false, n, p.dk, scale, Kj, ldk);
    cols = n;
  }
};

// One (query tile, key tile) pair of the backward; S (the scores tile, masked) becomes P, dP is a
// scratch tile. Qk: the slice's queries as dK reads them (ld_qk apart); mask_off, ms: the mask rule's
// (NaN rows).
template <typename T>
void backward_tile(const Problem& p, const KeyPanels<T>& kp, const T* Qk, int64_t ld_qk, const T* dO, int64_t ld_do,
                   const T* L, const T* D, int64_t mask_off, const Shape& ms, int64_t i0, int64_t rows, int64_t j0,
                   int64_t cols, T* S, T* dP, const SliceGrads<T>& g) {
  for (int64_t r = 0; r < rows; ++r) {  // P = e^(S − L), 0 on a row with no visible key (cpu/row_rules.h)
    T* row = S + r * cols;
    const T l = L[i0 + r];
    cpu::probs_from_lse(row, row, cols, l);
    // A NaN row (L = NaN): e^(−inf − NaN) at a hidden key must be 0 (ops/attention.h).
    if (l != l) zero_hidden(mask_rule<T>(p, mask_off, ms, i0 + r), row, j0, cols);
  }
  const T* dOi = dO + i0 * ld_do;
  if (g.dV) gemm<T>(true, false, cols, p.dv, rows, T(1), S, cols, dOi, ld_do, g.dV + j0 * p.dv, p.dv, T(1));
  if (!g.dQ && !g.dK && !g.dS) return;
  kp.vt.gemm(false, rows, dOi, ld_do, T(0), dP, cols);  // dP = dO_I V_Jᵀ
  for (int64_t r = 0; r < rows; ++r) {  // dS = P ∘ (dP − D), in dP (cpu/row_rules.h)
    T* d = dP + r * cols;
    const T Di = D[i0 + r];
    cpu::row_rule_given(S + r * cols, d, cols, Di);
    // A NaN row (D = NaN): 0 · (dP − NaN) at a hidden key must be 0 (ops/attention.h).
    if (Di != Di) zero_hidden(mask_rule<T>(p, mask_off, ms, i0 + r), d, j0, cols);
    if (g.dS) std::copy(d, d + cols, g.dS + (i0 + r) * p.Tk + j0);
  }
  const T scale = static_cast<T>(p.scale);
  if (g.dQ) kp.k.gemm(false, rows, dP, cols, T(1), g.dQ + i0 * p.dk, p.dk);  // dQ_I += scale · dS K_J
  if (g.dK)
    gemm<T>(true, false, cols, p.dk, rows, scale, dP, cols, Qk + i0 * ld_qk, ld_qk, g.dK + j0 * p.dk, p.dk, T(1));
}

template <typename T>
void backward_slices(const Problem& p, const Tensor& O_in, const Tensor& L_in, const Tensor& dO_in, Backward& b) {
  Tensor qt = p.q, kt = p.k, vt = p.v, dOt = dO_in.contiguous(), Ot = O_in.contiguous(), Lt = L_in.contiguous();
  const Slices<const T> Q = slices_of<const T>(qt, p.batch), K = slices_of<const T>(kt, p.batch),
                        V = slices_of<const T>(vt, p.batch);
  Shape ms;
  const Slices<const void> mask = mask_slices(p, with_last2(p.batch, p.Tq, p.Tk), ms);
  const int64_t Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv, nb = shape_numel(p.batch);
  const auto block = [](Tensor& x, int64_t t, int64_t n) { return x.defined() ? x.data_ptr<T>() + t * n : nullptr; };
  parallel_for(nb, Tq * std::max<int64_t>(Tk, 1) * (2 * dk + 2 * dv + 8), [&](int64_t begin, int64_t end) {
    aligned_vector<T> S(static_cast<size_t>(kTileQ * kTileK)), dP(S.size());
    std::vector<T> D(static_cast<size_t>(Tq));
    std::vector<T> q_finite;  // (Tq, dk): a slice's Q with a NaN or ±inf, read by dK as 0 there
    KeyPanels<T> kp;
    for (int64_t t = begin; t < end; ++t) {
      const T* dO = dOt.data_ptr<const T>() + t * Tq * dv;
      const T* Qk = Q.data + Q.offset(t);  // as dK = dSᵀ Q reads it: a NaN or ±inf of Q as 0 (the NaN rule)
      int64_t ld_qk = Q.ld;
      finite_queries_for_dk(b.dK.defined(), &Qk, &ld_qk, Tq, dk, q_finite);
      const T* O = Ot.data_ptr<const T>() + t * Tq * dv;
      for (int64_t i = 0; i < Tq; ++i)  // D = rowsum(dO ∘ O)
        D[i] = sum_lanes<T>(dv, [&](int64_t c) { return dO[i * dv + c] * O[i * dv + c]; });
      const SliceGrads<T> g{block(b.dQ, t, Tq * dk), block(b.dK, t, Tk * dk), block(b.dV, t, Tk * dv),
                            block(b.dS, t, Tq * Tk)};
      const int64_t mask_off = p.mask.defined() ? mask.offset(t) : 0;
      // Key tiles outer, query tiles inner, so that a key tile's operands are packed once (twice
      // under the causal rule, which cuts the tile for the query tiles on the diagonal). Each of dQ's
      // tiles still receives the key tiles in increasing order, each of dK's and dV's the query tiles:
      // the sums, and so the bits, are those of the other order.
      const T* Qs = Q.data + Q.offset(t);
      const T *Ks = K.data + K.offset(t), *Vs = V.data + V.offset(t);
      for (int64_t j0 = 0; j0 < Tk; j0 += kTileK) {
        kp.cols = -1;
        for (int64_t i0 = 0; i0 < Tq; i0 += kTileQ) {
          const int64_t rows = std::min(kTileQ, Tq - i0), kend = key_end(p, i0 + rows);
          if (kend <= j0) continue;
          const int64_t cols = std::min(kTileK, kend - j0);
          if (cols != kp.cols) kp.pack(p, Ks + j0 * K.ld, K.ld, Vs + j0 * V.ld, V.ld, cols);
          kp.kt.gemm(false, rows, Qs + i0 * Q.ld, Q.ld, T(0), S.data(), cols);  // S = scale · Q_I K_Jᵀ
          mask_tile<T>(p, mask_off, ms, i0, rows, j0, cols, S.data());
          backward_tile<T>(p, kp, Qk, ld_qk, dO, dv, Lt.data_ptr<const T>() + t * Tq, D.data(), mask_off, ms, i0, rows,
                           j0, cols, S.data(), dP.data(), g);
        }
      }
    }
  });
}

}  // namespace

Backward tiled_backward(const Problem& p, const Tensor& O, const Tensor& L, const Tensor& dO, const Needs& need,
                        bool live_mask) {
  Backward b;
  const DType dt = p.q.dtype();
  // Zeros: the tiles add into them, and a tile never visited (above the diagonal) stays 0.
  if (need.q) b.dQ = zeros(with_last2(p.batch, p.Tq, p.dk), dt);
  if (need.k) b.dK = zeros(with_last2(p.batch, p.Tk, p.dk), dt);
  if (need.v) b.dV = zeros(with_last2(p.batch, p.Tk, p.dv), dt);
  if (live_mask) b.dS = zeros(with_last2(p.batch, p.Tq, p.Tk), dt);
  if (shape_numel(p.batch) == 0 || p.Tq == 0 || p.Tk == 0) return b;
  dispatch_float(dt, "attention backward", [&]<typename T>() { backward_slices<T>(p, O, L, dO, b); });
  return b;
}

}  // namespace hg::attention_detail
