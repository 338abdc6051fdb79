// labs/saturation_case.h — Section 2, Lab 1: why the scores are scaled.
//
// draws × (one query q, `keys` keys k_j), every entry iid N(0, 1), width d_k. For each draw the
// scores s_j = q · k_j (unscaled, standard deviation √d_k) or q · k_j / √d_k (scaled, standard
// deviation 1), the softmax weights, their largest entry and their entropy in nats.
//
// The draws come from the CPU generator (the same numbers on every device) and move to the
// device given; the matmul, the softmaxes and the reductions run there.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

struct SaturationSide {
  double median_max_weight = 0.0;  // median over draws of max_j p_j
  double mean_entropy = 0.0;       // mean over draws of −Σ_j p_j ln p_j, in nats
  double score_std = 0.0;          // standard deviation of all the scores
  std::vector<double> max_weights; // one per draw
};

struct Saturation {
  int64_t draws = 0, keys = 0, dk = 0;
  uint64_t seed = 0;
  SaturationSide unscaled, scaled;
};

// All draws at once: one batched matmul (draws, 1, d_k) @ (draws, d_k, keys), one softmax.
Saturation saturation(int64_t draws, uint64_t seed, int64_t dk = 128, int64_t keys = 16,
                      Device device = Device::cpu);

// Counts of x in `bins` equal bins over [lo, hi] (the last bin includes hi; outside values are dropped).
std::vector<int64_t> histogram(const std::vector<double>& x, int bins, double lo, double hi);

// Two histograms over the same bins as text bars, side by side, one line per bin. A bar is drawn
// in eighths of a character (█ and ▏▎▍▌▋▊▉), scaled to the largest count over both; a non-empty
// bin gets at least one eighth, so counts of 1, 34 and 97 beside 3,375 draw three different bars.
std::vector<std::string> histogram_lines(const std::vector<int64_t>& left, const std::vector<int64_t>& right,
                                         const std::string& left_title, const std::string& right_title, double lo,
                                         double hi, int width = 28);

}  // namespace hg::lab
