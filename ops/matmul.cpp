// ops/matmul.cpp — a (..., n, k) @ b (..., k, m), one gemm (ops/gemm.h) per batch slice.
//
// The forward never copies an operand whose matrix dimensions gemm can already read: a
// row-major slice (unit column stride) is passed untransposed with lda = its row stride, a
// transposed one (unit row stride, e.g. b.transpose(-2, -1)) transposed, with lda = its column
// stride. Anything else (a slice with a step, an expand along a matrix dimension) is first made
// contiguous. Batch dimensions broadcast (stride 0), so a weight (k, m) shared by every slice of
// x (B, T, k) is read in place; when the slices of `a` also sit back to back in memory, the whole
// batch becomes one gemm of (B·T, k) @ (k, m).
#include "ops/matmul.h"

#include <algorithm>
#include <climits>

#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/gemm.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

namespace {

// How gemm reads one matrix operand in place.
struct GemmLayout {
  bool trans = false;
  int64_t ld = 1;
};

// `batch` followed by the last two dimensions of `matrix`.
Shape with_matrix(Shape batch, const Shape& matrix) {
  batch.insert(batch.end(), matrix.end() - 2, matrix.end());
  return batch;
}

// A (rows x cols) matrix with element strides (sr, sc): true and its layout when gemm can read
// it without a copy. A dimension of size 1 has no meaningful stride, so it never disqualifies.
bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, GemmLayout& out) {
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(cols, 1))) {
    out = {false, rows == 1 ? std::max<int64_t>(cols, 1) : sr};  // row-major, lda = row stride
    return true;
  }
  if ((rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(rows, 1))) {
    out = {true, cols == 1 ? std::max<int64_t>(rows, 1) : sc};  // its transpose is row-major
    return true;
  }
  return false;
}

// x (or a contiguous copy of it when gemm cannot read its last two dimensions), with its layout.
Tensor gemm_operand(const Tensor& x, GemmLayout& layout) {
  const int64_t r = x.dim();
  if (gemm_layout(x.shape()[r - 2], x.shape()[r - 1], x.strides()[r - 2], x.strides()[r - 1], layout)) return x;
  Tensor c = x.contiguous();
  gemm_layout(c.shape()[r - 2], c.shape()[r - 1], c.strides()[r - 2], c.strides()[r - 1], layout);
  return c;
}

// Strides of x's leading (batch) dimensions read as `batch` (0 where x is broadcast).
Shape batch_strides(const Tensor& x, const Shape& batch) {
  const size_t xb = static_cast<size_t>(x.dim()) - 2, lead = batch.size() - xb;
  Shape st(batch.size(), 0);
  for (size_t i = 0; i < xb; ++i)
    if (x.shape()[i] != 1) st[lead + i] = x.strides()[i];
  return st;
}

template <typename T>
void gemm_slice(const GemmLayout& la, const GemmLayout& lb, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
                T* C, int64_t ldc) {
  hg::gemm(la.trans, lb.trans, M, N, K, T(1), A, la.ld, B, lb.ld, T(0), C, ldc);
}

// A gemm worth splitting: about 2 MFLOP (tens of microseconds), well above a thread's wake-up.
constexpr int64_t kSplitGemmWork = int64_t{1} << 20;

// One gemm split across threads into blocks of whole rows of C, or of whole columns when C has
// fewer rows than columns (a weight gradient Xᵀ G has d rows and a long K = B·T). Each thread
// computes complete dot products over K, so no sum is split, and the split depends only on the
// shapes and the thread count: the same bits run after run. (OpenBLAS may take another kernel
// for a smaller block, so another thread count can round differently in the last bit.)
template <typename T>
void gemm_split(const GemmLayout& la, const GemmLayout& lb, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
                T* C, int64_t ldc) {
  if (M * N * K < kSplitGemmWork || num_threads() == 1) return gemm_slice<T>(la, lb, M, N, K, A, B, C, ldc);
  constexpr int64_t kBlock = 16;  // rows or columns per block: whole register tiles of the kernel
  const bool by_rows = M >= N;
  const int64_t len = by_rows ? M : N, blocks = (len + kBlock - 1) / kBlock;
  // One part per thread, no more: every part packs the whole shared operand again, which for a
  // weight gradient (K = B·T) costs ~8 % a part (bench/RESULTS.md).
  const int64_t parts = std::min<int64_t>(num_threads(), blocks);
  parallel_for(parts, M * N * K / parts, [&](int64_t begin, int64_t end) {
    const int64_t i0 = blocks * begin / parts * kBlock, i1 = std::min(blocks * end / parts * kBlock, len);
    if (by_rows)  // rows i0..i1 of A (a row offset, or a column offset of the stored Aᵀ) and of C
      gemm_slice<T>(la, lb, i1 - i0, N, K, A + i0 * (la.trans ? 1 : la.ld), B, C + i0 * ldc, ldc);
    else  // columns i0..i1 of B and of C
      gemm_slice<T>(la, lb, M, i1 - i0, K, A, B + i0 * (lb.trans ? lb.ld : 1), C + i0, ldc);
  });
}

// C (batch..., n, m) = A (..., n, k) @ B (..., k, m), both of rank >= 2, batches broadcast to
// `batch`. Not recorded; A and B are detached.
Tensor batched_matmul(const Tensor& a, const Tensor& b, const Shape& batch) {
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  Shape out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  if (k == 0) return zeros(out_shape, a.dtype());  // a sum over no terms
  Tensor c = empty(out_shape, a.dtype());
  if (c.numel() == 0) return c;

  GemmLayout la, lb;
  Tensor A = gemm_operand(a, la), B = gemm_operand(b, lb);
  const Shape sa = batch_strides(A, batch), sb = batch_strides(B, batch);
  const int64_t nbatch = shape_numel(batch);
  for (int64_t v : {n, m, k, la.ld, lb.ld, nbatch * n})
    if (v > INT_MAX)
      fail("matmul", "{} @ {}: a dimension or leading stride of {} exceeds what 32-bit BLAS indices can hold",
           shape_str(a.shape()), shape_str(b.shape()), v);

  // One gemm for the whole batch when B is shared by every slice and A's slices are stacked rows.
  bool fold = !la.trans && nbatch > 1;
  int64_t expect = n * la.ld;
  for (size_t d = batch.size(); fold && d-- > 0;) {
    if (sb[d] != 0 && batch[d] != 1) fold = false;
    if (batch[d] == 1) continue;
    if (sa[d] != expect) fold = false;
    expect *= batch[d];
  }

  dispatch_float(a.dtype(), "matmul", [&]<typename T>() {
    const T* pa = A.data_ptr<const T>();
    const T* pb = B.data_ptr<const T>();
    T* pc = c.data_ptr<T>();
    if (fold) {
      gemm_split<T>(la, lb, nbatch * n, m, k, pa, pb, pc, m);
      return;
    }
    // Slice t's operands: its batch index, digit by digit, times each operand's batch strides.
    auto slice = [&](int64_t t, int64_t& oa, int64_t& ob) {
      oa = ob = 0;
      for (size_t d = batch.size(); d-- > 0;) {
        const int64_t i = t % batch[d];
        t /= batch[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
    };
    if (nbatch < num_threads()) {  // few, possibly large, slices: split each gemm
      for (int64_t t = 0; t < nbatch; ++t) {
        int64_t oa, ob;
        slice(t, oa, ob);
        gemm_split<T>(la, lb, n, m, k, pa + oa, pb + ob, pc + t * n * m, m);
      }
      return;
    }
    parallel_for(nbatch, n * m * k, [&](int64_t begin, int64_t end) {  // slices are independent
      for (int64_t t = begin; t < end; ++t) {
        int64_t oa, ob;
        slice(t, oa, ob);
        gemm_slice<T>(la, lb, n, m, k, pa + oa, pb + ob, pc + t * n * m, m);
      }
    });
  });
  return c;
}

}  // namespace

// forward: C = A B, batch by batch.  A (..., n, k), B (..., k, m), C (..., n, m)
//
// backward. C_ij = Σ_k A_ik B_kj, so with G = dL/dC:
//   dL/dA_ik = Σ_j G_ij B_kj = (G Bᵀ)_ik          da = G Bᵀ   (..., n, k)
//   dL/dB_kj = Σ_i A_ik G_ij = (Aᵀ G)_kj          db = Aᵀ G   (..., k, m)
// Each batch slice is its own product; an operand broadcast over batches was read by several
// slices, so its gradient is the sum of theirs: sum_to(·, its shape). A 1-D operand was a
// (1, k) row or (k, 1) column with that dimension dropped from C: put it back in G, then drop it
// from the gradient again. Saves b when a needs a gradient and a when b does (nothing else).
//
// tangent. The product rule, C = A B  =>  Ċ = Ȧ B + A Ḃ: two more products of the forward's
// shapes (broadcasting and 1-D operands as in the forward, since each term is a matmul itself).
constexpr OpDef kMatmul{.name = "matmul",
                        .saves = {{"right operand b", "dA = G Bᵀ", "when a requires grad"},
                                  {"left operand a", "dB = Aᵀ G", "when b requires grad"}},
                        .derivation = "ops/matmul.cpp", .tangent = "Ċ = Ȧ B + A Ḃ"};
struct MatmulSaved {  // the slots of kMatmul's saves
  static constexpr SavedSlot b = kMatmul.slot("right operand b"), a = kMatmul.slot("left operand a");
};
Tensor matmul(const Tensor& a, const Tensor& b, Site where) {
  if (a.dim() == 0 || b.dim() == 0)
    fail("matmul", "{} @ {}: a 0-d operand has no matrix dimension; scale by a scalar with mul() instead",
         a.describe(), b.describe());
  check_same_dtype_device("matmul", a, b);
  if (a.dtype() == DType::b8)
    fail("matmul", "{} @ {}: bool operands have no product; convert with .to(DType::i64) or a float", a.describe(),
         b.describe());
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  Tensor A = a_vec ? a.detach().unsqueeze(0) : a.detach();   // (1, k) row
  Tensor B = b_vec ? b.detach().unsqueeze(-1) : b.detach();  // (k, 1) column
  if (A.size(-1) != B.size(-2))
    fail("matmul", "inner dimensions differ: a {} has {} columns but b {} has {} rows; the last dimension of a must "
         "equal the second-to-last of b (transpose an operand?)", shape_str(a.shape()), A.size(-1),
         shape_str(b.shape()), B.size(-2));
  if (a.dtype() == DType::i64) {  // exact, wrapping as int64 does: Σ_k a_ik b_kj as integer products and sums
    NoGradGuard integers;          // (n, k, m) at once: integer products are small next to float gemm's work
    Tensor C = sum(mul(A.unsqueeze(-1), B.unsqueeze(-3)), {-2});
    if (a_vec) C = C.squeeze(-2);  // (…, n = 1, m) → (…, m)
    if (b_vec) C = C.squeeze(-1);  // (…, m = 1) → (…)
    return C;
  }
  const Shape ba(A.shape().begin(), A.shape().end() - 2), bb(B.shape().begin(), B.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes("matmul", ba, bb);
  } catch (const Error&) {
    fail("matmul", "batch dimensions {} of a {} and {} of b {} do not broadcast (sizes must match or be 1)",
         shape_str(ba), shape_str(a.shape()), shape_str(bb), shape_str(b.shape()));
  }
  const Tensor C = on_device("matmul", {a, b}, [&] { return batched_matmul(A, B, batch); },  // (batch..., n, m)
                             HG_CUDA(cuda::gemm(A, B, 1.0)));                           // cuBLAS
  Shape c_shape = C.shape(), out_shape = batch;
  if (!a_vec) out_shape.push_back(A.size(-2));
  if (!b_vec) out_shape.push_back(B.size(-1));
  Tensor out = C.view(out_shape);

  if (should_record({a, b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    const Shape sa = a.shape(), sb = b.shape(), sA = A.shape(), sB = B.shape();
    const bool b_shared = !batch.empty() && shape_numel(bb) == 1 && C.numel() > 0 && A.size(-1) > 0;  // b has no batch of its own
    std::vector<SavedTensor> saved;
    if (ga) saved.push_back(save(MatmulSaved::b, b));
    if (gb) saved.push_back(save(MatmulSaved::a, a));
    record(kMatmul, {a, b}, {out}, std::move(saved), [=](const std::vector<Tensor>& g, const Saved& s) {
      Tensor G = g[0].reshape(c_shape);  // (batch..., n, m), the dropped 1-D dimensions restored
      Tensor da, db;
      if (ga) {
        Tensor Bs = s[MatmulSaved::b].reshape(sB);
        da = sum_to(matmul(G, Bs.transpose(-1, -2)), sA).reshape(sa);
      }
      if (gb) {
        Tensor As = s[MatmulSaved::a].reshape(sA);
        if (b_shared) {
          // b was one matrix read by every slice (x @ W): Σ_s A_sᵀ G_s is a single gemm over the
          // stacked rows, (S·n, k)ᵀ @ (S·n, m), instead of S gemms and a sum over S.
          Tensor Af = expand(As, with_matrix(batch, sA)).reshape({-1, sA.back()});  // (S·n, k)
          db = matmul(Af.transpose(0, 1), G.reshape({-1, c_shape.back()})).reshape(sb);
        } else {
          db = sum_to(matmul(As.transpose(-1, -2), G), sB).reshape(sb);
        }
      }
      return std::vector<Tensor>{da, db};
    }, [&](const std::vector<Tensor>& d) {
      return std::vector<Tensor>{tangent_sum({if_tangent(d[0], [&](const Tensor& t) { return matmul(t, b); }),
                                              if_tangent(d[1], [&](const Tensor& t) { return matmul(a, t); })},
                                             out.shape())};
    }, where);
  }
  return out;
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> matmul_ops() {
  static const OpDef* const defs[] = {&kMatmul};
  return defs;
}

}  // namespace hg
