// cuda/rows.cpp — the host side of the row ops (kernels: cuda/softmax.cu, cuda/rows.cu):
// reductions, the softmax family, cross-entropy, and the embedding gather / scatter-add.
// Each makes its input rows contiguous (a copy only when they are not), allocates the result,
// launches, and, for the kernels that check indices, hands their status to defer_check().
#include "cuda/device_ops.h"
#include "cuda/runtime.h"

namespace hg::cuda {

namespace {

Shape without_last(const Shape& s, size_t n = 1) { return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(n)); }

void require_rows(std::string_view op, const Tensor& x, const char* what) {
  require_float(op, x, what);
  if (x.dim() == 0) fail(op, "the {} {} is 0-d; this op works along the last dimension", what, x.describe());
}

void require_same(std::string_view op, const Tensor& a, const char* wa, const Tensor& b, const char* wb) {
  require_same_dtype(op, a, b);
  if (a.shape() != b.shape())
    fail(op, "{} {} and {} {} must have the same shape", wa, shape_str(a.shape()), wb, shape_str(b.shape()));
}

// (rows, n) of x along its last dimension.
std::pair<int64_t, int64_t> rows_of(const Tensor& x) {
  const int64_t n = x.size(-1);
  return {n ? x.numel() / n : shape_numel(without_last(x.shape())), n};
}

}  // namespace

// ---------------------------------------------------------------- sum, max

Tensor sum_rows(const Tensor& x, int64_t nreduced) {
  constexpr std::string_view op = "sum_rows (cuda)";
  require_float(op, x, "input");
  if (nreduced < 0 || nreduced > x.dim())
    fail(op, "cannot reduce the last {} dimensions of {}", nreduced, x.describe());
  const Shape kept = without_last(x.shape(), static_cast<size_t>(nreduced));
  const int64_t rows = shape_numel(kept), cols = shape_numel(Shape(x.shape().end() - nreduced, x.shape().end()));
  Tensor out = empty(kept, x.dtype(), Device::cuda);
  if (rows == 0) return out;
  if (cols == 0) {  // a sum over no terms
    cuda::fill(out, 0.0);
    return out;
  }
  const Tensor xc = dense(x);
  HG_CUDA_CHECK(launch_sum_rows(elem(x.dtype()), xc.raw_data(), out.raw_data(), rows, cols, stream()));
  return out;
}

Tensor max_rows(const Tensor& x, Tensor* argmax, Tensor* onehot) {
  constexpr std::string_view op = "max_rows (cuda)";
  require_rows(op, x, "input");
  if (x.size(-1) == 0) fail(op, "max over an empty dimension of {}", x.describe());
  const auto [rows, n] = rows_of(x);
  const Shape kept = without_last(x.shape());
  Tensor values = empty(kept, x.dtype(), Device::cuda);
  Tensor am = argmax ? empty(kept, DType::i64, Device::cuda) : Tensor();
  Tensor oh = onehot ? empty(x.shape(), x.dtype(), Device::cuda) : Tensor();
  const Tensor xc = dense(x);
  HG_CUDA_CHECK(launch_max_rows(elem(x.dtype()), xc.raw_data(), values.raw_data(),
                                argmax ? static_cast<int64_t*>(am.raw_data()) : nullptr,
                                onehot ? oh.raw_data() : nullptr, rows, n, stream()));
  if (argmax) *argmax = am;
  if (onehot) *onehot = oh;
  return values;
}

// ---------------------------------------------------------------- the softmax family

Tensor softmax_rows(const Tensor& s) {
  constexpr std::string_view op = "softmax_rows (cuda)";
  require_rows(op, s, "scores");
  const Tensor x = dense(s);
  Tensor p = empty(s.shape(), s.dtype(), Device::cuda);
  const auto [rows, n] = rows_of(s);
  HG_CUDA_CHECK(launch_softmax_rows(elem(s.dtype()), x.raw_data(), p.raw_data(), rows, n, stream()));
  return p;
}

Tensor log_softmax_rows(const Tensor& s) {
  constexpr std::string_view op = "log_softmax_rows (cuda)";
  require_rows(op, s, "scores");
  const Tensor x = dense(s);
  Tensor y = empty(s.shape(), s.dtype(), Device::cuda);
  const auto [rows, n] = rows_of(s);
  HG_CUDA_CHECK(launch_log_softmax_rows(elem(s.dtype()), x.raw_data(), y.raw_data(), rows, n, stream()));
  return y;
}

Tensor softmax_backward_rows(const Tensor& P, const Tensor& dP, Tensor* D) {
  constexpr std::string_view op = "softmax_backward_rows (cuda)";
  require_rows(op, P, "weights P");
  require_rows(op, dP, "gradient dP");
  require_same(op, P, "P", dP, "dP");
  const Tensor pc = dense(P), gc = dense(dP);
  Tensor ds = empty(P.shape(), P.dtype(), Device::cuda);
  Shape d_shape = P.shape();
  d_shape.back() = 1;
  Tensor dot = D ? empty(d_shape, P.dtype(), Device::cuda) : Tensor();  // (..., 1)
  const auto [rows, n] = rows_of(P);
  if (D && n == 0) cuda::fill(dot, 0.0);  // rowsum over no keys
  HG_CUDA_CHECK(launch_softmax_backward_rows(elem(P.dtype()), pc.raw_data(), gc.raw_data(), ds.raw_data(),
                                             D ? dot.raw_data() : nullptr, rows, n, stream()));
  if (D) *D = dot;
  return ds;
}

Tensor log_softmax_backward_rows(const Tensor& y, const Tensor& g) {
  constexpr std::string_view op = "log_softmax_backward_rows (cuda)";
  require_rows(op, y, "log-weights y");
  require_rows(op, g, "gradient g");
  require_same(op, y, "y", g, "g");
  const Tensor yc = dense(y), gc = dense(g);
  Tensor ds = empty(y.shape(), y.dtype(), Device::cuda);
  const auto [rows, n] = rows_of(y);
  HG_CUDA_CHECK(launch_log_softmax_backward_rows(elem(y.dtype()), yc.raw_data(), gc.raw_data(), ds.raw_data(), rows, n,
                                                 stream()));
  return ds;
}

Tensor softmax_jacobian_rows(const Tensor& p) {
  constexpr std::string_view op = "softmax_jacobian_rows (cuda)";
  require_rows(op, p, "weights p");
  const Tensor pc = dense(p);
  const auto [rows, n] = rows_of(p);
  Shape j_shape = p.shape();
  j_shape.push_back(n);
  Tensor J = empty(j_shape, p.dtype(), Device::cuda);  // (..., n, n)
  HG_CUDA_CHECK(launch_jacobian_rows(elem(p.dtype()), pc.raw_data(), J.raw_data(), rows, n, stream()));
  return J;
}

Tensor softmax_jacobian_backward_rows(const Tensor& p, const Tensor& G) {
  constexpr std::string_view op = "softmax_jacobian_backward_rows (cuda)";
  require_rows(op, p, "weights p");
  require_float(op, G, "gradient G");
  require_same_dtype(op, p, G);
  Shape j_shape = p.shape();
  j_shape.push_back(p.size(-1));
  if (G.shape() != j_shape)
    fail(op, "G {} must have the Jacobian's shape {} (p {} with its last dimension repeated)", shape_str(G.shape()),
         shape_str(j_shape), shape_str(p.shape()));
  const Tensor pc = dense(p), Gc = dense(G);
  Tensor dp = empty(p.shape(), p.dtype(), Device::cuda);
  const auto [rows, n] = rows_of(p);
  HG_CUDA_CHECK(
      launch_jacobian_backward_rows(elem(p.dtype()), pc.raw_data(), Gc.raw_data(), dp.raw_data(), rows, n, stream()));
  return dp;
}

// ---------------------------------------------------------------- cross-entropy

namespace {

// targets (N,) i64 matching logits (..., C); returns C.
int64_t check_cross_entropy(std::string_view op, const Tensor& logits, const Tensor& targets) {
  require_rows(op, logits, "logits");
  require_device(op, targets, "targets");
  if (targets.dtype() != DType::i64)
    fail(op, "targets {} must be i64 class indices; convert with .to(DType::i64)", targets.describe());
  if (targets.shape() != without_last(logits.shape()))
    fail(op, "targets have shape {} but logits {} need targets of shape {}", shape_str(targets.shape()),
         logits.describe(), shape_str(without_last(logits.shape())));
  const int64_t C = logits.size(-1);
  if (C == 0) fail(op, "logits {} have no classes (C = 0)", logits.describe());
  return C;
}

// The deferred check of a cross-entropy kernel's status: a target out of range, or a NaN loss.
// t is the dense copy the kernel read (kept alive by the check).
StatusReport target_report(std::string_view op, const Shape& targets_shape, const Tensor& t, int64_t C,
                           int64_t ignore_index) {
  return [op, targets_shape, t, C, ignore_index](const std::array<int64_t, kStatusSlots>& st) {
    if (st[kBadIndex] != kNoError) {
      const int64_t pos = st[kBadIndex];
      fail(op,
           "target {} at position {} of targets {} is out of range for C = {} classes; targets must lie in [0, {}) "
           "or equal ignore_index ({})",
           read_i64_at(t, pos), index_str(targets_shape, pos), shape_str(targets_shape), C, C, ignore_index);
    }
    if (st[kNanRow] != kNoError)
      fail(op, "the loss of row {} (target {}) is NaN: its logits hold a NaN, a +inf, or are all -inf",
           index_str(targets_shape, st[kNanRow]), read_i64_at(t, st[kNanRow]));
  };
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, Tensor* lse, Tensor* n_kept) {
  constexpr std::string_view op = "cross_entropy (cuda)";
  const int64_t C = check_cross_entropy(op, logits, targets);
  const int64_t N = targets.numel();
  const Tensor x = dense(logits), t = dense(targets);    // (N, C), (N,)
  Tensor l = empty({N}, logits.dtype(), Device::cuda);   // (N,) logsumexp per row
  Tensor loss = empty({N}, DType::f64, Device::cuda);    // (N,) per-row loss, double
  Tensor out = empty({}, logits.dtype(), Device::cuda);  // ()
  const Tensor status = new_status();
  const int64_t* tp = static_cast<const int64_t*>(t.raw_data());
  HG_CUDA_CHECK(launch_cross_entropy_rows(elem(logits.dtype()), x.raw_data(), tp, N, C, ignore_index, l.raw_data(),
                                          static_cast<double*>(loss.raw_data()), status_ptr(status), stream()));
  HG_CUDA_CHECK(launch_cross_entropy_mean(elem(logits.dtype()), static_cast<const double*>(loss.raw_data()), tp, N,
                                          ignore_index, out.raw_data(), status_ptr(status), stream()));
  defer_check(status, target_report(op, targets.shape(), t, C, ignore_index));
  if (lse) *lse = l;
  if (n_kept) *n_kept = status.select(0, kKept);  // 0-d i64 on the device, written by the mean kernel
  return out;
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, int64_t ignore_index,
                              const Tensor& g, const Tensor& n_kept) {
  constexpr std::string_view op = "cross_entropy_backward (cuda)";
  const int64_t C = check_cross_entropy(op, logits, targets);
  const int64_t N = targets.numel();
  require_float(op, lse, "logsumexp");
  require_same_dtype(op, logits, lse);
  if (lse.numel() != N) fail(op, "logsumexp {} must hold one value per row ({})", lse.describe(), N);
  require_float(op, g, "incoming gradient g");
  require_same_dtype(op, logits, g);
  if (g.numel() != 1) fail(op, "the incoming gradient {} must be a single number (the loss is 0-d)", g.describe());
  require_device(op, n_kept, "kept-row count");
  if (n_kept.dtype() != DType::i64 || n_kept.numel() != 1)
    fail(op, "the kept-row count {} must be one i64 (cross_entropy's n_kept)", n_kept.describe());
  const Tensor x = dense(logits), t = dense(targets), l = dense(lse);
  Tensor dx = empty(logits.shape(), logits.dtype(), Device::cuda);  // (..., C)
  const Tensor status = new_status();
  HG_CUDA_CHECK(launch_cross_entropy_backward(elem(logits.dtype()), x.raw_data(),
                                              static_cast<const int64_t*>(t.raw_data()), l.raw_data(), N, C,
                                              ignore_index, g.raw_data(), status_ptr(n_kept), dx.raw_data(),
                                              status_ptr(status), stream()));
  defer_check(status, target_report(op, targets.shape(), t, C, ignore_index));
  return dx;
}

// ---------------------------------------------------------------- embedding

namespace {

// The deferred check of an embedding kernel's status; idx is the dense copy the kernel read.
StatusReport index_report(std::string_view op, const Shape& indices_shape, const Tensor& idx, int64_t V) {
  return [op, indices_shape, idx, V](const std::array<int64_t, kStatusSlots>& st) {
    if (st[kBadIndex] == kNoError) return;
    const int64_t pos = st[kBadIndex];
    fail(op,
         "index {} at position {} of indices {} is out of range for a table of V = {} rows; token ids must lie in "
         "[0, {})",
         read_i64_at(idx, pos), index_str(indices_shape, pos), shape_str(indices_shape), V, V);
  };
}

void require_indices(std::string_view op, const Tensor& indices) {
  require_device(op, indices, "indices");
  if (indices.dtype() != DType::i64)
    fail(op, "indices {} must be i64 token ids; convert with .to(DType::i64)", indices.describe());
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  constexpr std::string_view op = "embedding (cuda)";
  require_float(op, weight, "weight");
  if (weight.dim() != 2) fail(op, "weight {} must be 2-D (V, d)", weight.describe());
  require_indices(op, indices);
  const int64_t V = weight.size(0), d = weight.size(1);
  const Tensor idx = dense(indices);  // (P,)
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = empty(out_shape, weight.dtype(), Device::cuda);  // (..., d)
  const Tensor status = new_status();
  HG_CUDA_CHECK(launch_embedding(elem(weight.dtype()), weight.raw_data(), weight.strides()[0], weight.strides()[1], V,
                                 d, static_cast<const int64_t*>(idx.raw_data()), idx.numel(), out.raw_data(),
                                 status_ptr(status), stream()));
  defer_check(status, index_report(op, indices.shape(), idx, V));
  return out;
}

Tensor embedding_backward(const Tensor& g, const Tensor& indices, int64_t V) {
  constexpr std::string_view op = "embedding_backward (cuda)";
  require_rows(op, g, "gradient g");
  require_indices(op, indices);
  const int64_t d = g.size(-1);
  Shape expect = indices.shape();
  expect.push_back(d);
  if (g.shape() != expect)
    fail(op, "g {} must have shape {}: the indices' shape {} and one row of d = {}", shape_str(g.shape()),
         shape_str(expect), shape_str(indices.shape()), d);
  if (V < 0) fail(op, "V = {} rows is negative", V);
  const Tensor gc = dense(g), idx = dense(indices);
  Tensor dw = empty({V, d}, g.dtype(), Device::cuda);  // (V, d), every element written by the kernel
  const Tensor status = new_status();
  HG_CUDA_CHECK(launch_embedding_backward(elem(g.dtype()), gc.raw_data(), static_cast<const int64_t*>(idx.raw_data()),
                                          idx.numel(), V, d, dw.raw_data(), status_ptr(status), stream()));
  defer_check(status, index_report(op, indices.shape(), idx, V));
  return dw;
}

}  // namespace hg::cuda
