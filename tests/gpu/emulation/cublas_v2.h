// tests/gpu/emulation/cublas_v2.h — the cuBLAS calls handgrad makes, emulated on the CPU:
// column-major gemm computed from its definition, with cuBLAS's documented argument checks
// (lda ≥ max(1, rows of the stored A), ...), so the row-major transposition trick of
// cuda/gemm.cpp is checked against what cuBLAS would accept and compute. A, B and C must be device
// memory (memory.cpp), alpha and beta host scalars (the default CUBLAS_POINTER_MODE_HOST).
#pragma once
#include "cuda_runtime_api.h"

typedef struct cublasContext* cublasHandle_t;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0 };

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(0x1);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
inline const char* cublasGetStatusString(cublasStatus_t s) { return s == 0 ? "success" : "an invalid value"; }
inline const char* cublasGetStatusName(cublasStatus_t s) {
  return s == 0 ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}

namespace emu {
// C_b = alpha op(A_b) op(B_b) + beta C_b for b < count; op(A) (m, k), op(B) (k, n), C (m, n), column-major.
template <typename T>
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T* alpha, const T* A,
                    int lda, long long sa, const T* B, int ldb, long long sb, const T* beta, T* C, int ldc,
                    long long sc, int count) {
  auto at_least = [](int a) { return a > 1 ? a : 1; };
  if (m < 0 || n < 0 || k < 0 || count < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < at_least(ta == CUBLAS_OP_N ? m : k) || ldb < at_least(tb == CUBLAS_OP_N ? k : n) || ldc < at_least(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  DeviceScope scope;  // A, B and C are device memory; alpha and beta are host scalars
  for (int b = 0; b < count; ++b) {
    const T* Ab = A + b * sa;
    const T* Bb = B + b * sb;
    T* Cb = C + b * sc;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        T acc = 0;
        for (int l = 0; l < k; ++l) {
          const T a = ta == CUBLAS_OP_N ? Ab[i + static_cast<long>(l) * lda] : Ab[l + static_cast<long>(i) * lda];
          const T bb = tb == CUBLAS_OP_N ? Bb[l + static_cast<long>(j) * ldb] : Bb[j + static_cast<long>(l) * ldb];
          acc += a * bb;
        }
        T& c = Cb[i + static_cast<long>(j) * ldc];
        c = *beta == T(0) ? *alpha * acc : *alpha * acc + *beta * c;  // beta = 0: C is not read
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}
}  // namespace emu

inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                                                int n, int k, const float* alpha, const float* A, int lda,
                                                long long sa, const float* B, int ldb, long long sb,
                                                const float* beta, float* C, int ldc, long long sc, int count) {
  return emu::gemm(ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}
inline cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                                                int n, int k, const double* alpha, const double* A, int lda,
                                                long long sa, const double* B, int ldb, long long sb,
                                                const double* beta, double* C, int ldc, long long sc, int count) {
  return emu::gemm(ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}
