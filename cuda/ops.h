// cuda/ops.h — the kernels behind the ops on a CUDA tensor, as ops/ calls them (through
// on_device, ops/device.h). Each is defined beside its kernels: cuda/elementwise.cpp (.cu),
// cuda/rows.cpp (rows.cu, softmax.cu), cuda/gemm.cpp, cuda/attention.cpp (attention.cu,
// attention_tiled_*.cu), cuda/positional.cpp (positional.cu). Plain C++: no CUDA header, so ops/ includes it
// in every build (a build without CUDA never calls these; HG_CUDA in ops/device.h leaves the calls
// out).
//
// Common rules, unless an entry says otherwise:
//   - Inputs are CUDA tensors of any strides and offset; a broadcast operand may be a stride-0
//     view (expand), and the binary entries broadcast by numpy rules themselves.
//   - Results are fresh, contiguous CUDA tensors from hg::empty (the caching allocator), not on
//     the graph: the op records its own node. Inputs are only read; requires_grad is ignored.
//   - Floating entries take float32 or float64, every operand the same dtype; anything else,
//     a tensor on the CPU, or shapes that do not fit, throws hg::Error naming "<entry> (cuda)".
//   - Work is queued on the one stream; no entry waits for the device. Entries that check
//     indices on the device (embedding, cross_entropy) report a bad index (or a NaN loss) at the
//     next copy to the host or synchronize(), which throw its hg::Error naming the op, the value
//     and its position (cuda/device_ops.h, "deferred checks").
#pragma once
#include <cstdint>

#include "cuda/kinds.h"
#include "engine/tensor.h"

namespace hg::cuda {

// ---------------------------------------------------------------- elementwise (elementwise.cu)

// out = kind(x [, scalar]), shape of x; kind a UnaryCode (cuda/kinds.h). `scalar` is the
// exponent of pow and the s of the *_scalar kinds; ignored otherwise.
Tensor unary(UnaryCode kind, const Tensor& x, double scalar);
// out = kind(a, b) over broadcast(a.shape, b.shape); kind a BinaryCode. For the *_backward kinds
// a is the incoming gradient g and b the saved tensor (x or y), as in ops/elementwise.cpp.
Tensor binary(BinaryCode kind, const Tensor& a, const Tensor& b);
// out = mask ? value : x, shape of x; mask b8, broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// out = cond ? a : b over broadcast(cond, a, b); cond b8.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------- rows (rows.cu, softmax.cu)
// A "row" is the last dimension (the last `nreduced` for sum_rows): the ops move the
// dimension(s) they reduce last with permute, and these take that view as it is.

// x (kept..., reduced...) with nreduced trailing dimensions reduced -> (kept...): their sum.
// 0 ≤ nreduced ≤ x.dim(); a sum over no elements is 0.
Tensor sum_rows(const Tensor& x, int64_t nreduced);
// x (..., n), n ≥ 1 -> the max of each row (...), at its first position j*. When given:
// *argmax = j* (..., i64), *onehot = e_{j*} (..., n) in x's dtype (max's saved mask).
Tensor max_rows(const Tensor& x, Tensor* argmax, Tensor* onehot);
// softmax along the last dimension, (..., n) -> (..., n); a row of −inf gives zeros.
Tensor softmax_rows(const Tensor& s);
// log_softmax along the last dimension; a row of −inf gives −inf.
Tensor log_softmax_rows(const Tensor& s);
// The row rule: dS = P ∘ (dP − D), D = rowsum(P ∘ dP); P, dP (..., n) -> dS (..., n), and
// *D (..., 1) when D is given.
Tensor softmax_backward_rows(const Tensor& P, const Tensor& dP, Tensor* D);
// log_softmax's backward from its output y and g = dL/dy: dS = g − exp(y) rowsum(g); a row
// of −inf in y gets 0.
Tensor log_softmax_backward_rows(const Tensor& y, const Tensor& g);
// J = diag(p) − p pᵀ per row: p (..., n) -> (..., n, n).
Tensor softmax_jacobian_rows(const Tensor& p);
// The Jacobian's backward: p (..., n), G = dL/dJ (..., n, n) -> dp_k = G_kk − Σ_j (G_kj + G_jk) p_j.
Tensor softmax_jacobian_backward_rows(const Tensor& p, const Tensor& G);

// ---------------------------------------------------------------- lookup, loss (rows.cu)

// weight (V, d) any strides, indices (...) i64 -> (..., d). An index outside [0, V) is a
// deferred hg::Error naming it and its position.
Tensor embedding(const Tensor& weight, const Tensor& indices);
// dweight (V, d) = scatter-add of g (..., d) into the rows `indices` (...) name, each element
// summed over positions in order, as on the CPU: deterministic, the CPU's bits.
Tensor embedding_backward(const Tensor& g, const Tensor& indices, int64_t V);
// The mean cross-entropy over rows whose target is not ignore_index: logits (..., C),
// targets (...) i64 -> 0-d, in the logits' dtype (0 when no row is kept). When given:
// *lse = the logsumexp of each row (N,) (0 on ignored rows), *n_kept = the rows kept (0-d i64,
// on the device). A target outside [0, C) (and not ignore_index), or a NaN loss, is a deferred
// hg::Error (above).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Tensor* lse, Tensor* n_kept);
// dlogits (..., C) = (g / n_kept) (softmax(logits) − onehot(target)) on kept rows, 0 on ignored
// rows (and everywhere when n_kept = 0), softmax recomputed from lse (N,); g the loss's 0-d
// gradient and n_kept the forward's count, both read on the device.
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, int64_t ignore_index,
                              const Tensor& g, const Tensor& n_kept);

// ---------------------------------------------------------------- matmul (gemm.cpp, cuBLAS)

// alpha · a @ b: a (batch_a..., n, k), b (batch_b..., k, m), both of rank ≥ 2 (the op turns
// 1-D operands into a row / column first) -> (batch..., n, m), batch the broadcast of batch_a
// and batch_b. An operand whose matrices cuBLAS can read in place (unit stride along a row or a
// column, e.g. b.transpose(-2, -1)) and whose batch is one stride (0 for a shared matrix) is not
// copied; anything else is copied to contiguous first.
Tensor gemm(const Tensor& a, const Tensor& b, double alpha);

// ---------------------------------------------------------------- attention (attention.cu)

// In place on the scores S (contiguous, (batch..., Tq, Tk), f32/f64): S ← S · scale
// (+ additive mask), −inf where a key is hidden — the mask rule of ops/attention.h, stated once
// for the GPU in cuda/attention_mask.cuh. mask: undefined, b8, or S's dtype; it broadcasts to S's
// shape. With softmax_rows after it, a row with no visible key gets zero weights.
void attention_scale_mask(const Tensor& S, double scale, bool causal, const Tensor& mask);

// The NaN rule's zero (ops/attention.h) in place on X (contiguous (batch..., Tq, Tk): P or dS):
// in each row i whose row of flags ((batch..., Tq, w): O, or D) holds a NaN, X_ij = 0 at every key
// j the mask rule hides from i. Rows without a NaN are read in flags only.
void attention_zero_hidden(const Tensor& X, bool causal, const Tensor& mask, const Tensor& flags);
// x (any strides) as a fresh contiguous tensor with every NaN and ±inf entry 0.
Tensor attention_finite_part(const Tensor& x);

// ---------------------------------------------------------------- tiled attention (attention_tiled_*.cu)
// FlashAttention-2: an online softmax over key tiles in shared memory, no (Tq, Tk) buffer; key
// tiles wholly above the causal diagonal are never visited. The same bits run after run.

// q (batch..., Tq, dk), k (batch..., Tk, dk), v (batch..., Tk, dv): one batch shape (a dimension
// may be a stride-0 expand; the operands are made contiguous first, a linear cost); dk, dv ≤
// kAttentionMaxHead (128, cuda/kernels.h). mask: undefined, b8 (true = may attend) or additive in
// q's dtype, broadcasting to (batch..., Tq, Tk), read through its strides; causal hides key j > i
// (the diagonal aligned top-left); the mask rule is attention_scale_mask's. Returns O
// (batch..., Tq, dv) and, when L is given, *L (batch..., Tq) = the row log-sum-exp m + log ℓ of the
// scaled, masked scores: −inf on a row with no visible key (whose O row is 0), NaN on a row with a
// NaN among its visible scores (whose O row is NaN).
Tensor attention_tiled_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                               bool causal, Tensor* L);
// The forward and its tangent (forward mode) in one pass over the tiles: O and *L as above, and
// *Odot (batch..., Tq, dv), the tangent along dq, dk, dv (each the shape of its operand, or
// undefined where that input does not move).
Tensor attention_tiled_tangent(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                               bool causal, const Tensor& dq, const Tensor& dk, const Tensor& dv, Tensor* L,
                               Tensor* Odot);
// From the forward's O and L and dO (batch..., Tq, dv): D = rowsum(dO ∘ O), each tile's
// P = e^(S − L) recomputed (0 where hidden or L = −inf), dS = P ∘ (dP − D). Writes those of dQ
// (batch..., Tq, dk), dK (batch..., Tk, dk), dV (batch..., Tk, dv) and dS_out (batch..., Tq, Tk),
// the scores' gradient in full (for an additive mask that requires grad), that are not null.
void attention_tiled_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                              bool causal, const Tensor& O, const Tensor& L, const Tensor& dO, Tensor* dQ, Tensor* dK,
                              Tensor* dV, Tensor* dS_out);
// The additive mask's gradient on the tiled path, dS summed to the mask's own shape in the kernel
// (a fixed order: the same bits run after run), from the forward's O and L and dO: no
// (batch..., Tq, Tk) buffer. The arguments are attention_tiled_backward's.
Tensor attention_tiled_mask_grad(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                                 bool causal, const Tensor& O, const Tensor& L, const Tensor& dO);

// ---------------------------------------------------------------- positions (positional.cu)

// RoPE on interleaved pairs (ops/positional.h): x (..., T, d_h), any strides, d_h even ->
// y = R_θ x (fresh, contiguous), θ = (start + t) · base^(−2i/d_h); direction −1 rotates by −θ
// (the backward). Angles in double, rounded once to x's dtype, as on the CPU.
Tensor rope(const Tensor& x, int64_t start, double base, int direction);
// ALiBi's bias (H, T, T) and the sinusoidal table (T, d) of ops/positional.h, built on the device.
Tensor alibi_bias(int64_t heads, int64_t T, DType t);
Tensor sinusoidal_positions(int64_t T, int64_t d, DType t);

}  // namespace hg::cuda
