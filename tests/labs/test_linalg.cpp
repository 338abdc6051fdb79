// labs/linalg.h: LAPACK's singular values and numpy's rank rule on matrices built with a known
// rank, and symmetric eigenvalues worked by hand.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include "handgrad.h"
#include "labs/linalg.h"

using namespace hg;
using namespace hg::lab;

TEST_CASE("linalg: singular values and numpy's rank of matrices built with a known rank") {
  Generator gen(3);
  for (int64_t k : {1, 5, 12}) {
    CAPTURE(k);
    const Tensor A = matmul(randn({20, k}, gen, DType::f64), randn({k, 30}, gen, DType::f64));  // rank k
    const MatrixRank r = lab::matrix_rank(A);
    CHECK(r.rank == k);
    CHECK(r.s.size() == 20);
    CHECK(r.tol == doctest::Approx(r.s[0] * 30 * 2.220446049250313e-16));
    CHECK(r.s[static_cast<size_t>(k) - 1] > 1e-3 * r.s[0]);
    CHECK(r.s[static_cast<size_t>(k)] < 1e-12 * r.s[0]);  // the rest is float64 rounding
    // The same product in float32: the gap stays, the tolerance uses float32's eps.
    const MatrixRank r32 = lab::matrix_rank(A.to(DType::f32));
    CHECK(r32.rank == k);
    CHECK(r32.tol == doctest::Approx(r32.s[0] * 30 * 1.1920928955078125e-7).epsilon(1e-6));
  }
  // Known values: a scaled permutation has singular values |entries|, largest first; transposing keeps them.
  const Tensor P = tensor({0, 3, 0, 0, 0, -1, 2, 0, 0}, {3, 3}, DType::f64);
  const std::vector<double> s = singular_values(P);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == doctest::Approx(3));
  CHECK(s[1] == doctest::Approx(2));
  CHECK(s[2] == doctest::Approx(1));
  CHECK(singular_values(tensor({3, 4}, {1, 2}, DType::f64))[0] == doctest::Approx(5));  // a row: its length
  CHECK(lab::matrix_rank(zeros({4, 6}, DType::f64)).rank == 0);
  CHECK_THROWS_AS(singular_values(zeros({2, 2, 2}, DType::f64)), Error);
}

TEST_CASE("the library's svdvals and matrix_rank (one-sided Jacobi) against LAPACK's, batched and wide") {
  Generator gen(8);
  const Tensor A = matmul(randn({3, 9, 4}, gen, DType::f64), randn({4, 14}, gen, DType::f64));  // 3 of rank 4, wide
  const Tensor s = svdvals(A);
  CHECK(s.shape() == Shape{3, 9});
  const Tensor ranks = hg::matrix_rank(A);
  CHECK(ranks.dtype() == DType::i64);
  CHECK(ranks.to_int_vector() == std::vector<int64_t>{4, 4, 4});
  for (int64_t b = 0; b < 3; ++b) {
    const std::vector<double> ref = singular_values(A.select(0, b));
    for (int64_t i = 0; i < 9; ++i) CHECK(s.at({b, i}) == doctest::Approx(ref[static_cast<size_t>(i)]).epsilon(1e-12).scale(ref[0]));
  }
  // float32 with the dtype's tolerance, the rank PyTorch and numpy give
  CHECK(hg::matrix_rank(A.to(DType::f32)).to_int_vector() == std::vector<int64_t>{4, 4, 4});
  CHECK(hg::matrix_rank(A.select(0, 0), 1e300).item() == 0);  // atol above everything
  CHECK_THROWS_AS(svdvals(A.detach().requires_grad_()), Error);  // no derivative: refused, not silently constant
  CHECK_THROWS_AS(svdvals(zeros({3}, DType::f64)), Error);
}

TEST_CASE("linalg: eigenvalues of symmetric matrices worked by hand, smallest first") {
  const std::vector<double> w = symmetric_eigenvalues(tensor({2, 1, 1, 2}, {2, 2}, DType::f64));
  REQUIRE(w.size() == 2);
  CHECK(w[0] == doctest::Approx(1));
  CHECK(w[1] == doctest::Approx(3));
  // [[0, 1], [1, 0]] is symmetric but indefinite: −1 and 1.
  const std::vector<double> u = symmetric_eigenvalues(tensor({0, 1, 1, 0}, {2, 2}, DType::f32));
  CHECK(u[0] == doctest::Approx(-1));
  CHECK(u[1] == doctest::Approx(1));
  CHECK(frobenius_norm(tensor({3, 4}, {1, 2}, DType::f64)) == doctest::Approx(5));
}

#endif  // HANDGRAD_WITH_LABKIT
