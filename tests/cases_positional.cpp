// Gradcheck cases for ops/positional.h. rope is the one differentiable op here (alibi_bias and
// sinusoidal_positions are constants). The helper adds the stride-2 layout of every input; the
// permuted case below adds the (B, H, T, d_h) head view that the model takes from its fused qkv.
#include "gradcheck_cases.h"
#include "ops/positional.h"

namespace hg::cases {

void add_positional_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"rope", "(2, 3, 5, 4)", [](const V& x) { return rope(x[0]); }, {leaf({2, 3, 5, 4}, gen)}});
  out.push_back({"rope", "(5, 6), no leading dims", [](const V& x) { return rope(x[0]); }, {leaf({5, 6}, gen)}});
  out.push_back({"rope", "(3, 16), unrolled d_h", [](const V& x) { return rope(x[0], 100.0); }, {leaf({3, 16}, gen)}});
  out.push_back({"rope", "base 10, so every pair turns visibly", [](const V& x) { return rope(x[0], 10.0); }, {leaf({4, 6}, gen)}});
  out.push_back({"rope", "permuted head view (2, 3, 5, 4)",
                 [](const V& x) { return rope(x[0].permute({0, 2, 1, 3})); }, {leaf({2, 5, 3, 4}, gen)}});
  out.push_back({"rope_at", "(3, 4) from position 7", [](const V& x) { return rope_at(x[0], 7); }, {leaf({3, 4}, gen)}});
}

}  // namespace hg::cases
