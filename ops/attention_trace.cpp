// ops/attention_trace.cpp — attention's traces: every buffer of the module's hand backward pass
// (attention_trace: S, P, O, dP, D, dS, dQ, dK, dV) and of its tangent (attention_tangent_trace:
// Ṡ, rowsum(P ∘ Ṡ), Ṗ, Ȯ), computed op by op on the materialized path (ops/attention_formulas.cpp), for the
// labs and the tests to show and compare.
#include <tuple>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/attention.h"
#include "ops/attention_paths.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/tangent.h"

namespace hg {

AttentionTrace attention_trace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dO,
                               const AttentionOptions& opts) {
  using namespace attention_detail;  // here only: a file-scope directive would leak into a unity build's other files
  Problem p = prepare("attention_trace", q, k, v, opts);
  const Shape o_shape = with_last2(p.batch, p.Tq, p.dv);
  if (!dO.defined() || dO.shape() != o_shape)
    fail("attention_trace", "dO {} must have the shape of the output O {} (Q {}, K {}, V {})",
         dO.defined() ? shape_str(dO.shape()) : "(undefined)", shape_str(o_shape), shape_str(q.shape()),
         shape_str(k.shape()), shape_str(v.shape()));
  check_same_dtype_device("attention_trace", q, dO);
  NoGradGuard ng;
  Forward f = attention_forward(p);
  Backward b = attention_backward(p, f.P, dO.detach(), {.q = true, .k = true, .v = true}, /*live_mask=*/false);
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

AttentionTangentTrace attention_tangent_trace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dq,
                                              const Tensor& dk, const Tensor& dv, const AttentionOptions& opts) {
  using namespace attention_detail;
  const char* op = "attention_tangent_trace";
  Problem p = prepare(op, q, k, v, opts);
  for (const auto& [t, x, name] : {std::tuple{&dq, &q, "Q̇"}, std::tuple{&dk, &k, "K̇"}, std::tuple{&dv, &v, "V̇"}})
    if (t->defined() && (t->shape() != x->shape() || t->dtype() != x->dtype() || t->device() != x->device()))
      fail(op, "the tangent {} {} must match its input {} in shape, dtype and device", name, t->describe(), x->describe());
  NoGradGuard ng;
  const Forward f = attention_forward(p);
  const Shape scores = with_last2(p.batch, p.Tq, p.Tk), o_shape = with_last2(p.batch, p.Tq, p.dv);
  AttentionTangentTrace t;
  t.S = f.S, t.P = f.P, t.O = f.O, t.scale = p.scale;
  const Tensor hidden = hidden_entries(f.S);
  auto ex = [&](const Tensor& x, int64_t rows, int64_t cols) { return expand(x.detach(), with_last2(p.batch, rows, cols)); };
  const Tensor sdot = scores_tangent(p, dq, dk);
  t.dotS = masked_fill(sdot.defined() ? sdot : zeros(scores, q.dtype(), q.device()), hidden, 0.0);
  t.dotD = sum(mul(t.P, t.dotS), {-1}, true);
  t.dotP = mul(t.P, sub(t.dotS, t.dotD));
  t.dotO = tangent_sum({matmul(t.dotP, p.v), if_tangent(dv, [&](const Tensor& x) { return matmul(t.P, ex(x, p.Tk, p.dv)); })},
                       o_shape);
  return t;
}

}  // namespace hg
