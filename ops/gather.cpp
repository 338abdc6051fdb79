// ops/gather.cpp — gather, scatter and scatter_add (ops/gather.h).
//
// Each works on x read flat: index names, for every place of its own shape, one entry of x (its own
// coordinates with the coordinate along dim replaced by the index's value). So
//   gather       out = x_flat[p]                  index_select, whose backward adds g back at p:
//                                                 dx_flat[p_k] += g_k (ops/rearrange.cpp)
//   scatter_add  out = x + S(src),  S(src)_flat[p_k] += src_k — embedding's backward as an op, whose
//                own backward is the gather: dx = g, dsrc = gather(g)
//   scatter      out = where(hit, S(src kept), x)  where `hit` marks the places written and `kept`
//                the last write to each: dx = g off the hit places, dsrc = gather(g) for the kept
// Each is then a composition of recorded ops with CUDA kernels: backward, tangent and second order
// are theirs. int64 and bool tensors (no gradient) take the same positions through a copy.
#include "ops/gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "engine/dims.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/rearrange.h"

namespace hg {

namespace {

struct Places {
  std::vector<int64_t> target;  // flat position in x for each place of index's shape
  std::vector<int64_t> source;  // flat position in src (contiguous) for each place (scatter only)
};

// The flat positions `index` names in x (and reads in src, when given), checked.
Places places(const char* op, const Tensor& x, int64_t& dim, const Tensor& index, const Tensor* src) {
  if (!x.defined() || !index.defined() || (src && !src->defined())) fail(op, "an undefined tensor was given");
  if (index.dtype() != DType::i64)
    fail(op, "index {} must be int64; convert with .long()", index.describe());
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  if (std::max<int64_t>(index.dim(), 1) != rank || (src && std::max<int64_t>(src->dim(), 1) != rank))
    fail(op, "index {}{}{} must have as many dimensions as x {}", index.describe(), src ? " and src " : "",
         src ? src->describe() : "", x.describe());
  dim = wrap_dim(op, dim, x.dim() == 0 ? Shape{1} : x.shape());
  const Shape xs = x.dim() == 0 ? Shape{1} : x.shape(), is = index.dim() == 0 ? Shape{1} : index.shape();
  const Shape ss = !src ? Shape{} : src->dim() == 0 ? Shape{1} : src->shape();
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim && is[d] > xs[d])
      fail(op, "index {} is larger than x {} in dimension {} ({} > {}); only dim {} may differ", index.describe(),
           x.describe(), d, is[d], xs[d], dim);
    if (src && is[d] > ss[d])
      fail(op, "index {} is larger than src {} in dimension {} ({} > {})", index.describe(), src->describe(), d, is[d], ss[d]);
  }
  const std::vector<int64_t> ids = index.to_int_vector();
  Places p;
  p.target.reserve(ids.size());
  Shape at(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t v = ids[k];
    if (v < 0 || v >= xs[dim])
      throw IndexError(fmt::format("{}: index {} at {} of index {} is out of range for dim {} of x {} (size {}: from 0 to {})",
                                   op, v, shape_str(at), index.describe(), dim, x.describe(), xs[dim], xs[dim] - 1));
    int64_t t = 0, s = 0;
    for (int64_t d = 0; d < rank; ++d) {
      t = t * xs[d] + (d == dim ? v : at[d]);
      if (src) s = s * ss[d] + at[d];
    }
    p.target.push_back(t);
    if (src) p.source.push_back(s);
    for (int64_t d = rank - 1; d >= 0 && ++at[d] == is[d]; --d) at[d] = 0;  // the next place, row-major
  }
  return p;
}

// x with its flat entries `to` replaced (assign) or increased (add) by src's flat entries `from`,
// for int64 and bool tensors: a copy on the CPU.
Tensor write_ints(const Tensor& x, const std::vector<int64_t>& to, const Tensor& src, const std::vector<int64_t>& from,
                  bool add) {
  NoGradGuard ng;
  const Tensor s = src.to(Device::cpu).to(DType::i64).contiguous();
  std::vector<int64_t> out = x.to(Device::cpu).to(DType::i64).contiguous().to_int_vector();
  const auto* sp = static_cast<const int64_t*>(s.raw_data());
  for (size_t k = 0; k < to.size(); ++k) {
    const int64_t v = sp[from[k]];
    out[static_cast<size_t>(to[k])] = add ? out[static_cast<size_t>(to[k])] + v : v;
  }
  Tensor r = empty(x.shape(), DType::i64);
  std::copy(out.begin(), out.end(), r.data_ptr<int64_t>());
  if (x.dtype() == DType::b8) r = ne(r, 0.0);
  return r.to(x.device());
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Site where) {
  const Places p = places("gather", x, dim, index, nullptr);
  return index_select(x.reshape({-1}, where), 0, positions_tensor(p.target, x.device()), where).reshape(index.shape(), where);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site where) {
  constexpr const char* op = "scatter_add";
  const Places p = places(op, x, dim, index, &src);
  if (x.dtype() != src.dtype()) fail(op, "x {} and src {} must have one dtype", x.describe(), src.describe());
  if (!is_floating(x.dtype())) return write_ints(x, p.target, src, p.source, true);
  const Tensor picked = index_select(src.reshape({-1}, where), 0, positions_tensor(p.source, x.device()), where);
  const Tensor added = embedding_backward(picked.reshape({-1, 1}, where), positions_tensor(p.target, x.device()), x.numel());
  return add(x, added.reshape(x.shape(), where), where);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, Site where) {
  constexpr const char* op = "scatter";
  Places p = places(op, x, dim, index, &src);
  if (x.dtype() != src.dtype()) fail(op, "x {} and src {} must have one dtype", x.describe(), src.describe());
  // The last write to each place: walk backwards and keep a place's first sighting.
  std::vector<char> seen(static_cast<size_t>(x.numel()), 0);
  std::vector<int64_t> to, from;
  for (size_t k = p.target.size(); k-- > 0;)
    if (!seen[static_cast<size_t>(p.target[k])]) {
      seen[static_cast<size_t>(p.target[k])] = 1;
      to.push_back(p.target[k]);
      from.push_back(p.source[k]);
    }
  if (!is_floating(x.dtype())) return write_ints(x, to, src, from, false);
  std::vector<double> hit(seen.begin(), seen.end());
  const Tensor mask = ne(tensor(hit, x.shape(), DType::f64), 0.0).to(x.device());
  const Tensor picked = index_select(src.reshape({-1}, where), 0, positions_tensor(from, x.device()), where);
  const Tensor placed = embedding_backward(picked.reshape({-1, 1}, where), positions_tensor(to, x.device()), x.numel());
  return hg::where(mask, placed.reshape(x.shape(), where), x, where);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value, Site where) {
  if (!x.defined()) fail("scatter", "an undefined tensor was given");
  const Tensor src = full(index.defined() ? index.shape() : Shape{}, value, x.dtype(), x.device());
  return scatter(x, dim, index, src, where);
}

}  // namespace hg
