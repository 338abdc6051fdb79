// ops/attention.cpp — scaled dot-product attention: forward, the hand-written backward, the tangent.
//
// One graph node, "attention", whose backward is the module's formulas, computed on one of two
// paths (AttentionOptions::path, ops/attention.h):
//   materialized  S and P in full. Written op by op here (attention_forward, attention_backward:
//                 each a batched gemm through matmul — ops/gemm.h, or cuBLAS on a CUDA tensor — or
//                 the row rule softmax_backward), which attention_trace (ops/attention_trace.cpp)
//                 runs and returns every buffer of, and which attention() runs on CUDA tensors;
//                 and fused per batch slice on the CPU (ops/attention_cpu.cpp), which attention()
//                 runs there, being faster.
//   tiled         FlashAttention-2 on the CPU (ops/attention_tiled.cpp): O and the row
//                 log-sum-exp kept, P recomputed tile by tile in the backward.
// The tests hold every path to the others. The mask rule is stated once per device:
// ops/attention_cpu.h (MaskRule) and cuda/attention_mask.cuh; the NaN rule, once, in
// ops/attention.h, and each path applies it where its row rule and its dK product are.
#include "ops/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

// attention's private helpers and the paths' shared entries (ops/attention_paths.h), in the
// family's detail namespace; the public functions below the namespace name what they use.
namespace attention_detail {

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
// recorded ops for create_graph (RecordedSteps, composed_backward below).
template <typename Steps>
Backward backward_formulas(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need, const Steps& steps) {
  Backward b;
  if (need.v) b.dV = matmul(P.transpose(-2, -1), dO);                                // dV = Pᵀ dO
  if (!need.q && !need.k && !need.ds) return b;
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

Backward attention_backward(const Problem& p, const Tensor& P, const Tensor& dO, const Needs& need) {
  return backward_formulas(p, P, dO, need, InPlaceSteps{p});
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

Backward composed_backward(const Problem& p, const Tensor& dO, const Tensor& live_mask,
                                             const Needs& need) {
  const RecordedWeights w = recorded_weights(p, live_mask);
  return backward_formulas(p, w.P, dO, need, RecordedSteps{p, w.hidden});
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

namespace {

// The tiled path on the tensors' device: ops/attention_tiled.cpp or cuda/attention_tiled_*.cu.
TiledForward run_tiled_forward(const Problem& p) {
  return on_device("attention", {p.q, p.k, p.v, p.mask}, [&] { return tiled_forward(p); }, HG_CUDA([&] {
    TiledForward f;
    f.O = cuda::attention_tiled_forward(p.q, p.k, p.v, p.mask, p.scale, p.causal, &f.L);
    return f;
  }()));
}

// The forward with its tangent in tiles, on the tensors' device: ops/attention_tiled.cpp or
// cuda/attention_tiled_tangent.cu. dq, dk, dv expanded as p.q, p.k, p.v (undefined: not moving).
TiledTangent run_tiled_tangent(const Problem& p, const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  return on_device("attention", {p.q, p.k, p.v, p.mask}, [&] { return tiled_forward_tangent(p, dq, dk, dv); },
                   HG_CUDA([&] {
                     TiledTangent t;
                     t.O = cuda::attention_tiled_tangent(p.q, p.k, p.v, p.mask, p.scale, p.causal, dq, dk, dv, &t.L,
                                                         &t.Odot);
                     return t;
                   }()));
}

Backward run_tiled_backward(const Problem& p, const Tensor& O, const Tensor& L, const Tensor& dO, const Needs& need) {
  return on_device("attention backward", {p.q, O, dO}, [&] { return tiled_backward(p, O, L, dO, need); }, HG_CUDA([&] {
    Backward b;
    if (need.q || need.k || need.v)
      cuda::attention_tiled_backward(p.q, p.k, p.v, p.mask, p.scale, p.causal, O, L, dO, need.q ? &b.dQ : nullptr,
                                     need.k ? &b.dK : nullptr, need.v ? &b.dV : nullptr, nullptr);
    // A live mask's gradient summed to the mask's shape in the kernel: no (batch..., Tq, Tk) dS.
    if (need.ds) b.dMask = cuda::attention_tiled_mask_grad(p.q, p.k, p.v, p.mask, p.scale, p.causal, O, L, dO);
    return b;
  }()));
}

// The recorded backward: the gradients of Q, K, V (and of a live additive mask) from whichever
// path ran. `saved`: Q, K, V, then P (materialized) or O, L (tiled), then the live mask.
struct RecordedAttention {
  Problem shapes;  // the geometry, the scale and the mask; q, k, v come from the saved tensors
  AttentionPath path = AttentionPath::materialized;
  bool fused = false;  // the materialized path's fused CPU kernels ran
  Needs need;
  bool mask_input = false;  // the additive mask is an input (it requires grad, or carries a tangent)
  Shape sq, sk, sv, smask;
};

std::vector<Tensor> attention_grads(const RecordedAttention& r, const Tensor& dO, const std::vector<Tensor>& s, bool composed) {
  Problem pb = r.shapes;
  pb.q = expand(s[0], with_last2(pb.batch, pb.Tq, pb.dk));
  pb.k = expand(s[1], with_last2(pb.batch, pb.Tk, pb.dk));
  pb.v = expand(s[2], with_last2(pb.batch, pb.Tk, pb.dv));
  const bool tiled = r.path == AttentionPath::tiled;
  const Tensor live_mask = r.need.ds ? s.back() : Tensor();
  Backward b;
  if (composed) b = composed_backward(pb, dO, live_mask, r.need);
  else if (tiled) b = run_tiled_backward(pb, s[3], s[4], dO, r.need);
  else if (r.fused) b = fused_backward(pb, s[3], dO, r.need);
  else b = attention_backward(pb, s[3], dO, r.need);
  std::vector<Tensor> out{r.need.q ? sum_to(b.dQ, r.sq) : Tensor(), r.need.k ? sum_to(b.dK, r.sk) : Tensor(),
                          r.need.v ? sum_to(b.dV, r.sv) : Tensor()};
  if (r.need.ds) out.push_back(b.dMask.defined() ? b.dMask : sum_to(b.dS, r.smask));
  else if (r.mask_input) out.push_back(Tensor());
  return out;
}

}  // namespace

}  // namespace attention_detail

// What it saves (kAttention): Q, K, V, and P on the materialized path — P carries the mask (0 where
// hidden), so a constant mask is not kept — or, on the tiled path, only O and L, from which the
// backward recomputes P tile by tile (ops/attention_tiled.cpp); a mask that requires grad is an input.
constexpr OpDef kAttention{.name = "attention",
                           .saves = {{"query Q", "dK = dSᵀ Q"}, {"key K", "dQ = dS K"}, {"value V", "dP = dO Vᵀ"},
                                     {"attention weights P", "dV = Pᵀ dO, and the row rule", "on the materialized path"},
                                     {"output O", "D = rowsum(dO ∘ O)", "on the tiled path"},
                                     {"row log-sum-exp L", "P, recomputed tile by tile", "on the tiled path"},
                                     {"additive mask", "its gradient is dS summed to its shape", "when it requires grad"}},
                           .derivation = "ops/attention.cpp",
                           .fused = "by path: the fused CPU kernels, the row-rule backward or the tiled one",
                           .tangent = "Ṡ = (Q̇ Kᵀ + Q K̇ᵀ)·scale + Ṁ, Ṗ = P ∘ (Ṡ − rowsum(P ∘ Ṡ)), Ȯ = Ṗ V + P V̇"};
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts, Site where) {
  using namespace attention_detail;  // here only: a file-scope directive would leak into a unity build's other files
  Problem p = prepare("attention", q, k, v, opts);
  const AttentionPath path = resolve_path(p, opts.path);
  const bool live_mask = opts.mask.defined() && opts.mask.requires_grad() && grad_enabled();
  const bool mask_input = live_mask || has_tangent(opts.mask);  // a mask that moves is an input too
  const bool empty_problem = p.Tq == 0 || p.Tk == 0 || p.dk == 0 || p.dv == 0 || shape_numel(p.batch) == 0;
  // On CUDA the materialized path runs op by op: its gemms are cuBLAS and its rows the kernels of cuda/rows.cu.
  const bool fused = path == AttentionPath::materialized && q.device() == Device::cpu && fits_blas(p) && !empty_problem;
  // The tangent in tiles, in the forward's own pass, where nothing asks it to be differentiable
  // again (else composed_tangent, below: recorded ops, (batch..., Tq, Tk) memory).
  const bool moving = detail::any_tangent({q, k, v});
  bool tangent_graph = false;
  for (const Tensor& t : {q, k, v, tangent_of(q), tangent_of(k), tangent_of(v)})
    tangent_graph = tangent_graph || (t.defined() && t.requires_grad() && grad_enabled());
  const bool tiled_tangent = path == AttentionPath::tiled && moving && !tangent_graph && !has_tangent(opts.mask) &&
                             !empty_problem;
  Forward f;
  TiledForward tf;
  Tensor odot;  // Ȯ, when the tiles computed it
  {
    NoGradGuard ng;
    if (tiled_tangent) {
      auto moved = [&](const Tensor& x, int64_t rows, int64_t cols) {
        const Tensor t = tangent_of(x);
        return t.defined() ? expand(t.detach(), with_last2(p.batch, rows, cols)) : Tensor();
      };
      TiledTangent tt = run_tiled_tangent(p, moved(q, p.Tq, p.dk), moved(k, p.Tk, p.dk), moved(v, p.Tk, p.dv));
      tf.O = tt.O, tf.L = tt.L, odot = tt.Odot;
    } else if (path == AttentionPath::tiled) {
      tf = run_tiled_forward(p);
    } else {
      f = fused ? fused_forward(p) : attention_forward(p);
    }
  }
  const Tensor out = path == AttentionPath::tiled ? tf.O : f.O;
  std::vector<Tensor> inputs{q, k, v};
  if (mask_input) inputs.push_back(opts.mask);
  if (should_record(inputs)) {
    RecordedAttention r;
    r.shapes = p;
    r.shapes.q = r.shapes.k = r.shapes.v = Tensor();
    r.path = path;
    r.fused = fused;
    r.need = {q.requires_grad(), k.requires_grad(), v.requires_grad(), live_mask};
    r.mask_input = mask_input;
    r.sq = q.shape(), r.sk = k.shape(), r.sv = v.shape();
    if (live_mask) r.smask = opts.mask.shape();
    std::vector<SavedTensor> saved{save(q, "query Q"), save(k, "key K"), save(v, "value V")};
    if (path == AttentionPath::tiled) {
      saved.push_back(save(tf.O, "output O"));
      saved.push_back(save(tf.L, "row log-sum-exp L"));
    } else {
      saved.push_back(save(f.P, "attention weights P"));
    }
    if (live_mask) saved.push_back(save(opts.mask, "additive mask"));
    record(kAttention, inputs, {out}, std::move(saved), [r](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return attention_grads(r, g[0], s, true);
    }, [r](const std::vector<Tensor>& g, const std::vector<Tensor>& s) { return attention_grads(r, g[0], s, false); },
    [&](const std::vector<Tensor>& d) {
      if (odot.defined()) return std::vector<Tensor>{odot};
      Problem pt = p;  // the given tensors, expanded, so that the tangent's own graph reaches them
      pt.q = expand(q, with_last2(p.batch, p.Tq, p.dk));
      pt.k = expand(k, with_last2(p.batch, p.Tk, p.dk));
      pt.v = expand(v, with_last2(p.batch, p.Tk, p.dv));
      return std::vector<Tensor>{composed_tangent(pt, mask_input ? opts.mask : Tensor(), d)};
    }, where);
  }
  return out;
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> attention_ops() {
  static const OpDef* const defs[] = {&kAttention};
  return defs;
}

}  // namespace hg
