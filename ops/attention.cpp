// ops/attention.cpp — scaled dot-product attention: forward, the hand-written backward, the trace.
//
// One tape entry, "attention", whose backward is the module's formulas. They are written twice:
// op by op (attention_forward, attention_backward: each a batched gemm through matmul — OpenBLAS,
// or cuBLAS on a CUDA tensor — or the row rule through softmax_backward), which attention_trace
// runs and returns every buffer of, and which attention() runs on CUDA tensors; and fused per
// batch slice on the CPU (fused_forward, fused_backward, below them), which attention() runs
// there because it is faster. The tests hold the two to each other.
#include "ops/attention.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/backend.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/softmax.h"

namespace hg {

namespace {

// The inputs, checked, detached and expanded (stride-0 views, no copies) to one batch shape:
// that of Q, K, V and the mask broadcast together.
struct Problem {
  Tensor q, k, v;  // (batch..., Tq, dk), (batch..., Tk, dk), (batch..., Tk, dv)
  Tensor mask;     // undefined, or b8 / float broadcastable to (batch..., Tq, Tk)
  Shape batch;
  int64_t Tq = 0, Tk = 0, dk = 0, dv = 0;
  double scale = 1.0;
  bool causal = false;
};

Shape with_last2(Shape s, int64_t a, int64_t b) {
  s.push_back(a);
  s.push_back(b);
  return s;
}

Problem prepare(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail(op, "Q {}, K {} and V {} each need at least two dimensions (..., T, d)", shape_str(q.shape()),
         shape_str(k.shape()), shape_str(v.shape()));
  check_same_dtype_device(op, q, k);
  check_same_dtype_device(op, q, v);
  if (!is_floating(q.dtype()))
    fail(op, "Q {} has dtype {}; attention needs float32 or float64", shape_str(q.shape()), dtype_name(q.dtype()));
  Problem p;
  p.Tq = q.size(-2), p.Tk = k.size(-2), p.dk = q.size(-1), p.dv = v.size(-1);
  if (k.size(-1) != p.dk)
    fail(op, "Q {} and K {} must share d_k, their last dimension: {} vs {}", shape_str(q.shape()),
         shape_str(k.shape()), p.dk, k.size(-1));
  if (v.size(-2) != p.Tk)
    fail(op, "K {} and V {} must hold the same number of keys Tk (second-to-last dimension): {} vs {}",
         shape_str(k.shape()), shape_str(v.shape()), p.Tk, v.size(-2));
  auto lead = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  try {
    p.batch = broadcast_shapes(op, broadcast_shapes(op, lead(q), lead(k)), lead(v));
  } catch (const Error&) {
    fail(op, "the leading (batch) dimensions of Q {}, K {} and V {} do not broadcast (sizes must match or be 1)",
         shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  }
  if (o.mask.defined()) {
    const Tensor& m = o.mask;
    if (m.dtype() != DType::b8 && m.dtype() != q.dtype())
      fail(op, "mask {} must be boolean (b8, true = may attend) or additive with Q's dtype {}; convert it with "
           ".to(DType::{})", m.describe(), dtype_name(q.dtype()), q.dtype() == DType::f64 ? "f64" : "f32");
    if (m.device() != q.device())
      fail(op, "mask {} is on {} but Q is on {}; move it with .to(Device::...)", m.describe(), device_name(m.device()),
           device_name(q.device()));
    const Shape scores = with_last2(p.batch, p.Tq, p.Tk);
    Shape full;
    try {
      full = broadcast_shapes(op, scores, m.shape());
    } catch (const Error&) {
      full.clear();
    }
    if (full.empty() || full[full.size() - 2] != p.Tq || full.back() != p.Tk)
      fail(op, "mask {} does not broadcast against the scores (..., Tq, Tk) = {} (e.g. a padding mask (B, 1, 1, Tk) "
           "or a combined mask (B, 1, Tq, Tk))", shape_str(m.shape()), shape_str(scores));
    p.batch.assign(full.begin(), full.end() - 2);
    p.mask = m.detach();
  }
  if (!o.scale && p.dk == 0) fail(op, "Q {} has d_k = 0, so the default scale 1/sqrt(d_k) is undefined", shape_str(q.shape()));
  p.scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(p.dk));
  p.causal = o.causal;
  p.q = expand(q.detach(), with_last2(p.batch, p.Tq, p.dk));
  p.k = expand(k.detach(), with_last2(p.batch, p.Tk, p.dk));
  p.v = expand(v.detach(), with_last2(p.batch, p.Tk, p.dv));
  return p;
}

// S (contiguous, (batch..., Tq, Tk)) ← S · scale (+ additive mask), −inf where a key is hidden:
// by the causal rule (key j > query i), by a boolean mask entry false, or by an additive entry
// that is −inf or at or below half the dtype's lowest value (adding it would leave a finite score,
// and a row of such scores would silently become the average of the values).
template <typename T>
void scale_and_mask(const Problem& p, Tensor& S) {
  const T inf = std::numeric_limits<T>::infinity();
  const T hidden_at = std::numeric_limits<T>::lowest() / 2;
  const T scale = static_cast<T>(p.scale);
  const bool boolean = p.mask.defined() && p.mask.dtype() == DType::b8;
  const bool additive = p.mask.defined() && !boolean;
  Shape ms = p.mask.defined() ? broadcast_strides("attention", p.mask, S.shape()) : Shape(S.dim(), 0);
  const uint8_t* bm = boolean ? p.mask.data_ptr<const uint8_t>() : nullptr;
  const T* am = additive ? p.mask.data_ptr<const T>() : nullptr;
  const int64_t sq = ms[ms.size() - 2], sk = ms.back(), nb = shape_numel(p.batch), Tq = p.Tq, Tk = p.Tk;
  T* row = S.data_ptr<T>();
  std::vector<int64_t> idx(p.batch.size(), 0);
  int64_t mb = 0;  // the mask's offset for this batch slice
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t i = 0; i < Tq; ++i, row += Tk) {
      const int64_t visible = p.causal ? std::min(Tk, i + 1) : Tk;  // keys 0..i under the causal rule
      const int64_t mr = mb + i * sq;
      for (int64_t j = 0; j < Tk; ++j) {
        T s = row[j] * scale;
        bool hidden = j >= visible;
        if (boolean) hidden = hidden || !bm[mr + j * sk];
        if (additive) {
          const T a = am[mr + j * sk];
          if (a <= hidden_at) hidden = true;  // also true for −inf
          else s += a;
        }
        row[j] = hidden ? -inf : s;
      }
    }
    for (size_t d = p.batch.size(); d-- > 0;) {  // odometer over the batch dimensions
      mb += ms[d];
      if (++idx[d] < p.batch[d]) break;
      mb -= ms[d] * p.batch[d];
      idx[d] = 0;
    }
  }
}

struct Forward {
  Tensor S, P, O;
};

// forward. Rows i are queries, columns j keys.
//   S = Q Kᵀ · scale (+ mask)    (batch..., Tq, Tk)   scores, −inf where hidden
//   P = softmax(S) along keys     (batch..., Tq, Tk)   weights; a row with no visible key is 0
//   O = P V                       (batch..., Tq, dv)   outputs
Forward attention_forward(const Problem& p) {
  Forward f;
  f.S = matmul(p.q, p.k.transpose(-2, -1));  // gemm with K read transposed in place
  if (f.S.device() == Device::cuda) require_cuda("attention").attention_scale_mask(f.S, p.scale, p.causal, p.mask);
  else dispatch_float(f.S.dtype(), "attention", [&]<typename T>() { scale_and_mask<T>(p, f.S); });
  f.P = softmax(f.S, -1);
  f.O = matmul(f.P, p.v);
  return f;
}

struct Backward {
  Tensor dP, D, dS, dQ, dK, dV;  // dQ, dK, dV still at the expanded batch shape
};

// backward. O_i = Σ_j P_ij v_j and S_ij = q_i · k_j · scale, so with dO = dL/dO:
//   dV = Pᵀ dO                        (batch..., Tk, dv)   dL/dv_j = Σ_i P_ij dO_i
//   dP = dO Vᵀ                        (batch..., Tq, Tk)   dP_ij = dO_i · v_j  (the module's g_ij)
//   D  = rowsum(P ∘ dP)               (batch..., Tq, 1)    the module's ḡ_i
//   dS = P ∘ (dP − D)                 (batch..., Tq, Tk)   the row rule (softmax_backward)
//   dQ = dS K · scale                 (batch..., Tq, dk)   dL/dq_i = Σ_j dS_ij k_j · scale
//   dK = dSᵀ Q · scale                (batch..., Tk, dk)   dL/dk_j = Σ_i dS_ij q_i · scale
// A hidden key has P_ij = 0, so dS_ij = 0: nothing flows through the mask; a row with no visible
// key has P = 0, so its dS row, its dQ row and its share of dK and dV are all 0.
Backward attention_backward(const Problem& p, const Tensor& P, const Tensor& dO, bool need_q, bool need_k, bool need_v) {
  Backward b;
  if (need_v) b.dV = matmul(P.transpose(-2, -1), dO);
  if (!need_q && !need_k) return b;
  b.dP = matmul(dO, p.v.transpose(-2, -1));
  b.dS = softmax_backward(P, b.dP, &b.D);
  if (need_q) b.dQ = matmul(b.dS, p.k).mul_(p.scale);
  if (need_k) b.dK = matmul(b.dS.transpose(-2, -1), p.q).mul_(p.scale);
  return b;
}

// ---------------------------------------------------------------- the fused CPU kernels
//
// The same formulas, one batch slice (one sequence and head) at a time: the slice's gemms and
// rows run back to back on one thread while its (Tq, Tk) block is in cache, the scale rides in
// gemm's alpha (C = alpha · A B rounds as (A B) · scale does), a hidden key is never
// exponentiated, and dP lives in a per-thread scratch block instead of a (batch..., Tq, Tk)
// tensor. Slices are independent, so they are spread over the threads (engine/strided.h).
// attention() runs these; attention_trace keeps the op-by-op path above, and the tests check
// the two against each other (tests/test_attention.cpp, tests/test_parallel.cpp). Measured at
// TinyCharLM's size (B 128, H 4, T 63, d_h 32), forward and backward on one thread: 18 ms fused,
// 26 ms op by op (bench/RESULTS.md).

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

bool fits_blas(const Problem& p) {
  for (int64_t v : {p.Tq, p.Tk, p.dk, p.dv})
    if (v > INT_MAX / 4) return false;
  return true;
}

// One slice's rows: S (Tq, Tk) holds scale · Q Kᵀ; make it P in place. Key j of query i is
// hidden when j >= visible(i) (the causal rule) or the mask says so (as scale_and_mask);
// p = exp(s − m) / Σ exp(s − m) over the rest, 0 where hidden, a row with nothing visible all 0.
// exp is exp_fast: within 2 ulp of std::exp in float32 (softmax_rows's), exact std::exp in float64;
// the max and the sum go over 8 lanes (ops/cpu_map.h), so P can differ from softmax()'s in the
// last bits.
template <typename T>
void softmax_slice(const Problem& p, T* S, int64_t mask_off, const Shape& ms) {
  const T hidden_at = std::numeric_limits<T>::lowest() / 2;
  const bool boolean = p.mask.defined() && p.mask.dtype() == DType::b8;
  const bool additive = p.mask.defined() && !boolean;
  const uint8_t* bm = boolean ? p.mask.data_ptr<const uint8_t>() : nullptr;
  const T* am = additive ? p.mask.data_ptr<const T>() : nullptr;
  const int64_t sq = p.mask.defined() ? ms[ms.size() - 2] : 0, sk = p.mask.defined() ? ms.back() : 0;
  const int64_t Tk = p.Tk;
  for (int64_t i = 0; i < p.Tq; ++i) {
    T* row = S + i * Tk;
    const int64_t visible = p.causal ? std::min(Tk, i + 1) : Tk;
    const int64_t mr = mask_off + i * sq;
    if (boolean || additive)
      for (int64_t j = 0; j < visible; ++j) {
        if (boolean && !bm[mr + j * sk]) row[j] = -std::numeric_limits<T>::infinity();
        if (additive) {
          const T a = am[mr + j * sk];
          row[j] = a <= hidden_at ? -std::numeric_limits<T>::infinity() : row[j] + a;
        }
      }
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
  ms = broadcast_strides("attention", p.mask, scores);
  s.batch = p.batch;
  s.bstrides.assign(ms.begin(), ms.end() - 2);
  return s;
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

}  // namespace

// The backward for create_graph: the formulas of attention_backward written with recorded ops
// (matmul, the row rule softmax_backward — itself twice differentiable), on weights P recomputed
// from the given q, k, v so that P's own dependence on q and k is on the graph too. The scale and
// mask enter as S = (Q Kᵀ) · scale + M, with M = the mask rule applied to zeros: 0 where visible,
// the additive value, or −inf where hidden (the same function as the forward's, so the same rule).
Backward composed_backward(const Problem& p, const Tensor& dO, bool need_q, bool need_k, bool need_v) {
  Tensor M = zeros(with_last2(p.batch, p.Tq, p.Tk), p.q.dtype(), p.q.device());  // (batch..., Tq, Tk)
  {
    NoGradGuard ng;
    if (M.device() == Device::cuda) require_cuda("attention").attention_scale_mask(M, p.scale, p.causal, p.mask);
    else dispatch_float(M.dtype(), "attention", [&]<typename T>() { scale_and_mask<T>(p, M); });
  }
  Tensor P = softmax(add(mul(matmul(p.q, p.k.transpose(-2, -1)), p.scale), M), -1);
  Backward b;
  if (need_v) b.dV = matmul(P.transpose(-2, -1), dO);
  if (!need_q && !need_k) return b;
  b.dP = matmul(dO, p.v.transpose(-2, -1));
  b.dS = softmax_backward(P, b.dP);
  if (need_q) b.dQ = mul(matmul(b.dS, p.k), p.scale);
  if (need_k) b.dK = mul(matmul(b.dS.transpose(-2, -1), p.q), p.scale);
  return b;
}

// What it saves: Q, K, V (detached aliases, checked for in-place writes) and the weights P
// (batch..., Tq, Tk) — P carries the mask (0 where hidden), so the mask itself is not kept.
// FlashAttention saves only the row log-sum-exp and recomputes P; here P is kept so the
// backward is exactly the formulas above, with no second softmax.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts, Site where) {
  Problem p = prepare("attention", q, k, v, opts);
  // On CUDA the op-by-op path runs: its gemms are cuBLAS and its rows the kernels of cuda/rows.cu.
  const bool fused = q.device() == Device::cpu && fits_blas(p) && p.Tq > 0 && p.Tk > 0 && p.dk > 0 && p.dv > 0 && shape_numel(p.batch) > 0;
  Forward f;
  {
    NoGradGuard ng;
    f = fused ? fused_forward(p) : attention_forward(p);
  }
  if (should_record({q, k, v})) {
    const bool nq = q.requires_grad(), nk = k.requires_grad(), nv = v.requires_grad();
    const Shape sq = q.shape(), sk = k.shape(), sv = v.shape();
    Problem shapes = p;  // keep only what backward needs: the geometry, the scale, the mask
    shapes.q = shapes.k = shapes.v = Tensor();  // (the mask only for create_graph's recomputed P)
    record("attention", {q, k, v}, {f.O},
           {save(q, "query Q"), save(k, "key K"), save(v, "value V"), save(f.P, "attention weights P")},
           [=](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
             Problem pb = shapes;
             pb.q = expand(s[0], with_last2(pb.batch, pb.Tq, pb.dk));
             pb.k = expand(s[1], with_last2(pb.batch, pb.Tk, pb.dk));
             pb.v = expand(s[2], with_last2(pb.batch, pb.Tk, pb.dv));
             Backward b = grad_enabled() ? composed_backward(pb, g[0], nq, nk, nv)
                          : fused         ? fused_backward(pb, s[3], g[0], nq, nk, nv)
                                          : attention_backward(pb, s[3], g[0], nq, nk, nv);
             return std::vector<Tensor>{nq ? sum_to(b.dQ, sq) : Tensor(), nk ? sum_to(b.dK, sk) : Tensor(),
                                        nv ? sum_to(b.dV, sv) : Tensor()};
           }, DoubleBackward::composed, where);
  }
  return f.O;
}

AttentionTrace attention_trace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dO,
                               const AttentionOptions& opts) {
  Problem p = prepare("attention_trace", q, k, v, opts);
  const Shape o_shape = with_last2(p.batch, p.Tq, p.dv);
  if (!dO.defined() || dO.shape() != o_shape)
    fail("attention_trace", "dO {} must have the shape of the output O {} (Q {}, K {}, V {})",
         dO.defined() ? shape_str(dO.shape()) : "(undefined)", shape_str(o_shape), shape_str(q.shape()),
         shape_str(k.shape()), shape_str(v.shape()));
  check_same_dtype_device("attention_trace", q, dO);
  NoGradGuard ng;
  Forward f = attention_forward(p);
  Backward b = attention_backward(p, f.P, dO.detach(), true, true, true);
  AttentionTrace t;
  t.S = f.S;
  t.P = f.P;
  t.O = f.O;
  t.dO = dO.detach();
  t.dP = b.dP;
  t.D = b.D;
  t.dS = b.dS;
  t.dQ = sum_to(b.dQ, q.shape());
  t.dK = sum_to(b.dK, k.shape());
  t.dV = sum_to(b.dV, v.shape());
  t.scale = p.scale;
  return t;
}

Tensor causal_mask(int64_t T) {
  if (T < 0) fail("causal_mask", "T must be non-negative, got {}", T);
  std::vector<bool> m(static_cast<size_t>(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) m[static_cast<size_t>(i * T + j)] = j <= i;
  return bool_tensor(m, {T, T});
}

}  // namespace hg
