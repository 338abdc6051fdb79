// handgrad's own float32 gemm (cpu/gemm_impl.h) and the choice between it and OpenBLAS
// (ops/gemm.h): at every level that has one, bit for bit against its definition — each element
// t ← beta·c, then t ← fma(a_ip, alpha·b_pj, t) for p in order — computed here with std::fma, one
// element at a time; against a float64 product to a bound on float32 rounding; every transpose,
// every edge of the register tile, several blocks of K and of N, leading dimensions past the
// matrix, NaN and infinities; the same bits at avx2 and avx512; OpenBLAS against the same float64
// product; HANDGRAD_GEMM's errors; and hg::matmul on both implementations.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "handgrad.h"
#include "ops/gemm.h"
#include "test_util.h"

using namespace hg;
using cpu::Capability;

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
  int64_t pad;  // leading dimensions this much past the matrix
};

struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> A, B, C;
};

Operands operands(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Operands o;
  o.lda = (c.ta ? c.M : c.K) + c.pad;
  o.ldb = (c.tb ? c.K : c.N) + c.pad;
  o.ldc = c.N + c.pad;
  o.A.resize(static_cast<size_t>((c.ta ? c.K : c.M) * o.lda));
  o.B.resize(static_cast<size_t>((c.tb ? c.N : c.K) * o.ldb));
  o.C.resize(static_cast<size_t>(c.M * o.ldc));
  for (auto* v : {&o.A, &o.B, &o.C})
    for (float& x : *v) x = nd(rng);
  return o;
}

float at_a(const Case& c, const Operands& o, int64_t i, int64_t p) {
  return c.ta ? o.A[static_cast<size_t>(p * o.lda + i)] : o.A[static_cast<size_t>(i * o.lda + p)];
}
float at_b(const Case& c, const Operands& o, int64_t p, int64_t j) {
  return c.tb ? o.B[static_cast<size_t>(j * o.ldb + p)] : o.B[static_cast<size_t>(p * o.ldb + j)];
}

// The definition, element by element (cpu/gemm_impl.h).
std::vector<float> by_definition(const Case& c, const Operands& o) {
  std::vector<float> C = o.C;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      float& e = C[static_cast<size_t>(i * o.ldc + j)];
      float t = c.beta == 0.0f ? 0.0f : (c.beta == 1.0f ? e : c.beta * e);
      for (int64_t p = 0; p < c.K; ++p) t = std::fma(at_a(c, o, i, p), c.alpha * at_b(c, o, p, j), t);
      e = t;
    }
  return C;
}

// The largest |C − C64| / (Σ_p |alpha a_ip b_pj| + |beta c_ij|) over C, C64 the product in float64.
double relative_error(const Case& c, const Operands& o, const std::vector<float>& C) {
  double worst = 0;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      const double c0 = o.C[static_cast<size_t>(i * o.ldc + j)];
      double s = c.beta == 0.0f ? 0.0 : double(c.beta) * c0, mag = std::abs(s);
      for (int64_t p = 0; p < c.K; ++p) {
        const double t = double(c.alpha) * at_a(c, o, i, p) * at_b(c, o, p, j);
        s += t;
        mag += std::abs(t);
      }
      worst = std::max(worst, std::abs(C[static_cast<size_t>(i * o.ldc + j)] - s) / std::max(mag, 1e-30));
    }
  return worst;
}

// Outside the matrix (the padding of ldc) nothing is written.
bool padding_untouched(const Case& c, const Operands& o, const std::vector<float>& C) {
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N; j < o.ldc; ++j)
      if (std::memcmp(&C[static_cast<size_t>(i * o.ldc + j)], &o.C[static_cast<size_t>(i * o.ldc + j)], 4) != 0)
        return false;
  return true;
}

// Shapes around the register tile (6 × 16 at avx2; 6 × 64 at avx512, and its half width 6 × 32 for
// a last sliver of at most 32 columns, whole or masked), the K block (256 at avx2, 128 at avx512),
// the row block (144) and the column block (3072); either side of the 64 rows up to which an
// untransposed B is read in place (the step's attention products at T = 63 among them); every
// transpose; alpha, beta and padded rows.
std::vector<Case> cases() {
  std::vector<Case> out;
  const int64_t sizes[][3] = {{1, 1, 1},     {5, 7, 3},     {6, 16, 8},    {6, 32, 8},     {7, 17, 9},
                              {13, 33, 31},  {12, 48, 64},  {6, 64, 130},  {7, 96, 129},   {11, 80, 40},
                              {6, 100, 8},   {145, 31, 257}, {37, 65, 600}, {150, 100, 20}, {3, 3100, 5},
                              {64, 64, 0},   {31, 32, 63},  {63, 32, 31},  {64, 130, 300}, {65, 40, 20}};
  int n = 0;
  for (const auto& s : sizes)
    for (int t = 0; t < 4; ++t, ++n) {
      const float alpha = n % 3 == 0 ? 0.5f : 1.0f, beta = n % 4 == 0 ? 0.0f : n % 4 == 1 ? 1.0f : n % 4 == 2 ? -2.0f : 0.0f;
      out.push_back({(t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], alpha, beta, n % 2 == 0 ? 0 : 3});
    }
  return out;
}

std::string describe(const Case& c) {
  return fmt::format("{}{} M {} N {} K {} alpha {} beta {} pad {}", c.ta ? "T" : "N", c.tb ? "T" : "N", c.M, c.N, c.K,
                     c.alpha, c.beta, c.pad);
}

bool skip_level(Capability level) {
  const cpu::Kernels* k = cpu::kernels_for(level);
  if (k && k->sgemm) return false;
  test::skip_case(fmt::format("handgrad's gemm at {} cannot run here: {}", cpu::name(level),
                              k ? "this level has none" : cpu::unavailable_reason(level)));
  return true;
}

void check_level(Capability level) {
  const cpu::Kernels& k = *cpu::kernels_for(level);
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    CAPTURE(describe(c));
    const Operands o = operands(c, seed++);
    std::vector<float> C = o.C;
    k.sgemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C.data(), o.ldc);
    const std::vector<float> want = by_definition(c, o);
    CHECK(std::memcmp(C.data(), want.data(), C.size() * sizeof(float)) == 0);
    CHECK(relative_error(c, o, C) <= 2.0 * static_cast<double>(c.K + 1) * std::numeric_limits<float>::epsilon());
    CHECK(padding_untouched(c, o, C));
  }
}

}  // namespace

TEST_CASE("handgrad's gemm at avx2: bit for bit its definition, and near the float64 product") {
  if (skip_level(Capability::avx2)) return;
  check_level(Capability::avx2);
}

TEST_CASE("handgrad's gemm at avx512: bit for bit its definition, and near the float64 product") {
  if (skip_level(Capability::avx512)) return;
  check_level(Capability::avx512);
}

TEST_CASE("the baseline has no gemm of its own: OpenBLAS runs, and asking for handgrad's is an error") {
  CHECK_FALSE(static_cast<bool>(cpu::kernels_for(Capability::baseline)->sgemm));
  cpu::ForceCapability force(Capability::baseline);
  CHECK_FALSE(own_gemm_available());
  CHECK(choose_gemm(false, false, 100, 100, 100) == GemmImpl::openblas);
  try {
    ForceGemm g(GemmImpl::handgrad);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("not available at the baseline CPU level") != std::string::npos);
  }
  GemmImpl impl{};
  CHECK_THROWS_WITH_AS(gemm_override("handgrad", impl), doctest::Contains("the baseline CPU level has none"), Error);
}

TEST_CASE("OpenBLAS's float32 gemm, through ops/gemm.h, near the float64 product on the same cases") {
  ForceGemm force(GemmImpl::openblas);
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    CAPTURE(describe(c));
    const Operands o = operands(c, seed++);
    std::vector<float> C = o.C;
    gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C.data(), o.ldc);
    CHECK(relative_error(c, o, C) <= 2.0 * static_cast<double>(c.K + 1) * std::numeric_limits<float>::epsilon());
    CHECK(padding_untouched(c, o, C));
  }
}

TEST_CASE("handgrad's gemm: beta = 0 never reads C, and NaN or infinity in A reaches only its own row") {
  for (Capability level : {Capability::avx2, Capability::avx512}) {
    const cpu::Kernels* k = cpu::kernels_for(level);
    if (!k) continue;
    CAPTURE(cpu::name(level));
    const Case c{false, false, 20, 40, 300, 1.0f, 0.0f, 0};
    Operands o = operands(c, 9);
    std::fill(o.C.begin(), o.C.end(), std::numeric_limits<float>::quiet_NaN());
    o.A[static_cast<size_t>(3 * o.lda + 280)] = std::numeric_limits<float>::infinity();  // row 3, a later K block
    o.A[static_cast<size_t>(7 * o.lda + 5)] = std::numeric_limits<float>::quiet_NaN();   // row 7
    std::vector<float> C = o.C;
    k->sgemm(false, false, c.M, c.N, c.K, 1.0f, o.A.data(), o.lda, o.B.data(), o.ldb, 0.0f, C.data(), o.ldc);
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) {
        const float e = C[static_cast<size_t>(i * o.ldc + j)];
        if (i == 3) CHECK(std::isinf(e));
        else if (i == 7) CHECK(std::isnan(e));
        else CHECK(std::isfinite(e));
      }
  }
}

TEST_CASE("HANDGRAD_GEMM: openblas, handgrad, auto or unset; anything else is an error that says what to use") {
  GemmImpl impl{};
  CHECK_FALSE(gemm_override(nullptr, impl));
  CHECK_FALSE(gemm_override("", impl));
  CHECK_FALSE(gemm_override("auto", impl));
  CHECK(gemm_override("openblas", impl));
  CHECK(impl == GemmImpl::openblas);
  if (own_gemm_available()) {
    CHECK(gemm_override("handgrad", impl));
    CHECK(impl == GemmImpl::handgrad);
  }
  CHECK_THROWS_WITH_AS(gemm_override("mkl", impl), doctest::Contains("HANDGRAD_GEMM: 'mkl' is not a gemm; use openblas or handgrad"),
                       Error);
  {
    ForceGemm f(GemmImpl::openblas);
    CHECK(choose_gemm(false, false, 8064, 384, 128) == GemmImpl::openblas);
  }
  CHECK(choose_gemm(false, false, 8064, 384, 128) == gemm_table(false, false, 8064, 384, 128));
}

TEST_CASE("hg::matmul on handgrad's gemm and on OpenBLAS: the same products to float32 rounding, every layout") {
  if (!own_gemm_available()) {
    test::skip_case("this CPU level has no gemm of handgrad's own");
    return;
  }
  Generator gen(5);
  const Tensor a = randn({3, 70, 40}, gen), b = randn({40, 50}, gen), bt = randn({50, 40}, gen);
  const Tensor at = randn({3, 40, 70}, gen);
  for (int layout = 0; layout < 4; ++layout) {
    CAPTURE(layout);
    const Tensor x = layout & 1 ? at.transpose(1, 2) : a, y = layout & 2 ? bt.transpose(0, 1) : b;
    Tensor ours, theirs;
    {
      ForceGemm f(GemmImpl::handgrad);
      ours = matmul(x, y);
    }
    {
      ForceGemm f(GemmImpl::openblas);
      theirs = matmul(x, y);
    }
    const Tensor ref = matmul(x.to(DType::f64), y.to(DType::f64));
    const std::vector<double> o = ours.to_vector(), t = theirs.to_vector(), r = ref.to_vector();
    double worst_o = 0, worst_t = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      worst_o = std::max(worst_o, std::abs(o[i] - r[i]));
      worst_t = std::max(worst_t, std::abs(t[i] - r[i]));
    }
    CHECK(worst_o < 2e-5);
    CHECK(worst_t < 2e-5);
  }
}

TEST_CASE("a packed B (ops/gemm.h's PackedB) gives gemm's bits, on either implementation and after a level change") {
  std::vector<GemmImpl> impls = {GemmImpl::openblas};
  if (own_gemm_available()) impls.push_back(GemmImpl::handgrad);
  uint32_t seed = 300;
  for (GemmImpl impl : impls)
    for (const Case& c : cases()) {
      CAPTURE(describe(c));
      CAPTURE(name(impl));
      ForceGemm force(impl);
      const Operands o = operands(c, seed++);
      std::vector<float> want = o.C, got = o.C;
      gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, want.data(), o.ldc);
      PackedB<float> B;
      B.pack(c.tb, c.K, c.N, c.alpha, o.B.data(), o.ldb);
      B.gemm(c.ta, c.M, o.A.data(), o.lda, c.beta, got.data(), o.ldc);
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      if (impl == GemmImpl::handgrad && cpu::kernels_for(Capability::avx2) && cpu::kernels().level != Capability::avx2) {
        cpu::ForceCapability other(Capability::avx2);  // another panel layout: B is read where it lies
        std::vector<float> again = o.C;
        B.gemm(c.ta, c.M, o.A.data(), o.lda, c.beta, again.data(), o.ldc);
        CHECK(std::memcmp(again.data(), want.data(), again.size() * sizeof(float)) == 0);
      }
    }
}

TEST_CASE("a packed B's first n columns (PackedB::gemm_first): gemm's bits on those columns; n past N an error") {
  std::vector<GemmImpl> impls = {GemmImpl::openblas};
  if (own_gemm_available()) impls.push_back(GemmImpl::handgrad);
  uint32_t seed = 700;
  for (GemmImpl impl : impls)
    for (const Case& c : cases()) {
      ForceGemm force(impl);
      const Operands o = operands(c, seed++);
      PackedB<float> B;
      B.pack(c.tb, c.K, c.N, c.alpha, o.B.data(), o.ldb);
      // a prefix inside the first sliver, one at a sliver's edge (16 or 64), and most of the columns
      for (int64_t n : {int64_t{1}, std::min<int64_t>(c.N, 16), std::min<int64_t>(c.N, 64), c.N > 1 ? c.N - 1 : c.N}) {
        CAPTURE(describe(c));
        CAPTURE(name(impl));
        CAPTURE(n);
        n = std::min(n, c.N);
        std::vector<float> want = o.C, got = o.C;
        gemm(c.ta, c.tb, c.M, n, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, want.data(), o.ldc);
        B.gemm_first(n, c.ta, c.M, o.A.data(), o.lda, c.beta, got.data(), o.ldc);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      }
    }
  PackedB<float> B;
  std::vector<float> b(12, 1.0f), a(6, 1.0f), out(8, 0.0f);
  B.pack(false, 3, 4, 1.0f, b.data(), 4);
  CHECK_THROWS_WITH_AS(B.gemm_first(5, false, 2, a.data(), 3, 0.0f, out.data(), 4),
                       doctest::Contains("the first 5 columns of a B packed with 4; ask for 0 to 4"), Error);
}
