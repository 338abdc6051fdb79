// ops/attention_formulas.cpp — attention's formulas written op by op: the materialized forward
// and backward (S, P, O; dV, dP, D, dS, dQ, dK), each a batched gemm through matmul (ops/gemm.h, or
// cuBLAS on a CUDA tensor) or the row rule softmax_backward, which attention() runs on CUDA tensors
// and attention_trace (ops/attention_trace.cpp) returns every buffer of; and the same formulas with
// recorded ops, for create_graph (composed_backward) and forward mode (composed_tangent).
// The mask rule is stated once per device: ops/attention_cpu.h (MaskRule) and
// cuda/attention_mask.cuh; the NaN rule, once, in ops/attention.h.
#include <cmath>
#include <limits>
#include <vector>

#include "cuda/ops.h"
#include "engine/tape.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/matmul.h"
#include "ops/softmax.h"
#include "ops/tangent.h"

namespace hg::attention_detail {

namespace {

// S ← S · scale (+ mask), −inf where hidden: the mask rule on S's device.
void scale_and_mask(const Problem& p, Tensor& S) {
  on_device("attention", {S}, [&] { scale_and_mask_cpu(p, S); },
            HG_CUDA(cuda::attention_scale_mask(S, p.scale, p.causal, p.mask)));
}

// The NaN rule's zero (ops/attention.h) on X (P or dS) in the rows whose flags (O or D) hold a NaN.
void zero_hidden_in_nan_rows(const Problem& p, const Tensor& X, const Tensor& flags) {
  if (!p.causal && !p.mask.defined()) return;  // no key is hidden
  on_device("attention", {X, flags}, [&] { zero_hidden_in_nan_rows_cpu(p, X, flags); },
            HG_CUDA(cuda::attention_zero_hidden(X, p.causal, p.mask, flags)));
}

// Q as dK = dSᵀ Q reads it under the NaN rule: a NaN or ±inf entry is 0.
Tensor finite_queries(const Problem& p) {
  return on_device("attention backward", {p.q}, [&] { return finite_part_cpu(p.q); },
                   HG_CUDA(cuda::attention_finite_part(p.q)));
}

// forward. Rows i are queries, columns j keys.
//   S = Q Kᵀ · scale (+ mask)    (batch..., Tq, Tk)   scores, −inf where hidden
//   P = softmax(S) along keys     (batch..., Tq, Tk)   weights; a row with no visible key is 0
//   O = P V                       (batch..., Tq, dv)   outputs
// A NaN row's P is NaN at its hidden keys too, by the arithmetic (e^(−inf − m) · 1/NaN); the NaN
// rule makes those 0 after the softmax, finding the rows by their NaN in O (in P when dv = 0).
}  // namespace

Forward attention_forward(const Problem& p) {
  Forward f;
  f.S = matmul(p.q, p.k.transpose(-2, -1));  // gemm with K read transposed in place
  scale_and_mask(p, f.S);
  f.P = softmax(f.S, -1);
  f.O = matmul(f.P, p.v);
  zero_hidden_in_nan_rows(p, f.P, p.dv > 0 ? f.O : f.P);
  return f;
}

namespace {

// backward. O_i = Σ_j P_ij v_j and S_ij = q_i · k_j · scale, so with dO = dL/dO:
//   dV = Pᵀ dO                        (batch..., Tk, dv)   dL/dv_j = Σ_i P_ij dO_i
//   dP = dO Vᵀ                        (batch..., Tq, Tk)   dP_ij = dO_i · v_j  (the module's g_ij)
//   D  = rowsum(P ∘ dP)               (batch..., Tq, 1)    the module's ḡ_i
//   dS = P ∘ (dP − D)                 (batch..., Tq, Tk)   the row rule (softmax_backward)
//   dQ = dS K · scale                 (batch..., Tq, dk)   dL/dq_i = Σ_j dS_ij k_j · scale
//   dK = dSᵀ Q · scale                (batch..., Tk, dk)   dL/dk_j = Σ_i dS_ij q_i · scale
//   dM = dS summed to the mask's shape  (an additive mask M that requires grad: S_ij = … + M_ij)
// A hidden key has P_ij = 0, so dS_ij = 0: nothing flows through it; a row with no visible key has
// P = 0, so its dS row, its dQ row and its share of dK and dV are all 0. In a NaN row D is NaN and
// dS_ij = 0 · (dP_ij − NaN) at a hidden key: the NaN rule (ops/attention.h) makes it 0 again,
// found by the row's D, and dK reads a NaN or ±inf of Q as 0.
// The formulas are stated once, in backward_formulas; `steps` says how three of their steps run:
// in place on the given tensors (InPlaceSteps: attention_trace, and attention() on CUDA) or with
// recorded ops for create_graph (RecordedSteps, composed_backward below). A live mask asks for dS.
template <typename Steps>
Backward backward_formulas(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need, bool live_mask,
                           const Steps& steps) {
  Backward b;
  if (need.v) b.dV = matmul(P.transpose(-2, -1), dO);                                // dV = Pᵀ dO
  if (!need.q && !need.k && !live_mask) return b;
  b.dP = matmul(dO, p.v.transpose(-2, -1));                                          // dP = dO Vᵀ
  b.dS = steps.nan_rule(softmax_backward(P, b.dP, &b.D), b.D);                       // dS = P ∘ (dP − D)
  if (need.q) b.dQ = steps.scaled(matmul(b.dS, p.k));                                // dQ = dS K · scale
  if (need.k) b.dK = steps.scaled(matmul(b.dS.transpose(-2, -1), steps.queries()));  // dK = dSᵀ Q · scale
  return b;
}

// The steps on the given tensors: the NaN rule's zero in place, found by the row's D; the scale in place.
struct InPlaceSteps {
  const Problem& p;
  Tensor nan_rule(Tensor dS, const Tensor& D) const {
    zero_hidden_in_nan_rows(p, dS, D);
    return dS;
  }
  Tensor scaled(Tensor x) const { return x.mul_(p.scale); }
  Tensor queries() const { return finite_queries(p); }
};

}  // namespace

Backward attention_backward(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need, bool live_mask) {
  return backward_formulas(p, P, dO, need, live_mask, InPlaceSteps{p});
}

namespace {

// A b8 tensor of x's shape on x's device, true where `pick` holds for x's entry (read on the host);
// *any: whether it holds anywhere.
template <typename Pick>
Tensor entries_where(const Tensor& x, Pick pick, bool* any = nullptr) {
  const Tensor on_host = x.detach().to(Device::cpu).to(DType::f64).contiguous();
  std::vector<bool> picked(static_cast<size_t>(on_host.numel()));
  const double* m = on_host.data_ptr<const double>();
  bool some = false;
  for (size_t e = 0; e < picked.size(); ++e) some = (picked[e] = pick(m[e])) || some;
  if (any) *any = some;
  return bool_tensor(picked, x.shape()).to(x.device());
}

// The masked scores' additive part with a live mask on the graph: −inf where the rule hides a key
// (h, where M_const = −inf), the live mask's entry elsewhere. Built as masked_fill, not as
// M_const + (mask − mask.detach()), which is −inf − (−inf) = NaN at a −inf entry.
Tensor live_scores(const Tensor& M_const, const Tensor& h, const Tensor& live_mask) {
  const double ninf = -std::numeric_limits<double>::infinity();
  return add(masked_fill(zeros(M_const.shape(), M_const.dtype(), M_const.device()), h, ninf),
             masked_fill(expand(live_mask, M_const.shape()), h, 0.0));
}

// The backward for create_graph: the formulas of attention_backward written with recorded ops
// (matmul, the row rule softmax_backward — itself twice differentiable), on weights P recomputed
// from the given q, k, v so that P's own dependence on q and k is on the graph too. The scale and
// mask enter as S = (Q Kᵀ) · scale + M, with M = the mask rule applied to zeros: 0 where visible,
// the additive value, or −inf where hidden (the same function as the forward's, so the same rule).
// A live additive mask (one that requires grad) enters M through live_scores: the same numbers,
// with M's dependence on it on the graph. The NaN rule (ops/attention.h) is masked_fill at the
// hidden keys on P and dS, and Q with its NaN and ±inf entries 0 (a where) in dK's product — no
// number changes in a row without a NaN, and the recorded ops differentiate it. `hidden`: b8,
// undefined when no key is hidden.
struct RecordedSteps {
  const Problem& p;
  Tensor hidden;
  Tensor at_hidden_zero(const Tensor& x) const { return hidden.defined() ? masked_fill(x, hidden, 0.0) : x; }
  Tensor nan_rule(const Tensor& dS, const Tensor&) const { return at_hidden_zero(dS); }
  Tensor scaled(const Tensor& x) const { return mul(x, p.scale); }
  Tensor queries() const {
    bool some = false;
    const Tensor non_finite = entries_where(p.q, [](double x) { return !std::isfinite(x); }, &some);
    return some ? where(non_finite, zeros(Shape{}, p.q.dtype(), p.q.device()), p.q) : p.q;
  }
};

// The weights P from the given q, k, v (and live mask) in recorded ops, and where keys are hidden.
struct RecordedWeights {
  Tensor P;
  Tensor hidden;  // b8 (batch..., Tq, Tk); undefined when no key is hidden
};
RecordedWeights recorded_weights(const Problem& p, const Tensor& live_mask) {
  Tensor M = zeros(with_last2(p.batch, p.Tq, p.Tk), p.q.dtype(), p.q.device());  // (batch..., Tq, Tk)
  {
    NoGradGuard ng;
    scale_and_mask(p, M);
  }
  const double ninf = -std::numeric_limits<double>::infinity();
  bool some_hidden = false;
  const Tensor hidden = p.causal || p.mask.defined()  // b8, (batch..., Tq, Tk)
                            ? entries_where(M, [&](double m) { return m == ninf; }, &some_hidden)
                            : Tensor();
  const RecordedSteps steps{p, some_hidden ? hidden : Tensor()};
  if (live_mask.defined()) M = live_scores(M, hidden, live_mask);
  return {steps.at_hidden_zero(softmax(add(mul(matmul(p.q, p.k.transpose(-2, -1)), p.scale), M), -1)), steps.hidden};
}

}  // namespace

Backward composed_backward(const Problem& p, const Tensor& dO, const Tensor& live_mask, const Needs& need) {
  const RecordedWeights w = recorded_weights(p, live_mask);
  return backward_formulas(p, w.P, dO, need, live_mask.defined(), RecordedSteps{p, w.hidden});
}

// tangent. S = Q Kᵀ · scale + M, so by the product rule, with Ṁ a live additive mask's tangent
// (0 where a key is hidden: there S is −inf whatever the mask):
//   Ṡ = (Q̇ Kᵀ + Q K̇ᵀ) · scale + Ṁ                    (batch..., Tq, Tk)
//   Ṗ = P ∘ (Ṡ − rowsum(P ∘ Ṡ))                      softmax's tangent, the row rule on Ṡ
//   Ȯ = Ṗ V + P V̇                                    (batch..., Tq, dv)
// A hidden key has P = 0, so Ṗ = 0 there; a row with no visible key has P = 0 and Ȯ = 0; a NaN row
// stays NaN (its hidden keys 0, as the NaN rule has P). Written with recorded ops on P recomputed
// from the given q, k, v, so the tangent is differentiable again; it holds (batch..., Tq, Tk) on
// every path. `d`: the tangents of q, k, v (and of the mask), each undefined where none.
// Ṡ's part from Q and K, (Q̇ Kᵀ + Q K̇ᵀ) · scale (batch..., Tq, Tk); undefined when neither moves.
Tensor scores_tangent(const Problem& p, const Tensor& dq, const Tensor& dk) {
  const Tensor qk =
      tangent_sum({if_tangent(dq, [&](const Tensor& t) { return matmul(expand(t, with_last2(p.batch, p.Tq, p.dk)), p.k.transpose(-2, -1)); }),
                   if_tangent(dk, [&](const Tensor& t) { return matmul(p.q, expand(t, with_last2(p.batch, p.Tk, p.dk)).transpose(-2, -1)); })},
                  with_last2(p.batch, p.Tq, p.Tk));
  return if_tangent(qk, [&](const Tensor& t) { return mul(t, p.scale); });
}

Tensor hidden_entries(const Tensor& S) {
  const double ninf = -std::numeric_limits<double>::infinity();
  return entries_where(S, [&](double x) { return x == ninf; });
}

Tensor composed_tangent(const Problem& p, const Tensor& mask, const std::vector<Tensor>& d) {
  const Shape scores = with_last2(p.batch, p.Tq, p.Tk), o_shape = with_last2(p.batch, p.Tq, p.dv);
  const Tensor live = mask.defined() && mask.requires_grad() ? mask : Tensor();  // else M holds its values already
  const RecordedWeights w = recorded_weights(p, live);
  const RecordedSteps steps{p, w.hidden};
  const Tensor dmask = d.size() > 3 ? d[3] : Tensor();
  const Tensor Sdot = tangent_sum({scores_tangent(p, d[0], d[1]),
                                   if_tangent(dmask, [&](const Tensor& t) { return steps.at_hidden_zero(expand(t, scores)); })},
                                  scores);
  const Tensor Pdot = if_tangent(Sdot, [&](const Tensor& t) { return steps.at_hidden_zero(softmax_backward(w.P, t)); });
  return tangent_sum({if_tangent(Pdot, [&](const Tensor& t) { return matmul(t, p.v); }),
                      if_tangent(d[2], [&](const Tensor& t) { return matmul(w.P, expand(t, with_last2(p.batch, p.Tk, p.dv))); })},
                     o_shape);
}

}  // namespace hg::attention_detail
