// ops/attention_problem.cpp — attention's inputs checked (each error names the op, the shapes
// and the fix) and expanded to one batch shape: the Problem every path reads (ops/attention_paths.h);
// the plan, which kernels a call runs (the automatic choice of path among them); the paths' names;
// the causal mask as a tensor.
#include <cmath>
#include <string_view>
#include <vector>

#include "engine/error.h"
#include "engine/forward.h"
#include "engine/tape.h"
#include "ops/attention.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"

namespace hg {

namespace attention_detail {

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
  p.merged_output = o.merged_output;
  p.q = expand(q.detach(), with_last2(p.batch, p.Tq, p.dk));
  p.k = expand(k.detach(), with_last2(p.batch, p.Tk, p.dk));
  p.v = expand(v.detach(), with_last2(p.batch, p.Tk, p.dv));
  return p;
}

namespace {

// The (Tq, Tk) blocks of all heads, above which the automatic choice is always the tiled path.
constexpr double kMaterializeBytes = 256.0 * (1 << 20);
// The automatic choice below that: measured with bench/run-attention (bench/RESULTS.md).
constexpr int64_t kTiledFromKeys = 512;

// The widest head the CUDA tiled kernels take (cuda/kernels.h, kAttentionMaxHead).
constexpr int64_t kCudaTiledMaxHead = 128;

// The path asked for, or for automatic the one chosen for the problem's shape and device.
AttentionPath resolve_path(const Problem& p, AttentionPath asked) {
  if (asked != AttentionPath::automatic) return asked;
  const double blocks = static_cast<double>(shape_numel(p.batch)) * static_cast<double>(p.Tq) *
                        static_cast<double>(p.Tk) * static_cast<double>(dtype_size(p.q.dtype()));
  if (p.q.device() == Device::cuda)  // no GPU has timed the two yet: tiled only where memory asks for it
    return blocks > kMaterializeBytes && p.dk <= kCudaTiledMaxHead && p.dv <= kCudaTiledMaxHead
               ? AttentionPath::tiled
               : AttentionPath::materialized;
  return blocks > kMaterializeBytes || p.Tk >= kTiledFromKeys ? AttentionPath::tiled : AttentionPath::materialized;
}

bool empty_problem(const Problem& p) {
  return p.Tq == 0 || p.Tk == 0 || p.dk == 0 || p.dv == 0 || shape_numel(p.batch) == 0;
}

// The kernels for the path `asked` (automatic: the path chosen for the problem's shape and device).
Kernels kernels_for(const Problem& p, AttentionPath asked) {
  if (resolve_path(p, asked) == AttentionPath::tiled) return Kernels::tiled;
  // On CUDA the materialized path runs op by op: its gemms are cuBLAS and its rows cuda/rows.cu.
  return p.q.device() == Device::cpu && fits_blas(p) && !empty_problem(p) ? Kernels::fused : Kernels::ops;
}

}  // namespace

Plan make_plan(const Problem& p, AttentionPath asked, const Tensor& q, const Tensor& k, const Tensor& v,
               const Tensor& mask) {
  Plan plan;
  plan.kernels = kernels_for(p, asked);
  plan.live_mask = mask.defined() && mask.requires_grad() && grad_enabled();
  plan.mask_input = plan.live_mask || has_tangent(mask);
  plan.need = {q.requires_grad(), k.requires_grad(), v.requires_grad()};
  bool tangent_graph = false;  // a tangent whose own derivative is asked for
  for (const Tensor& t : {q, k, v, tangent_of(q), tangent_of(k), tangent_of(v)})
    tangent_graph = tangent_graph || (t.defined() && t.requires_grad() && grad_enabled());
  plan.tangent_in_tiles = plan.kernels == Kernels::tiled && detail::any_tangent({q, k, v}) && !tangent_graph &&
                          !has_tangent(mask) && !empty_problem(p);
  plan.qkv_in_one_op = plan.kernels == Kernels::fused && !mask.defined();
  return plan;
}

}  // namespace attention_detail

const char* attention_path_name(AttentionPath p) {
  switch (p) {
    case AttentionPath::automatic: return "automatic";
    case AttentionPath::materialized: return "materialized";
    case AttentionPath::tiled: return "tiled";
  }
  return "?";
}

AttentionPath attention_path_named(std::string_view name) {
  for (AttentionPath p : {AttentionPath::automatic, AttentionPath::materialized, AttentionPath::tiled})
    if (name == attention_path_name(p)) return p;
  fail("attention", "no path named '{}'; the paths are automatic, materialized and tiled", name);
}

Tensor causal_mask(int64_t T) {
  if (T < 0) fail("causal_mask", "T must be non-negative, got {}", T);
  check_shape("causal_mask", {T, T}, DType::b8);  // T · T fits before it is a size
  std::vector<bool> m(static_cast<size_t>(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) m[static_cast<size_t>(i * T + j)] = j <= i;
  return bool_tensor(m, {T, T});
}

}  // namespace hg
