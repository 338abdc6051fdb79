// cpu/row_rules.h — the row rules of softmax and attention, stated once for the CPU: the softmax
// row, the log-sum-exp row, p from a saved log-sum-exp, the row rule dS = P ∘ (dP − D), and what a
// row with no visible key or with a NaN gives. softmax, log_softmax, cross_entropy and every
// attention path (ops/) call these on contiguous rows. float32 rows run the CPU level's kernels
// (cpu/kernels.h), float64 rows the same loops written generically (cpu/rows.h): the same
// arithmetic, so the level never changes a bit, and a path's P is softmax()'s bit for bit.
//
// Numbers: e^x is exp_fast (float32 within 2 ulp of e^x, float64 std::exp); the max and the sums
// go over 8 lanes in one fixed order (so not the bits of a left-to-right sum). The tolerance:
// tests/ops/test_softmax.cpp holds softmax and log_softmax to exp(s) / Σ exp(s) computed op by op
// (std::exp, plain sums) within 1e-6 (log: 1e-5) in float32 and 1e-14 (log: 1e-13) in float64.
//
// The policy for hidden keys and NaN. A key whose score is −inf is hidden (a mask, the causal rule):
// its weight is 0, and it is never exponentiated where the caller knows it is hidden. A row with no
// visible key (every score −inf) is no distribution: its weights are 0, its log-sum-exp is −inf,
// its log-weights −inf, and no gradient passes through it. A NaN score is not a hidden key: NaN in,
// NaN out, the whole row NaN (attention, whose mask rule knows its hidden keys, then sets those back
// to 0: ops/attention.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu/kernels.h"
#include "cpu/rows.h"

namespace hg::cpu {

// The CPU level's kernel table for float32 rows; null for float64, whose rows run the generic loops.
template <typename T>
inline const Kernels* level_kernels() {
  if constexpr (std::is_same_v<T, float>) return &kernels();
  else return nullptr;
}

template <typename T>
inline bool has_nan(const T* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    if (x[j] != x[j]) return true;
  return false;
}

// What a row of scores held (the policy above).
enum class Row { weights, no_visible_key, nan };

// The row's maximum over 8 lanes, NaN skipped; −inf for n = 0.
template <typename T>
inline T row_max(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) return kernels().max(x, n);
  else return max_lanes(x, n);
}

// x ← e^(x − m) over a row, in place; returns Σ x over 8 lanes (the online softmax's one pass).
template <typename T>
inline T exp_shift_sum(T* x, int64_t n, T m) {
  if constexpr (std::is_same_v<T, float>) return kernels().exp_shift_sum(x, n, m);
  else return sum_lanes<T>(n, [x, m](int64_t j) { return x[j] = exp_fast(x[j] - m); });
}

// p = e^(s − m) / Σ e^(s − m), m = max s, over a row of n scores (p may be s itself: in place).
// The sums run over the row without its trailing −inf scores (weights 0, written as such), so a
// row reads the same whether a caller stops at its last visible key (the causal rule) or passes the
// whole row with −inf beyond it.
template <typename T>
inline Row softmax_row(const T* s, T* p, int64_t n) {
  constexpr T ninf = -std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  int64_t nv = n;
  while (nv > 0 && s[nv - 1] == ninf) --nv;
  const T m = row_max(s, nv);
  if (m == ninf) {  // nothing visible, or NaN in, NaN out
    const bool is_nan = has_nan(s, nv);
    std::fill(p, p + n, is_nan ? nan : T(0));
    return is_nan ? Row::nan : Row::no_visible_key;
  }
  T total;
  if constexpr (std::is_same_v<T, float>) {
    const Kernels& K = kernels();
    if (p == s) K.exp_shift(p, nv, m);
    else K.exp_shift_to(p, s, nv, m);
    total = K.sum(p, nv);
    K.scale(p, nv, 1 / total);  // p = e / Σ e as e · (1 / Σ e)
  } else {
    for (int64_t j = 0; j < nv; ++j) p[j] = exp_fast(s[j] - m);
    total = sum_lanes<T>(nv, [p](int64_t j) { return p[j]; });
    const T inv = 1 / total;
    for (int64_t j = 0; j < nv; ++j) p[j] *= inv;
  }
  const bool is_nan = total != total;  // a NaN score (or +inf) reached the sum
  std::fill(p + nv, p + n, is_nan ? nan : T(0));
  return is_nan ? Row::nan : Row::weights;
}

// L = m + log Σ_j e^(s_j − m), m = max s, summed in double for both dtypes (float32's e^x are
// widened): −inf for a row with no visible key, NaN for a row with a NaN.
template <typename T>
inline double logsumexp_row(const T* s, int64_t n) {
  constexpr T ninf = -std::numeric_limits<T>::infinity();
  const T m = row_max(s, n);
  if (m == ninf) return has_nan(s, n) ? std::numeric_limits<double>::quiet_NaN() : -std::numeric_limits<double>::infinity();
  double total;
  if constexpr (std::is_same_v<T, float>) total = kernels().exp_shift_sum_f64(s, n, m);
  else total = sum_lanes<double>(n, [s, m](int64_t j) { return static_cast<double>(exp_fast(s[j] - m)); });
  return static_cast<double>(m) + std::log(total);
}

// log p = s − L over a row (y may be s itself); a row with no visible key stays −inf.
template <typename T>
inline Row log_softmax_row(const T* s, T* y, int64_t n) {
  const T L = static_cast<T>(logsumexp_row(s, n));
  if (L == -std::numeric_limits<T>::infinity()) {
    std::fill(y, y + n, L);
    return Row::no_visible_key;
  }
  for (int64_t j = 0; j < n; ++j) y[j] = s[j] - L;
  return L != L ? Row::nan : Row::weights;
}

// p_j = e^(s_j − L) from a saved log-sum-exp L (p may be s itself); all 0 when L = −inf (no visible
// key: P = 0, not e^(−inf + inf)).
template <typename T>
inline void probs_from_lse(const T* s, T* p, int64_t n, T L) {
  if (L == -std::numeric_limits<T>::infinity()) {
    std::fill(p, p + n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (p == s) kernels().exp_shift(p, n, L);
    else kernels().exp_shift_to(p, s, n, L);
  } else {
    for (int64_t j = 0; j < n; ++j) p[j] = exp_fast(s[j] - L);
  }
}

// The row rule with D given: g (dP) becomes dS = P ∘ (dP − D) in place.
template <typename T>
inline void row_rule_given(const T* p, T* g, int64_t n, T D) {
  if constexpr (std::is_same_v<T, float>) kernels().softmax_grad(g, p, n, D);
  else
    for (int64_t j = 0; j < n; ++j) g[j] = p[j] * (g[j] - D);
}

// The row rule: D = Σ_j P_j dP_j (8 lanes), then g (dP) becomes dS = P ∘ (dP − D) in place; returns D.
// A hidden key has P = 0, so dS = 0 there (unless dP is NaN or ±inf there: the caller's NaN rule).
template <typename T>
inline T row_rule(const T* p, T* g, int64_t n) {
  T D;
  if constexpr (std::is_same_v<T, float>) D = kernels().dot(p, g, n);
  else D = sum_lanes<T>(n, [p, g](int64_t j) { return p[j] * g[j]; });
  row_rule_given(p, g, n, D);
  return D;
}

// x ← s x over a row.
template <typename T>
inline void scale_row(T* x, int64_t n, T s) {
  if constexpr (std::is_same_v<T, float>) kernels().scale(x, n, s);
  else
    for (int64_t j = 0; j < n; ++j) x[j] *= s;
}

}  // namespace hg::cpu
