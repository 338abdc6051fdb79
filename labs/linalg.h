// labs/linalg.h — the few dense factorizations the circuits lab reads weights with: singular
// values (LAPACK's sgesdd / dgesdd), the numerical rank by numpy's rule, and the eigenvalues of a
// symmetric matrix (dsyev). LAPACK comes with Debian's OpenBLAS (libopenblas exports it); these run
// on the host, on a copy of the matrix, and record nothing on the tape.
#pragma once
#include <cstdint>
#include <vector>

#include "handgrad.h"

namespace hg::lab {

// The singular values of a 2-d matrix (M, N), largest first, computed in the matrix's own dtype
// (float32 with sgesdd, float64 with dgesdd) and returned as doubles. Any device: the matrix is
// copied to the host.
std::vector<double> singular_values(const Tensor& m);

// numpy.linalg.matrix_rank's default (and torch.linalg.matrix_rank's): the number of singular
// values above tol = S.max() · max(M, N) · eps, eps of the dtype the matrix holds (float32:
// 1.19e-7, float64: 2.22e-16).
struct MatrixRank {
  int64_t rank = 0;
  double tol = 0;
  std::vector<double> s;  // every singular value, largest first
};
MatrixRank matrix_rank(const Tensor& m);

// The eigenvalues of a symmetric (n, n) matrix, smallest first, computed in float64 (dsyev) from
// its symmetric part (A + Aᵀ) / 2 (the matrix itself need not be exactly symmetric).
std::vector<double> symmetric_eigenvalues(const Tensor& a);

// ‖m‖_F, in float64.
double frobenius_norm(const Tensor& m);

}  // namespace hg::lab
