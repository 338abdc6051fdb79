// engine/views.cpp — views and copies, each with its backward beside it.
//
// A view shares storage with its base, so its gradient is the base's gradient seen through the
// same geometry: transpose/permute undo the permutation; slice/select scatter into zeros of the
// base's shape; view/reshape reshape back. contiguous/clone/dtype and device moves are identities
// up to the conversion back.
//
// Each is linear in its input, so its tangent (forward mode) is the same op applied to the
// input's tangent: ȯ = view(ẋ), the same slice of ẋ, ẋ converted or moved alike.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "engine/tensor.h"

namespace hg {

namespace {

// Record a single-input, single-output op if needed and return its output. Every backward here
// is itself a view or copy of the gradient, made of recorded ops: differentiable again.
// `same` applies the op to a tangent: ȯ = same(ẋ).
Tensor recorded(const OpDef& def, const Tensor& in, Tensor out, BackwardFn fn,
                const std::function<Tensor(const Tensor&)>& same, Site where) {
  if (should_record({in}))
    record(def, {in}, {out}, {}, std::move(fn),
           [&same](const std::vector<Tensor>& d) { return std::vector<Tensor>{same(d[0])}; }, where);
  return out;
}

// The backward of slice and select: the gradient g placed, where `read` reads, into zeros of the
// base's shape. It is linear in g, so its own backward reads the same place of its incoming
// gradient; recorded (under create_graph) as `def`, "<op>_backward".
constexpr OpDef kSliceBackward{.name = "slice_backward", .saves_nothing = "its gradient is the same slice",
                               .derivation = "engine/views.cpp", .from_backward = true,
                               .tangent = "ȯ = ġ placed alike"};
constexpr OpDef kSelectBackward{.name = "select_backward", .saves_nothing = "its gradient is the same select",
                                .derivation = "engine/views.cpp", .from_backward = true,
                                .tangent = "ȯ = ġ placed alike"};

Tensor place_in_zeros(const OpDef& def, const Tensor& g, const Shape& base_shape,
                      const std::function<Tensor(const Tensor&)>& read) {
  Tensor gin = zeros(base_shape, g.dtype(), g.device());
  {
    NoGradGuard ng;
    read(gin).copy_(g);
  }
  if (should_record({g}))
    record(def, {g}, {gin}, {}, [read](const std::vector<Tensor>& gg, const Saved&) {
      return std::vector<Tensor>{read(gg[0])};
    }, [&](const std::vector<Tensor>& d) { return std::vector<Tensor>{place_in_zeros(def, d[0], base_shape, read)}; });
  return gin;
}

}  // namespace

// ---------------------------------------------------------------- permute / transpose

constexpr OpDef kPermute{.name = "permute", .saves_nothing = "the inverse permutation is a number list",
                         .derivation = "engine/views.cpp", .tangent = "ȯ = ẋ permuted alike"};

Tensor Tensor::permute(const Shape& order, Site where) const {
  check_defined("permute");
  const int64_t r = dim();
  if (static_cast<int64_t>(order.size()) != r)
    fail("permute", "order {} has {} entries for a tensor of shape {}; give one per dimension", shape_str(order),
         order.size(), shape_str(shape()));
  const Shape dims = wrap_dims("permute", order, shape());
  Shape shp(r), st(r), inverse(r, -1);
  for (int64_t i = 0; i < r; ++i) {
    const int64_t d = dims[i];
    inverse[d] = i;
    shp[i] = shape()[d];
    st[i] = strides()[d];
  }
  Tensor out = make_view(*this, shp, st, offset());
  // forward: out[i0..] = x[i_order...]; backward permutes the gradient back with the inverse order
  return recorded(kPermute, *this, out, [inverse](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{g[0].permute(inverse)};
  }, [&](const Tensor& t) { return t.permute(order); }, where);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1, Site where) const {
  check_defined("transpose");
  d0 = wrap_dim("transpose", d0, shape());
  d1 = wrap_dim("transpose", d1, shape());
  Shape order(dim());
  for (int64_t i = 0; i < dim(); ++i) order[i] = i;
  if (dim() > 0) std::swap(order[d0], order[d1]);  // a 0-d tensor (dims 0 and -1 only) is its own transpose
  return permute(order, where);
}

// ---------------------------------------------------------------- slice / select

constexpr OpDef kSlice{.name = "slice", .saves_nothing = "the gradient goes into zeros where the slice reads",
                       .derivation = "engine/views.cpp", .tangent = "ȯ = the same slice of ẋ"};

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step, Site where) const {
  check_defined("slice");
  d = wrap_existing_dim("slice", d, shape());
  if (step <= 0) fail("slice", "step must be positive, got {}", step);
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shp = shape(), st = strides();
  shp[d] = end == start ? 0 : 1 + (end - start - 1) / step;  // ⌈(end − start) / step⌉, no overflow for any step
  st[d] *= step;
  Tensor out = make_view(*this, shp, st, offset() + start * strides()[d]);
  // backward: the slice's gradient lands in its place in a zero tensor of the base's shape
  Shape base_shape = shape();
  return recorded(kSlice, *this, out, [=](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{place_in_zeros(kSliceBackward, g[0], base_shape, [=](const Tensor& b) { return b.slice(d, start, end, step); })};
  }, [=](const Tensor& t) { return t.slice(d, start, end, step); }, where);
}

constexpr OpDef kSelect{.name = "select", .saves_nothing = "as slice, one index", .derivation = "engine/views.cpp",
                        .tangent = "ȯ = the same select of ẋ"};

Tensor Tensor::select(int64_t d, int64_t index, Site where) const {
  check_defined("select");
  d = wrap_existing_dim("select", d, shape());
  const int64_t i = wrap_index("select", index, d, shape());
  Shape shp = shape(), st = strides();
  shp.erase(shp.begin() + d);
  st.erase(st.begin() + d);
  Tensor out = make_view(*this, shp, st, offset() + i * strides()[d]);
  Shape base_shape = shape();
  return recorded(kSelect, *this, out, [=](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{place_in_zeros(kSelectBackward, g[0], base_shape, [=](const Tensor& b) { return b.select(d, i); })};
  }, [=](const Tensor& t) { return t.select(d, i); }, where);
}

Tensor Tensor::index(std::initializer_list<int64_t> idx, Site where) const {
  check_defined("index");
  if (static_cast<int64_t>(idx.size()) > dim())
    fail("index", "{} indices for a tensor of shape {}", idx.size(), shape_str(shape()));
  Tensor out = *this;
  for (int64_t i : idx) out = out.select(0, i, where);
  return out;
}

// ---------------------------------------------------------------- view / reshape

namespace {

// Strides that let a tensor (shape, strides) be read as `to` without copying, or false.
// Walks the old dimensions from the last, grouping runs that are contiguous with each other
// ("chunks"); each chunk must be covered exactly by a run of new dimensions.
bool view_strides(const Shape& shape, const Shape& strides, const Shape& to, Shape& out) {
  out.assign(to.size(), 0);
  if (shape_numel(shape) == 0) { out = contiguous_strides(to); return true; }
  Shape s = shape.empty() ? Shape{1} : shape;
  Shape st = strides.empty() ? Shape{1} : strides;
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = st.back();
  int64_t chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    chunk_numel *= s[d];
    bool chunk_ends = d == 0 || (s[d - 1] != 1 && st[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || to[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= to[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return false;
    if (d > 0) {
      chunk_stride = st[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

Shape infer_shape(const char* op, const Shape& from, Shape to) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) {
      if (infer != -1) fail(op, "only one dimension can be -1 in {}", shape_str(to));
      infer = static_cast<int64_t>(i);
    } else if (to[i] < 0) {
      fail(op, "negative size in shape {}", shape_str(to));
    } else if (__builtin_mul_overflow(known, to[i], &known)) {
      fail(op, "shape {} has more elements than an int64 can count", shape_str(to));
    }
  }
  int64_t n = shape_numel(from);
  if (infer != -1) {
    if (known == 0 || n % known != 0) fail(op, "shape {} is invalid for {} elements (input shape {})", shape_str(to), n, shape_str(from));
    to[infer] = n / known;
  }
  if (shape_numel(to) != n)
    fail(op, "shape {} has {} elements but the input {} has {}", shape_str(to), shape_numel(to), shape_str(from), n);
  return to;
}

}  // namespace

constexpr OpDef kView{.name = "view", .saves_nothing = "the input's shape", .derivation = "engine/views.cpp",
                      .tangent = "ȯ = ẋ at the new shape"};

Tensor Tensor::view(const Shape& to_shape, Site where) const {
  check_defined("view");
  Shape to = infer_shape("view", shape(), to_shape);
  check_shape("view", to, dtype());
  Shape st;
  if (!view_strides(shape(), strides(), to, st))
    fail("view", "cannot view a tensor of shape {} with strides {} as {}: the dimensions being merged are not "
         "contiguous in memory (typically after transpose or permute). Use .reshape({}) to copy, or "
         ".contiguous().view(...)", shape_str(shape()), shape_str(strides()), shape_str(to), fmt::join(to, ", "));
  Tensor out = make_view(*this, to, st, offset());
  Shape from = shape();
  return recorded(kView, *this, out, [from](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{g[0].reshape(from)};
  }, [&](const Tensor& t) { return t.reshape(to); }, where);  // reshape: a tangent may be laid out otherwise
}

Tensor Tensor::reshape(const Shape& to_shape, Site where) const {
  check_defined("reshape");
  Shape to = infer_shape("reshape", shape(), to_shape);
  check_shape("reshape", to, dtype());
  Shape st;
  if (view_strides(shape(), strides(), to, st)) return view(to, where);
  return contiguous(where).view(to, where);
}

Tensor Tensor::unsqueeze(int64_t d, Site where) const {
  check_defined("unsqueeze");
  d = wrap_insert_dim("unsqueeze", d, shape());
  Shape to = shape();
  to.insert(to.begin() + d, 1);
  return view(to, where);
}

Tensor Tensor::squeeze(int64_t d, Site where) const {
  check_defined("squeeze");
  d = wrap_dim("squeeze", d, shape());
  // PyTorch's rule: a dimension whose size is not 1 (and a 0-d tensor, which has none) stays
  Shape to = shape();
  if (to.empty() || to[d] != 1) return view(to, where);
  to.erase(to.begin() + d);
  return view(to, where);
}

// ---------------------------------------------------------------- copies and conversions

constexpr OpDef kClone{.name = "clone", .saves_nothing = "the gradient passes through",
                       .derivation = "engine/views.cpp", .tangent = "ȯ = ẋ"};

Tensor Tensor::clone(Site where) const {
  check_defined("clone");
  Tensor out = empty(shape(), dtype(), device());
  {
    NoGradGuard ng;
    out.copy_(*this);
  }
  return recorded(kClone, *this, out, [](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{g[0]};
  }, [](const Tensor& t) { return t; }, where);
}

Tensor Tensor::contiguous(Site where) const {
  check_defined("contiguous");
  if (is_contiguous()) return *this;
  return clone(where);
}

constexpr OpDef kToDtype{.name = "to_dtype", .saves_nothing = "the gradient converts back",
                         .derivation = "engine/views.cpp",
                          .checked_by = "tests/engine/test_engine.cpp, dtype conversion is differentiable",
                          .tangent = "ȯ = ẋ converted alike"};

constexpr OpDef kToDevice{.name = "to_device", .saves_nothing = "the gradient moves back",
                          .derivation = "engine/views.cpp",
                           .checked_by = "tests/gpu/test_dispatch.cpp, engine copies across devices",
                           .tangent = "ȯ = ẋ moved alike"};

namespace {

// `x` copied into `out` (another dtype or another device). Recorded when `def` is given: the
// gradient goes back to `from` (x's dtype or device), the tangent forward to `to`.
template <typename Where>
Tensor copied(const OpDef* def, const Tensor& x, Tensor out, Where from, Where to, Site site) {
  {
    NoGradGuard ng;
    out.copy_(x);  // copy_ converts dtypes, and moves across devices
  }
  if (!def) return out;
  return recorded(*def, x, out, [from](const std::vector<Tensor>& g, const Saved&) {
    return std::vector<Tensor>{g[0].to(from)};
  }, [to](const Tensor& dot) { return dot.to(to); }, site);
}

}  // namespace

Tensor Tensor::to(DType t, Site where) const {
  check_defined("to");
  if (t == dtype()) return *this;
  // Index and mask conversions are not differentiable: not recorded.
  const bool differentiable = is_floating(t) && is_floating(dtype());
  return copied(differentiable ? &kToDtype : nullptr, *this, empty(shape(), t, device()), dtype(), t, where);
}

Tensor Tensor::to(Device d, Site where) const {
  check_defined("to");
  if (d == device()) return *this;
  return copied(&kToDevice, *this, empty(shape(), dtype(), d), device(), d, where);
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> view_defs() {
  static const OpDef* const defs[] = {&kPermute, &kSlice, &kSelect, &kView, &kClone, &kToDtype, &kToDevice,
                                      &kSliceBackward, &kSelectBackward};
  return defs;
}

}  // namespace hg
