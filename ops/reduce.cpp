// ops/reduce.cpp — reductions over dimensions.
//
// The kernels move the reduced dimensions last (a permuted view, copied to contiguous when it
// is not already), so each output element is one contiguous row: rows = kept, cols = reduced.
#include "ops/primitives.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace hg {

Reduction reduction(const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  const int64_t r = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(r), dims.empty());
  for (int64_t d : wrap_dims(op, dims, x.shape()))
    if (r > 0) reduced[d] = true;
  Reduction p;
  for (int64_t d = 0; d < r; ++d) {
    if (reduced[d]) {
      p.dims.push_back(d);
      p.ncols *= x.shape()[d];
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.order.push_back(d);
      p.nrows *= x.shape()[d];
      p.keep_shape.push_back(x.shape()[d]);
      p.out_shape.push_back(x.shape()[d]);
    }
  }
  p.order.insert(p.order.end(), p.dims.begin(), p.dims.end());
  return p;
}

namespace {

// A reduction's kernel plan: its dims, and x as rows = kept, cols = reduced.
struct Plan : Reduction {
  Tensor rows;  // (kept..., reduced...) view of x: contiguous on the CPU, as permuted on CUDA
};

Plan plan(const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  Reduction r = reduction(op, x, dims, keepdim);
  NoGradGuard ng;
  Tensor rows = x.detach().permute(r.order);  // a view: the CPU loops make it contiguous, the CUDA row kernels read any strides
  return {std::move(r), std::move(rows)};
}

// The first position of a row's largest entry (the first of equal maxima); a NaN is larger than
// every number (the first NaN wins), as PyTorch's max and argmax.
template <typename T>
int64_t first_max(const T* row, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (row[j] != row[j]) return j;
    if (row[j] > row[best]) best = j;
  }
  return best;
}

Shape all_dims(const Tensor& x) {
  Shape d(static_cast<size_t>(x.dim()));
  for (int64_t i = 0; i < x.dim(); ++i) d[i] = i;
  return d;
}

}  // namespace

// forward: out[k] = sum_j x[k, j]      backward: dx[k, j] = g[k]  (g broadcast back over the reduced dims)
// tangent: linear, so ȯ[k] = sum_j ẋ[k, j]
constexpr OpDef kSum{.name = "sum", .saves_nothing = "the gradient expands back", .derivation = "ops/reduce.cpp",
                     .tangent = "ȯ = sum(ẋ)"};
// a + b; int64 wraps on overflow (as PyTorch's) rather than overflowing.
template <typename T>
T sum_step(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim, Site where) {
  if (x.defined() && !is_floating(x.dtype()) && (x.device() != Device::cpu || x.dtype() != DType::i64)) {
    NoGradGuard ng;  // int64 and bool count in int64 on the CPU, exactly, with no gradient (PyTorch's)
    return sum(x.to(Device::cpu).to(DType::i64), dims, keepdim, where).to(x.device());
  }
  Plan p = plan("sum", x, dims, keepdim);
  Tensor out = on_device("sum", {x}, [&] {
    const Tensor rows = p.rows.contiguous();
    Tensor o = empty(p.out_shape, x.dtype());
    dispatch_any(x.dtype(), [&]<typename T>() {
      const T* in = rows.data_ptr<const T>();
      T* op = o.data_ptr<T>();
      parallel_for(p.nrows, p.ncols, [&](int64_t begin, int64_t end) {  // rows on threads; each row's sum in order
        for (int64_t i = begin; i < end; ++i) {
          T acc = 0;
          for (int64_t j = 0; j < p.ncols; ++j) acc = sum_step(acc, in[i * p.ncols + j]);
          op[i] = acc;
        }
      });
    });
    return o;
  }, HG_CUDA(cuda::sum_rows(p.rows, static_cast<int64_t>(p.dims.size())).reshape(p.out_shape)));
  if (should_record({x})) {
    Shape keep = p.keep_shape, from = x.shape();
    record(kSum, {x}, {out}, {}, [keep, from](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{expand(g[0].reshape(keep), from)};
    }, [&](const std::vector<Tensor>& d) { return std::vector<Tensor>{sum(d[0], dims, keepdim)}; }, where);
  }
  return out;
}

Tensor sum(const Tensor& x, Site where) { return sum(x, all_dims(x), false, where); }

// mean = sum / n: the backward is sum's, divided by n (through the mul_scalar entry).
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim, Site where) {
  Plan p = plan("mean", x, dims, keepdim);
  if (p.ncols == 0) fail("mean", "mean over an empty dimension of {} is undefined", x.describe());
  return mul(sum(x, dims, keepdim, where), 1.0 / static_cast<double>(p.ncols), where);
}

Tensor mean(const Tensor& x, Site where) { return mean(x, all_dims(x), false, where); }

// forward: out[k] = max_j x[k, j], first index j* where it is reached
// backward: dx[k, j] = g[k] if j == j* else 0. Saves a one-hot mask of j* (x's shape).
// tangent: the maximum moves with the entry that attains it, ȯ[k] = ẋ[k, j*] = sum_j (ẋ ∘ onehot)[k, j]
constexpr OpDef kMax{.name = "max",
                     .saves = {{"argmax one-hot mask", "the gradient goes to the first maximum (x's shape)"}},
                     .derivation = "ops/reduce.cpp", .tangent = "ȯ = ẋ at the first maximum"};
struct MaxSaved { static constexpr SavedSlot onehot = kMax.slot("argmax one-hot mask"); };
Tensor max(const Tensor& x, int64_t dim, bool keepdim, Site where) {
  dim = wrap_dim("max", dim, x.shape());
  Plan p = plan("max", x, {dim}, keepdim);
  if (p.ncols == 0)  // PyTorch's class for it too: there is no index to return
    throw IndexError(fmt::format("max: dim {} of {} is empty; a maximum needs at least one element", dim, x.describe()));
  Tensor onehot_rows;  // the mask in the permuted layout
  Tensor out = on_device("max", {x}, [&] {
    const Tensor rows = p.rows.contiguous();
    Tensor o = empty(p.out_shape, x.dtype());
    onehot_rows = zeros({p.nrows, p.ncols}, x.dtype());
    dispatch_any(x.dtype(), [&]<typename T>() {  // int64 and bool too: a maximum is exact in any dtype
      const T* in = rows.data_ptr<const T>();
      T* op = o.data_ptr<T>();
      T* oh = onehot_rows.data_ptr<T>();
      for (int64_t i = 0; i < p.nrows; ++i) {
        const int64_t best = first_max(in + i * p.ncols, p.ncols);
        op[i] = in[i * p.ncols + best];
        oh[i * p.ncols + best] = 1;
      }
    });
    return o;
  }, HG_CUDA(cuda::max_rows(p.rows, nullptr, &onehot_rows).reshape(p.out_shape)));
  if (should_record({x})) {
    // undo the permutation (x's dim moved last) so the mask has x's layout
    Tensor onehot = onehot_rows;  // a 0-d x is its own maximum: the mask is (1, 1), read as 0-d below
    if (x.dim() == 0) {
      onehot = onehot_rows.reshape({});
    } else {
      Shape moved = x.shape();
      moved.erase(moved.begin() + dim);
      moved.push_back(x.shape()[dim]);
      Shape order;
      for (int64_t d = 0; d < x.dim(); ++d) order.push_back(d < dim ? d : (d == dim ? x.dim() - 1 : d - 1));
      onehot = onehot_rows.view(moved).permute(order).contiguous();
    }
    Shape keep = p.keep_shape, from = x.shape();
    record(kMax, {x}, {out}, {save(MaxSaved::onehot, onehot)},
           [keep, from](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{mul(expand(g[0].reshape(keep), from), s[MaxSaved::onehot])};
           }, [&](const std::vector<Tensor>& d) { return std::vector<Tensor>{sum(mul(d[0], onehot), {dim}, keepdim)}; }, where);
  }
  return out;
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  dim = wrap_dim("argmax", dim, x.shape());
  Plan p = plan("argmax", x, {dim}, keepdim);
  if (p.ncols == 0)
    throw IndexError(fmt::format("argmax: dim {} of {} is empty; an argmax needs at least one element", dim, x.describe()));
  return on_device("argmax", {x}, [&] {
    const Tensor rows = p.rows.contiguous();
    Tensor o = empty(p.out_shape, DType::i64);
    dispatch_any(x.dtype(), [&]<typename T>() {
      const T* in = rows.data_ptr<const T>();
      int64_t* op = o.data_ptr<int64_t>();
      for (int64_t i = 0; i < p.nrows; ++i) op[i] = first_max(in + i * p.ncols, p.ncols);
    });
    return o;
  }, HG_CUDA([&] {
    Tensor index;
    cuda::max_rows(p.rows, &index, nullptr);
    return index.reshape(p.out_shape);
  }()));
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> reduce_ops() {
  static const OpDef* const defs[] = {&kSum, &kMax};
  return defs;
}

}  // namespace hg
