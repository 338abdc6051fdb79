// ops/attention_qkv.cpp — attention over the heads of a fused projection's output, as one op.
//
// For qkv (B, T, 3d) cut into H heads of d_h = d / H (ops/positional.h, qkv_heads):
//   q, k, v = qkv_heads(qkv, H, rotate)       (B, H, T, d_h) each, q and k rotated by RoPE
//   o       = attention(q, k, v, opts)        (B, H, T, d_h)
// forward:  the same numbers, bit for bit: the fused CPU kernels (ops/attention_cpu.cpp) rotate a
//           head's q and k rows by θ_t into a per-thread block as they reach it, with qkv_heads'
//           own tables and row kernel (ops/rope_rows.h); v is read in place. The rotated (B, H, T,
//           d_h) q and k are never made.
// backward: by the chain rule through the two, with g = dL/do:
//           dq̃, dk̃, dv = attention's backward (ops/attention.h) at the rotated q̃ = R_θ q, k̃ = R_θ k,
//           dqkv[b, t, 0, h] = R_θtᵀ dq̃[b, h, t],  dqkv[b, t, 1, h] = R_θtᵀ dk̃[b, h, t],
//           dqkv[b, t, 2, h] = dv[b, h, t]   (qkv_heads' backward; R_θᵀ = R_−θ)
//           in one pass: the fused backward writes dv into dqkv's v columns and, slice by slice,
//           rotates dq̃ and dk̃ by −θ into its q and k columns. Saves qkv and P.
// create_graph: the same chain written with recorded ops (qkv_heads, attention's composed
//           backward, qkv_heads' written-out backward), so it is differentiable again.
// tangent:  ȯ = attention's tangent along (q̇, k̇, v̇) = qkv_heads(q̇kv): both maps in turn.
// Elsewhere — a mask, the tiled path, a CUDA tensor, an empty problem — it is that composition: the
// plan says which (Plan::qkv_in_one_op, ops/attention_problem.cpp).
#include <vector>

#include "engine/error.h"
#include "engine/forward.h"
#include "engine/tape.h"
#include "ops/attention.h"
#include "ops/attention_paths.h"
#include "ops/positional.h"
#include "ops/registry.h"
#include "ops/rope_rows.h"

namespace hg {

// attention_qkv's private helpers, in the attention family's detail namespace.
namespace attention_detail {

namespace {

using rope_detail::head_view;

// What the backward and the tangent need besides the saved tensors.
struct RecordedQkv {
  Problem shapes;  // the geometry and the scale; q, k, v come from qkv
  Plan plan;
  int64_t heads = 1;
  bool rotate = true;
  double base = 10000.0;
  Site where;

  Problem at(const Tensor& q, const Tensor& k, const Tensor& v) const {
    Problem p = shapes;
    p.q = q, p.k = k, p.v = v;
    return p;
  }
  // How the fused kernels read q and k from qkv: rotated by RoPE, or as they are.
  SliceReader reader() const { return rotate ? SliceReader::rope(base) : SliceReader::plain(); }
};

// The fused backward from the saved qkv and P: dqkv written in one pass (above).
Tensor fused_grad(const RecordedQkv& r, const Tensor& dO, const Tensor& qkv, const Tensor& P) {
  const Problem p = r.at(head_view(qkv, r.heads, 0), head_view(qkv, r.heads, 1), head_view(qkv, r.heads, 2));
  Tensor dqkv = empty(qkv.shape(), qkv.dtype());  // (B, T, 3d), contiguous; every element written
  const GradientWriters into{.dQ = SliceWriter::into(head_view(dqkv, r.heads, 0)),
                             .dK = SliceWriter::into(head_view(dqkv, r.heads, 1)),
                             .dV = SliceWriter::into(head_view(dqkv, r.heads, 2))};
  fused_backward(p, P, dO, r.plan.need, r.plan.live_mask, r.reader(), into);
  return dqkv;
}

// The same chain with recorded ops (create_graph), from qkv itself so its graph reaches it.
Tensor composed_grad(const RecordedQkv& r, const Tensor& dO, const Tensor& qkv) {
  const QkvHeads h = qkv_heads(qkv, r.heads, r.rotate, r.base, r.where);
  const Backward b = composed_backward(r.at(h.q, h.k, h.v), dO, Tensor(), r.plan.need);
  return rope_detail::qkv_heads_grad(b.dQ, b.dK, b.dV, qkv.shape(), r.rotate, r.base, r.where);
}

}  // namespace

}  // namespace attention_detail

constexpr OpDef kAttentionQkv{
    .name = "attention_qkv",
    .saves = {{"fused projection qkv", "q, k, v again: dQ = dS K, dK = dSᵀ Q, dP = dO Vᵀ"},
              {"attention weights P", "dV = Pᵀ dO, and the row rule"}},
    .derivation = "ops/attention_qkv.cpp",
    .fused = "attention's fused CPU backward, rotating dQ and dK by −θ into dqkv as it goes",
    .tangent = "ȯ = attention's tangent along (q̇, k̇, v̇) = qkv_heads(q̇kv)"};
struct AttentionQkvSaved {  // the slots of kAttentionQkv's saves
  static constexpr SavedSlot qkv = kAttentionQkv.slot("fused projection qkv");
  static constexpr SavedSlot P = kAttentionQkv.slot("attention weights P");
};
Tensor attention_qkv(const Tensor& qkv, int64_t heads, bool rotate, const AttentionOptions& opts, double base,
                     Site where) {
  using namespace attention_detail;  // here only: a file-scope directive would leak into a unity build's other files
  using rope_detail::head_view;
  const char* op = kAttentionQkv.c_str();
  rope_detail::check_qkv_heads(op, qkv, heads, rotate, base);
  auto composition = [&] {
    const QkvHeads h = qkv_heads(qkv, heads, rotate, base, where);
    return attention(h.q, h.k, h.v, opts, where);
  };
  RecordedQkv r;
  r.shapes = prepare(op, head_view(qkv, heads, 0), head_view(qkv, heads, 1), head_view(qkv, heads, 2), opts);
  r.plan = make_plan(r.shapes, opts.path, qkv, qkv, qkv, opts.mask);
  if (!r.plan.qkv_in_one_op) return composition();
  r.heads = heads, r.rotate = rotate, r.base = base, r.where = where;
  const Problem& p = r.shapes;
  Forward f;
  {
    NoGradGuard ng;
    f = fused_forward(p, r.reader());
  }
  if (should_record({qkv})) {
    r.shapes.q = r.shapes.k = r.shapes.v = Tensor();
    record(kAttentionQkv, {qkv}, {f.O}, {save(AttentionQkvSaved::qkv, qkv), save(AttentionQkvSaved::P, f.P)},
           [r](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{composed_grad(r, g[0], s[AttentionQkvSaved::qkv])};
           },
           [r](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{fused_grad(r, g[0], s[AttentionQkvSaved::qkv], s[AttentionQkvSaved::P])};
           },
           [&](const std::vector<Tensor>& d) {
             const QkvHeads h = qkv_heads(qkv, heads, rotate, base, where);  // the values, which the tangent's graph reaches
             const QkvHeads t = qkv_heads(d[0], heads, rotate, base, where);
             return std::vector<Tensor>{composed_tangent(r.at(h.q, h.k, h.v), Tensor(), {t.q, t.k, t.v})};
           },
           where);
  }
  return f.O;
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> attention_qkv_ops() {
  static const OpDef* const defs[] = {&kAttentionQkv};
  return defs;
}

}  // namespace hg
