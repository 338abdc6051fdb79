// ops/loss.h — losses.
#pragma once
#include "engine/tensor.h"

namespace hg {

// Cross-entropy over logits (..., C) with integer targets (...) (i64), the mean over the targets
// that are not ignore_index. Backward: dlogits = (softmax(logits) − onehot(target)) / n_kept on
// kept rows, 0 on ignored rows. When every target is ignored the loss is 0 and so is its gradient
// (PyTorch returns NaN there).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100, Site where = Site::current());

}  // namespace hg
