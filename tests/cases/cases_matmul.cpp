// Gradcheck cases for ops/matmul.h: 2-D, batched, broadcast batches, 1-D operands, a transposed
// operand (read by gemm in place as CblasTrans). The helper adds the non-contiguous layout,
// which sends the operands through the contiguous-copy path.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_matmul_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  auto mm = [](const V& x) { return matmul(x[0], x[1]); };
  out.push_back({"matmul", "(3, 4) @ (4, 5)", mm, {leaf({3, 4}, gen), leaf({4, 5}, gen)}});
  out.push_back({"matmul", "batched (2, 3, 4) @ (2, 4, 2)", mm, {leaf({2, 3, 4}, gen), leaf({2, 4, 2}, gen)}});
  out.push_back({"matmul", "broadcast (2, 1, 3, 4) @ (3, 4, 2)", mm, {leaf({2, 1, 3, 4}, gen), leaf({3, 4, 2}, gen)}});
  out.push_back({"matmul", "broadcast (2, 3, 4) @ (4, 5), shared b", mm, {leaf({2, 3, 4}, gen), leaf({4, 5}, gen)}});
  out.push_back({"matmul", "1-D (4,) @ (4, 3)", mm, {leaf({4}, gen), leaf({4, 3}, gen)}});
  out.push_back({"matmul", "1-D (2, 3, 4) @ (4,)", mm, {leaf({2, 3, 4}, gen), leaf({4}, gen)}});
  out.push_back({"matmul", "1-D (5,) @ (5,), a dot product", mm, {leaf({5}, gen), leaf({5}, gen)}});
  out.push_back({"matmul", "transposed (3, 4) @ (5, 4)^T",
                 [](const V& x) { return matmul(x[0], x[1].transpose(0, 1)); }, {leaf({3, 4}, gen), leaf({5, 4}, gen)}});
  out.push_back({"matmul", "transposed (2, 4, 3)^T @ (2, 4, 2)",
                 [](const V& x) { return matmul(x[0].transpose(-1, -2), x[1]); }, {leaf({2, 4, 3}, gen), leaf({2, 4, 2}, gen)}});
}

}  // namespace hg::cases
