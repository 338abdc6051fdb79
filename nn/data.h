// nn/data.h — the repeated-sequence task of "What Attention Computes" and its metrics.
#pragma once
#include "engine/random.h"
#include "engine/tensor.h"

namespace hg::nn {

// A random pattern of length L ~ U{Lmin..Lmax} per sequence (tokens uniform in [0, vocab)),
// tiled to T tokens. tokens (B, T) i64, lengths (B,) i64, on `device`: the batch is drawn and
// built on the host (the same draws, so the same tokens, on every device) and, for a GPU,
// uploaded in one copy (tokens and lengths are then views of one device buffer).
struct RepeatedBatch {
  Tensor tokens, lengths;
};
RepeatedBatch repeated_batch(int64_t batch, int64_t T, int64_t vocab, int64_t Lmin, int64_t Lmax, Generator& gen,
                             Device device = Device::cpu);

// Next-token cross-entropy split by target position t (1-based, t = 1..T-1 for inputs x[:, :-1]
// and targets x[:, 1:]): first copy t < L, later copies t >= L.
// The split numbers are computed from the logits' values (double precision, not recorded); a
// set with no targets (n_first or n_later 0, e.g. L = 1 or L >= T) gives NaN for its mean, as
// torch's mean over an empty selection does — check the counts before using it.
// The logits, targets and lengths may be on either device (all on the same one): the split
// numbers are read back to the host, the loss stays on the logits' device.
struct SplitLoss {
  Tensor loss;        // mean over all targets (differentiable: the training loss)
  double first = 0;   // mean over first-copy targets
  double later = 0;   // mean over later-copy targets
  double later_acc = 0;  // argmax accuracy over later-copy targets (ties: the first maximum)
  int64_t n_first = 0, n_later = 0;  // how many targets each mean is over
};
SplitLoss split_losses(const Tensor& logits, const Tensor& targets, const Tensor& lengths);

// Accuracy of argmax(logits) per target position, (T,) doubles.
std::vector<double> accuracy_per_position(const Tensor& logits, const Tensor& targets);

}  // namespace hg::nn
