// engine/backend.h — what the engine and ops need from a device backend.
//
// cuda/ fills this table when the library is built with the CUDA toolkit; without it,
// cuda_backend() returns nullptr and asking for a CUDA tensor throws "built without CUDA".
// Keeping the table here lets engine/ and ops/ dispatch to cuda/ without including it.
//
// The Tensor-level entries (below "device ops") are the kernels behind the ops on a CUDA tensor.
// Common rules, unless an entry says otherwise:
//   - Inputs are CUDA tensors of any strides and offset; a broadcast operand may be a stride-0
//     view (expand), and the binary entries broadcast by numpy rules themselves.
//   - Results are fresh, contiguous CUDA tensors from hg::empty (the caching allocator), not on
//     the tape: the op records its own entry. Inputs are only read; requires_grad is ignored.
//   - Floating entries take float32 or float64, every operand the same dtype; anything else,
//     a tensor on the CPU, or shapes that do not fit, throws hg::Error naming "<entry> (cuda)".
//   - In-place entries (copy, fill, axpy, scale, attention_scale_mask) write their destination
//     and do not bump its version: the caller (Tensor::copy_, ...) does.
//   - Work is queued on the one stream; results are ordered after it, and no entry waits for the
//     device. Entries that check indices on the device (embedding, cross_entropy) report a bad
//     index (or a NaN loss), and copy a float with no int64 value, at the next copy to the host or
//     synchronize(), which throw its hg::Error naming the op, the value and its position
//     (cuda/device_ops.h, "deferred checks").
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/dtype.h"
#include "engine/tensor.h"

namespace hg {

// The elementwise kinds of CudaBackend::unary and ::binary, with the CPU op each one is.
enum class UnaryOp : uint8_t {
  neg,          // -x                          neg()
  exp,          // e^x                         exp()
  log,          // ln x                        log()
  sqrt,         // √x                          sqrt()
  relu,         // max(x, 0)                   relu()
  tanh,         // tanh x                      tanh()
  gelu,         // x Φ(x), exact erf           gelu()
  pow,          // x^s                         pow(x, s)
  add_scalar,   // x + s                       add(x, s)
  mul_scalar,   // x · s                       mul(x, s)
  rsub_scalar,  // s − x                       rsub(x, s)
  rdiv_scalar,  // s / x                       rdiv(x, s)
};
enum class BinaryOp : uint8_t {
  add,            // a + b
  sub,            // a − b
  mul,            // a · b
  div,            // a / b
  relu_backward,  // (g, x) -> g · [x > 0]             relu's backward
  tanh_backward,  // (g, y) -> g (1 − y²), y = tanh x  tanh's backward
  gelu_backward,  // (g, x) -> g (Φ(x) + x φ(x))       gelu's backward
};
const char* unary_op_name(UnaryOp op);    // "exp", "add_scalar", ...
const char* binary_op_name(BinaryOp op);  // "add", "relu_backward", ...

// One AdamW step's constants (nn/optim.cpp computes them on the host from the step count):
// w ← w · decay + neg_step · m / (√v / bc2_sqrt + eps) after m, v take in the gradient.
struct AdamWStep {
  double decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
};

struct CudaBackend {
  bool (*device_available)();       // a usable GPU is present
  const char* (*device_summary)();  // e.g. "NVIDIA H200, sm_90" or why none is usable
  void* (*alloc)(size_t nbytes);
  void (*free)(void* p);
  void (*memcpy_h2d)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2h)(void* dst, const void* src, size_t nbytes);
  void (*memcpy_d2d)(void* dst, const void* src, size_t nbytes);
  // Kernels. Operands are contiguous; `rows x cols` with the reduced dimension last.
  void (*softmax_lastdim)(const void* x, void* y, int64_t rows, int64_t cols, DType t);
  // Waits until every queued kernel and copy has finished (benchmarks, timing), then reads the
  // deferred index checks (below) and throws the first failure.
  void (*synchronize)();
  // How many times the host has waited for the device so far: copies to the host, synchronize(),
  // status reads. A training step that leaves it unchanged ran without a host round trip.
  uint64_t (*host_waits)();

  // ---------------------------------------------------------------- device ops: copies

  // dst[i] = src[i] converted to dst's dtype by the CPU copy_'s rule (engine/convert.h; a float
  // with no int64 value is a deferred Error, written as 0), any dtype pair (f32, f64, i64, b8);
  // src broadcasts to dst's shape. dst may be a strided view (slice backward, concat).
  // Overlapping dst and src give undefined results. In place.
  void (*copy)(const Tensor& dst, const Tensor& src);
  // dst[i] = value converted to dst's dtype (engine/convert.h; a value with no int64 value into
  // an i64 dst is an Error at once), any dtype, any strides. In place.
  void (*fill)(const Tensor& dst, double value);
  // dst += alpha · src (Tensor::add_: gradient accumulation); src broadcasts to dst. In place.
  void (*axpy)(const Tensor& dst, const Tensor& src, double alpha);
  // dst *= factor (Tensor::mul_). In place.
  void (*scale)(const Tensor& dst, double factor);

  // ---------------------------------------------------------------- device ops: elementwise

  // out = op(x [, scalar]), shape of x. `scalar` is the exponent of pow and the s of the
  // *_scalar kinds; ignored otherwise.
  Tensor (*unary)(UnaryOp op, const Tensor& x, double scalar);
  // out = op(a, b) over broadcast(a.shape, b.shape). For the *_backward kinds a is the
  // incoming gradient g and b the saved tensor (x or y), as in ops/elementwise.cpp.
  Tensor (*binary)(BinaryOp op, const Tensor& a, const Tensor& b);
  // out = mask ? value : x, shape of x; mask b8, broadcasts to x's shape.
  Tensor (*masked_fill)(const Tensor& x, const Tensor& mask, double value);
  // out = cond ? a : b over broadcast(cond, a, b); cond b8.
  Tensor (*where)(const Tensor& cond, const Tensor& a, const Tensor& b);

  // ---------------------------------------------------------------- device ops: rows
  // A "row" is the last dimension (the last `nreduced` for sum_rows): the CPU ops move the
  // dimension(s) they reduce last with permute, and these take that view as it is.

  // x (kept..., reduced...) with nreduced trailing dimensions reduced -> (kept...): their sum.
  // 0 ≤ nreduced ≤ x.dim(); a sum over no elements is 0.
  Tensor (*sum_rows)(const Tensor& x, int64_t nreduced);
  // x (..., n), n ≥ 1 -> the max of each row (...), at its first position j*. When given:
  // *argmax = j* (..., i64), *onehot = e_{j*} (..., n) in x's dtype (max's saved mask).
  Tensor (*max_rows)(const Tensor& x, Tensor* argmax, Tensor* onehot);
  // softmax along the last dimension, (..., n) -> (..., n); a row of −inf gives zeros.
  Tensor (*softmax_rows)(const Tensor& s);
  // log_softmax along the last dimension; a row of −inf gives −inf.
  Tensor (*log_softmax_rows)(const Tensor& s);
  // The row rule: dS = P ∘ (dP − D), D = rowsum(P ∘ dP); P, dP (..., n) -> dS (..., n), and
  // *D (..., 1) when D is given.
  Tensor (*softmax_backward_rows)(const Tensor& P, const Tensor& dP, Tensor* D);
  // log_softmax's backward from its output y and g = dL/dy: dS = g − exp(y) rowsum(g); a row
  // of −inf in y gets 0.
  Tensor (*log_softmax_backward_rows)(const Tensor& y, const Tensor& g);
  // J = diag(p) − p pᵀ per row: p (..., n) -> (..., n, n).
  Tensor (*softmax_jacobian_rows)(const Tensor& p);
  // The Jacobian's backward: p (..., n), G = dL/dJ (..., n, n) -> dp_k = G_kk − Σ_j (G_kj + G_jk) p_j.
  Tensor (*softmax_jacobian_backward_rows)(const Tensor& p, const Tensor& G);

  // ---------------------------------------------------------------- device ops: matmul

  // alpha · a @ b through cuBLAS: a (batch_a..., n, k), b (batch_b..., k, m), both of rank ≥ 2
  // (the op turns 1-D operands into a row / column first) -> (batch..., n, m), batch the
  // broadcast of batch_a and batch_b. An operand whose matrices cuBLAS can read in place
  // (unit stride along a row or a column, e.g. b.transpose(-2, -1)) and whose batch is one
  // stride (0 for a shared matrix) is not copied; anything else is copied to contiguous first.
  Tensor (*gemm)(const Tensor& a, const Tensor& b, double alpha);

  // ---------------------------------------------------------------- device ops: lookup, loss

  // weight (V, d) any strides, indices (...) i64 -> (..., d). An index outside [0, V) is a
  // deferred hg::Error naming it and its position.
  Tensor (*embedding)(const Tensor& weight, const Tensor& indices);
  // dweight (V, d) = scatter-add of g (..., d) into the rows `indices` (...) name, each element
  // summed over positions in order, as on the CPU: deterministic, the CPU's bits.
  Tensor (*embedding_backward)(const Tensor& g, const Tensor& indices, int64_t V);
  // The mean cross-entropy over rows whose target is not ignore_index: logits (..., C),
  // targets (...) i64 -> 0-d, in the logits' dtype (0 when no row is kept). When given:
  // *lse = the logsumexp of each row (N,) (0 on ignored rows), *n_kept = the rows kept (0-d i64,
  // on the device). A target outside [0, C) (and not ignore_index), or a NaN loss, is a deferred
  // hg::Error (above).
  Tensor (*cross_entropy)(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Tensor* lse,
                          Tensor* n_kept);
  // dlogits (..., C) = (g / n_kept) (softmax(logits) − onehot(target)) on kept rows, 0 on ignored
  // rows (and everywhere when n_kept = 0), softmax recomputed from lse (N,); g the loss's 0-d
  // gradient and n_kept the forward's count, both read on the device.
  Tensor (*cross_entropy_backward)(const Tensor& logits, const Tensor& targets, const Tensor& lse, int64_t ignore_index,
                                   const Tensor& g, const Tensor& n_kept);

  // ---------------------------------------------------------------- device ops: attention

  // In place on the scores S (contiguous, (batch..., Tq, Tk), f32/f64): S ← S · scale
  // (+ additive mask), −inf where a key is hidden: by the causal rule (key j > query i), a false
  // entry of a b8 mask, or an additive entry that is −inf or ≤ lowest/2 (ops/attention.cpp).
  // mask: undefined, b8, or S's dtype; it broadcasts to S's shape. With softmax_rows after
  // it, a row with no visible key gets zero weights.
  void (*attention_scale_mask)(const Tensor& S, double scale, bool causal, const Tensor& mask);

  // ---------------------------------------------------------------- device ops: training

  // RoPE on interleaved pairs (ops/positional.h): x (..., T, d_h), any strides, d_h even ->
  // y = R_θ x (fresh, contiguous), θ = (start + t) · base^(−2i/d_h); direction −1 rotates by −θ
  // (the backward). Angles in double, rounded once to x's dtype, as on the CPU.
  Tensor (*rope)(const Tensor& x, int64_t start, double base, int direction);
  // ALiBi's bias (H, T, T) and the sinusoidal table (T, d) of ops/positional.h, built on the device.
  Tensor (*alibi_bias)(int64_t heads, int64_t T, DType t);
  Tensor (*sinusoidal_positions)(int64_t T, int64_t d, DType t);
  // One AdamW step in place on contiguous w, m, v (same shape and dtype as the gradient g), with
  // nn/optim.cpp's operations, order and roundings: the same bits as the CPU update.
  void (*adamw)(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWStep& c);
};

const CudaBackend* cuda_backend();  // nullptr in a build without CUDA
// The backend or an Error naming `op` that says why CUDA cannot be used.
const CudaBackend& require_cuda(const char* op);

}  // namespace hg
