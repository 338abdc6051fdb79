// ops/attention_cpu.h — what attention's CPU kernels share (ops/attention_cpu.cpp, the fused
// materialized path; ops/attention_tiled.cpp, the tiled path): the mask rule, stated once for the
// CPU, and single-threaded gemms over one batch slice at a time. Internal to ops/.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/tensor.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/gemm.h"

namespace hg::attention_detail {

// ---------------------------------------------------------------- the mask rule (the CPU's one statement)
//
// Key j of query i is hidden when j > i under the causal rule (visible = min(Tk, i + 1) keys), when
// a boolean mask entry is false, or when an additive entry is −inf or at or below half the dtype's
// lowest value (adding it would leave a finite score, and a row of such scores would silently
// become the average of the values). Otherwise its score is s plus the additive entry. A hidden
// key's score is −inf, so the softmax gives it weight 0. cuda/attention_mask.cuh states the same
// rule for the GPU; tests/ops/test_attention.cpp and the GPU tests hold the two to each other.
template <typename T>
struct MaskRule {
  const uint8_t* boolean = nullptr;  // the boolean mask at this query's row, or null
  const T* additive = nullptr;       // the additive mask at this query's row, or null
  int64_t sk = 0;                    // the mask's stride along keys
  int64_t visible = 0;               // keys 0 .. visible−1 pass the causal rule

  bool hides(int64_t j) const {
    if (j >= visible) return true;
    if (boolean) return !boolean[j * sk];
    return additive && additive[j * sk] <= std::numeric_limits<T>::lowest() / 2;
  }
  T operator()(T s, int64_t j) const {
    if (hides(j)) return -std::numeric_limits<T>::infinity();
    return additive ? s + additive[j * sk] : s;
  }
};

// The NaN rule's zero (ops/attention.h): x holds keys j0 .. j0 + n − 1 of a NaN row of P or dS,
// where a hidden key's entry is 0 · NaN by the arithmetic; it becomes 0.
template <typename T>
void zero_hidden(const MaskRule<T>& rule, T* x, int64_t j0, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    if (rule.hides(j0 + c)) x[c] = T(0);
}

// Whether the (rows, d) block at x (rows ld apart) holds a NaN or ±inf.
template <typename T>
bool any_non_finite(const T* x, int64_t ld, int64_t rows, int64_t d) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < d; ++c)
      if (!std::isfinite(x[r * ld + c])) return true;
  return false;
}

// The (rows, d) block at x (rows ld apart) with every NaN and ±inf entry 0, into out (rows, d):
// the queries as dK = dSᵀ Q reads them under the NaN rule (ops/attention.h).
template <typename T>
void finite_part(const T* x, int64_t ld, int64_t rows, int64_t d, T* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < d; ++c) {
      const T v = x[r * ld + c];
      out[r * d + c] = std::isfinite(v) ? v : T(0);
    }
}

// A slice's Q (Tq, dk) at *q (rows *ld apart) as dK = dSᵀ Q reads it under the NaN rule
// (ops/attention.h): where it holds a NaN or ±inf and dK is asked for, *q and *ld are pointed at
// `scratch`, a copy with those entries 0; otherwise they are left as they are.
template <typename T>
void finite_queries_for_dk(bool need_k, const T** q, int64_t* ld, int64_t Tq, int64_t dk, std::vector<T>& scratch) {
  if (!need_k || !any_non_finite(*q, *ld, Tq, dk)) return;
  scratch.resize(static_cast<size_t>(Tq * dk));
  finite_part(*q, *ld, Tq, dk, scratch.data());
  *q = scratch.data(), *ld = dk;
}

// The rule for row i of a slice whose mask starts at offset `mask_off`; ms: the mask's strides
// read as the scores (batch..., Tq, Tk).
template <typename T>
MaskRule<T> mask_rule(const Problem& p, int64_t mask_off, const Shape& ms, int64_t i) {
  MaskRule<T> r;
  r.visible = p.causal ? std::min(p.Tk, i + 1) : p.Tk;
  if (!p.mask.defined()) return r;
  const int64_t at = mask_off + i * ms[ms.size() - 2];
  r.sk = ms.back();
  if (p.mask.dtype() == DType::b8) r.boolean = p.mask.data_ptr<const uint8_t>() + at;
  else r.additive = p.mask.data_ptr<const T>() + at;
  return r;
}

// The mask's strides read as the scores (all 0 without a mask).
inline Shape mask_strides(const Problem& p, const Shape& scores) {
  return p.mask.defined() ? broadcast_strides("attention", p.mask, scores) : Shape(scores.size(), 0);
}

// C (M, N) = alpha · op(A) op(B) + beta · C, row-major; op(X) = Xᵀ when trans_X (ops/gemm.h).
template <typename T>
inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                 const T* B, int64_t ldb, T* C, int64_t ldc, T beta = T(0)) {
  hg::gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// One operand's matrices as gemm reads them: slice t's (rows, d) block starts at
// data + offset(t), rows `ld` apart, unit stride along a row.
template <typename T>
struct Slices {
  T* data = nullptr;
  Shape batch, bstrides;  // bstrides: 0 along a broadcast batch dimension
  int64_t ld = 0;
  int64_t offset(int64_t t) const {
    int64_t off = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      off += (t % batch[d]) * bstrides[d];
      t /= batch[d];
    }
    return off;
  }
};

// x (batch..., rows, d) as slices, made contiguous first when gemm cannot read its matrices in
// place (a row that is not unit-stride, or rows that overlap, as in an expanded gradient).
template <typename T>
Slices<T> slices_of(Tensor& x, const Shape& batch) {
  const int64_t r = x.dim(), rows = x.shape()[r - 2], d = x.shape()[r - 1];
  if ((d > 1 && x.strides()[r - 1] != 1) || (rows > 1 && x.strides()[r - 2] < d)) x = x.contiguous();
  Slices<T> s;
  s.data = static_cast<T*>(x.raw_data());
  s.batch = batch;
  s.bstrides.assign(x.strides().begin(), x.strides().end() - 2);
  s.ld = std::max<int64_t>(x.strides()[r - 2], x.shape()[r - 1]);
  return s;
}

// The mask's strides read as the scores (batch..., Tq, Tk), and its offset for each slice.
inline Slices<const void> mask_slices(const Problem& p, const Shape& scores, Shape& ms) {
  Slices<const void> s;
  if (!p.mask.defined()) return s;
  ms = mask_strides(p, scores);
  s.batch = p.batch;
  s.bstrides.assign(ms.begin(), ms.end() - 2);
  return s;
}

}  // namespace hg::attention_detail
