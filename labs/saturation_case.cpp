#include "saturation_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hg::lab {

namespace {

double median(std::vector<double> x) {
  if (x.empty()) return std::nan("");
  const size_t n = x.size(), mid = n / 2;
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(mid), x.end());
  const double upper = x[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

// Statistics of the softmax of one batch of score rows s (draws, keys).
SaturationSide side(const Tensor& s) {
  SaturationSide r;
  Tensor P = softmax(s, -1);                                  // (draws, keys)
  Tensor H = neg(sum(mul(P, log_softmax(s, -1)), {-1}));      // (draws,)  log_softmax: no 0 · log 0
  r.max_weights = max(P, -1).to_vector();                     // (draws,)
  r.median_max_weight = median(r.max_weights);
  r.mean_entropy = mean(H).item();
  const double m = mean(s).item();
  r.score_std = std::sqrt(mean(mul(s, s)).item() - m * m);
  return r;
}

}  // namespace

Saturation saturation(int64_t draws, uint64_t seed, int64_t dk, int64_t keys, Device device) {
  if (draws < 1 || dk < 1 || keys < 1)
    fail("saturation", "draws, d_k and keys must be positive (got {}, {}, {})", draws, dk, keys);
  NoGradGuard ng;
  Generator gen(seed);
  Saturation r{draws, keys, dk, seed, {}, {}};
  Tensor q = randn({draws, 1, dk}, gen, DType::f64).to(device);     // (draws, 1, d_k)
  Tensor k = randn({draws, keys, dk}, gen, DType::f64).to(device);  // (draws, keys, d_k)
  Tensor s = matmul(q, k.transpose(1, 2)).squeeze(1);                // (draws, keys)  q · k_j
  r.unscaled = side(s);
  r.scaled = side(s / std::sqrt(static_cast<double>(dk)));
  return r;
}

std::vector<int64_t> histogram(const std::vector<double>& x, int bins, double lo, double hi) {
  if (bins < 1 || !(hi > lo)) fail("histogram", "need bins >= 1 and hi > lo (got {}, [{}, {}])", bins, lo, hi);
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  for (double v : x) {
    if (!(v >= lo && v <= hi)) continue;
    int b = std::min(bins - 1, static_cast<int>((v - lo) / (hi - lo) * bins));
    ++counts[static_cast<size_t>(b)];
  }
  return counts;
}

std::vector<std::string> histogram_lines(const std::vector<int64_t>& left, const std::vector<int64_t>& right,
                                         const std::string& left_title, const std::string& right_title, double lo,
                                         double hi, int width) {
  if (left.size() != right.size()) fail("histogram_lines", "{} bins on the left, {} on the right", left.size(), right.size());
  int64_t most = 1;
  for (int64_t c : left) most = std::max(most, c);
  for (int64_t c : right) most = std::max(most, c);
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  auto bar = [&](int64_t c) {
    int64_t e = std::llround(static_cast<double>(c) / static_cast<double>(most) * width * 8);
    if (c > 0 && e == 0) e = 1;  // a non-empty bin is never invisible
    std::string s;
    for (int64_t i = 0; i < e / 8; ++i) s += "█";
    s += kEighths[e % 8];
    const int64_t columns = e / 8 + (e % 8 ? 1 : 0);  // padded by columns, not bytes (the blocks are UTF-8)
    s.append(static_cast<size_t>(std::max<int64_t>(0, width - columns)), ' ');
    return fmt::format("{} {:>5}", s, c);
  };
  std::vector<std::string> lines;
  lines.push_back(fmt::format("  {:<11}  {:<{}}   {}", "max weight", left_title, width + 6, right_title));
  const double w = (hi - lo) / static_cast<double>(left.size());
  for (size_t b = 0; b < left.size(); ++b)
    lines.push_back(fmt::format("  {:.2f}–{:.2f}    {}   {}", lo + w * static_cast<double>(b),
                                lo + w * static_cast<double>(b + 1), bar(left[b]), bar(right[b])));
  return lines;
}

}  // namespace hg::lab
