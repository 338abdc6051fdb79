// Gradcheck cases for ops/normalization.h: layer_norm and rms_norm over one and two trailing dims,
// with and without weight (and bias), and on a transposed (non-contiguous) view of the input.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_normalization_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"layer_norm", "(2, 3, 4) over (4,), weight and bias",
                 [](const V& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
                 {leaf({2, 3, 4}, gen), leaf({4}, gen), leaf({4}, gen)}});
  out.push_back({"layer_norm", "(3, 5) over (5,), no weight or bias", [](const V& x) { return layer_norm(x[0], {5}); },
                 {leaf({3, 5}, gen)}});
  out.push_back({"layer_norm", "(2, 3, 4) over (3, 4), weight only",
                 [](const V& x) { return layer_norm(x[0], {3, 4}, x[1]); }, {leaf({2, 3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"layer_norm", "(2, 3) over (2, 3), bias only, eps 0.1",
                 [](const V& x) { return layer_norm(x[0], {2, 3}, Tensor(), x[1], 0.1); }, {leaf({2, 3}, gen), leaf({2, 3}, gen)}});
  out.push_back({"layer_norm", "transposed (3, 2, 4) over (4,), w and b",
                 [](const V& x) { return layer_norm(x[0].transpose(0, 2), {4}, x[1], x[2]); },
                 {leaf({4, 2, 3}, gen), leaf({4}, gen), leaf({4}, gen)}});
  out.push_back({"rms_norm", "(2, 3, 4) over (4,), weight", [](const V& x) { return rms_norm(x[0], {4}, x[1]); },
                 {leaf({2, 3, 4}, gen), leaf({4}, gen)}});
  out.push_back({"rms_norm", "(3, 5) over (5,), no weight", [](const V& x) { return rms_norm(x[0], {5}); }, {leaf({3, 5}, gen)}});
  out.push_back({"rms_norm", "(2, 3, 4) over (3, 4), weight, eps 0.1",
                 [](const V& x) { return rms_norm(x[0], {3, 4}, x[1], 0.1); }, {leaf({2, 3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"rms_norm", "transposed (3, 2, 4) over (2, 4), weight",
                 [](const V& x) { return rms_norm(x[0].transpose(0, 2), {2, 4}, x[1]); }, {leaf({4, 2, 3}, gen), leaf({2, 4}, gen)}});
}

}  // namespace hg::cases
