// ops/sampling.h — a random permutation and draws from weighted categories (ops/sampling.cpp),
// torch.randperm and torch.multinomial, from a seeded Generator (engine/random.h).
#pragma once
#include "engine/random.h"
#include "engine/tensor.h"

namespace hg {

// The numbers 0 .. n − 1 in a random order (int64): the stable order of n uniform draws.
Tensor randperm(int64_t n, Generator& gen);

// num_samples category indices from each row of weights (1-d: (num_samples,); 2-d: (rows,
// num_samples)), int64. Weights are finite and ≥ 0, not necessarily summing to 1. Without
// replacement a drawn category's weight becomes 0 for the rest of its row.
Tensor multinomial(const Tensor& weights, int64_t num_samples, bool replacement, Generator& gen);

}  // namespace hg
