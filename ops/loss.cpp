// ops/loss.cpp — cross-entropy over logits, with its own stable kernel and recorded backward.
//
// Notation: logits x (..., C) flattened to N rows of C classes, targets t (N,), K the set of kept
// rows (t_r != ignore_index), n = |K|. For a kept row r:
//   lse_r = m_r + log sum_c exp(x_rc - m_r),  m_r = max_c x_rc   (no exp ever overflows)
//   loss_r = -log softmax(x_r)[t_r] = lse_r - x_r,t_r
//   L = (1/n) sum_{r in K} loss_r                 (L = 0 when n = 0, see ops/loss.h)
#include "ops/loss.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/cpu_map.h"
#include "ops/elementwise.h"
#include "ops/softmax.h"

namespace hg {

namespace {

// The backward written with recorded ops, for create_graph (the fused kernels below are the fast
// path of the same formula): dlogits = g (P ∘ keep − onehot(t)) / n, P = softmax(x), keep the
// kept rows. onehot and keep are constants built on the host from the targets.
Tensor cross_entropy_backward_composed(const Tensor& x, const Tensor& targets, int64_t ignore_index, const Tensor& g) {
  const std::vector<int64_t> t = targets.to_int_vector();
  const int64_t C = x.size(-1), N = static_cast<int64_t>(t.size());
  Tensor onehot = zeros({N, C}, x.dtype()), keep = zeros({N, 1}, x.dtype());
  int64_t n = 0;
  for (int64_t r = 0; r < N; ++r)
    if (t[r] != ignore_index) {
      onehot.set_flat(r * C + t[r], 1.0);
      keep.set_flat(r, 1.0);
      ++n;
    }
  if (n == 0) return zeros(x.shape(), x.dtype(), x.device());
  Tensor P = softmax(x.reshape({N, C}), -1);
  Tensor d = sub(mul(P, keep.to(x.device())), onehot.to(x.device()));
  return mul(d, mul(g, 1.0 / static_cast<double>(n))).reshape(x.shape());
}

// The same loss and backward on a CUDA tensor, without the host waiting for the device: the
// kernels (cuda/rows.cu) check the targets and the NaN rule on the device and report them at the
// next copy to the host (engine/backend.h), and the count of kept rows stays on the device, where
// the backward kernel reads it with the incoming gradient.
Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Site where) {
  const char* op = "cross_entropy";
  Tensor lse, n_kept;
  Tensor out = require_cuda(op).cross_entropy(logits.detach(), targets, ignore_index, &lse, &n_kept);
  if (should_record({logits})) {
    record(op, {logits, targets}, {out},
           {save(logits, "logits"), save(targets, "targets"), save(lse, "logsumexp"), save(n_kept, "kept-row count")},
           [ignore_index](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
             if (grad_enabled()) return std::vector<Tensor>{cross_entropy_backward_composed(s[0], s[1], ignore_index, g[0]), Tensor()};
             return std::vector<Tensor>{
                 require_cuda("cross_entropy backward").cross_entropy_backward(s[0], s[1], s[2], ignore_index, g[0], s[3]),
                 Tensor()};
           }, DoubleBackward::composed, where);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- forward
// One pass per row: the max, then the sum of exp(x - max), then lse and the row's loss.
// The sums are done in double for both dtypes (the sum over rows of a float32 mean would
// otherwise lose digits), the exponentials in the logits' dtype (exp_fast, ops/cpu_map.h: a
// vectorised exp within 2 ulp in float32, std::exp in float64); lse is stored in the logits' dtype.

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Site where) {
  const char* op = "cross_entropy";
  if (!logits.defined() || !targets.defined()) fail(op, "logits and targets must both be defined tensors");
  if (logits.dim() == 0)
    fail(op, "logits {} are 0-d; they need a last dimension of C classes, shape (..., C)", logits.describe());
  if (targets.dtype() != DType::i64)
    fail(op, "targets {} must be i64 class indices (probability targets are not supported); convert with "
         ".to(DType::i64)", targets.describe());
  Shape row_shape = logits.shape();
  const int64_t C = row_shape.back();
  row_shape.pop_back();
  if (targets.shape() != row_shape)
    fail(op, "targets have shape {} but logits {} need targets of shape {} (the logits' shape without the last, "
         "class, dimension)", shape_str(targets.shape()), logits.describe(), shape_str(row_shape));
  if (C == 0) fail(op, "logits {} have no classes (C = 0)", logits.describe());
  if (targets.device() != logits.device())
    fail(op, "targets {} are on {} but logits {} are on {}; move the targets with .to(Device::{})", targets.describe(),
         device_name(targets.device()), logits.describe(), device_name(logits.device()), device_name(logits.device()));
  if (logits.device() == Device::cuda) return cross_entropy_cuda(logits, targets, ignore_index, where);

  const std::vector<int64_t> t = targets.to_int_vector();  // (N,)
  const int64_t N = static_cast<int64_t>(t.size());
  int64_t n_kept = 0;
  for (int64_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    if (t[r] < 0 || t[r] >= C)
      fail(op, "target {} at position {} of targets {} is out of range for C = {} classes; targets must lie in "
           "[0, {}) or equal ignore_index ({})", t[r], index_str(targets.shape(), r), shape_str(targets.shape()), C,
           C, ignore_index);
    ++n_kept;
  }

  const Tensor x = logits.detach().contiguous();          // (N, C) row-major
  Tensor lse = zeros({N}, logits.dtype());                // (N,) logsumexp of each kept row, 0 on ignored rows
  // Rows are independent and run on the threads (engine/strided.h); their losses are then added
  // up in row order on one thread, so the sum is the same whatever the number of threads.
  std::vector<double> row_loss(static_cast<size_t>(N), 0.0);  // (N,)
  dispatch_float(logits.dtype(), op, [&]<typename T>() {
    const T* xp = static_cast<const T*>(x.raw_data());
    T* lp = lse.data_ptr<T>();
    parallel_for(N, 8 * C, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (t[r] == ignore_index) continue;
        const T* row = xp + r * C;
        const T mt = max_lanes(row, C);  // ops/cpu_map.h
        const double m = mt;
        const double s = sum_lanes<double>(C, [&](int64_t c) { return static_cast<double>(exp_fast(row[c] - mt)); });
        const double l = m + std::log(s);
        lp[r] = static_cast<T>(l);
        row_loss[r] = l - static_cast<double>(row[t[r]]);
      }
    });
  });
  double total = 0.0;
  for (int64_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    if (std::isnan(row_loss[r]))
      fail(op, "the loss of row {} (target {}) is NaN: its logits hold a NaN, a +inf, or are all -inf",
           index_str(targets.shape(), r), t[r]);
    total += row_loss[r];
  }
  Tensor out = scalar(n_kept > 0 ? total / static_cast<double>(n_kept) : 0.0, logits.dtype());  // ()

  // ---------------------------------------------------------------- backward
  // dL/dx_rc = (1/n) (d lse_r / dx_rc - [c = t_r]) = (p_rc - [c = t_r]) / n  for r in K,
  // with p_r = softmax(x_r) = exp(x_r - lse_r); rows not in K do not enter L, so their gradient is 0.
  // Times the incoming scalar g: dlogits = g (P - onehot(t)) / n on kept rows.
  //
  // Saves the logits (a detached alias: no copy; the version counter guards it against in-place
  // writes), the targets, and the logsumexp lse (N,) — not the probabilities P (N, C). The forward
  // then never allocates an (N, C) buffer, and the backward recomputes p = exp(x - lse) with one
  // exp per element, the trade FlashAttention makes with its saved log-sum-exp.
  if (should_record({logits})) {
    const Shape shape = logits.shape();
    const DType dt = logits.dtype();
    record(op, {logits, targets}, {out}, {save(logits, "logits"), save(targets, "targets"), save(lse, "logsumexp")},
           [=](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
             if (grad_enabled()) return std::vector<Tensor>{cross_entropy_backward_composed(s[0], s[1], ignore_index, g[0]), Tensor()};
             if (n_kept == 0) return std::vector<Tensor>{zeros(shape, dt), Tensor()};
             Tensor dlogits = empty(shape, dt);  // (..., C), every row written below
             const double scale = g[0].item() / static_cast<double>(n_kept);
             const Tensor xs = s[0].contiguous();
             const std::vector<int64_t> tt = s[1].to_int_vector();
             dispatch_float(dt, "cross_entropy backward", [&]<typename T>() {
               const T* xp = static_cast<const T*>(xs.raw_data());
               const T* lp = static_cast<const T*>(s[2].raw_data());
               T* dp = dlogits.data_ptr<T>();
               parallel_for(N, 8 * C, [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   if (tt[r] == ignore_index) {  // an ignored row does not enter L
                     std::fill(dp + r * C, dp + (r + 1) * C, T(0));
                     continue;
                   }
                   const T l = lp[r], sc = static_cast<T>(scale);
                   T* d = dp + r * C;
                   for (int64_t c = 0; c < C; ++c) d[c] = exp_fast(xp[r * C + c] - l);  // p_rc
                   d[tt[r]] -= 1;  // p − 1 is exact near p = 1, where the gradient is small
                   for (int64_t c = 0; c < C; ++c) d[c] *= sc;
                 }
               });
             });
             return std::vector<Tensor>{dlogits, Tensor()};
           }, DoubleBackward::composed, where);
  }
  return out;
}

}  // namespace hg
