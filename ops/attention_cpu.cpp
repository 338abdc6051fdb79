// ops/attention_cpu.cpp — attention's materialized CPU kernels: the op-by-op path's scale and
// mask, and the fused per-slice forward and backward (the mask rule: ops/attention_cpu.h).
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
#include "ops/attention_cpu.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"

namespace hg::attention_detail {

namespace {

// The op-by-op path's scale and mask, over every slice of S.
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

// One slice's rows: S (Tq, Tk) holds scale · Q Kᵀ; make it P in place. The mask rule (above)
// sets the scores; p = exp(s − m) / Σ exp(s − m) over the visible keys, 0 where hidden, a row
// with nothing visible all 0. Keys past the causal limit are never exponentiated. exp is
// exp_fast: within 2 ulp of std::exp in float32 (softmax_rows's), exact std::exp in float64; the
// max and the sum go over 8 lanes (cpu/rows.h), so P can differ from softmax()'s in the
// last bits. float32 rows run the CPU level's kernels (cpu/kernels.h), the same bits.
template <typename T>
void softmax_slice(const Problem& p, T* S, int64_t mask_off, const Shape& ms) {
  const int64_t Tk = p.Tk;
  [[maybe_unused]] const cpu::Kernels* K = std::is_same_v<T, float> ? &cpu::kernels() : nullptr;  // float32's
  for (int64_t i = 0; i < p.Tq; ++i) {
    T* row = S + i * Tk;
    const MaskRule<T> rule = mask_rule<T>(p, mask_off, ms, i);
    const int64_t visible = rule.visible;
    if (p.mask.defined())
      for (int64_t j = 0; j < visible; ++j) row[j] = rule(row[j], j);
    T m;
    if constexpr (std::is_same_v<T, float>) m = K->max(row, visible);
    else m = max_lanes(row, visible);
    if (m == -std::numeric_limits<T>::infinity()) {  // nothing visible, or NaN in, NaN out
      bool nan = false;
      for (int64_t j = 0; j < visible; ++j) nan = nan || row[j] != row[j];
      std::fill(row, row + Tk, nan ? std::numeric_limits<T>::quiet_NaN() : T(0));
      continue;
    }
    if constexpr (std::is_same_v<T, float>) {  // the CPU level's kernels (cpu/kernels.h)
      K->exp_shift(row, visible, m);
      K->scale(row, visible, 1 / K->sum(row, visible));  // p = e / Σ e as e · (1 / Σ e)
    } else {
      for (int64_t j = 0; j < visible; ++j) row[j] = exp_fast(row[j] - m);
      const T total = sum_lanes<T>(visible, [&](int64_t j) { return row[j]; });
      const T inv = 1 / total;
      for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
    }
    std::fill(row + visible, row + Tk, T(0));
  }
}

}  // namespace

bool fits_blas(const Problem& p) {
  for (int64_t v : {p.Tq, p.Tk, p.dk, p.dv})
    if (v > INT_MAX / 4) return false;
  return true;
}

// forward: for each slice, S = scale · Q Kᵀ (gemm), P = softmax(S + mask) (rows), O = P V (gemm).
// Returns P (batch..., Tq, Tk), contiguous, and O (batch..., Tq, dv): contiguous, or in the merged
// layout that p.merged_output asks for.
Forward fused_forward(const Problem& p) {
  blas_single_threaded();
  Forward f;
  const Shape scores = with_last2(p.batch, p.Tq, p.Tk);
  f.P = empty(scores, p.q.dtype());
  if (p.merged_output && p.batch.size() >= 2) {  // (batch[0], Tq, batch[1..], dv), read as (batch..., Tq, dv)
    Shape phys{p.batch[0], p.Tq};
    phys.insert(phys.end(), p.batch.begin() + 1, p.batch.end());
    phys.push_back(p.dv);
    std::vector<int64_t> order{0};  // batch[0], then batch[1..] (physical 2..), then Tq (1), then dv
    for (size_t d = 1; d < p.batch.size(); ++d) order.push_back(static_cast<int64_t>(d) + 1);
    order.push_back(1);
    order.push_back(static_cast<int64_t>(phys.size()) - 1);
    f.O = empty(phys, p.q.dtype()).permute(order);
  } else {
    f.O = empty(with_last2(p.batch, p.Tq, p.dv), p.q.dtype());
  }
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  Shape ms;
  const Slices<const void> mask = mask_slices(p, scores, ms);
  dispatch_float(p.q.dtype(), "attention", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v;
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch);
    T* P = f.P.data_ptr<T>();
    const Slices<T> O = slices_of<T>(f.O, p.batch);  // in place: its rows are unit-stride and apart
    const T scale = static_cast<T>(p.scale);
    parallel_for(nb, Tq * Tk * (dk + dv + 8), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        T* Pt = P + t * Tq * Tk;
        gemm<T>(false, true, Tq, Tk, dk, scale, Q.data + Q.offset(t), Q.ld, K.data + K.offset(t), K.ld, Pt, Tk);
        softmax_slice<T>(p, Pt, p.mask.defined() ? mask.offset(t) : 0, ms);
        gemm<T>(false, false, Tq, dv, Tk, T(1), Pt, Tk, V.data + V.offset(t), V.ld, O.data + O.offset(t), O.ld);
      }
    });
  });
  return f;
}

// backward, for each slice: dV = Pᵀ dO, dP = dO Vᵀ (scratch), dS = P ∘ (dP − rowsum(P ∘ dP)) in
// place, dQ = scale · dS K, dK = scale · dSᵀ Q (all gemms but the row rule). A hidden key has
// P = 0, so dS = 0 there, as in attention_backward.
Backward fused_backward(const Problem& p, const Tensor& P, const Tensor& dO_in, const Needs& need) {
  const bool need_q = need.q, need_k = need.k, need_v = need.v, need_ds = need.ds;
  blas_single_threaded();
  Backward b;
  const DType dt = p.q.dtype();
  const int64_t nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk, dk = p.dk, dv = p.dv;
  if (need_v) b.dV = empty(with_last2(p.batch, Tk, dv), dt);
  if (need_q) b.dQ = empty(with_last2(p.batch, Tq, dk), dt);
  if (need_k) b.dK = empty(with_last2(p.batch, Tk, dk), dt);
  if (need_ds) b.dS = empty(with_last2(p.batch, Tq, Tk), dt);
  const bool row_rule = need_q || need_k || need_ds;
  dispatch_float(dt, "attention backward", [&]<typename T>() {
    Tensor qt = p.q, kt = p.k, vt = p.v, dOt = dO_in, Pt = P.contiguous();
    const Slices<T> Q = slices_of<T>(qt, p.batch), K = slices_of<T>(kt, p.batch), V = slices_of<T>(vt, p.batch),
                    dO = slices_of<T>(dOt, p.batch);
    const T* Pd = Pt.data_ptr<const T>();
    T* dVd = need_v ? b.dV.data_ptr<T>() : nullptr;
    T* dQd = need_q ? b.dQ.data_ptr<T>() : nullptr;
    T* dKd = need_k ? b.dK.data_ptr<T>() : nullptr;
    const T scale = static_cast<T>(p.scale);
    T* dSd = need_ds ? b.dS.data_ptr<T>() : nullptr;  // the full dS, for a mask that requires grad
    [[maybe_unused]] const cpu::Kernels* rows = std::is_same_v<T, float> ? &cpu::kernels() : nullptr;
    parallel_for(nb, Tq * Tk * (2 * dk + 2 * dv + 4), [&](int64_t begin, int64_t end) {
      std::vector<T> scratch(static_cast<size_t>(row_rule && !need_ds ? Tq * Tk : 0));  // (Tq, Tk): dP, then dS
      for (int64_t t = begin; t < end; ++t) {
        const T* Ps = Pd + t * Tq * Tk;
        const T* dOs = dO.data + dO.offset(t);
        if (need_v) gemm<T>(true, false, Tk, dv, Tq, T(1), Ps, Tk, dOs, dO.ld, dVd + t * Tk * dv, dv);
        if (!row_rule) continue;
        T* dS = need_ds ? dSd + t * Tq * Tk : scratch.data();
        gemm<T>(false, true, Tq, Tk, dv, T(1), dOs, dO.ld, V.data + V.offset(t), V.ld, dS, Tk);
        for (int64_t i = 0; i < Tq; ++i) {  // the row rule
          const T* pr = Ps + i * Tk;
          T* r = dS + i * Tk;
          if constexpr (std::is_same_v<T, float>) {  // the CPU level's kernels (cpu/kernels.h)
            rows->softmax_grad(r, pr, Tk, rows->dot(pr, r, Tk));
          } else {
            const T D = sum_lanes<T>(Tk, [&](int64_t j) { return pr[j] * r[j]; });
            for (int64_t j = 0; j < Tk; ++j) r[j] = pr[j] * (r[j] - D);
          }
        }
        if (need_q) gemm<T>(false, false, Tq, dk, Tk, scale, dS, Tk, K.data + K.offset(t), K.ld, dQd + t * Tq * dk, dk);
        if (need_k) gemm<T>(true, false, Tk, dk, Tq, scale, dS, Tk, Q.data + Q.offset(t), Q.ld, dKd + t * Tk * dk, dk);
      }
    });
  });
  return b;
}

}  // namespace hg::attention_detail
