// Gradcheck cases for ops/statistics.h (var, std), ops/rearrange.h (gathers, triangles, reshapes),
// ops/compare.h's clamp, ops/power.h, ops/division.h, ops/linalg.h, ops/composed.h and ops/gather.h.
#include "cases/gradcheck_cases.h"

namespace hg::cases {

void add_rearrange_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  const auto i64 = [](std::vector<double> v) { return tensor(v, {static_cast<int64_t>(v.size())}, DType::i64); };
  out.push_back({"var", "all, unbiased", [](const V& x) { return var(x[0]); }, {leaf({3, 4}, gen)}});
  out.push_back({"var", "dim 1, correction 0, keepdim", [](const V& x) { return var(x[0], {1}, 0.0, true); }, {leaf({2, 5, 3}, gen)}});
  out.push_back({"var", "dims {0, 2}", [](const V& x) { return var(x[0], {0, -1}); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"std", "dim 0", [](const V& x) { return std(x[0], {0}); }, {leaf({4, 3}, gen)}});
  out.push_back({"std", "all, correction 0, keepdim", [](const V& x) { return std(x[0], {}, 0.0, true); }, {leaf({2, 3}, gen)}});
  out.push_back({"amax", "dims {0, 2}", [](const V& x) { return amax(x[0], {0, 2}); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"amax", "all, keepdim", [](const V& x) { return amax(x[0], {}, true); }, {leaf({2, 3}, gen)}});
  out.push_back({"amin", "dim -1", [](const V& x) { return amin(x[0], {-1}); }, {leaf({3, 4}, gen)}});
  out.push_back({"min", "dim 0, keepdim", [](const V& x) { return min(x[0], 0, true); }, {leaf({4, 3}, gen)}});
  out.push_back({"logsumexp", "dim 1", [](const V& x) { return logsumexp(x[0], {1}); }, {leaf({3, 5}, gen)}});
  out.push_back({"logsumexp", "dims {0, 1}, keepdim", [](const V& x) { return logsumexp(x[0], {0, 1}, true); }, {leaf({2, 3, 2}, gen)}});
  out.push_back({"cumsum", "dim 1", [](const V& x) { return cumsum(x[0], 1); }, {leaf({3, 4}, gen)}});
  out.push_back({"cumsum", "dim 0 of (4, 2, 3)", [](const V& x) { return cumsum(x[0], 0); }, {leaf({4, 2, 3}, gen)}});
  out.push_back({"cumprod", "dim 1", [](const V& x) { return cumprod(x[0], 1); }, {leaf({3, 4}, gen)}});
  out.push_back({"cumprod", "dim 0 of (4, 2, 3)", [](const V& x) { return cumprod(x[0], 0); }, {leaf({4, 2, 3}, gen)}});
  out.push_back({"sort", "dim 1, descending", [](const V& x) { return sort(x[0], 1, true).values; }, {leaf({3, 5}, gen)}});
  out.push_back({"sort", "dim 0 of a transposed (4, 3)", [](const V& x) { return sort(x[0].transpose(0, 1), 0).values; }, {leaf({4, 3}, gen)}});
  out.push_back({"topk", "3 largest along dim 1", [](const V& x) { return topk(x[0], 3, 1).values; }, {leaf({2, 6}, gen)}});
  out.push_back({"topk", "2 smallest along dim 0", [](const V& x) { return topk(x[0], 2, 0, false).values; }, {leaf({5, 3}, gen)}});
  // rows with one zero (first, middle, last), two and three: the 0/0 that rev(g ∘ out) / x meets
  out.push_back({"cumprod", "dim 1, rows with zeros", [](const V& x) { return cumprod(x[0], 1); },
                 {tensor({0.5, 0.0, 1.5, -2.0, 0.0, 1.2, 0.7, 0.9, 1.1, -0.8, 0.0, 0.0, 1.3, 0.6, -1.4, 0.0, 0.0, 2.0, 0.0, 0.4,
                          0.0, 0.0, 0.8, 0.0},
                         {6, 4}, DType::f64).requires_grad_()}});
  out.push_back({"index_select", "dim 1, repeated index", [i64](const V& x) { return index_select(x[0], 1, i64({2, 0, 2, 1})); },
                 {leaf({2, 3, 2}, gen)}});
  out.push_back({"masked_select", "(2, 3) by a (3,) mask", [](const V& x) {
                   return masked_select(x[0], tensor({1, 0, 1}, {3}, DType::b8));
                 }, {leaf({2, 3}, gen)}});
  out.push_back({"flip", "dims {0, 2}", [](const V& x) { return flip(x[0], {0, 2}); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"roll", "shift 2 along dim 1, -1 along dim 0", [](const V& x) { return roll(x[0], {2, -1}, {1, 0}); },
                 {leaf({3, 4}, gen)}});
  out.push_back({"roll", "flattened, shift 5", [](const V& x) { return roll(x[0], {5}); }, {leaf({2, 3}, gen)}});
  out.push_back({"diagonal", "offset 1 of dims (0, 2)", [](const V& x) { return diagonal(x[0], 1, 0, 2); }, {leaf({3, 2, 4}, gen)}});
  out.push_back({"diagonal", "offset -1", [](const V& x) { return diagonal(x[0], -1); }, {leaf({4, 3}, gen)}});
  out.push_back({"diag", "1-d into (4, 4), offset 1", [](const V& x) { return diag(x[0], 1); }, {leaf({3}, gen)}});
  out.push_back({"tril", "(2, 3, 4), offset 1", [](const V& x) { return tril(x[0], 1); }, {leaf({2, 3, 4}, gen)}});
  out.push_back({"triu", "(4, 3)", [](const V& x) { return triu(x[0]); }, {leaf({4, 3}, gen)}});
  out.push_back({"flatten", "dims 1..2", [](const V& x) { return flatten(x[0], 1, 2); }, {leaf({2, 3, 2, 2}, gen)}});
  out.push_back({"unflatten", "dim 1 into (2, -1)", [](const V& x) { return unflatten(x[0], 1, {2, -1}); }, {leaf({3, 6}, gen)}});
  out.push_back({"movedim", "0 -> 2", [](const V& x) { return movedim(x[0], {0}, {2}); }, {leaf({2, 3, 4}, gen)}});
  // clamp's bounds away from the inputs (central differences straddling a bound would see the kink)
  out.push_back({"clamp", "[-0.5, 0.6]", [](const V& x) { return clamp(x[0], -0.5, 0.6); },
                 {tensor({-2, -0.3, 0.1, 0.4, 1.5, 3}, {2, 3}, DType::f64).requires_grad_()}});
  out.push_back({"clamp", "tensor bounds, broadcast", [](const V& x) { return clamp(x[0], x[1], x[2]); },
                 {tensor({-2, -0.3, 0.1, 0.4, 1.5, 3}, {2, 3}, DType::f64).requires_grad_(),
                  tensor({-1, 0, 0.2}, {3}, DType::f64).requires_grad_(), tensor({2.5}, {1}, DType::f64).requires_grad_()}});
  out.push_back({"maximum", "broadcast (2, 3) and (3,)", [](const V& x) { return maximum(x[0], x[1]); },
                 {leaf({2, 3}, gen), leaf({3}, gen)}});
  out.push_back({"minimum", "(3, 2) and (3, 2)", [](const V& x) { return minimum(x[0], x[1]); }, {leaf({3, 2}, gen), leaf({3, 2}, gen)}});
  out.push_back({"lerp", "tensor weight, broadcast", [](const V& x) { return lerp(x[0], x[1], x[2]); },
                 {leaf({2, 3}, gen), leaf({3}, gen), leaf({2, 1}, gen)}});
  out.push_back({"lerp", "weight 0.3", [](const V& x) { return lerp(x[0], x[1], 0.3); }, {leaf({2, 3}, gen), leaf({2, 3}, gen)}});
  out.push_back({"stack", "dim 1", [](const V& x) { return stack({x[0], x[1], x[0]}, 1); }, {leaf({2, 3}, gen), leaf({2, 3}, gen)}});
  out.push_back({"repeat", "(2, 3) by (2, 1, 2)", [](const V& x) { return repeat(x[0], {2, 1, 2}); }, {leaf({2, 3}, gen)}});
  out.push_back({"tile", "(2, 3) by (2,)", [](const V& x) { return tile(x[0], {2}); }, {leaf({2, 3}, gen)}});
  out.push_back({"repeat_interleave", "2 along dim 0", [](const V& x) { return repeat_interleave(x[0], 2, 0); }, {leaf({3, 2}, gen)}});
  out.push_back({"narrow", "dim 1 from -3, 2 long", [](const V& x) { return narrow(x[0], 1, -3, 2); }, {leaf({2, 5}, gen)}});
  // ops/power.cpp: the base through exp (positive, so ln a is defined), broadcast and transposed
  out.push_back({"pow_tensor", "exp(a)^b, broadcast (3, 4) by (4,)", [](const V& x) { return pow(exp(x[0]), x[1]); },
                 {leaf({3, 4}, gen), leaf({4}, gen)}});
  out.push_back({"pow_tensor", "transposed base, (2, 1) exponent", [](const V& x) {
                   return pow(exp(x[0]).transpose(0, 1), x[1]);
                 }, {leaf({3, 2}, gen), leaf({2, 1}, gen)}});
  out.push_back({"pow_tensor", "negative base, whole exponents", [](const V& x) { return pow(x[0], x[1]); },
                 {tensor({-1.5, -0.7, 0.4, 1.2}, {4}, DType::f64).requires_grad_(), tensor({2, 3, 2, 1}, {4}, DType::f64)}});
  // ops/division.cpp: the quotients away from whole numbers (floor's steps)
  out.push_back({"remainder", "(2, 3) % (3,), mixed signs", [](const V& x) { return remainder(x[0], x[1]); },
                 {tensor({5.3, -5.3, 2.2, 7.9, -0.4, 3.1}, {2, 3}, DType::f64).requires_grad_(),
                  tensor({2.0, 1.7, -1.3}, {3}, DType::f64).requires_grad_()}});
  out.push_back({"remainder", "transposed dividend by a number", [](const V& x) { return remainder(x[0].transpose(0, 1), 1.7); },
                 {tensor({5.3, -5.3, 2.2, 7.9, -0.4, 3.1}, {3, 2}, DType::f64).requires_grad_()}});
  // ops/linalg.cpp's vector_norm
  out.push_back({"vector_norm", "ord 2 over dim 1", [](const V& x) { return vector_norm(x[0], 2.0, {1}); }, {leaf({3, 4}, gen)}});
  out.push_back({"vector_norm", "ord 3, all, transposed", [](const V& x) { return vector_norm(x[0].transpose(0, 1), 3.0); },
                 {leaf({2, 3}, gen)}});
  out.push_back({"vector_norm", "ord inf over dim 0, keepdim", [](const V& x) { return vector_norm(x[0], INFINITY, {0}, true); },
                 {leaf({3, 2}, gen)}});
  // ops/composed.cpp; prod with a zero in a row (the quotient out/x would be 0/0 there)
  out.push_back({"prod", "dim 1, a zero in row 0", [](const V& x) { return prod(x[0], 1); },
                 {tensor({0.5, 0.0, -1.2, 2.0, 1.5, -0.7, 0.9, 1.1, 1.3, -0.4}, {2, 5}, DType::f64).requires_grad_()}});
  out.push_back({"prod", "all of a transposed (3, 2), keepdim", [](const V& x) { return prod(x[0].transpose(0, 1), std::nullopt, true); },
                 {leaf({2, 3}, gen)}});
  out.push_back({"unfold", "windows of 3, step 2 along dim 1", [](const V& x) { return unfold(x[0], 1, 3, 2); }, {leaf({2, 7}, gen)}});
  out.push_back({"diag_embed", "(2, 3), offset -1", [](const V& x) { return diag_embed(x[0], -1); }, {leaf({2, 3}, gen)}});
  out.push_back({"unfold", "a transposed (5, 2) along dim 1, step 1", [](const V& x) { return unfold(x[0].transpose(0, 1), 1, 2, 1); },
                 {leaf({5, 2}, gen)}});
  out.push_back({"diag_embed", "a transposed (3, 2)", [](const V& x) { return diag_embed(x[0].transpose(0, 1)); }, {leaf({3, 2}, gen)}});
  out.push_back({"diag_embed", "offset 1 into dims (0, 2)", [](const V& x) { return diag_embed(x[0], 1, 0, 2); }, {leaf({2, 3}, gen)}});
  // ops/gather.cpp
  const auto idx = [](std::vector<double> v, Shape s) { return tensor(v, s, DType::i64); };
  out.push_back({"gather", "dim 1, repeated index", [idx](const V& x) { return gather(x[0], 1, idx({2, 0, 2, 1, 1, 1}, {2, 3})); },
                 {leaf({2, 4}, gen)}});
  out.push_back({"gather", "dim 0 of a transposed (3, 2)", [idx](const V& x) {
                   return gather(x[0].transpose(0, 1), 0, idx({1, 0, 2, 2}, {2, 2}));
                 }, {leaf({2, 3}, gen)}});
  out.push_back({"scatter_add", "dim 1, repeated places", [idx](const V& x) {
                   return scatter_add(x[0], 1, idx({0, 0, 3, 1, 2, 1}, {2, 3}), x[1]);
                 }, {leaf({2, 4}, gen), leaf({2, 3}, gen)}});
  out.push_back({"scatter", "dim 0, src larger than index", [idx](const V& x) {
                   return scatter(x[0], 0, idx({2, 0, 1}, {1, 3}), x[1]);
                 }, {leaf({3, 3}, gen), leaf({2, 4}, gen)}});
  out.push_back({"scatter_add", "transposed x and src, dim 0", [idx](const V& x) {
                   return scatter_add(x[0].transpose(0, 1), 0, idx({2, 0, 2, 1}, {2, 2}), x[1].transpose(0, 1));
                 }, {leaf({2, 3}, gen), leaf({2, 2}, gen)}});
  out.push_back({"scatter", "transposed x and src, dim 1", [idx](const V& x) {
                   return scatter(x[0].transpose(0, 1), 1, idx({1, 0, 0}, {3, 1}), x[1].transpose(0, 1));
                 }, {leaf({2, 3}, gen), leaf({1, 3}, gen)}});
  out.push_back({"scatter", "value 0.5 along dim 1", [idx](const V& x) { return scatter(x[0], 1, idx({1, 3}, {2, 1}), 0.5); },
                 {leaf({2, 4}, gen)}});
}

}  // namespace hg::cases
