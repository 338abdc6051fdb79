// cuda/gemm.cpp — alpha · a @ b on cuBLAS: one cublas{S,D}gemmStridedBatched call per product.
//
// cuBLAS is column-major; our matrices are row-major. A row-major (n, m) matrix C read as
// column-major is Cᵀ (m, n), and Cᵀ = Bᵀ Aᵀ, so the call computes Cᵀ with the operands swapped:
//   gemm(opB, opA, m, n, k, alpha, B, ldb, strideB, A, lda, strideA, 0, C, m, n·m, batch)
// and needs no transposed copy of anything. An operand matrix (rows, cols) with element strides
// (sr, sc) reads in place two ways:
//   row-major  sc = 1, ld = sr ≥ cols: read column-major it is its own transpose -> CUBLAS_OP_N
//   col-major  sr = 1, ld = sc ≥ rows (e.g. k.transpose(-2, -1)): it is itself   -> CUBLAS_OP_T
// Its batch must be one stride apart (0 when one matrix is shared by every batch entry, as a
// weight W in x @ W). Any other operand (a slice with a step, a batch broadcast over some
// dimensions only) is first copied to a contiguous (batch..., rows, cols) buffer.
#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "cuda/device_ops.h"
#include "cuda/runtime.h"

namespace hg::cuda {

namespace {

[[noreturn]] void cublas_fail(cublasStatus_t st, const char* call, const char* file, int line) {
  throw Error(fmt::format("cublas: {} failed: {} ({}) at {}:{}", call, cublasGetStatusString(st),
                          cublasGetStatusName(st), repo_path(file), line));
}

#define HG_CUBLAS_CHECK(call)                                                                    \
  do {                                                                                           \
    const cublasStatus_t hg_status_ = (call);                                                    \
    if (hg_status_ != CUBLAS_STATUS_SUCCESS) cublas_fail(hg_status_, #call, __FILE__, __LINE__); \
  } while (0)

// One handle for the process, bound to the one stream. Never destroyed (like the allocator):
// the driver reclaims it at exit, and no static destructor runs after the CUDA runtime is gone.
cublasHandle_t handle() {
  static const cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    HG_CUBLAS_CHECK(cublasCreate(&made));
    HG_CUBLAS_CHECK(cublasSetStream(made, stream()));
    // No TF32 for float32 (the default math mode keeps full precision): the CPU's answers.
    HG_CUBLAS_CHECK(cublasSetMathMode(made, CUBLAS_DEFAULT_MATH));
    return made;
  }();
  return h;
}

// How cuBLAS reads one operand.
struct Operand {
  Tensor data;               // the operand, or its contiguous copy
  bool row_major = true;     // see the header comment
  int64_t ld = 1;            // leading dimension
  int64_t batch_stride = 0;  // elements between consecutive batch entries
};

// A (rows, cols) matrix with strides (sr, sc) that cuBLAS can read in place: its layout.
// A dimension of size 1 has no meaningful stride, so it never disqualifies.
bool matrix_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool& row_major, int64_t& ld) {
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(cols, 1))) {
    row_major = true;
    ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
    return true;
  }
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(rows, 1))) {
    row_major = false;
    ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
    return true;
  }
  return false;
}

// The batch entries of x (read as `batch`, 0 stride where x is broadcast) one stride apart:
// that stride, or false.
bool one_batch_stride(const Tensor& x, const Shape& batch, int64_t& stride) {
  const size_t xb = static_cast<size_t>(x.dim()) - 2, lead = batch.size() - xb;
  Shape st(batch.size(), 0);
  for (size_t i = 0; i < xb; ++i)
    if (x.shape()[i] != 1) st[lead + i] = x.strides()[i];
  stride = 0;
  bool first = true;
  int64_t expect = 0;  // the stride the next outer dimension must have to continue the run
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    if (first)
      stride = st[d], first = false;
    else if (st[d] != expect)
      return false;
    expect = st[d] * batch[d];
  }
  return true;
}

Operand operand(std::string_view op, const Tensor& x, const Shape& batch) {
  const int64_t r = x.dim(), rows = x.size(-2), cols = x.size(-1);
  Operand o;
  if (matrix_layout(rows, cols, x.strides()[r - 2], x.strides()[r - 1], o.row_major, o.ld) &&
      one_batch_stride(x, batch, o.batch_stride)) {
    o.data = x;
  } else {
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    o.data = empty(full, x.dtype(), Device::cuda);  // (batch..., rows, cols)
    cuda::copy(o.data, x);                          // x broadcasts to it
    o.row_major = true;
    o.ld = std::max<int64_t>(cols, 1);
    o.batch_stride = rows * cols;
  }
  if (o.ld > INT_MAX) fail(op, "{}: a leading dimension of {} exceeds cuBLAS's 32-bit int", x.describe(), o.ld);
  return o;
}

int to_int(std::string_view op, int64_t v, const char* what) {
  if (v > INT_MAX) fail(op, "{} = {} exceeds cuBLAS's 32-bit int; split the product", what, v);
  return static_cast<int>(v);
}

}  // namespace

Tensor gemm(const Tensor& a, const Tensor& b, double alpha) {
  constexpr std::string_view op = "gemm (cuda)";
  require_float(op, a, "left operand a");
  require_float(op, b, "right operand b");
  require_same_dtype(op, a, b);
  if (a.dim() < 2 || b.dim() < 2)
    fail(op, "{} @ {}: both operands need two matrix dimensions (unsqueeze a vector first)", a.describe(),
         b.describe());
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  if (b.size(-2) != k)
    fail(op, "inner dimensions differ: a {} has {} columns but b {} has {} rows", shape_str(a.shape()), k,
         shape_str(b.shape()), b.size(-2));
  const Shape batch =
      broadcast_shape(op, Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2));
  Shape out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Tensor C = empty(out_shape, a.dtype(), Device::cuda);  // (batch..., n, m)
  if (C.numel() == 0) return C;
  if (k == 0) {  // a sum over no terms
    cuda::fill(C, 0.0);
    return C;
  }
  const Operand A = operand(op, a, batch), B = operand(op, b, batch);
  const int mi = to_int(op, m, "m"), ni = to_int(op, n, "n"), ki = to_int(op, k, "k");
  const int count = to_int(op, shape_numel(batch), "the batch count");
  const cublasOperation_t opA = A.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t opB = B.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const auto lda = static_cast<int>(A.ld), ldb = static_cast<int>(B.ld);
  const long long sa = A.batch_stride, sb = B.batch_stride, sc = n * m;
  if (a.dtype() == DType::f32) {
    const float al = static_cast<float>(alpha), be = 0.0f;
    HG_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle(), opB, opA, mi, ni, ki, &al, static_cast<const float*>(B.data.raw_data()), ldb, sb,
        static_cast<const float*>(A.data.raw_data()), lda, sa, &be, static_cast<float*>(C.raw_data()), mi, sc, count));
  } else {
    const double al = alpha, be = 0.0;
    HG_CUBLAS_CHECK(cublasDgemmStridedBatched(handle(), opB, opA, mi, ni, ki, &al,
                                              static_cast<const double*>(B.data.raw_data()), ldb, sb,
                                              static_cast<const double*>(A.data.raw_data()), lda, sa, &be,
                                              static_cast<double*>(C.raw_data()), mi, sc, count));
  }
  return C;
}

}  // namespace hg::cuda
