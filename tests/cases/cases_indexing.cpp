// Gradcheck cases for ops/indexing.h: masked_fill, where, embedding, concat, chunk, split.
// Masks and indices are passed as inputs that do not require grad, so gradcheck holds them fixed.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

namespace {
// A fixed-pattern b8 mask (about a third true) of the given shape.
Tensor pattern_mask(const Shape& shape, Generator& gen) {
  std::vector<bool> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = gen.uniform() < 0.35;
  return bool_tensor(v, shape);
}
}  // namespace

void add_indexing_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"masked_fill", "mask (3, 4), value -1.5",
                 [](const V& x) { return masked_fill(x[0], x[1], -1.5); }, {leaf({3, 4}, gen), pattern_mask({3, 4}, gen)}});
  out.push_back({"masked_fill", "mask (3, 1) on (2, 3, 4)",
                 [](const V& x) { return masked_fill(x[0], x[1], 2.0); },
                 {leaf({2, 3, 4}, gen), bool_tensor({true, false, true}, {3, 1})}});
  out.push_back({"where", "(3, 4), (3, 4), (3, 4)", [](const V& x) { return where(x[0], x[1], x[2]); },
                 {pattern_mask({3, 4}, gen), leaf({3, 4}, gen), leaf({3, 4}, gen)}});
  out.push_back({"where", "cond (3, 1), a (2, 1, 4), b (4,)", [](const V& x) { return where(x[0], x[1], x[2]); },
                 {bool_tensor({true, false, true}, {3, 1}), leaf({2, 1, 4}, gen), leaf({4}, gen)}});
  out.push_back({"where", "b constant", [](const V& x) { return where(x[0], x[1], x[2]); },
                 {pattern_mask({2, 3}, gen), leaf({2, 3}, gen), randn({2, 3}, gen, DType::f64)}});
  out.push_back({"embedding", "(5, 3), ids (2, 4) with repeats",
                 [](const V& x) { return embedding(x[0], x[1]); },
                 {leaf({5, 3}, gen), index_tensor({0, 2, 2, 4, 1, 2, 0, 0}, {2, 4})}});
  out.push_back({"embedding", "0-d index", [](const V& x) { return embedding(x[0], x[1]); },
                 {leaf({4, 3}, gen), index_tensor({3}, {})}});
  out.push_back({"concat", "dim 0, (2, 3) (1, 3) (3, 3)", [](const V& x) { return concat({x[0], x[1], x[2]}, 0); },
                 {leaf({2, 3}, gen), leaf({1, 3}, gen), leaf({3, 3}, gen)}});
  out.push_back({"concat", "dim 1, (2, 2) (2, 3) (2, 1)", [](const V& x) { return concat({x[0], x[1], x[2]}, 1); },
                 {leaf({2, 2}, gen), leaf({2, 3}, gen), leaf({2, 1}, gen)}});
  out.push_back({"concat", "dim -1, middle input constant",
                 [](const V& x) { return concat({x[0], x[1], x[2]}, -1); },
                 {leaf({2, 3, 2}, gen), randn({2, 3, 1}, gen, DType::f64), leaf({2, 3, 3}, gen)}});
  out.push_back({"chunk", "(7, 3) into 3 on dim 0: 3, 3, 1", [](const V& x) {
                   auto p = chunk(x[0], 3, 0);
                   return add(mul(p[0], p[1]), p[2]);
                 }, {leaf({7, 3}, gen)}});
  out.push_back({"chunk", "(3, 4) into 3 on dim 1: 2, 2", [](const V& x) {
                   auto p = chunk(x[0], 3, 1);
                   return mul(p[0], p[1]);
                 }, {leaf({3, 4}, gen)}});
  out.push_back({"split", "(2, 7) into 3, 3, 1 on dim -1", [](const V& x) {
                   auto p = split(x[0], {3, 3, 1}, -1);
                   return add(mul(p[0], p[1]), p[2]);
                 }, {leaf({2, 7}, gen)}});
  out.push_back({"split", "(5, 2) into 2, 0, 3, reassembled", [](const V& x) {
                   auto p = split(x[0], {2, 0, 3}, 0);
                   return concat({mul(p[2], 2.0), p[1], p[0]}, 0);
                 }, {leaf({5, 2}, gen)}});
}

}  // namespace hg::cases
