// ops/gemm.cpp — the CPU gemm (ops/gemm.h): OpenBLAS or handgrad's own float32 kernel, by shape.
// A build without a BLAS (HANDGRAD_BLAS=OFF: the WebAssembly library of the live page) computes
// what OpenBLAS would with the portable loops below.
#include "ops/gemm.h"

#if HANDGRAD_WITH_BLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/kernels.h"
#include "engine/error.h"

namespace hg {

namespace {

// OpenBLAS is kept to one thread: handgrad's callers spread their gemms over handgrad's own threads
// (parallel_for, engine/strided.h), and OpenBLAS's pool beside them would put twice as many busy
// threads on the machine as asked for. Set once, before the first gemm; it holds for the process.
#if HANDGRAD_WITH_BLAS
void blas_single_threaded() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

blasint bi(int64_t v) { return static_cast<blasint>(v); }
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

void blas_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  blas_single_threaded();
  cblas_sgemm(CblasRowMajor, tr(trans_a), tr(trans_b), bi(M), bi(N), bi(K), alpha, A, bi(lda), B, bi(ldb), beta, C,
              bi(ldc));
}

void blas_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
               int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  blas_single_threaded();
  cblas_dgemm(CblasRowMajor, tr(trans_a), tr(trans_b), bi(M), bi(N), bi(K), alpha, A, bi(lda), B, bi(ldb), beta, C,
              bi(ldc));
}
#else
// C = alpha op(A) op(B) + beta C, row-major, each element's sum in the order of k; beta = 0
// overwrites C (a NaN there is not read), as a BLAS does. A row of C is built at once, k by k, from
// rows of op(B) (copied into rows first when B is transposed): the inner loop runs along
// contiguous memory, which the compiler vectorises (WebAssembly's simd128), and each C[i][j]
// still adds its products in the order of k, as one dot product at a time would.
template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
               const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  std::vector<T> rows_of_b;
  if (trans_b) {
    rows_of_b.resize(static_cast<size_t>(K * N));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) rows_of_b[static_cast<size_t>(k * N + j)] = B[j * ldb + k];
    B = rows_of_b.data();
    ldb = N;
  }
  std::vector<T> acc(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(acc.begin(), acc.end(), T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T a = trans_a ? A[k * lda + i] : A[i * lda + k];
      const T* b = B + k * ldb;
      T* out = acc.data();
      for (int64_t j = 0; j < N; ++j) out[j] += a * b[j];
    }
    T* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == T(0) ? alpha * acc[static_cast<size_t>(j)]
                                                         : alpha * acc[static_cast<size_t>(j)] + beta * c[j];
  }
}
#endif

constexpr int kAuto = -1;
std::atomic<int> forced{kAuto};  // a ForceGemm's choice, if one is alive

int env_choice() {
  static const int choice = [] {
    GemmImpl impl{};
    return gemm_override(std::getenv("HANDGRAD_GEMM"), impl) ? static_cast<int>(impl) : kAuto;
  }();
  return choice;
}

}  // namespace

const char* name(GemmImpl impl) { return impl == GemmImpl::openblas ? "openblas" : "handgrad"; }

bool own_gemm_available() { return cpu::kernels().sgemm != nullptr; }

bool gemm_override(const char* env_value, GemmImpl& out) {
  const std::string v = env_value ? env_value : "";
  if (v.empty() || v == "auto") return false;
  if (v == "openblas") {
    out = GemmImpl::openblas;
    return true;
  }
  if (v == "handgrad") {
    if (!own_gemm_available())
      fail("HANDGRAD_GEMM", "asks for handgrad's own float32 gemm, but the {} CPU level has none (only the levels "
           "with FMA, avx2 and avx512, do); unset it, or set openblas", cpu::name(cpu::kernels().level));
    out = GemmImpl::handgrad;
    return true;
  }
  fail("HANDGRAD_GEMM", "'{}' is not a gemm; use openblas or handgrad, or auto (or unset it) for the table "
       "chosen by measurement", v);
}

// The table, from bench/bench_gemm on the step's and the tiled attention's products (bench/RESULTS.md,
// "Products" and the Intel Xeon's section), OpenBLAS and handgrad alternating in one run. handgrad's
// kernel is 0.98-1.2x OpenBLAS's rate on the products with a sum of up to 512 terms at both levels
// (Zen 4; an Intel Xeon), the most where C is narrow (N = 64, 128), as it packs only B. On the weight
// gradients, whose sum runs over all B·T rows (K >= 4096), it was 0.84-1.04x at avx2 (Zen 4; the
// Xeon with OpenBLAS's Haswell kernel), so OpenBLAS keeps them there; at avx512 its 6 x 64 register
// tile runs them at 1.08-1.14x OpenBLAS's SkylakeX kernel on the Xeon, so it runs everything.
GemmImpl gemm_table(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K) {
  (void)trans_a, (void)trans_b, (void)M, (void)N;
  if (!own_gemm_available()) return GemmImpl::openblas;
  if (K >= 4096 && cpu::kernels().level != cpu::Capability::avx512) return GemmImpl::openblas;
  return GemmImpl::handgrad;
}

GemmImpl choose_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K) {
  int c = forced.load(std::memory_order_relaxed);
  if (c == kAuto) c = env_choice();
  if (c != kAuto && (c != static_cast<int>(GemmImpl::handgrad) || own_gemm_available())) return static_cast<GemmImpl>(c);
  return gemm_table(trans_a, trans_b, M, N, K);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (choose_gemm(trans_a, trans_b, M, N, K) == GemmImpl::handgrad)
    return cpu::kernels().sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  blas_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  blas_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void PackedB<T>::pack(bool trans_b, int64_t K, int64_t N, T alpha, const T* B, int64_t ldb) {
  trans_b_ = trans_b, K_ = K, N_ = N, ldb_ = ldb, alpha_ = alpha, B_ = B;
  if constexpr (std::is_same_v<T, float>) {
    packed_ = choose_gemm(false, trans_b, 0, N, K) == GemmImpl::handgrad;
    if (!packed_) return;
    const cpu::Kernels& k = cpu::kernels();
    packed_for_ = &k;
    panel_.resize(static_cast<size_t>(k.sgemm_packed_size(K, N)));
    k.sgemm_pack_b(trans_b, K, N, alpha, B, ldb, panel_.data());
  }
}

template <typename T>
void PackedB<T>::gemm(bool trans_a, int64_t M, const T* A, int64_t lda, T beta, T* C, int64_t ldc) const {
  gemm_first(N_, trans_a, M, A, lda, beta, C, ldc);
}

template <typename T>
void PackedB<T>::gemm_first(int64_t n, bool trans_a, int64_t M, const T* A, int64_t lda, T beta, T* C,
                            int64_t ldc) const {
  if (n < 0 || n > N_)
    fail("PackedB::gemm_first", "asks for the first {} columns of a B packed with {}; ask for 0 to {}", n, N_, N_);
  if constexpr (std::is_same_v<T, float>)
    if (packed_ && packed_for_ == &cpu::kernels() && choose_gemm(trans_a, trans_b_, M, N_, K_) == GemmImpl::handgrad)
      return cpu::kernels().sgemm_packed(trans_a, M, n, K_, A, lda, panel_.data(), N_, beta, C, ldc);
  // op(B)'s first n columns: the first n rows of a transposed B, the first n columns otherwise
  hg::gemm(trans_a, trans_b_, M, n, K_, alpha_, A, lda, B_, ldb_, beta, C, ldc);
}

template class PackedB<float>;
template class PackedB<double>;

ForceGemm::ForceGemm(GemmImpl impl) : previous_(forced.load()) {
  if (impl == GemmImpl::handgrad && !own_gemm_available())
    fail("ForceGemm", "handgrad's own float32 gemm is not available at the {} CPU level (only avx2 and avx512 have "
         "one); force openblas, or run at a level with FMA", cpu::name(cpu::kernels().level));
  forced.store(static_cast<int>(impl));
}

ForceGemm::~ForceGemm() { forced.store(previous_); }

#if HANDGRAD_WITH_BLAS
const char* blas_kernel_name() { return openblas_get_corename(); }
#else
const char* blas_kernel_name() { return "none (built without a BLAS: portable loops)"; }
#endif

}  // namespace hg
