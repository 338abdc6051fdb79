// Gradcheck cases for ops/positional.h. rope is the one differentiable op here (alibi_bias and
// sinusoidal_positions are constants). The helper adds the stride-2 layout of every input; the
// permuted case below adds the (B, H, T, d_h) head view that the model takes from its fused qkv.
#include "cases/gradcheck_cases.h"
#include "ops/elementwise.h"
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
  // qkv_heads: every output used (with different weights, so a swapped part would show), the
  // plain cut as well as the rotating one; a transposed (B, T, 3d) view as the non-contiguous input.
  auto heads_sum = [](const QkvHeads& h) { return add(add(mul(h.q, 2.0), mul(h.k, h.k)), mul(h.v, -0.5)); };
  out.push_back({"qkv_heads", "(2, 5, 3·8) into 2 heads, RoPE on q and k",
                 [heads_sum](const V& x) { return heads_sum(qkv_heads(x[0], 2, true, 10.0)); }, {leaf({2, 5, 24}, gen)}});
  out.push_back({"qkv_heads", "(2, 4, 3·4) into 1 head, no rotation",
                 [heads_sum](const V& x) { return heads_sum(qkv_heads(x[0], 1, false)); }, {leaf({2, 4, 12}, gen)}});
  out.push_back({"qkv_heads", "a (T, B, 3d) tensor's transposed view",
                 [heads_sum](const V& x) { return heads_sum(qkv_heads(x[0].transpose(0, 1), 3, true, 10.0)); },
                 {leaf({4, 2, 18}, gen)}});
  out.push_back({"rope_at", "(3, 4) from position 7", [](const V& x) { return rope_at(x[0], 7); }, {leaf({3, 4}, gen)}});
}

}  // namespace hg::cases
