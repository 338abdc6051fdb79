// matmul against a naive triple loop (float32 and float64, every layout gemm reads in place and
// the ones it must copy), its gradient formulas, and its errors.
#include <doctest/doctest.h>

#include <cmath>

#include "handgrad.h"
#include "test_util.h"

using namespace hg;
using namespace hg::test;

namespace {

// C = A B for 2-D tensors by the definition C_ij = Σ_k A_ik B_kj, read with at() (any layout).
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  std::vector<double> c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < k; ++t) acc += a.at({i, t}) * b.at({t, j});
      c[static_cast<size_t>(i * m + j)] = acc;
    }
  return c;
}

void check_2d(const Tensor& a, const Tensor& b, double tol) {
  Tensor c = matmul(a, b);
  REQUIRE(c.shape() == Shape{a.size(0), b.size(1)});
  CHECK(max_abs_diff(c.to_vector(), naive_matmul(a, b)) < tol);
}

}  // namespace

TEST_CASE("matmul equals the triple loop, float32 and float64, contiguous and strided operands") {
  Generator gen(11);
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    const double tol = t == DType::f64 ? 1e-12 : 1e-4;
    Tensor a = randn({7, 5}, gen, t), b = randn({5, 6}, gen, t);
    check_2d(a, b, tol);                                                   // NoTrans, NoTrans
    check_2d(randn({5, 7}, gen, t).transpose(0, 1), b, tol);              // a read as CblasTrans
    check_2d(a, randn({6, 5}, gen, t).transpose(0, 1), tol);              // b read as CblasTrans
    check_2d(randn({7, 9}, gen, t).slice(1, 2, 7), b, tol);               // row stride 9 > 5: lda = 9
    check_2d(randn({7, 10}, gen, t).slice(1, 0, 10, 2), b, tol);          // column step 2: copied
    check_2d(randn({14, 5}, gen, t).slice(0, 0, 14, 2), b, tol);          // row step: lda = 10
    check_2d(expand(randn({1, 5}, gen, t), {7, 5}), b, tol);              // row stride 0: copied
    check_2d(randn({1, 5}, gen, t), randn({5, 1}, gen, t), tol);          // 1 x 1 result
    check_2d(randn({7, 1}, gen, t), randn({1, 6}, gen, t), tol);          // outer product, k = 1
  }
}

TEST_CASE("batched matmul equals the triple loop per slice, with broadcast and non-contiguous batches") {
  Generator gen(12);
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    const double tol = t == DType::f64 ? 1e-12 : 1e-4;
    struct Pair { Tensor a, b; };
    std::vector<Pair> pairs = {
        {randn({2, 3, 4}, gen, t), randn({2, 4, 5}, gen, t)},
        {randn({2, 1, 3, 4}, gen, t), randn({3, 4, 5}, gen, t)},            // batch (2, 3)
        {randn({2, 3, 4}, gen, t), randn({4, 5}, gen, t)},                  // b shared: one folded gemm
        {randn({3, 2, 4}, gen, t).transpose(0, 1), randn({4, 5}, gen, t)},  // shared b, a not stacked
        {randn({2, 4, 3}, gen, t).transpose(1, 2), randn({2, 5, 4}, gen, t).transpose(1, 2)},
        {noncontiguous_copy(randn({2, 3, 4}, gen, t)), noncontiguous_copy(randn({1, 4, 5}, gen, t))},
        {randn({4, 3}, gen, t), randn({2, 2, 3, 5}, gen, t)},               // a shared
    };
    for (const Pair& p : pairs) {
      Tensor c = matmul(p.a, p.b);
      Shape ba(p.a.shape().begin(), p.a.shape().end() - 2), bb(p.b.shape().begin(), p.b.shape().end() - 2);
      Shape batch = broadcast_shapes("test", ba, bb);
      Tensor ae = expand(p.a, [&] { Shape s = batch; s.push_back(p.a.size(-2)); s.push_back(p.a.size(-1)); return s; }());
      Tensor be = expand(p.b, [&] { Shape s = batch; s.push_back(p.b.size(-2)); s.push_back(p.b.size(-1)); return s; }());
      Tensor a3 = ae.reshape({-1, p.a.size(-2), p.a.size(-1)}), b3 = be.reshape({-1, p.b.size(-2), p.b.size(-1)});
      Tensor c3 = c.reshape({-1, p.a.size(-2), p.b.size(-1)});
      for (int64_t s = 0; s < a3.size(0); ++s)
        CHECK(max_abs_diff(c3.select(0, s).to_vector(), naive_matmul(a3.select(0, s), b3.select(0, s))) < tol);
    }
  }
}

TEST_CASE("1-D operands behave as in numpy") {
  Tensor v = tensor({1, 2, 3}, {3}, DType::f64);
  Tensor m = tensor({1, 0, 2, -1, 0, 1}, {3, 2}, DType::f64);  // rows (1,0), (2,-1), (0,1)
  Tensor vm = matmul(v, m);                                      // (2,)
  CHECK(vm.shape() == Shape{2});
  CHECK(vm.to_vector() == std::vector<double>{5, 1});
  Tensor mt = m.transpose(0, 1);  // (2, 3)
  Tensor mv = matmul(mt, v);      // (2,)
  CHECK(mv.shape() == Shape{2});
  CHECK(mv.to_vector() == std::vector<double>{5, 1});
  Tensor dot = matmul(v, v);
  CHECK(dot.dim() == 0);
  CHECK(dot.item() == 14.0);
  Tensor bv = matmul(expand(mt, {4, 2, 3}), v);  // batched matrix @ vector
  CHECK(bv.shape() == Shape{4, 2});
}

TEST_CASE("matmul backward is da = G b^T, db = a^T G, summed over broadcast batches") {
  Generator gen(13);
  Tensor a = randn({2, 3, 4}, gen, DType::f64).requires_grad_();
  Tensor b = randn({4, 5}, gen, DType::f64).requires_grad_();
  Tensor G = randn({2, 3, 5}, gen, DType::f64);
  matmul(a, b).backward(G);
  // da per slice = G_s b^T; db = Σ_s a_s^T G_s, all by the triple loop
  for (int64_t s = 0; s < 2; ++s)
    CHECK(max_abs_diff(a.grad().select(0, s).to_vector(), naive_matmul(G.select(0, s), b.detach().transpose(0, 1))) < 1e-12);
  std::vector<double> db = naive_matmul(a.detach().select(0, 0).transpose(0, 1), G.select(0, 0));
  std::vector<double> db1 = naive_matmul(a.detach().select(0, 1).transpose(0, 1), G.select(0, 1));
  for (size_t i = 0; i < db.size(); ++i) db[i] += db1[i];
  CHECK(max_abs_diff(b.grad().to_vector(), db) < 1e-12);
  // only the operand that needs a gradient gets one (and the tape saves only the other operand)
  Tensor w = randn({4, 5}, gen, DType::f64).requires_grad_();
  Tensor x = randn({3, 4}, gen, DType::f64);
  Tensor l = sum(matmul(x, w));
  CHECK(tape_str(l).find("saves: left operand a") != std::string::npos);
  l.backward();
  CHECK(w.grad().shape() == Shape{4, 5});
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("matmul errors name the op and both shapes") {
  Tensor a = zeros({2, 3}, DType::f64), b = zeros({4, 5}, DType::f64);
  CHECK_THROWS_WITH_AS(matmul(a, b), doctest::Contains("matmul: inner dimensions differ: a (2, 3) has 3 columns but b (4, 5) has 4 rows"), Error);
  CHECK_THROWS_WITH_AS(matmul(scalar(2.0, DType::f64), a), doctest::Contains("matmul:"), Error);
  CHECK_THROWS_WITH_AS(matmul(scalar(2.0, DType::f64), a), doctest::Contains("0-d"), Error);
  CHECK_THROWS_WITH_AS(matmul(a, zeros({3, 2}, DType::f32)), doctest::Contains("matmul: dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 2, 3}, DType::f64), zeros({3, 3, 4}, DType::f64)),
                       doctest::Contains("batch dimensions (2,) of a (2, 2, 3) and (3,) of b (3, 3, 4) do not broadcast"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}, DType::b8), zeros({3, 2}, DType::b8)), doctest::Contains("matmul:"), Error);
  // int64 operands multiply exactly (wrapping as int64 does), as PyTorch's
  CHECK(matmul(tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::i64), tensor({1, 0, -1, 2, 3, 1}, {3, 2}, DType::i64)).to_int_vector() ==
        std::vector<int64_t>{8, 7, 17, 16});
  CHECK(matmul(tensor({1, 2, 3}, {3}, DType::i64), tensor({4, 5, 6}, {3}, DType::i64)).to_int_vector() ==
        std::vector<int64_t>{32});  // vector · vector: a 0-d int64
  CHECK_THROWS_WITH_AS(matmul(tensor({1, 2}, {2}, DType::f64), tensor({1, 2, 3}, {3}, DType::f64)),
                       doctest::Contains("(2,)"), Error);
}

TEST_CASE("matmul with an empty inner dimension gives zeros") {
  Tensor c = matmul(zeros({3, 0}, DType::f64), zeros({0, 2}, DType::f64));
  CHECK(c.shape() == Shape{3, 2});
  CHECK(c.to_vector() == std::vector<double>(6, 0.0));
}
