// ops/attention.h — scaled dot-product attention with a hand-written backward.
//
//   S = Q Kᵀ · scale (+ additive mask)   (..., Tq, Tk)    scores
//   P = softmax(S) along keys             (..., Tq, Tk)    weights
//   O = P V                               (..., Tq, dv)    outputs
// backward, given dO:
//   dV = Pᵀ dO,  dP = dO Vᵀ,  D = rowsum(P ∘ dP),  dS = P ∘ (dP − D),  dQ = dS K · scale,  dK = dSᵀ Q · scale
//
// Masks: `causal` hides keys j > i (query i, key j; with Tq != Tk the diagonal is aligned at the
// top-left, as in PyTorch). `mask` is boolean (true = may attend) or additive (float, added to S;
// entries of -inf, or at or below half the dtype's lowest value, count as masked), and broadcasts
// against (..., Tq, Tk) — e.g. a padding mask (B, 1, 1, T) or a combined mask (B, 1, T, T).
// A query row with no visible key gets output 0 and passes gradient 0 to Q, K and V: never NaN,
// never the silent average of the values.
//
// NaN in, NaN out — the one rule, the same on every path, tile size and device. A NaN among the
// scores a row sees (from a NaN in q_i or in the additive mask, or a +inf score, whose e^(s − m)
// is NaN) makes it a NaN row:
//   forward   O_i is NaN; P_ij is NaN for each key j it sees and exactly 0 for each key the mask
//             or the causal rule hides from it (attention_trace's P shows both).
//   backward  dS_ij is NaN where it sees j and exactly 0 where j is hidden. So dQ_i is NaN, the
//             row adds NaN to dK_j and dV_j of every key it sees, and nothing to the keys hidden
//             from it — not even when q_i itself holds the NaN: dK = dSᵀ Q reads a NaN or ±inf of
//             Q as 0 (wherever that entry meets a nonzero dS_ij, the row is a NaN row and dS_ij is
//             NaN already). Rows without a NaN see no difference.
// Every path applies the zero after the exp and after the row rule, where the arithmetic gives
// 0 · NaN, never by editing the scores before them: the rows without a NaN keep their bits.
#pragma once
#include "engine/tensor.h"
#include "ops/attention_options.h"

namespace hg {

// Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv); leading dimensions must match (after
// broadcasting). Gradients flow to Q, K and V; masks are constants.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opts = {}, Site where = Site::current());

// Attention over the heads of a fused projection's output, as one op: for qkv (B, T, 3d) — q, k, v
// side by side, each H heads of d_h = d / H — o (B, H, T, d_h), the same numbers as
//   const auto [q, k, v] = qkv_heads(qkv, heads, rotate, base);   (ops/positional.h)
//   o = attention(q, k, v, opts);
// On the CPU's materialized path without a mask the fused kernels rotate each head's q and k as
// they read it and write the gradient of qkv straight from the backward, so neither the rotated
// q and k nor their gradients are ever made; elsewhere it runs that composition.
Tensor attention_qkv(const Tensor& qkv, int64_t heads, bool rotate = true, const AttentionOptions& opts = {},
                     double base = 10000.0, Site where = Site::current());

// Every intermediate of the forward and the hand-written backward, for labs and tests.
struct AttentionTrace {
  Tensor S;   // scores after scale and mask (-inf where masked)  (..., Tq, Tk)
  Tensor P;   // weights                                           (..., Tq, Tk)
  Tensor O;   // outputs                                           (..., Tq, dv)
  Tensor dO;  // the given output gradient                         (..., Tq, dv)
  Tensor dP;  // dO Vᵀ                                             (..., Tq, Tk)
  Tensor D;   // rowsum(P ∘ dP)                                    (..., Tq, 1)
  Tensor dS;  // P ∘ (dP − D)                                      (..., Tq, Tk)
  Tensor dQ;  // dS K · scale                                      (..., Tq, dk)
  Tensor dK;  // dSᵀ Q · scale                                     (..., Tk, dk)
  Tensor dV;  // Pᵀ dO                                             (..., Tk, dv)
  double scale = 1.0;
};
AttentionTrace attention_trace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dO,
                               const AttentionOptions& opts = {});

// Every intermediate of the forward and its tangent (forward mode) along (Q̇, K̇, V̇), written out
// as the formulas of ops/attention_formulas.cpp, for labs and tests. An undefined tangent: that input does
// not move. A constant mask does not move either, so Ṡ is 0 where a key is hidden.
struct AttentionTangentTrace {
  Tensor S, P, O;  // as in AttentionTrace
  Tensor dotS;     // (Q̇ Kᵀ + Q K̇ᵀ) · scale, 0 where hidden   (..., Tq, Tk)
  Tensor dotD;     // rowsum(P ∘ Ṡ): the weights' average of Ṡ (..., Tq, 1)
  Tensor dotP;     // P ∘ (Ṡ − rowsum(P ∘ Ṡ))                 (..., Tq, Tk)
  Tensor dotO;     // Ṗ V + P V̇                               (..., Tq, dv)
  double scale = 1.0;
};
AttentionTangentTrace attention_tangent_trace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dq,
                                              const Tensor& dk, const Tensor& dv, const AttentionOptions& opts = {});

// Boolean (T, T) lower-triangular mask: true where key j <= query i.
Tensor causal_mask(int64_t T);

}  // namespace hg
