// ops/gemm.h — the one gemm of handgrad's CPU ops (ops/matmul.cpp, attention's CPU kernels):
// C (M × N) ← alpha · op(A) op(B) + beta · C, row-major, op(X) = Xᵀ when trans_X, on the calling
// thread (the callers spread their gemms over handgrad's threads).
//
// float64 runs on OpenBLAS. float32 runs on OpenBLAS or on handgrad's own kernel over packed panels
// (cpu/gemm_impl.h; the avx2 and avx512 levels have one, the baseline none), chosen per shape class
// by a table from measurement (choose_gemm below; the figures are in bench/RESULTS.md, "Products").
// HANDGRAD_GEMM=openblas|handgrad overrides the table for every shape (handgrad where the CPU level
// has no kernel of its own is an error that says so). The choice depends only on the shape and the
// setting, so a run gives the same bits run after run.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/aligned.h"

namespace hg {

enum class GemmImpl { openblas, handgrad };

const char* name(GemmImpl impl);  // "openblas", "handgrad"

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

// One B operand (op(B), K × N, alpha folded in) for several products with it (the tiled attention
// multiplies each K_J and V_J tile by every query tile): packed once when handgrad's float32 kernel
// runs them; on OpenBLAS (and always in float64) it only remembers B. Valid while B's memory is.
// The implementation is chosen when B is packed (the table reads K, not M); a product at another
// CPU level than the packing's (a test's ForceCapability in between) reads B itself.
template <typename T>
class PackedB {
 public:
  void pack(bool trans_b, int64_t K, int64_t N, T alpha, const T* B, int64_t ldb);
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }

  // C (M × N) ← op(A) op(B) (as packed) + beta · C, op(A) = Aᵀ when trans_a: the same bits as gemm
  // with that B and alpha.
  void gemm(bool trans_a, int64_t M, const T* A, int64_t lda, T beta, T* C, int64_t ldc) const;
  // The same with op(B)'s first n columns only (0 ≤ n ≤ N), C (M × n): one packing for products
  // over a growing prefix of the columns (the causal row blocks of ops/attention_cpu.cpp).
  void gemm_first(int64_t n, bool trans_a, int64_t M, const T* A, int64_t lda, T beta, T* C, int64_t ldc) const;

 private:
  bool trans_b_ = false, packed_ = false;
  int64_t K_ = 0, N_ = 0, ldb_ = 0;
  T alpha_ = T(1);
  const T* B_ = nullptr;
  const void* packed_for_ = nullptr;  // the kernel table whose layout panel_ has
  aligned_vector<float> panel_;       // reused by the next pack
};

// Which implementation the float32 gemm of this shape runs on, with HANDGRAD_GEMM (or a
// ForceGemm) applied.
GemmImpl choose_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K);

// The table's own choice, without the override: what "auto" means (the benches print it).
GemmImpl gemm_table(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K);

// Whether this CPU level has handgrad's own float32 kernel (the avx2 and avx512 levels do).
bool own_gemm_available();

// The implementation HANDGRAD_GEMM's value names: "" or "auto" is the table (returns false);
// otherwise true and `out`, or an error naming the variable, the value and what to do.
bool gemm_override(const char* env_value, GemmImpl& out);

// While it lives, every float32 gemm runs on `impl` (tests compare the two); throws when impl is
// handgrad and the level has no kernel. Not for use while other threads run gemms.
// The kernel OpenBLAS chose for this CPU (its "core name", e.g. "Haswell", "SkylakeX", "Zen"),
// which OPENBLAS_CORETYPE overrides: the benches record it beside every figure.
const char* blas_kernel_name();

class ForceGemm {
 public:
  explicit ForceGemm(GemmImpl impl);
  ~ForceGemm();
  ForceGemm(const ForceGemm&) = delete;
  ForceGemm& operator=(const ForceGemm&) = delete;

 private:
  int previous_;
};

}  // namespace hg
