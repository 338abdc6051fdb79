// nn/data.h — the repeated-sequence task of "What Attention Computes" and its metrics.
#pragma once
#include "engine/random.h"
#include "engine/tensor.h"

namespace hg::nn {

// A random pattern of length L ~ U{Lmin..Lmax} per sequence (tokens uniform in [0, vocab)),
// tiled to T tokens. tokens (B, T) i64, lengths (B,) i64.
struct RepeatedBatch {
  Tensor tokens, lengths;
};
RepeatedBatch repeated_batch(int64_t batch, int64_t T, int64_t vocab, int64_t Lmin, int64_t Lmax, Generator& gen);

// Next-token cross-entropy split by target position t (1-based, t = 1..T-1 for inputs x[:, :-1]
// and targets x[:, 1:]): first copy t < L, later copies t >= L.
struct SplitLoss {
  Tensor loss;        // mean over all targets (differentiable: the training loss)
  double first = 0;   // mean over first-copy targets
  double later = 0;   // mean over later-copy targets
  double later_acc = 0;  // argmax accuracy over later-copy targets
};
SplitLoss split_losses(const Tensor& logits, const Tensor& targets, const Tensor& lengths);

// Accuracy of argmax(logits) per target position, (T,) doubles.
std::vector<double> accuracy_per_position(const Tensor& logits, const Tensor& targets);

}  // namespace hg::nn
