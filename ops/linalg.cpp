// ops/linalg.cpp — singular values by one-sided Jacobi rotations, and the rank they give.
//
// One-sided Jacobi (Hestenes): for a matrix B (rows × k, k ≤ rows) in float64, rotate pairs of
// columns (b_i, b_j) until every pair is orthogonal. A rotation by θ with
//   α = |b_i|², β = |b_j|², γ = b_i · b_j,  ζ = (β − α) / (2γ),  t = sign(ζ) / (|ζ| + √(1 + ζ²)),
//   c = 1/√(1 + t²), s = c t:   b_i ← c b_i − s b_j,  b_j ← s b_i + c b_j
// makes the pair orthogonal; B V stays B times an orthogonal V, so its singular values do not
// change, and once all columns are orthogonal they are the column norms. Each sweep visits every
// pair; the sweeps stop when no pair has |γ| > ε √(αβ) (a few sweeps for the sizes here, each
// O(k² rows)). It is accurate to float64's ε relative to σ_max, which the rank's tolerance needs.
#include "ops/linalg.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/extrema.h"
#include "ops/indexing.h"
#include "ops/reduce.h"

namespace hg {

namespace {

// The singular values of the rows × k column-major matrix b (k ≤ rows), largest first.
std::vector<double> jacobi_singular_values(std::vector<double> b, int64_t rows, int64_t k) {
  const double eps = std::numeric_limits<double>::epsilon();
  auto col = [&](int64_t j) { return b.data() + j * rows; };
  for (int sweep = 0; sweep < 60; ++sweep) {
    bool rotated = false;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = i + 1; j < k; ++j) {
        double alpha = 0, beta = 0, gamma = 0;
        const double *bi = col(i), *bj = col(j);
        for (int64_t r = 0; r < rows; ++r) {
          alpha += bi[r] * bi[r];
          beta += bj[r] * bj[r];
          gamma += bi[r] * bj[r];
        }
        if (gamma == 0 || std::abs(gamma) <= eps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        double *ui = col(i), *uj = col(j);
        for (int64_t r = 0; r < rows; ++r) {
          const double x = ui[r], y = uj[r];
          ui[r] = c * x - s * y;
          uj[r] = s * x + c * y;
        }
      }
    if (!rotated) break;
  }
  std::vector<double> sv(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {
    double n = 0;
    for (int64_t r = 0; r < rows; ++r) n += col(j)[r] * col(j)[r];
    sv[static_cast<size_t>(j)] = std::sqrt(n);
  }
  std::sort(sv.begin(), sv.end(), std::greater<>());
  return sv;
}

void require_matrix(const char* op, const Tensor& A) {
  require_float(op, A);
  if (A.dim() < 2) fail(op, "{} is not a matrix: give (..., m, n)", A.describe());
}

// The singular values of every matrix of A, as (batch, k) float64 numbers.
std::vector<std::vector<double>> all_singular_values(const char* op, const Tensor& A) {
  NoGradGuard ng;
  const int64_t m = A.size(-2), n = A.size(-1);
  const Tensor a = A.detach().to(Device::cpu).to(DType::f64).contiguous();
  const int64_t batch = m * n == 0 ? 0 : a.numel() / (m * n);
  const bool tall = m >= n;  // B = A (columns n ≤ m) or Aᵀ: the same singular values
  const int64_t rows = tall ? m : n, k = tall ? n : m;
  const auto* p = static_cast<const double*>(a.raw_data());
  std::vector<std::vector<double>> out;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> cm(static_cast<size_t>(rows * k));  // B column-major
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double v = p[b * m * n + i * n + j];
        if (!std::isfinite(v)) fail(op, "{} holds {} at ({}, {}); singular values need finite entries", A.describe(), v, i, j);
        cm[static_cast<size_t>(tall ? j * rows + i : i * rows + j)] = v;
      }
    out.push_back(jacobi_singular_values(std::move(cm), rows, k));
  }
  return out;
}

Shape batch_shape(const Tensor& A) { return Shape(A.shape().begin(), A.shape().end() - 2); }

}  // namespace

Tensor svdvals(const Tensor& A) {
  require_matrix("svdvals", A);
  if (should_record({A}))
    fail("svdvals", "{} requires grad, and the derivative of singular values is not implemented; call it on "
         "A.detach() (or under no_grad)", A.describe());
  const auto sv = all_singular_values("svdvals", A);
  Shape shape = batch_shape(A);
  shape.push_back(std::min(A.size(-2), A.size(-1)));
  std::vector<double> flat;
  for (const auto& s : sv) flat.insert(flat.end(), s.begin(), s.end());
  return tensor(flat, shape, DType::f64).to(A.dtype()).to(A.device());
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol) {
  require_matrix("matrix_rank", A);
  if ((atol && !(*atol >= 0)) || (rtol && !(*rtol >= 0)))
    fail("matrix_rank", "atol and rtol must be numbers ≥ 0, got {} and {}", atol.value_or(0), rtol.value_or(0));
  const double eps = A.dtype() == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double r = rtol ? *rtol : atol ? 0.0 : static_cast<double>(std::max(A.size(-2), A.size(-1))) * eps;
  std::vector<double> ranks;
  for (const auto& s : all_singular_values("matrix_rank", A)) {
    const double bound = std::max(atol.value_or(0.0), r * (s.empty() ? 0.0 : s.front()));
    ranks.push_back(static_cast<double>(std::count_if(s.begin(), s.end(), [&](double v) { return v > bound; })));
  }
  return tensor(ranks, batch_shape(A), DType::i64).to(A.device());
}

// ‖x‖_p over dims, composed of recorded ops. Where the sum s = Σ|x|^p is 0 the root's derivative is
// infinite; the root then reads a 1 in s's place (where) and the result is 0, so the gradient
// there is 0 — PyTorch's value — and no inf · 0 appears.
Tensor vector_norm(const Tensor& x, double ord, const Shape& dims, bool keepdim, Site where) {
  constexpr const char* op = "vector_norm";
  require_float(op, x);
  if (std::isnan(ord)) fail(op, "ord is NaN; give a number or ±inf");
  const Tensor a = abs(x, where);
  if (std::isinf(ord)) return ord > 0 ? amax(a, dims, keepdim, where) : amin(a, dims, keepdim, where);
  if (ord == 0) {  // the count of nonzero entries: piecewise constant, so its gradient is 0 (PyTorch's)
    Tensor count;
    {
      NoGradGuard constant;
      count = sum(ne(x, 0.0).to(x.dtype()), dims, keepdim);
    }
    // + Σ of nothing taken from x: the count joins x's graph with a zero gradient, and no inf · 0
    const Tensor nothing = hg::where(zeros(x.shape(), DType::b8, x.device()), a, zeros({}, x.dtype(), x.device()), where);
    return add(count, sum(nothing, dims, keepdim, where), where);
  }
  if (ord == 1) return sum(a, dims, keepdim, where);
  // |x|^p for 0 < p < 1 has an infinite slope at 0, times abs's 0 there: the term reads a 1 in a
  // zero's place and is 0 there, so the gradient at 0 is 0 (PyTorch's) rather than NaN.
  const auto power = [&] {
    if (ord == 2) return mul(x, x, where);
    if (ord > 1 || ord < 0) return pow(a, ord, where);
    const Tensor at_zero = eq(x, 0.0), one = ones({}, x.dtype(), x.device());
    return hg::where(at_zero, zeros({}, x.dtype(), x.device()), pow(hg::where(at_zero, one, a, where), ord, where), where);
  };
  const Tensor s = sum(power(), dims, keepdim, where);
  const Tensor zero = eq(s, 0.0), one = ones({}, x.dtype(), x.device());
  const Tensor root = pow(hg::where(zero, one, s, where), 1.0 / ord, where);
  return hg::where(zero, zeros({}, x.dtype(), x.device()), root, where);
}

}  // namespace hg
