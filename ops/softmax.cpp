// ops/softmax.cpp — softmax and log_softmax along any dimension, the row rule, the Jacobian.
//
// Every kernel here works on rows: the input with the softmax dimension moved last and made
// contiguous, (rows, n). A dimension other than the last costs a transposed copy in and out.
// Notation (module 6): s a row of scores, p = softmax(s) its weights, g = dL/dp.
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/row_rules.h"
#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

namespace {

// x (detached) with `dim` moved last: (..., n) rows, a view (the CPU kernels make it contiguous,
// the CUDA row kernels read any strides). The inverse is from_rows().
Tensor to_rows(const Tensor& x, int64_t dim) {
  Tensor d = x.detach();
  return dim == x.dim() - 1 ? d : d.transpose(dim, -1);
}
Tensor from_rows(const Tensor& y, int64_t dim) {
  return dim == y.dim() - 1 ? y : y.transpose(dim, -1).contiguous();
}

// ---------------------------------------------------------------- row kernels (contiguous)
//
// The softmax row, the log-sum-exp row, the row rule and the policy for a row with no visible key
// or a NaN are cpu/row_rules.h's, the same functions attention's paths call.

template <typename T>
void softmax_rows(const T* s, T* p, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, s += n, p += n) cpu::softmax_row(s, p, n);
}

template <typename T>
void log_softmax_rows(const T* s, T* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, s += n, y += n) cpu::log_softmax_row(s, y, n);
}

// D = Σ_j p_j dp_j,  ds_j = p_j (dp_j - D). D may be null.
template <typename T>
void softmax_backward_rows(const T* p, const T* dp, T* ds, T* D, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, p += n, dp += n, ds += n) {
    std::copy(dp, dp + n, ds);
    const T dot = cpu::row_rule(p, ds, n);
    if (D) D[r] = dot;
  }
}

// ds_j = g_j - p_j Σ_k g_k with p = exp(y); a row of -inf (nothing visible) passes no gradient.
template <typename T>
void log_softmax_backward_rows(const T* y, const T* g, T* ds, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, y += n, g += n, ds += n) {
    T m = -std::numeric_limits<T>::infinity(), total = 0;
    for (int64_t j = 0; j < n; ++j) {
      m = std::max(m, y[j]);
      total += g[j];
    }
    const bool none = m == -std::numeric_limits<T>::infinity() && !cpu::has_nan(y, n);
    for (int64_t j = 0; j < n; ++j) ds[j] = none ? T(0) : g[j] - std::exp(y[j]) * total;
  }
}

// J_ij = p_i δ_ij - p_i p_j, one (n, n) block per row.
template <typename T>
void jacobian_rows(const T* p, T* J, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, p += n, J += n * n)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) J[i * n + j] = (i == j ? p[i] : T(0)) - p[i] * p[j];
}

// dp_k = G_kk - Σ_j (G_kj + G_jk) p_j  (derivation above softmax_jacobian).
template <typename T>
void jacobian_backward_rows(const T* p, const T* G, T* dp, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, p += n, G += n * n, dp += n)
    for (int64_t k = 0; k < n; ++k) {
      T acc = G[k * n + k];
      for (int64_t j = 0; j < n; ++j) acc -= (G[k * n + j] + G[j * n + k]) * p[j];
      dp[k] = acc;
    }
}

// kernel(first, count) over all `rows` rows of n elements, spread over the threads: every row
// kernel above treats its rows independently, so any split gives the same numbers.
template <typename K>
void over_rows(int64_t rows, int64_t n, const K& kernel) {
  parallel_for(rows, 8 * n, [&](int64_t begin, int64_t end) { kernel(begin, end - begin); });
}

// The row rule on the CPU: returns ds = P ∘ (dP − D) and sets dot to D = rowsum(P ∘ dP) (..., 1).
Tensor row_rule_cpu(const Tensor& P, const Tensor& dP, Tensor& dot) {
  Tensor pr = P.detach().contiguous(), gr = dP.detach().contiguous();
  Tensor ds = empty(P.shape(), P.dtype());
  Shape d_shape = P.shape();
  d_shape.back() = 1;
  dot = empty(d_shape, P.dtype());
  const int64_t n = P.size(-1), rows = shape_numel(d_shape);
  dispatch_float(P.dtype(), "softmax_backward", [&]<typename T>() {
    over_rows(rows, n, [&](int64_t r, int64_t count) {
      softmax_backward_rows<T>(pr.data_ptr<const T>() + r * n, gr.data_ptr<const T>() + r * n, ds.data_ptr<T>() + r * n,
                               dot.data_ptr<T>() + r, count, n);
    });
  });
  return ds;
}

// softmax_backward(P, g) as a plain function of two tensors (its public form also takes a Site).
Tensor softmax_row_rule(const Tensor& P, const Tensor& g) { return softmax_backward(P, g); }

// The backward of softmax / log_softmax along `dim`: move dim last, run the row rule, move back.
Tensor along_dim(Tensor (*rule)(const Tensor&, const Tensor&), const Tensor& saved, const Tensor& g, int64_t dim) {
  if (dim == saved.dim() - 1) return rule(saved, g);
  return from_rows(rule(saved.transpose(dim, -1), g.transpose(dim, -1)), dim);
}

// A row kernel over contiguous rows of n: out (shape of a) = kernel(a, b, out) row by row.
template <typename Kernel>
Tensor rows_cpu(const char* op, const Tensor& a, const Tensor& b, Kernel kernel) {
  Tensor ar = a.detach().contiguous(), br = b.defined() ? b.detach().contiguous() : Tensor();
  Tensor out = empty(a.shape(), a.dtype());
  const int64_t n = a.dim() ? a.size(-1) : 1, rows = n ? a.numel() / n : 0;
  dispatch_float(a.dtype(), op, [&]<typename T>() {
    const T* bp = br.defined() ? br.data_ptr<const T>() : nullptr;
    over_rows(rows, n, [&](int64_t r, int64_t count) {
      kernel(ar.data_ptr<const T>() + r * n, bp ? bp + r * n : nullptr, out.data_ptr<T>() + r * n, count, n);
    });
  });
  return out;
}

Tensor log_softmax_backward(const Tensor& y, const Tensor& g) {
  return on_device("log_softmax backward", {y, g}, [&] {
    return rows_cpu("log_softmax backward", y, g, []<typename T>(const T* yr, const T* gr, T* ds, int64_t rows, int64_t n) {
      log_softmax_backward_rows<T>(yr, gr, ds, rows, n);
    });
  }, HG_CUDA(cuda::log_softmax_backward_rows(y.detach(), g.detach())));
}

}  // namespace

// ---------------------------------------------------------------- softmax
//
// forward: p_j = exp(s_j - m) / Σ_k exp(s_k - m) along `dim`, m = max_k s_k (the same p as
// without m; every exponent is <= 0, so nothing overflows).
//
// backward. ∂p_i/∂s_j = p_i (δ_ij - p_j) = J_ij, J symmetric, so with dP = g = dL/dp:
//   dS_j = Σ_i g_i J_ij = p_j g_j - p_j Σ_i p_i g_i = p_j (g_j - ḡ),   ḡ = rowsum(P ∘ dP)
// i.e. dS = P ∘ (dP − rowsum(P ∘ dP)), the row rule — softmax_backward(). A row with no visible
// key has p = 0 and so dS = 0. Saves the output P (the rule needs only P, not s).
//
// tangent. ṗ_i = Σ_j J_ij ṡ_j = p_i (ṡ_i − Σ_j p_j ṡ_j): ṗ = p ∘ (ṡ − ⟨p, ṡ⟩). J is symmetric, so
// this is the row rule again, with ṡ where the backward has dP: softmax_backward(P, ṡ).
constexpr OpDef kSoftmax{.name = "softmax", .saves = {{"softmax output P", "dS = P ∘ (dP − rowsum(P ∘ dP))"}},
                         .derivation = "ops/softmax.cpp", .tangent = "ṗ = p ∘ (ṡ − ⟨p, ṡ⟩)"};
struct SoftmaxSaved { static constexpr SavedSlot P = kSoftmax.slot("softmax output P"); };
Tensor softmax(const Tensor& s, int64_t dim, Site where) {
  dim = wrap_dim("softmax", dim, s.shape());  // a 0-d s takes dim 0 or -1, as one row of one entry
  if (s.dim() == 0) return softmax(s.unsqueeze(0), 0, where).squeeze(0);
  const Tensor x = to_rows(s, dim);  // (rows, n)
  Tensor out = from_rows(on_device("softmax", {s}, [&] {
    return rows_cpu("softmax", x, Tensor(), []<typename T>(const T* sr, const T*, T* p, int64_t rows, int64_t n) {
      softmax_rows<T>(sr, p, rows, n);
    });
  }, HG_CUDA(cuda::softmax_rows(x))), dim);
  if (should_record({s}))
    record(kSoftmax, {s}, {out}, {save(SoftmaxSaved::P, out)}, [dim](const std::vector<Tensor>& g, const Saved& sv) {
      return std::vector<Tensor>{along_dim(&softmax_row_rule, sv[SoftmaxSaved::P], g[0], dim)};
    }, [dim, out](const std::vector<Tensor>& d) { return std::vector<Tensor>{along_dim(&softmax_row_rule, out, d[0], dim)}; },
    where);
  return out;
}

// ---------------------------------------------------------------- the row rule as an op
//
// forward: D = Σ_k P_k dP_k (per row),  dS_j = P_j (dP_j − D).
// backward, with G = dL/d(dS):
//   ∂dS_i/∂dP_j = P_i δ_ij − P_i P_j  (= J_ij)     =>  d(dP) = P ∘ (G − rowsum(P ∘ G)) = softmax_backward(P, G)
//   ∂dS_i/∂P_j  = δ_ij (dP_i − D) − P_i dP_j       =>  d(P)_j = G_j (dP_j − D) − dP_j rowsum(P ∘ G)
// Saves P and dP. D is a side output for traces and is not recorded.
// tangent. The product rule on dS = P ∘ (dP − D), with Ḋ = rowsum(Ṗ ∘ dP + P ∘ dṖ):
//   dṠ = P ∘ (dṖ − rowsum(P ∘ dṖ)) + Ṗ ∘ (dP − D) − P ∘ rowsum(Ṗ ∘ dP)
// — the row rule applied to dṖ, plus the terms in Ṗ.
constexpr OpDef kSoftmaxBackward{.name = "softmax_backward",
                                 .saves = {{"weights P", "d(dP) is the row rule in P"},
                                           {"incoming gradient dP", "d(P) reads dP − D"}},
                                 .derivation = "ops/softmax.cpp",
                                 .tangent = "dṠ = rule(P, dṖ) + Ṗ ∘ (dP − D) − P ∘ rowsum(Ṗ ∘ dP)"};
struct SoftmaxBackwardSaved {  // the slots of kSoftmaxBackward's saves
  static constexpr SavedSlot P = kSoftmaxBackward.slot("weights P");
  static constexpr SavedSlot dP = kSoftmaxBackward.slot("incoming gradient dP");
};
Tensor softmax_backward(const Tensor& P, const Tensor& dP, Site where) { return softmax_backward(P, dP, nullptr, where); }

Tensor softmax_backward(const Tensor& P, const Tensor& dP, Tensor* D, Site where) {
  if (P.shape() != dP.shape())
    fail("softmax_backward", "P {} and dP {} must have the same shape (dP = dL/dP)", shape_str(P.shape()),
         shape_str(dP.shape()));
  check_same_dtype_device("softmax_backward", P, dP);
  if (P.dim() == 0) fail("softmax_backward", "P {} is 0-d; the row rule works along the last dimension", P.describe());
  Tensor dot;  // D, (..., 1)
  Tensor ds = on_device("softmax_backward", {P, dP}, [&] { return row_rule_cpu(P, dP, dot); },
                        HG_CUDA(cuda::softmax_backward_rows(P.detach(), dP.detach(), &dot)));
  if (D) *D = dot;
  if (should_record({P, dP})) {
    const bool gp = P.requires_grad(), gg = dP.requires_grad();
    record(kSoftmaxBackward, {P, dP}, {ds}, {save(SoftmaxBackwardSaved::P, P), save(SoftmaxBackwardSaved::dP, dP)},
           [gp, gg](const std::vector<Tensor>& g, const Saved& s) {
             const Tensor &Ps = s[SoftmaxBackwardSaved::P], &dPs = s[SoftmaxBackwardSaved::dP];
             Tensor dPgrad = gg ? softmax_backward(Ps, g[0]) : Tensor();
             Tensor Pgrad;
             if (gp) {
               Tensor Dv = sum(mul(Ps, dPs), {-1}, true), Gbar = sum(mul(Ps, g[0]), {-1}, true);
               Pgrad = sub(mul(g[0], sub(dPs, Dv)), mul(dPs, Gbar));
             }
             return std::vector<Tensor>{Pgrad, dPgrad};
           }, [&](const std::vector<Tensor>& d) {
             Tensor in_dp = if_tangent(d[1], [&](const Tensor& t) { return softmax_backward(P, t); });
             Tensor in_p = if_tangent(d[0], [&](const Tensor& t) {
               Tensor Dv = sum(mul(P, dP), {-1}, true);
               return sub(mul(t, sub(dP, Dv)), mul(P, sum(mul(t, dP), {-1}, true)));
             });
             return std::vector<Tensor>{tangent_sum({in_dp, in_p}, ds.shape())};
           }, where);
  }
  return ds;
}

// ---------------------------------------------------------------- log_softmax
//
// forward: y_j = s_j − m − log Σ_k exp(s_k − m) along `dim`.
// backward. ∂y_i/∂s_j = δ_ij − p_j with p = exp(y), so dS_j = Σ_i g_i (δ_ij − p_j) = g_j − p_j Σ_i g_i:
//   dS = g − softmax ∘ rowsum(g).
// A row of -inf (nothing visible) gives y = -inf and passes no gradient. Saves the output y
// (p = exp(y) is recomputed from it rather than kept twice). Under create_graph the rule is
// written with recorded ops, which differ only on such a row (they pass g): no finite loss reads it.
constexpr OpDef kLogSoftmax{.name = "log_softmax",
                            .saves = {{"log_softmax output", "p = exp(y), dS = g − p rowsum(g)"}},
                            .derivation = "ops/softmax.cpp", .fused = "the row kernel log_softmax_backward",
                            .tangent = "ẏ = ṡ − ⟨p, ṡ⟩, p = exp(y)"};
struct LogSoftmaxSaved { static constexpr SavedSlot out = kLogSoftmax.slot("log_softmax output"); };
Tensor log_softmax(const Tensor& s, int64_t dim, Site where) {
  dim = wrap_dim("log_softmax", dim, s.shape());
  if (s.dim() == 0) return log_softmax(s.unsqueeze(0), 0, where).squeeze(0);
  const Tensor x = to_rows(s, dim);
  const Tensor y = on_device("log_softmax", {s}, [&] {
    return rows_cpu("log_softmax", x, Tensor(), []<typename T>(const T* sr, const T*, T* yr, int64_t rows, int64_t n) {
      log_softmax_rows<T>(sr, yr, rows, n);
    });
  }, HG_CUDA(cuda::log_softmax_rows(x)));
  Tensor out = from_rows(y, dim);
  if (should_record({s}))
    record(kLogSoftmax, {s}, {out}, {save(LogSoftmaxSaved::out, out)},
           [dim](const std::vector<Tensor>& g, const Saved& sv) {
             Tensor p = exp(sv[LogSoftmaxSaved::out]);  // the rule from recorded ops (see above)
             return std::vector<Tensor>{sub(g[0], mul(p, sum(g[0], {dim}, true)))};
           }, [dim](const std::vector<Tensor>& g, const Saved& sv) {
             return std::vector<Tensor>{along_dim(&log_softmax_backward, sv[LogSoftmaxSaved::out], g[0], dim)};
           }, [dim, out](const std::vector<Tensor>& d) {  // the rows of J = I − 1 pᵀ applied to ṡ
             return std::vector<Tensor>{sub(d[0], sum(mul(exp(out), d[0]), {dim}, true))};
           }, where);
  return out;
}

// ---------------------------------------------------------------- the Jacobian
//
// forward: J_ij = p_i δ_ij − p_i p_j for every row p (..., n) -> (..., n, n).
// backward. J is a polynomial in p: ∂J_ij/∂p_k = δ_ik δ_ij − δ_ik p_j − p_i δ_jk, so with G = dL/dJ
//   dp_k = Σ_ij G_ij ∂J_ij/∂p_k = G_kk − Σ_j G_kj p_j − Σ_i G_ik p_i = G_kk − Σ_j (G_kj + G_jk) p_j.
// Saves p.
// tangent. J̇ = diag(ṗ) − ṗ pᵀ − p ṗᵀ (the product rule on each term).
namespace {

// The Jacobian's backward in recorded ops, for create_graph (the row kernels are its fast path):
//   dp_k = G_kk − Σ_j (G_kj + G_jk) p_j  =  rowsum(G ∘ I) − (G + Gᵀ) p
Tensor jacobian_backward_composed(const Tensor& p, const Tensor& G) {
  const int64_t n = p.size(-1);
  Tensor eye = zeros({n, n}, p.dtype());
  for (int64_t i = 0; i < n; ++i) eye.set_flat(i * n + i, 1.0);
  Tensor diag = sum(mul(G, eye.to(p.device())), {-1});                            // (..., n)
  Tensor mixed = matmul(add(G, G.transpose(-2, -1)), p.unsqueeze(-1)).squeeze(-1);  // (..., n)
  return sub(diag, mixed);
}

}  // namespace

constexpr OpDef kSoftmaxJacobian{.name = "softmax_jacobian",
                                 .saves = {{"softmax weights p", "J is a polynomial in p"}},
                                 .derivation = "ops/softmax.cpp", .fused = "the row kernel jacobian_backward_rows",
                                 .tangent = "J̇ = diag(ṗ) − ṗ pᵀ − p ṗᵀ"};
struct SoftmaxJacobianSaved { static constexpr SavedSlot p = kSoftmaxJacobian.slot("softmax weights p"); };
Tensor softmax_jacobian(const Tensor& p, Site where) {
  if (p.dim() == 0) fail("softmax_jacobian", "p {} is 0-d; give a row (n,) or a batch of rows (..., n)", p.describe());
  Tensor J = on_device("softmax_jacobian", {p}, [&] {
    const int64_t n = p.size(-1), rows = n ? p.numel() / n : 0;
    Shape j_shape = p.shape();
    j_shape.push_back(n);
    Tensor pr = p.detach().contiguous();
    Tensor out = empty(j_shape, p.dtype());  // (..., n, n)
    dispatch_float(p.dtype(), "softmax_jacobian", [&]<typename T>() { jacobian_rows<T>(pr.data_ptr<const T>(), out.data_ptr<T>(), rows, n); });
    return out;
  }, HG_CUDA(cuda::softmax_jacobian_rows(p.detach())));
  if (should_record({p}))
    record(kSoftmaxJacobian, {p}, {J}, {save(SoftmaxJacobianSaved::p, p)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{jacobian_backward_composed(s[SoftmaxJacobianSaved::p], g[0])};
    }, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{on_device("softmax_jacobian backward", {s[SoftmaxJacobianSaved::p], g[0]}, [&] {
        Tensor pc = s[SoftmaxJacobianSaved::p].contiguous(), G = g[0].contiguous();
        Tensor dp = empty(pc.shape(), pc.dtype());
        const int64_t n = pc.size(-1), rows = n ? pc.numel() / n : 0;
        dispatch_float(pc.dtype(), "softmax_jacobian backward", [&]<typename T>() {
          jacobian_backward_rows<T>(pc.data_ptr<const T>(), G.data_ptr<const T>(), dp.data_ptr<T>(), rows, n);
        });
        return dp;
      }, HG_CUDA(cuda::softmax_jacobian_backward_rows(s[SoftmaxJacobianSaved::p], g[0])))};
    }, [p](const std::vector<Tensor>& d) {
      const int64_t n = p.size(-1);
      Tensor eye = zeros({n, n}, p.dtype());
      for (int64_t i = 0; i < n; ++i) eye.set_flat(i * n + i, 1.0);
      Tensor col = d[0].unsqueeze(-1), pcol = p.unsqueeze(-1);  // (..., n, 1)
      Tensor outer = add(mul(col, p.unsqueeze(-2)), mul(pcol, d[0].unsqueeze(-2)));
      return std::vector<Tensor>{sub(mul(col, eye.to(p.device())), outer)};
    }, where);
  return J;
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> softmax_ops() {
  static const OpDef* const defs[] = {&kSoftmax, &kSoftmaxBackward, &kLogSoftmax, &kSoftmaxJacobian};
  return defs;
}

}  // namespace hg
