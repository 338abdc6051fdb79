// ops/loss.cpp — cross-entropy over logits, with its own stable kernel and recorded backward.
//
// Notation: logits x (..., C) flattened to N rows of C classes, targets t (N,), K the set of kept
// rows (t_r != ignore_index), n = |K|. For a kept row r:
//   lse_r = m_r + log sum_c exp(x_rc - m_r),  m_r = max_c x_rc   (no exp ever overflows)
//   loss_r = -log softmax(x_r)[t_r] = lse_r - x_r,t_r
//   L = (1/n) sum_{r in K} loss_r                 (L = 0 when n = 0, see ops/loss.h)
// tangent. d loss_r = ⟨p_r, ẋ_r⟩ − ẋ_r,t_r, so L̇ = (1/n) Σ_{r in K} (⟨p_r, ẋ_r⟩ − ẋ_r,t_r) = ⟨D, ẋ⟩,
// with D = (P ∘ keep − onehot(t)) / n the gradient at g = 1: the composed backward, read forwards.
#include "ops/loss.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/row_rules.h"
#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/registry.h"

namespace hg {

// The op's definition (engine/op_def.h). Its backward recomputes P from the logits and the saved
// row log-sum-exp rather than keeping P (N, C).
constexpr OpDef kCrossEntropy{.name = "cross_entropy",
                              .saves = {{"logits", "P = exp(x − logsumexp) is recomputed from them"},
                                        {"targets", "the one-hot term, and which rows are ignored"},
                                        {"logsumexp", "per row (N,): P without a second reduction"},
                                        {"kept-row count", "the mean over kept rows divides by it"}},
                              .derivation = "ops/loss.cpp",
                              .fused = "the row kernel cross_entropy_backward (CPU), or its CUDA kernel",
                              .tangent = "L̇ = ⟨(P ∘ keep − onehot(t)) / n, ẋ⟩"};
struct CrossEntropySaved {  // the slots of kCrossEntropy's saves
  static constexpr SavedSlot logits = kCrossEntropy.slot("logits");
  static constexpr SavedSlot targets = kCrossEntropy.slot("targets");
  static constexpr SavedSlot lse = kCrossEntropy.slot("logsumexp");
  static constexpr SavedSlot kept = kCrossEntropy.slot("kept-row count");
};

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

// ---------------------------------------------------------------- forward
// One pass per row: the max, then the sum of exp(x - max), then lse and the row's loss.
// The row's log-sum-exp is cpu/row_rules.h's: summed in double for both dtypes (the sum over rows of
// a float32 mean would otherwise lose digits), the exponentials in the logits' dtype (exp_fast: a
// vectorised exp within 2 ulp in float32, std::exp in float64); lse is stored in the logits' dtype.

// The forward's results: the mean loss (0-d), the logsumexp of each row (N,) (0 on ignored rows)
// and the number of kept rows (0-d i64), which the backward reads.
struct Loss {
  Tensor out, lse, n_kept;
};

Loss cross_entropy_cpu(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  const char* op = kCrossEntropy.c_str();
  const int64_t C = logits.size(-1);
  const std::vector<int64_t> t = targets.to_int_vector();  // (N,)
  const int64_t N = static_cast<int64_t>(t.size());
  int64_t n_kept = 0;
  for (int64_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    if (t[r] < 0 || t[r] >= C)
      throw IndexError(fmt::format("{}: target {} at position {} of targets {} is out of range for C = {} classes; "
                                   "targets must lie in [0, {}) or equal ignore_index ({})", op, t[r],
                                   index_str(targets.shape(), r), shape_str(targets.shape()), C, C, ignore_index));
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
        const double l = cpu::logsumexp_row(row, C);  // cpu/row_rules.h
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
  Loss res;
  res.out = scalar(n_kept > 0 ? total / static_cast<double>(n_kept) : 0.0, logits.dtype());  // ()
  res.lse = lse;
  res.n_kept = scalar(static_cast<double>(n_kept), DType::i64);
  return res;
}

// ---------------------------------------------------------------- backward
// dL/dx_rc = (1/n) (d lse_r / dx_rc - [c = t_r]) = (p_rc - [c = t_r]) / n  for r in K,
// with p_r = softmax(x_r) = exp(x_r - lse_r); rows not in K do not enter L, so their gradient is 0.
// Times the incoming scalar g: dlogits = g (P - onehot(t)) / n on kept rows.
//
// Saves the logits (a detached alias: no copy; the version counter guards it against in-place
// writes), the targets, the logsumexp lse (N,) and the kept-row count n (0-d; on the GPU it stays
// on the device, where the backward kernel reads it) — not the probabilities P (N, C). The forward
// then never allocates an (N, C) buffer, and the backward recomputes p = exp(x - lse) with one
// exp per element, the trade FlashAttention makes with its saved log-sum-exp.
Tensor cross_entropy_backward_cpu(const Tensor& x_saved, const Tensor& targets, const Tensor& lse, int64_t ignore_index,
                                  const Tensor& g, const Tensor& kept) {
  const int64_t n_kept = static_cast<int64_t>(kept.item());
  const Shape shape = x_saved.shape();
  const DType dt = x_saved.dtype();
  if (n_kept == 0) return zeros(shape, dt);
  const int64_t C = shape.back(), N = C ? x_saved.numel() / C : 0;
  Tensor dlogits = empty(shape, dt);  // (..., C), every row written below
  const double scale = g.item() / static_cast<double>(n_kept);
  const Tensor xs = x_saved.contiguous();
  const std::vector<int64_t> tt = targets.to_int_vector();
  dispatch_float(dt, "cross_entropy backward", [&]<typename T>() {
    const T* xp = static_cast<const T*>(xs.raw_data());
    const T* lp = static_cast<const T*>(lse.raw_data());
    T* dp = dlogits.data_ptr<T>();
    parallel_for(N, 8 * C, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (tt[r] == ignore_index) {  // an ignored row does not enter L
          std::fill(dp + r * C, dp + (r + 1) * C, T(0));
          continue;
        }
        T* d = dp + r * C;
        cpu::probs_from_lse(xp + r * C, d, C, lp[r]);  // p_rc (cpu/row_rules.h)
        d[tt[r]] -= 1;  // p − 1 is exact near p = 1, where the gradient is small
        cpu::scale_row(d, C, static_cast<T>(scale));
      }
    });
  });
  return dlogits;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Site where) {
  const char* op = kCrossEntropy.c_str();
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

  const Loss loss = on_device(op, {logits, targets}, [&] { return cross_entropy_cpu(logits, targets, ignore_index); },
                              HG_CUDA([&] {
                                Loss l;
                                l.out = cuda::cross_entropy(logits.detach(), targets, ignore_index, &l.lse, &l.n_kept);
                                return l;
                              }()));
  if (should_record({logits})) {
    record(kCrossEntropy, {logits, targets}, {loss.out},
           {save(CrossEntropySaved::logits, logits), save(CrossEntropySaved::targets, targets),
            save(CrossEntropySaved::lse, loss.lse), save(CrossEntropySaved::kept, loss.n_kept)},
           [ignore_index](const std::vector<Tensor>& g, const Saved& s) {
             using S = CrossEntropySaved;
             return std::vector<Tensor>{cross_entropy_backward_composed(s[S::logits], s[S::targets], ignore_index, g[0]), Tensor()};
           }, [ignore_index](const std::vector<Tensor>& g, const Saved& s) {
             using S = CrossEntropySaved;
             const Tensor &x = s[S::logits], &t = s[S::targets], &lse = s[S::lse], &kept = s[S::kept];
             return std::vector<Tensor>{on_device("cross_entropy backward", {x, t, g[0]}, [&] {
               return cross_entropy_backward_cpu(x, t, lse, ignore_index, g[0], kept);
             }, HG_CUDA(cuda::cross_entropy_backward(x, t, lse, ignore_index, g[0], kept))), Tensor()};
           }, [&](const std::vector<Tensor>& d) {
             const Tensor one = ones({}, logits.dtype(), logits.device());
             return std::vector<Tensor>{sum(mul(cross_entropy_backward_composed(logits, targets, ignore_index, one), d[0]))};
           }, where);
  }
  return loss.out;
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> loss_ops() {
  static const OpDef* const defs[] = {&kCrossEntropy};
  return defs;
}

}  // namespace hg
