// ops/attention_cpu.cpp — attention's CPU kernels: the mask rule, stated once for the CPU, and
// the fused per-slice forward and backward that attention() runs on the CPU.
//
// The same formulas, one batch slice (one sequence and head) at a time: the slice's gemms and
// rows run back to back on one thread while its (Tq, Tk) block is in cache, the scale rides in
// gemm's alpha (C = alpha · A B rounds as (A B) · scale does), a hidden key is never
// exponentiated, and dP lives in a per-thread scratch block instead of a (batch..., Tq, Tk)
// tensor. Slices are independent, so they are spread over the threads (engine/strided.h).
// attention() runs these; attention_trace keeps the op-by-op path (ops/attention.cpp), and the tests check
// the two against each other (tests/test_attention.cpp, tests/test_parallel.cpp). Measured at
// TinyCharLM's size (B 128, H 4, T 63, d_h 32), forward and backward on one thread: 18 ms fused,
// 26 ms op by op (bench/RESULTS.md).

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/dispatch.h"
#include "engine/strided.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"

namespace hg::attention_detail {

namespace {

// ---------------------------------------------------------------- the mask rule (the CPU's one statement)
//
// Key j of query i is hidden when j > i under the causal rule (visible = min(Tk, i + 1) keys), when
// a boolean mask entry is false, or when an additive entry is −inf or at or below half the dtype's
// lowest value (adding it would leave a finite score, and a row of such scores would silently
// become the average of the values). Otherwise its score is s plus the additive entry. A hidden
// key's score is −inf, so the softmax gives it weight 0. cuda/attention.cu states the same rule
// for the GPU; tests/test_attention.cpp and the GPU tests hold the two to each other.
template <typename T>
struct MaskRule {
  const uint8_t* boolean = nullptr;  // the boolean mask at this query's row, or null
  const T* additive = nullptr;       // the additive mask at this query's row, or null
  int64_t sk = 0;                    // the mask's stride along keys
  int64_t visible = 0;               // keys 0 .. visible−1 pass the causal rule

  T operator()(T s, int64_t j) const {
    constexpr T hidden = -std::numeric_limits<T>::infinity();
    if (j >= visible) return hidden;
    if (boolean && !boolean[j * sk]) return hidden;
    if (additive) {
      const T a = additive[j * sk];
      return a <= std::numeric_limits<T>::lowest() / 2 ? hidden : s + a;
    }
    return s;
  }
};

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
Shape mask_strides(const Problem& p, const Shape& scores) {
  return p.mask.defined() ? broadcast_strides("attention", p.mask, scores) : Shape(scores.size(), 0);
}

template <typename T>
void scale_and_mask(const Problem& p, Tensor& S) {
  const Shape ms = mask_strides(p, S.shape());
  const T scale = static_cast<T>(p.scale);
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk;
  T* row = S.data_ptr<T>();
  std::vector<int64_t> idx(p.batch.size(), 0);
  int64_t mb = 0;  // the mask's offset for this batch slice
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t i = 0; i < Tq; ++i, row += Tk) {
      const MaskRule<T> rule = mask_rule<T>(p, mb, ms, i);
      for (int64_t j = 0; j < Tk; ++j) row[j] = rule(row[j] * scale, j);
    }
    for (size_t d = p.batch.size(); d-- > 0;) {  // odometer over the batch dimensions
      mb += ms[d];
      if (++idx[d] < p.batch[d]) break;
      mb -= ms[d] * p.batch[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void scale_and_mask_cpu(const Problem& p, Tensor& S) {
  dispatch_float(S.dtype(), "attention", [&]<typename T>() { scale_and_mask<T>(p, S); });
}

namespace {

// OpenBLAS stays on one thread: the slices are spread over handgrad's threads (as in ops/matmul.cpp).
void blas_single_threaded() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// C (M, N) = alpha · op(A) op(B), row-major; op(X) = Xᵀ when trans_X.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T* C, int64_t ldc) {
  const auto bi = [](int64_t x) { return static_cast<blasint>(x); };
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, bi(M), bi(N), bi(K), alpha, A, bi(lda), B, bi(ldb), 0.0f, C, bi(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, bi(M), bi(N), bi(K), alpha, A, bi(lda), B, bi(ldb), 0.0, C, bi(ldc));
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

// One slice's rows: S (Tq, Tk) holds scale · Q Kᵀ; make it P in place. The mask rule (above)
// sets the scores; p = exp(s − m) / Σ exp(s − m) over the visible keys, 0 where hidden, a row
// with nothing visible all 0. Keys past the causal limit are never exponentiated. exp is
// exp_fast: within 2 ulp of std::exp in float32 (softmax_rows's), exact std::exp in float64; the
// max and the sum go over 8 lanes (ops/cpu_map.h), so P can differ from softmax()'s in the last bits.
template <typename T>
void softmax_slice(const Problem& p, T* S, int64_t mask_off, const Shape& ms) {
  const int64_t Tk = p.Tk;
  for (int64_t i = 0; i < p.Tq; ++i) {
    T* row = S + i * Tk;
    const MaskRule<T> rule = mask_rule<T>(p, mask_off, ms, i);
    const int64_t visible = rule.visible;
    if (p.mask.defined())
      for (int64_t j = 0; j < visible; ++j) row[j] = rule(row[j], j);
    const T m = max_lanes(row, visible);  // ops/cpu_map.h
    if (m == -std::numeric_limits<T>::infinity()) {
      std::fill(row, row + Tk, T(0));
      continue;
    }
    for (int64_t j = 0; j < visible; ++j) row[j] = exp_fast(row[j] - m);  // vectorised (ops/cpu_map.h)
    const T total = sum_lanes<T>(visible, [&](int64_t j) { return row[j]; });
    const T inv = 1 / total;
    for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
    std::fill(row + visible, row + Tk, T(0));
  }
}

// The mask's strides read as the scores (batch..., Tq, Tk), and its offset for each slice.
Slices<const void> mask_slices(const Problem& p, const Shape& scores, Shape& ms) {
  Slices<const void> s;
  if (!p.mask.defined()) return s;
  ms = mask_strides(p, scores);
  s.batch = p.batch;
  s.bstrides.assign(ms.begin(), ms.end() - 2);
  return s;
}

}  // namespace

bool fits_blas(const Problem& p) {
  for (int64_t v : {p.Tq, p.Tk, p.dk, p.dv})
    if (v > INT_MAX / 4) return false;
  return true;
}

// forward: for each slice, S = scale · Q Kᵀ (gemm), P = softmax(S + mask) (rows), O = P V (gemm).
// Returns P (batch..., Tq, Tk) and O (batch..., Tq, dv), both contiguous.
Forward fused_forward(const Problem& p) {
  blas_single_threaded();
  Forward f;
  const Shape scores = with_last2(p.batch, p.Tq, p.Tk);
  f.P = empty(scores, p.q.dtype());
  f.O = empty(with_last2(p.batch, p.Tq, p.dv), p.q.dtype());
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  Shape ms;
  const Slices<const void> mask = mask_slices(p, scores, ms);
  dispatch_float(p.q.dtype(), "attention", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v;
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch);
    T* P = f.P.data_ptr<T>();
    T* O = f.O.data_ptr<T>();
    const T scale = static_cast<T>(p.scale);
    parallel_for(nb, Tq * Tk * (dk + dv + 8), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        T* Pt = P + t * Tq * Tk;
        gemm<T>(false, true, Tq, Tk, dk, scale, Q.data + Q.offset(t), Q.ld, K.data + K.offset(t), K.ld, Pt, Tk);
        softmax_slice<T>(p, Pt, p.mask.defined() ? mask.offset(t) : 0, ms);
        gemm<T>(false, false, Tq, dv, Tk, T(1), Pt, Tk, V.data + V.offset(t), V.ld, O + t * Tq * dv, dv);
      }
    });
  });
  return f;
}

// backward, for each slice: dV = Pᵀ dO, dP = dO Vᵀ (scratch), dS = P ∘ (dP − rowsum(P ∘ dP)) in
// place, dQ = scale · dS K, dK = scale · dSᵀ Q (all gemms but the row rule). A hidden key has
// P = 0, so dS = 0 there, as in attention_backward.
Backward fused_backward(const Problem& p, const Tensor& P, const Tensor& dO_in, bool need_q, bool need_k, bool need_v) {
  blas_single_threaded();
  Backward b;
  const DType dt = p.q.dtype();
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  if (need_v) b.dV = empty(with_last2(p.batch, Tk, dv), dt);
  if (need_q) b.dQ = empty(with_last2(p.batch, Tq, dk), dt);
  if (need_k) b.dK = empty(with_last2(p.batch, Tk, dk), dt);
  const bool need_ds = need_q || need_k;
  dispatch_float(dt, "attention backward", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v, dOt = dO_in, Pt = P.contiguous();
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch),
                    dO = slices_of<T>(dOt, p.batch);
    const T* Pd = Pt.data_ptr<const T>();
    T* dVd = need_v ? b.dV.data_ptr<T>() : nullptr;
    T* dQd = need_q ? b.dQ.data_ptr<T>() : nullptr;
    T* dKd = need_k ? b.dK.data_ptr<T>() : nullptr;
    const T scale = static_cast<T>(p.scale);
    parallel_for(nb, Tq * Tk * (2 * dk + 2 * dv + 4), [&](int64_t begin, int64_t end) {
      std::vector<T> dS(static_cast<size_t>(need_ds ? Tq * Tk : 0));  // (Tq, Tk) scratch: dP, then dS
      for (int64_t t = begin; t < end; ++t) {
        const T* Ps = Pd + t * Tq * Tk;
        const T* dOs = dO.data + dO.offset(t);
        if (need_v) gemm<T>(true, false, Tk, dv, Tq, T(1), Ps, Tk, dOs, dO.ld, dVd + t * Tk * dv, dv);
        if (!need_ds) continue;
        gemm<T>(false, true, Tq, Tk, dv, T(1), dOs, dO.ld, V.data + V.offset(t), V.ld, dS.data(), Tk);
        for (int64_t i = 0; i < Tq; ++i) {  // the row rule
          const T* pr = Ps + i * Tk;
          T* r = dS.data() + i * Tk;
          const T D = sum_lanes<T>(Tk, [&](int64_t j) { return pr[j] * r[j]; });
          for (int64_t j = 0; j < Tk; ++j) r[j] = pr[j] * (r[j] - D);
        }
        if (need_q)
          gemm<T>(false, false, Tq, dk, Tk, scale, dS.data(), Tk, K.data + K.offset(t), K.ld, dQd + t * Tq * dk, dk);
        if (need_k)
          gemm<T>(true, false, Tk, dk, Tq, scale, dS.data(), Tk, Q.data + Q.offset(t), Q.ld, dKd + t * Tk * dk, dk);
      }
    });
  });
  return b;
}

}  // namespace hg::attention_detail
