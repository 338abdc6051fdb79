// nn/data.cpp — the repeated-sequence task of "What Attention Computes" and its metrics.
//
// The text's code, line for line:
//   L = randint(Lmin, Lmax + 1, (B,));  s = randint(0, vocab, (B, T));  x = gather(s, 1, pos % L)
//   ce = cross_entropy(logits, Y, reduction='none');  rep = arange(1, T + 1) >= L[:, None]
//   first = ce[~rep].mean();  later = ce[rep].mean();  loss = ce.mean()
// The split numbers are measurements, not part of the graph: they are computed from the logits'
// values in double precision without recording; only `loss` (hg::cross_entropy) is differentiable.
#include "nn/data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/loss.h"

namespace hg::nn {

RepeatedBatch repeated_batch(int64_t batch, int64_t T, int64_t vocab, int64_t Lmin, int64_t Lmax, Generator& gen,
                             Device device) {
  const char* op = "repeated_batch";
  if (batch < 1 || T < 1) fail(op, "batch {} and T {} must both be at least 1", batch, T);
  if (vocab < 1) fail(op, "vocab must be at least 1, got {}", vocab);
  if (Lmin < 1 || Lmax < Lmin)
    fail(op, "pattern lengths must satisfy 1 <= Lmin <= Lmax, got Lmin = {}, Lmax = {}", Lmin, Lmax);
  // The draws in the text's order: every length first, then a (B, T) block of tokens of which
  // only the first L of each row are used (so a sequence's tokens do not depend on L's value).
  Tensor lengths = randint({batch}, gen, Lmin, Lmax + 1);  // (B,)
  Tensor s = randint({batch, T}, gen, 0, vocab);           // (B, T)
  Tensor tokens = empty({batch, T}, DType::i64);           // (B, T)
  const int64_t* L = lengths.data_ptr<int64_t>();
  const int64_t* sp = s.data_ptr<int64_t>();
  int64_t* x = tokens.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < T; ++t) x[b * T + t] = sp[b * T + t % L[b]];  // gather(s, pos % L)
  if (device == Device::cpu) return {tokens, lengths};
  // One upload: tokens then lengths, back to back in one (B·T + B,) host buffer.
  Tensor packed = empty({batch * T + batch}, DType::i64);  // (B·T + B,)
  std::copy_n(x, batch * T, packed.data_ptr<int64_t>());
  std::copy_n(L, batch, packed.data_ptr<int64_t>() + batch * T);
  Tensor on_device = packed.to(device);
  return {on_device.slice(0, 0, batch * T).view({batch, T}), on_device.slice(0, batch * T, batch * T + batch)};
}

namespace {

// Per target (b, t): its cross-entropy −log softmax(z_bt)[y_bt] = lse − z_bt,y (lse = m + log Σ
// exp(z − m), in double) and whether argmax z_bt (the first maximum, as torch.argmax) is y_bt.
struct RowStats {
  int64_t B = 0, T = 0, V = 0;
  std::vector<double> ce;   // (B·T)
  std::vector<uint8_t> hit; // (B·T)
};

RowStats row_stats(const char* op, const Tensor& logits, const Tensor& targets) {
  if (!logits.defined() || !targets.defined()) fail(op, "logits and targets must both be defined");
  if (logits.dim() != 3)
    fail(op, "logits {} must be (B, T, V): one row of V scores per target position", logits.describe());
  if (targets.dtype() != DType::i64 || targets.dim() != 2 || targets.size(0) != logits.size(0) ||
      targets.size(1) != logits.size(1))
    fail(op, "targets {} must be i64 (B, T) = ({}, {}) to match logits {}", targets.describe(), logits.size(0),
         logits.size(1), logits.describe());
  RowStats r;
  r.B = logits.size(0), r.T = logits.size(1), r.V = logits.size(2);
  if (r.V < 1) fail(op, "logits {} have no classes", logits.describe());
  const int64_t N = r.B * r.T, V = r.V;
  const std::vector<int64_t> y = targets.to_int_vector();
  for (int64_t i = 0; i < N; ++i)
    if (y[static_cast<size_t>(i)] < 0 || y[static_cast<size_t>(i)] >= V)
      fail(op, "target {} at {} of targets {} is out of range for V = {} classes", y[static_cast<size_t>(i)],
           index_str(targets.shape(), i), shape_str(targets.shape()), V);
  r.ce.resize(static_cast<size_t>(N));
  r.hit.resize(static_cast<size_t>(N));
  NoGradGuard ng;
  const Tensor z = logits.detach().to(Device::cpu).contiguous();  // (B, T, V), read back from a GPU
  dispatch_float(z.dtype(), op, [&]<typename T>() {
    const T* zp = z.data_ptr<const T>();
    for (int64_t i = 0; i < N; ++i) {
      const T* row = zp + i * V;
      int64_t best = 0;
      for (int64_t c = 1; c < V; ++c)
        if (row[c] > row[best]) best = c;
      const double m = row[best];
      double s = 0;
      for (int64_t c = 0; c < V; ++c) s += std::exp(static_cast<double>(row[c]) - m);
      const int64_t t = y[static_cast<size_t>(i)];
      r.ce[static_cast<size_t>(i)] = m + std::log(s) - static_cast<double>(row[t]);
      r.hit[static_cast<size_t>(i)] = best == t;
    }
  });
  return r;
}

}  // namespace

SplitLoss split_losses(const Tensor& logits, const Tensor& targets, const Tensor& lengths) {
  const char* op = "split_losses";
  RowStats r = row_stats(op, logits, targets);
  if (!lengths.defined() || lengths.dtype() != DType::i64 || lengths.dim() != 1 || lengths.size(0) != r.B)
    fail(op, "lengths {} must be i64 (B,) = ({},), one pattern length per sequence",
         lengths.defined() ? lengths.describe() : "(undefined)", r.B);
  const std::vector<int64_t> L = lengths.to_int_vector();

  SplitLoss out;
  out.loss = cross_entropy(logits, targets);  // the mean over all B·T targets, recorded
  double first = 0, later = 0;
  int64_t hits = 0;
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t t = 0; t < r.T; ++t) {
      const size_t i = static_cast<size_t>(b * r.T + t);
      if (t + 1 >= L[static_cast<size_t>(b)]) {  // rep = arange(1, T + 1) >= L: a later copy
        later += r.ce[i];
        hits += r.hit[i];
        ++out.n_later;
      } else {
        first += r.ce[i];
        ++out.n_first;
      }
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out.first = out.n_first ? first / static_cast<double>(out.n_first) : nan;
  out.later = out.n_later ? later / static_cast<double>(out.n_later) : nan;
  out.later_acc = out.n_later ? static_cast<double>(hits) / static_cast<double>(out.n_later) : nan;
  return out;
}

std::vector<double> accuracy_per_position(const Tensor& logits, const Tensor& targets) {
  RowStats r = row_stats("accuracy_per_position", logits, targets);
  std::vector<double> acc(static_cast<size_t>(r.T), 0.0);
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t t = 0; t < r.T; ++t) acc[static_cast<size_t>(t)] += r.hit[static_cast<size_t>(b * r.T + t)];
  for (double& a : acc) a /= static_cast<double>(r.B);
  return acc;
}

}  // namespace hg::nn
