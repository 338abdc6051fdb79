// ops/attention.cpp — scaled dot-product attention: forward, the hand-written backward, the trace.
//
// One tape entry, "attention", whose backward is the module's formulas. They are written twice:
// op by op (attention_forward, attention_backward: each a batched gemm through matmul — OpenBLAS,
// or cuBLAS on a CUDA tensor — or the row rule through softmax_backward), which attention_trace
// runs and returns every buffer of, and which attention() runs on CUDA tensors; and fused per
// batch slice on the CPU (fused_forward, fused_backward, ops/attention_cpu.cpp), which attention()
// runs there because it is faster. The tests hold the two to each other. The mask rule is stated
// once per device: ops/attention_cpu.cpp (MaskRule) and cuda/attention.cu.
#include "ops/attention.h"

#include <cmath>
#include <vector>

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/softmax.h"
#include "ops/registry.h"

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
  p.q = expand(q.detach(), with_last2(p.batch, p.Tq, p.dk));
  p.k = expand(k.detach(), with_last2(p.batch, p.Tk, p.dk));
  p.v = expand(v.detach(), with_last2(p.batch, p.Tk, p.dv));
  return p;
}

}  // namespace attention_detail

using namespace attention_detail;

namespace {

// S ← S · scale (+ mask), −inf where hidden: the mask rule on S's device.
void scale_and_mask(const Problem& p, Tensor& S) {
  on_device("attention", {S}, [&] { scale_and_mask_cpu(p, S); },
            HG_CUDA(cuda::attention_scale_mask(S, p.scale, p.causal, p.mask)));
}

// forward. Rows i are queries, columns j keys.
//   S = Q Kᵀ · scale (+ mask)    (batch..., Tq, Tk)   scores, −inf where hidden
//   P = softmax(S) along keys     (batch..., Tq, Tk)   weights; a row with no visible key is 0
//   O = P V                       (batch..., Tq, dv)   outputs
Forward attention_forward(const Problem& p) {
  Forward f;
  f.S = matmul(p.q, p.k.transpose(-2, -1));  // gemm with K read transposed in place
  scale_and_mask(p, f.S);
  f.P = softmax(f.S, -1);
  f.O = matmul(f.P, p.v);
  return f;
}

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

// The backward for create_graph: the formulas of attention_backward written with recorded ops
// (matmul, the row rule softmax_backward — itself twice differentiable), on weights P recomputed
// from the given q, k, v so that P's own dependence on q and k is on the graph too. The scale and
// mask enter as S = (Q Kᵀ) · scale + M, with M = the mask rule applied to zeros: 0 where visible,
// the additive value, or −inf where hidden (the same function as the forward's, so the same rule).
Backward composed_backward(const Problem& p, const Tensor& dO, bool need_q, bool need_k, bool need_v) {
  Tensor M = zeros(with_last2(p.batch, p.Tq, p.Tk), p.q.dtype(), p.q.device());  // (batch..., Tq, Tk)
  {
    NoGradGuard ng;
    scale_and_mask(p, M);
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

}  // namespace

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

// ---------------------------------------------------------------- registry rows (ops/registry.h)

std::span<const OpInfo> attention_ops() {
  static const OpInfo rows[] = {
      {"attention", "Q, K, V and the weights P (the mask lives in P)", "ops/attention.cpp"},
  };
  return rows;
}

}  // namespace hg
