// labs/linalg.cpp — LAPACK's SVD and symmetric eigensolver behind the circuits lab.
//
// Debian ships no lapacke.h beside OpenBLAS, so the Fortran routines are declared here as LAPACK
// documents them: every argument by pointer, a column-major matrix, and (gfortran's calling
// convention) one hidden length argument per CHARACTER argument, at the end. CMake links
// LAPACK::LAPACK (FindLAPACK; with BLA_VENDOR OpenBLAS that is libopenblas itself).
//
// Row-major storage read as column-major is the transpose, which has the same singular values;
// for dsyev the matrix is made exactly symmetric first, so the layout does not matter either.
#include "linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>

extern "C" {
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t jobz_len);
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
            const int* lwork, int* info, size_t jobz_len, size_t uplo_len);
}

namespace hg::lab {

namespace {

int lapack_int(int64_t v, const char* op, const Tensor& m) {
  if (v > std::numeric_limits<int>::max()) fail(op, "{} is too large for LAPACK's 32-bit sizes", m.describe());
  return static_cast<int>(v);
}

void gesdd(float* a, int m, int n, float* s, float* work, int lwork, int* iwork, int* info) {
  const char jobz = 'N';
  const int one = 1, lda = std::max(1, m);
  float u = 0, vt = 0;
  sgesdd_(&jobz, &m, &n, a, &lda, s, &u, &one, &vt, &one, work, &lwork, iwork, info, 1);
}
void gesdd(double* a, int m, int n, double* s, double* work, int lwork, int* iwork, int* info) {
  const char jobz = 'N';
  const int one = 1, lda = std::max(1, m);
  double u = 0, vt = 0;
  dgesdd_(&jobz, &m, &n, a, &lda, s, &u, &one, &vt, &one, work, &lwork, iwork, info, 1);
}

// Singular values only (jobz = 'N'): a workspace query (lwork = -1), then the factorization.
template <typename T>
std::vector<double> svd_values(const Tensor& m) {
  const DType dt = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  const Tensor host = m.detach().to(Device::cpu).to(dt).contiguous().clone();  // gesdd overwrites its input
  // Column-major (cols, rows) = the transpose of the row-major (rows, cols): the same singular values.
  const int rows = lapack_int(m.size(1), "singular_values", m), cols = lapack_int(m.size(0), "singular_values", m);
  const int k = std::min(rows, cols);
  std::vector<T> s(static_cast<size_t>(std::max(k, 1)));
  std::vector<int> iwork(static_cast<size_t>(8 * std::max(k, 1)));
  int info = 0;
  T query = 0;
  gesdd(host.data_ptr<T>(), rows, cols, s.data(), &query, -1, iwork.data(), &info);
  if (info != 0) fail("singular_values", "LAPACK ?gesdd workspace query failed (info {}) on {}", info, m.describe());
  const int lwork = static_cast<int>(query) + 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  gesdd(host.data_ptr<T>(), rows, cols, s.data(), work.data(), lwork, iwork.data(), &info);
  if (info != 0)
    fail("singular_values", "LAPACK ?gesdd did not converge (info {}) on {}", info, m.describe());
  return std::vector<double>(s.begin(), s.begin() + k);
}

}  // namespace

std::vector<double> singular_values(const Tensor& m) {
  if (!m.defined() || m.dim() != 2) fail("singular_values", "{} must be a 2-d matrix", m.defined() ? m.describe() : "(undefined)");
  if (m.numel() == 0) return {};
  if (m.dtype() == DType::f32) return svd_values<float>(m);
  if (m.dtype() == DType::f64) return svd_values<double>(m);
  fail("singular_values", "{} must be f32 or f64", m.describe());
}

MatrixRank matrix_rank(const Tensor& m) {
  MatrixRank r;
  r.s = singular_values(m);
  if (r.s.empty()) return r;
  const double eps = m.dtype() == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  r.tol = r.s.front() * static_cast<double>(std::max(m.size(0), m.size(1))) * eps;
  r.rank = std::count_if(r.s.begin(), r.s.end(), [&](double v) { return v > r.tol; });
  return r;
}

std::vector<double> symmetric_eigenvalues(const Tensor& a) {
  if (!a.defined() || a.dim() != 2 || a.size(0) != a.size(1))
    fail("symmetric_eigenvalues", "{} must be a square matrix", a.defined() ? a.describe() : "(undefined)");
  const Tensor h = a.detach().to(Device::cpu).to(DType::f64);
  const Tensor sym = mul(add(h, h.transpose(0, 1)), 0.5).contiguous().clone();
  const int n = lapack_int(a.size(0), "symmetric_eigenvalues", a);
  if (n == 0) return {};
  std::vector<double> w(static_cast<size_t>(n));
  const char jobz = 'N', uplo = 'U';
  int info = 0, lwork = -1;
  double query = 0;
  dsyev_(&jobz, &uplo, &n, sym.data_ptr<double>(), &n, w.data(), &query, &lwork, &info, 1, 1);
  if (info != 0) fail("symmetric_eigenvalues", "LAPACK dsyev workspace query failed (info {})", info);
  lwork = static_cast<int>(query) + 1;
  std::vector<double> work(static_cast<size_t>(lwork));
  dsyev_(&jobz, &uplo, &n, sym.data_ptr<double>(), &n, w.data(), work.data(), &lwork, &info, 1, 1);
  if (info != 0) fail("symmetric_eigenvalues", "LAPACK dsyev did not converge (info {}) on {}", info, a.describe());
  return w;
}

double frobenius_norm(const Tensor& m) {
  double s = 0;
  for (double v : m.detach().to(Device::cpu).to_vector()) s += v * v;
  return std::sqrt(s);
}

}  // namespace hg::lab
