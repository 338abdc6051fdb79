#include "ops/primitives.h"

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace hg {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes {} and {} cannot be broadcast: dimension {} is {} vs {} (sizes must match or be 1)",
           shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const char* op, const Tensor& x, const Shape& to) {
  const Shape& s = x.shape();
  if (s.size() > to.size()) fail(op, "cannot broadcast shape {} to {}", shape_str(s), shape_str(to));
  Shape st(to.size(), 0);
  const size_t lead = to.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == to[lead + i]) st[lead + i] = x.strides()[i];
    else if (s[i] != 1) fail(op, "cannot broadcast shape {} to {}", shape_str(s), shape_str(to));
  }
  return st;
}

void require_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) fail(op, "{} is undefined", what);
}

void require_float(const char* op, const Tensor& t, const char* what) {
  require_defined(op, t, what);
  if (!is_floating(t.dtype()))
    fail(op, "{} is not floating point; {} takes float32 or float64 (convert with .double())", t.describe(), op);
}

std::pair<Tensor, Tensor> floated(const char* op, const Tensor& a, const Tensor& b) {
  require_defined(op, a, "an operand");
  require_defined(op, b, "an operand");
  const bool fa = is_floating(a.dtype()), fb = is_floating(b.dtype());
  if (fa && fb) return {a, b};
  const DType t = fa ? a.dtype() : fb ? b.dtype() : DType::f32;
  return {fa ? a : a.to(t), fb ? b : b.to(t)};
}

void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(op, "dtype mismatch: {} vs {}; convert one with .to(DType::{})", a.describe(), b.describe(),
         a.dtype() == DType::f64 ? "f64" : "f32");
  common_device(op, {a, b});  // the device-mismatch Error (ops/device.h)
}

// forward: out[i] = x[broadcast(i)]  (a view; stride 0 on broadcast dimensions)
// backward: every out element that read x[j] sends its gradient back to x[j]: dx = sum_to(dout)
// tangent: expand is linear, so ȯ = expand(ẋ)
constexpr OpDef kExpand{.name = "expand", .saves_nothing = "sum_to the input's shape",
                        .derivation = "ops/broadcast.cpp", .tangent = "ȯ = expand(ẋ)"};
Tensor expand(const Tensor& x, const Shape& to, Site where) {
  if (x.shape() == to) return x;
  check_shape("expand", to, x.dtype());
  Tensor out = make_view(x, to, broadcast_strides("expand", x, to), x.offset());
  if (should_record({x})) {
    Shape from = x.shape();
    record(kExpand, {x}, {out}, {}, [from](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{sum_to(g[0], from)};
    }, [&to](const std::vector<Tensor>& d) { return std::vector<Tensor>{expand(d[0], to)}; }, where);
  }
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& to) {
  if (g.shape() == to) return g;
  const Shape& s = g.shape();
  if (to.size() > s.size()) fail("sum_to", "cannot reduce shape {} to the larger rank {}", shape_str(s), shape_str(to));
  const size_t lead = s.size() - to.size();
  Shape dims;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) dims.push_back(static_cast<int64_t>(i));
    else if (to[i - lead] == 1 && s[i] != 1) dims.push_back(static_cast<int64_t>(i));
    else if (to[i - lead] != s[i]) fail("sum_to", "shape {} is not a broadcast of {}", shape_str(s), shape_str(to));
  }
  Tensor r = dims.empty() ? g : sum(g, dims, /*keepdim=*/true);
  return r.reshape(to);
}

// ---------------------------------------------------------------- the definitions, for the registry

std::span<const OpDef* const> broadcast_ops() {
  static const OpDef* const defs[] = {&kExpand};
  return defs;
}

}  // namespace hg
