// ops/sampling.cpp — randperm and multinomial (ops/sampling.h). Nothing here is differentiable
// (the results are indices); both run on the host and move the result to the weights' device.
//
// randperm: n uniform draws u_i; the permutation is the order that sorts them (ties, which 53-bit
// draws make rare, keep their index order).
// multinomial: for each sample one uniform draw u, scaled by the row's remaining total W, picks the
// first category whose running sum of weights exceeds u·W (inverse transform sampling).
#include "ops/sampling.h"

#include <algorithm>
#include <new>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/error.h"
#include "engine/tape.h"

namespace hg {

namespace {

Tensor int_tensor(const std::vector<int64_t>& v, const Shape& shape) {
  Tensor t = empty(shape, DType::i64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

}  // namespace

Tensor randperm(int64_t n, Generator& gen) {
  if (n < 0) fail("randperm", "n = {} must be 0 or more", n);
  std::vector<double> keys;
  std::vector<int64_t> order;
  try {
    keys.resize(static_cast<size_t>(n));
    order.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    fail("randperm", "n = {} needs {:.3g} GiB of draws and indices, past this machine's memory; give a smaller n", n,
         static_cast<double>(n) * 16 / (1 << 30));
  }
  for (double& k : keys) k = gen.uniform();
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  return int_tensor(order, {n});
}

Tensor multinomial(const Tensor& weights, int64_t num_samples, bool replacement, Generator& gen) {
  constexpr const char* op = "multinomial";
  if (!weights.defined()) fail(op, "the weights are undefined");
  if (weights.dim() != 1 && weights.dim() != 2) fail(op, "weights {} must be 1-d or 2-d", weights.describe());
  if (num_samples <= 0) fail(op, "num_samples = {} must be positive", num_samples);
  const int64_t k = weights.size(-1), rows = weights.dim() == 2 ? weights.size(0) : 1;
  if (!replacement && num_samples > k)
    fail(op, "{} samples without replacement from {} categories (weights {}); draw at most {}", num_samples, k,
         weights.describe(), k);
  if (rows > 0 && num_samples > (int64_t{1} << 34) / rows) fail(op, "{} × {} samples are past the machine's memory", rows, num_samples);
  NoGradGuard ng;
  const std::vector<double> w = weights.detach().to(Device::cpu).to(DType::f64).contiguous().to_vector();
  for (double v : w)
    if (!std::isfinite(v) || v < 0) fail(op, "weights {} hold {}; they must be finite and ≥ 0", weights.describe(), v);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(rows * num_samples));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(w.begin() + r * k, w.begin() + (r + 1) * k);
    for (int64_t s = 0; s < num_samples; ++s) {
      const double total = std::accumulate(row.begin(), row.end(), 0.0);
      if (!(total > 0)) fail(op, "row {} of weights {} has no weight left to draw sample {} from", r, weights.describe(), s + 1);
      const double target = gen.uniform() * total;
      int64_t c = 0;
      for (double run = 0; c < k; ++c) {
        run += row[static_cast<size_t>(c)];
        if (target < run) break;
      }
      c = std::min(c, k - 1);
      while (c > 0 && row[static_cast<size_t>(c)] == 0) --c;  // rounding at the far end lands on a category with weight
      out.push_back(c);
      if (!replacement) row[static_cast<size_t>(c)] = 0;
    }
  }
  const Shape shape = weights.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples};
  return int_tensor(out, shape).to(weights.device());
}

}  // namespace hg
