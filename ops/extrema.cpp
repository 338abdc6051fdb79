// ops/extrema.cpp — amax, amin, min, argmin, logsumexp (ops/extrema.h).
//
// amax: out = max over the reduced entries j of x_j. Its derivative is 1 at the maximum — and
// where k entries tie, PyTorch shares it: ∂out/∂x_j = [x_j = out] / k. So, with the tie mask T
// (x = out, fixed) and its count k over the reduced dims,
//   backward  dx = g · T / k   (g broadcast back)        tangent  ȯ = Σ_j T_j ẋ_j / k
// T is a constant of the graph, so the backward is recorded ops and differentiates again (to 0).
// amin = −amax(−x); min over one dim = −max(−x), argmin = argmax(−x): the first minimum.
//
// logsumexp = m + log Σ_j exp(x_j − m) with m the maximum held fixed (m's terms cancel in the
// derivative, so holding it changes nothing): its gradient is exp(x − out) = softmax(x), through
// the recorded exp, sum and log. A row of −inf gives −inf; an infinite m is replaced by 0.

#include "ops/extrema.h"

#include <algorithm>
#include <cmath>

#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/integer.h"
#include "ops/rearrange.h"
#include "ops/reduce.h"
#include "ops/registry.h"

namespace hg {

namespace {

// The reduction of amax and logsumexp (ops/primitives.h), every reduced dim with an element.
Reduction nonempty_reduction(const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  Reduction p = reduction(op, x, dims, keepdim);
  for (int64_t d : p.dims)
    if (x.size(d) == 0)
      throw IndexError(fmt::format("{}: dim {} of {} is empty; a maximum needs at least one element", op, d, x.describe()));
  return p;
}

// The extrema of an int64 or bool tensor are exact in int64 (a bool's back in bool, as PyTorch).
Tensor as_int64(const Tensor& x) { return x.dtype() == DType::b8 ? x.to(DType::i64) : x; }
Tensor back_to(const Tensor& out, const Tensor& x) { return x.dtype() == DType::b8 ? out.to(DType::b8) : out; }

}  // namespace

constexpr OpDef kAmax{.name = "amax", .saves = {{"tie share", "[x = out] / (count of ties): where the gradient goes"}},
                      .derivation = "ops/extrema.cpp", .tangent = "ȯ = Σ ẋ · [x = out] / k"};
struct AmaxSaved { static constexpr SavedSlot share = kAmax.slot("tie share"); };

Tensor amax(const Tensor& x, const Shape& dims, bool keepdim, Site where) {
  require_defined("amax", x);
  const Reduction p = nonempty_reduction("amax", x, dims, keepdim);
  Tensor kept = x.detach();  // the maximum with keepdim, one dim at a time
  {
    NoGradGuard ng;
    for (int64_t d : p.dims) kept = max(kept, d, true);
    if (x.dim() == 0) kept = x.detach().clone();
  }
  const Tensor out = keepdim ? kept : kept.reshape(p.out_shape);
  if (should_record({x})) {
    Tensor share;
    {
      NoGradGuard ng;
      const Tensor tie = eq(x.detach(), kept).to(x.dtype());
      share = div(tie, sum(tie, p.dims, true));
    }
    record(kAmax, {x}, {out}, {save(AmaxSaved::share, share)},
           [keep = p.keep_shape](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{mul(g[0].reshape(keep), s[AmaxSaved::share])};
           },
           [&](const std::vector<Tensor>& d) { return std::vector<Tensor>{sum(mul(d[0], share), p.dims, keepdim)}; }, where);
  }
  return out;
}

// x with its order reversed: −x for floats; for int64 (and bool) −1 − x, which, unlike −x, cannot
// overflow (−INT64_MIN does), so the minima of integers are exact.
Tensor flipped(const Tensor& x, Site where) {
  if (is_floating(x.dtype())) return neg(x, where);
  return integer_scalar("amin", IntArith::sub, as_int64(x), -1, true);  // −1 − x
}

Tensor amin(const Tensor& x, const Shape& dims, bool keepdim, Site where) {
  require_defined("amin", x);
  if (!is_floating(x.dtype())) return back_to(flipped(amax(flipped(x, where), dims, keepdim, where), where), x);
  return neg(amax(neg(x, where), dims, keepdim, where), where);
}

Tensor min(const Tensor& x, int64_t dim, bool keepdim, Site where) {
  require_defined("min", x);
  if (!is_floating(x.dtype())) return back_to(flipped(max(flipped(x, where), dim, keepdim, where), where), x);
  return neg(max(neg(x, where), dim, keepdim, where), where);
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  require_defined("argmin", x);
  NoGradGuard ng;
  return argmax(flipped(x.detach(), Site::current()), dim, keepdim);
}

Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim, Site where) {
  require_float("logsumexp", x);
  const Reduction p = nonempty_reduction("logsumexp", x, dims, keepdim);
  Tensor m;  // the maximum, held fixed; an infinite one replaced by 0
  {
    NoGradGuard ng;
    const Tensor top = amax(x.detach(), p.dims, true);
    m = hg::where(isfinite(top), top, zeros({}, x.dtype(), x.device()));
  }
  const Tensor s = log(sum(exp(sub(x, m, where), where), p.dims, true, where), where);
  const Tensor out = add(s, m, where);
  return keepdim ? out : out.reshape(p.out_shape, where);
}

std::span<const OpDef* const> extrema_ops() {
  static const OpDef* const defs[] = {&kAmax};
  return defs;
}

}  // namespace hg
