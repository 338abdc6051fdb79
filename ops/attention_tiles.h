// ops/attention_tiles.h — the steps of the tiled path that its forward (ops/attention_tiled.cpp)
// and its tangent (ops/attention_tiled_tangent.cpp) share: the tile sizes, a scores tile with the
// mask rule, the online softmax's row state, a key tile absorbed into it, and a row's close.
// The derivation is at the top of ops/attention_tiled.cpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/row_rules.h"
#include "engine/aligned.h"
#include "ops/attention_cpu.h"
#include "ops/attention_paths.h"

namespace hg::attention_detail {

// Rows of Q, and of K and V, per tile; the online softmax makes the key tile's width free to choose.
// Under the causal rule a query tile's last key tile is cut at its last query, so the work above
// the diagonal is at most a triangle of kTileQ × kTileK; with handgrad's own gemm (which keeps its
// speed on the narrower products) 128 keys were 3-4 % faster than 256 at T = 1024 and the same at
// T = 4096 and 8192 (bench/RESULTS.md).
constexpr int64_t kTileQ = 128, kTileK = 128;

// The keys a query tile [i0, i1) reads: all of them, or under the causal rule keys 0 .. i1 − 1 (the
// rest are hidden from every row of the tile); the last key tile is cut there too.
inline int64_t key_end(const Problem& p, int64_t i1) { return p.causal ? std::min(p.Tk, i1) : p.Tk; }

// The mask rule over a scores tile S (rows, cols), row i = i0 + r, key j = j0 + c.
template <typename T>
void mask_tile(const Problem& p, int64_t mask_off, const Shape& ms, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
               T* S) {
  if (!p.mask.defined() && (!p.causal || j0 + cols <= i0 + 1)) return;  // nothing hidden in this tile
  for (int64_t r = 0; r < rows; ++r) {
    const MaskRule<T> rule = mask_rule<T>(p, mask_off, ms, i0 + r);
    T* row = S + r * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] = rule(row[c], j0 + c);
  }
}

// S (rows, cols) = scale · Q_I K_Jᵀ, then the mask rule.
template <typename T>
void scores_tile(const Problem& p, const Slices<const T>& Q, const Slices<const T>& K, int64_t t, int64_t mask_off,
                 const Shape& ms, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* S) {
  gemm<T>(false, true, rows, cols, p.dk, static_cast<T>(p.scale), Q.data + Q.offset(t) + i0 * Q.ld, Q.ld,
          K.data + K.offset(t) + j0 * K.ld, K.ld, S, cols);
  mask_tile<T>(p, mask_off, ms, i0, rows, j0, cols, S);
}

// Per-row state of the online softmax for one query tile.
template <typename T>
struct RowState {
  std::vector<T> m, l;    // (rows) each
  aligned_vector<T> acc;  // (rows, dv), its rows the C of A += P̃ V_J
  std::vector<char> nan;  // a visible score was NaN while nothing else was visible (see absorb_tile)
  RowState(int64_t rows, int64_t dv)
      : m(static_cast<size_t>(rows), -std::numeric_limits<T>::infinity()), l(static_cast<size_t>(rows), T(0)),
        acc(static_cast<size_t>(rows * dv), T(0)), nan(static_cast<size_t>(rows), 0) {}
};

// One key tile into the state: S (rows, cols) becomes P̃ in place, ℓ and A are rescaled and grown.
// The row max skips NaN (cpu::row_max); a NaN score then reaches ℓ through e^(NaN − m') = NaN, and ℓ
// stays NaN. Only while a row has no finite visible score (m' = −inf) is a NaN looked for by hand.
// `factors`, when given, receives each row's rescale e^(m − m') (1 for a row still without a visible key).
template <typename T>
void absorb_tile(RowState<T>& st, T* S, int64_t rows, int64_t cols, int64_t dv, const PackedB<T>& Vj,
                 T* factors = nullptr) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* row = S + r * cols;
    const T m_new = std::max(st.m[r], cpu::row_max(row, cols));  // cpu/row_rules.h: the kernel table's
    if (m_new == ninf) {  // nothing visible yet: this tile adds nothing, unless a score is NaN
      for (int64_t c = 0; c < cols; ++c) st.nan[r] |= row[c] != row[c];
      std::fill(row, row + cols, T(0));
      if (factors) factors[r] = T(1);
      continue;
    }
    const T rescale = exp_fast(st.m[r] - m_new);  // 0 when m was −inf
    if (factors) factors[r] = rescale;
    const T added = cpu::exp_shift_sum(row, cols, m_new);  // one pass
    st.l[r] = st.l[r] * rescale + added;
    if (rescale != T(1))
      for (int64_t c = 0; c < dv; ++c) st.acc[r * dv + c] *= rescale;
    st.m[r] = m_new;
  }
  Vj.gemm(false, rows, S, cols, T(1), st.acc.data(), dv);  // A += P̃ V_J
}

// A row's close after its last key tile: O = A / ℓ and L = m + log ℓ. A row that met a NaN score
// (or whose ℓ is NaN) gets NaN in both; a row with no visible key, O = 0 and L = −inf. Returns 1/ℓ
// for a finished row and 0 for the other two (which the tangent tells apart by L).
template <typename T>
T close_row(const RowState<T>& st, int64_t r, int64_t dv, T* o, T& lse) {
  if (st.nan[r] || st.l[r] != st.l[r]) {
    std::fill(o, o + dv, std::numeric_limits<T>::quiet_NaN());
    lse = std::numeric_limits<T>::quiet_NaN();
    return T(0);
  }
  if (st.l[r] == T(0)) {  // no visible key
    std::fill(o, o + dv, T(0));
    lse = -std::numeric_limits<T>::infinity();
    return T(0);
  }
  const T inv = 1 / st.l[r];
  for (int64_t c = 0; c < dv; ++c) o[c] = st.acc[r * dv + c] * inv;
  lse = st.m[r] + std::log(st.l[r]);
  return inv;
}

}  // namespace hg::attention_detail
