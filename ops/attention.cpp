// ops/attention.cpp — attention(): which code runs for a call, chosen once, and the node it records.
//
// attention() reads top to bottom:
//   validate  prepare (ops/attention_problem.cpp): the inputs checked and expanded to one batch shape
//   plan      plan (ops/attention_problem.cpp): the kernels — op by op, fused per batch slice, or
//             tiled — and what the node needs (which gradients, a live mask, the tangent in tiles)
//   run       run_forward: one forward per kernel set, keeping what its backward reads
//   record    record_attention: the node, whose backward is run_backward (one per kernel set) or,
//             under create_graph, composed_backward; its tangent Ȯ from the tiles, or recorded ops
// The kernels: ops/attention_formulas.cpp (op by op, and with recorded ops), ops/attention_cpu.cpp
// (fused per slice), ops/attention_tiled*.cpp (FlashAttention-2), cuda/attention*.cu. The tests hold
// every path to the others.
#include "ops/attention.h"

#include <vector>

#include "cuda/ops.h"
#include "engine/forward.h"
#include "engine/tape.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace hg {

// What it saves (kAttention): Q, K, V, and P on the materialized path — P carries the mask (0 where
// hidden), so a constant mask is not kept — or, on the tiled path, only O and L, from which the
// backward recomputes P tile by tile (ops/attention_tiled.cpp); a mask that requires grad is an input.
constexpr OpDef kAttention{.name = "attention",
                           .saves = {{"query Q", "dK = dSᵀ Q"}, {"key K", "dQ = dS K"}, {"value V", "dP = dO Vᵀ"},
                                     {"attention weights P", "dV = Pᵀ dO, and the row rule", "on the materialized path"},
                                     {"output O", "D = rowsum(dO ∘ O)", "on the tiled path"},
                                     {"row log-sum-exp L", "P, recomputed tile by tile", "on the tiled path"},
                                     {"additive mask", "its gradient is dS summed to its shape", "when it requires grad"}},
                           .derivation = "ops/attention_formulas.cpp",
                           .fused = "by path: the fused CPU kernels, the row-rule backward or the tiled one",
                           .tangent = "Ṡ = (Q̇ Kᵀ + Q K̇ᵀ)·scale + Ṁ, Ṗ = P ∘ (Ṡ − rowsum(P ∘ Ṡ)), Ȯ = Ṗ V + P V̇"};
struct AttentionSaved {  // the slots of kAttention's saves
  static constexpr SavedSlot q = kAttention.slot("query Q"), k = kAttention.slot("key K"), v = kAttention.slot("value V"),
                             P = kAttention.slot("attention weights P"), O = kAttention.slot("output O"),
                             L = kAttention.slot("row log-sum-exp L"), mask = kAttention.slot("additive mask");
};


namespace attention_detail {

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

Backward run_tiled_backward(const Problem& p, const Tensor& O, const Tensor& L, const Tensor& dO, const Needs& need,
                            bool live_mask) {
  return on_device("attention backward", {p.q, O, dO}, [&] { return tiled_backward(p, O, L, dO, need, live_mask); },
                   HG_CUDA([&] {
    Backward b;
    if (need.q || need.k || need.v)
      cuda::attention_tiled_backward(p.q, p.k, p.v, p.mask, p.scale, p.causal, O, L, dO, need.q ? &b.dQ : nullptr,
                                     need.k ? &b.dK : nullptr, need.v ? &b.dV : nullptr, nullptr);
    // A live mask's gradient summed to the mask's shape in the kernel: no (batch..., Tq, Tk) dS.
    if (live_mask) b.dMask = cuda::attention_tiled_mask_grad(p.q, p.k, p.v, p.mask, p.scale, p.causal, O, L, dO);
    return b;
  }()));
}

// What a forward leaves: O, and what its backward reads — P (op by op, fused) or L (tiled) — and
// Ȯ where the tiles computed it.
struct Kept {
  Tensor O{}, P{}, L{}, Odot{};
};

// x's tangent detached and expanded as the problem's copy of x is (undefined: x does not move).
Tensor moving(const Tensor& x, const Shape& expanded) {
  const Tensor t = tangent_of(x);
  return t.defined() ? expand(t.detach(), expanded) : Tensor();
}

// The forward of the planned kernels.
Kept run_forward(const Plan& plan, const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v) {
  switch (plan.kernels) {
    case Kernels::ops: {
      const Forward f = attention_forward(p);
      return {.O = f.O, .P = f.P};
    }
    case Kernels::fused: {
      const Forward f = fused_forward(p, SliceReader::plain());
      return {.O = f.O, .P = f.P};
    }
    case Kernels::tiled:
      if (plan.tangent_in_tiles) {
        const TiledTangent t = run_tiled_tangent(p, moving(q, p.q.shape()), moving(k, p.k.shape()), moving(v, p.v.shape()));
        return {.O = t.O, .L = t.L, .Odot = t.Odot};
      }
      const TiledForward f = run_tiled_forward(p);
      return {.O = f.O, .L = f.L};
  }
  return {};
}

// The backward of the planned kernels, from the saved tensors (read by slot).
Backward run_backward(const Plan& plan, const Problem& p, const Saved& s, const Tensor& dO) {
  using S = AttentionSaved;
  switch (plan.kernels) {
    case Kernels::ops: return attention_backward(p, s[S::P], dO, plan.need, plan.live_mask);
    case Kernels::fused:
      return fused_backward(p, s[S::P], dO, plan.need, plan.live_mask, SliceReader::plain(), GradientWriters{});
    case Kernels::tiled: return run_tiled_backward(p, s[S::O], s[S::L], dO, plan.need, plan.live_mask);
  }
  return {};
}

// What the recorded backward needs besides the saved tensors.
struct RecordedAttention {
  Problem shapes;  // the geometry, the scale and the mask; q, k, v come from the saved tensors
  Plan plan;
  Shape sq{}, sk{}, sv{}, smask{};  // the inputs' own shapes, to sum the gradients back to
};

// The gradients of Q, K, V (and of a live additive mask): the planned kernels' backward, or under
// create_graph the composed one, summed back to each input's shape.
std::vector<Tensor> attention_grads(const RecordedAttention& r, const Tensor& dO, const Saved& s,
                                    bool composed) {
  using S = AttentionSaved;
  Problem pb = r.shapes;
  pb.q = expand(s[S::q], with_last2(pb.batch, pb.Tq, pb.dk));
  pb.k = expand(s[S::k], with_last2(pb.batch, pb.Tk, pb.dk));
  pb.v = expand(s[S::v], with_last2(pb.batch, pb.Tk, pb.dv));
  const Needs& need = r.plan.need;
  const Backward b = composed ? composed_backward(pb, dO, r.plan.live_mask ? s[S::mask] : Tensor(), need)
                              : run_backward(r.plan, pb, s, dO);
  std::vector<Tensor> out{need.q ? sum_to(b.dQ, r.sq) : Tensor(), need.k ? sum_to(b.dK, r.sk) : Tensor(),
                          need.v ? sum_to(b.dV, r.sv) : Tensor()};
  if (r.plan.live_mask) out.push_back(b.dMask.defined() ? b.dMask : sum_to(b.dS, r.smask));
  else if (r.plan.mask_input) out.push_back(Tensor());
  return out;
}

// The node: Q, K, V and what the forward kept saved by slot; the backward by plan; the tangent Ȯ
// from the tiles where they computed it, else in recorded ops on the given tensors (so that the
// tangent's own graph reaches them).
void record_attention(const Plan& plan, const Problem& p, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& mask, const Kept& kept, Site where) {
  std::vector<Tensor> inputs{q, k, v};
  if (plan.mask_input) inputs.push_back(mask);
  if (!should_record(inputs)) return;
  RecordedAttention r{.shapes = p, .plan = plan, .sq = q.shape(), .sk = k.shape(), .sv = v.shape()};
  r.shapes.q = r.shapes.k = r.shapes.v = Tensor();
  if (plan.live_mask) r.smask = mask.shape();
  using S = AttentionSaved;
  std::vector<SavedTensor> saved{save(S::q, q), save(S::k, k), save(S::v, v)};
  if (kept.P.defined()) saved.push_back(save(S::P, kept.P));
  if (kept.L.defined()) {
    saved.push_back(save(S::O, kept.O));
    saved.push_back(save(S::L, kept.L));
  }
  if (plan.live_mask) saved.push_back(save(S::mask, mask));
  record(kAttention, inputs, {kept.O}, std::move(saved),
         [r](const std::vector<Tensor>& g, const Saved& s) { return attention_grads(r, g[0], s, true); },
         [r](const std::vector<Tensor>& g, const Saved& s) { return attention_grads(r, g[0], s, false); },
         [&](const std::vector<Tensor>& d) {
           if (kept.Odot.defined()) return std::vector<Tensor>{kept.Odot};
           Problem pt = p;
           pt.q = expand(q, p.q.shape()), pt.k = expand(k, p.k.shape()), pt.v = expand(v, p.v.shape());
           return std::vector<Tensor>{composed_tangent(pt, plan.mask_input ? mask : Tensor(), d)};
         },
         where);
}

}  // namespace

}  // namespace attention_detail

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts, Site where) {
  using namespace attention_detail;  // here only: a file-scope directive would leak into a unity build's other files
  const Problem p = prepare("attention", q, k, v, opts);
  const Plan plan = make_plan(p, opts.path, q, k, v, opts.mask);
  Kept kept;
  {
    NoGradGuard ng;
    kept = run_forward(plan, p, q, k, v);
  }
  record_attention(plan, p, q, k, v, opts.mask, kept, where);
  return kept.O;
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> attention_ops() {
  static const OpDef* const defs[] = {&kAttention};
  return defs;
}

}  // namespace hg
