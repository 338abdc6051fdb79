// ops/indexing.cpp — masks, selection, gathering and joining.
//
// Notation: g = dL/dout. Masks are b8 tensors stored as uint8_t (1 = true). masked_fill and where
// are elementwise selections, so each output element's gradient goes to the one input element it
// was read from; concat, chunk and split only move elements, so their backward moves the gradient
// back. embedding, a gather of rows, is in ops/embedding.cpp.
#include "ops/indexing.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/integer.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

namespace {

void require_mask(const char* op, const Tensor& mask, const char* what) {
  if (mask.dtype() != DType::b8)
    fail(op, "the {} {} must be a b8 (boolean) tensor; build it with bool_tensor(...) or compare into b8",
         what, mask.describe());
}

// True when shape `s` broadcasts to exactly `to` (numpy rules, `to` not enlarged).
bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  const size_t lead = to.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != to[lead + i]) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------- masked_fill
// forward:  out[i] = mask[i] ? value : x[i]     (mask broadcast to x's shape)
// backward: dx[i] = mask[i] ? 0 : g[i]           — a filled element no longer depends on x.
// Saves the mask (b8, x's broadcast); the backward is masked_fill(g, mask, 0) itself.
// tangent: ȯ[i] = mask[i] ? 0 : ẋ[i], masked_fill(ẋ, mask, 0) — a filled value does not move.

constexpr OpDef kMaskedFill{.name = "masked_fill", .saves = {{"mask", "masked entries pass no gradient"}},
                            .derivation = "ops/indexing.cpp", .tangent = "ȯ = masked_fill(ẋ, mask, 0)"};
struct MaskedFillSaved { static constexpr SavedSlot mask = kMaskedFill.slot("mask"); };
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Site where) {
  const char* op = kMaskedFill.c_str();
  require_defined(op, x, "the input x");
  require_defined(op, mask, "the mask");
  require_mask(op, mask, "mask");
  if (!broadcasts_to(mask.shape(), x.shape()))
    fail(op, "mask of shape {} does not broadcast to x's shape {} (each mask dimension must equal x's or be 1, "
         "aligned from the right, and the mask may not have more dimensions than x)",
         shape_str(mask.shape()), shape_str(x.shape()));
  Tensor out = on_device(op, {x, mask}, [&] {
    Tensor o = empty(x.shape(), x.dtype());
    const Shape mask_strides = broadcast_strides(op, mask, x.shape());
    dispatch_float(x.dtype(), op, [&]<typename T>() {
      const T fill = static_cast<T>(value);  // -inf stays -inf
      for_each_row<T, const T, const uint8_t>(
          x.shape(), {&o.strides(), &x.strides(), &mask_strides},
          std::make_tuple(o.data_ptr<T>(), static_cast<const T*>(x.raw_data()),
                          static_cast<const uint8_t*>(mask.raw_data())),
          [&](int64_t n, std::tuple<T*, const T*, const uint8_t*> p, const std::array<int64_t, 3>& st) {
            auto [w, a, m] = p;
            for (int64_t i = 0; i < n; ++i) w[i * st[0]] = m[i * st[2]] ? fill : a[i * st[1]];
          });
    });
    return o;
  }, HG_CUDA(cuda::masked_fill(x.detach(), mask, value)));

  if (should_record({x})) {
    record(kMaskedFill, {x, mask}, {out}, {save(MaskedFillSaved::mask, mask)}, [](const std::vector<Tensor>& g, const Saved& s) {
      return std::vector<Tensor>{masked_fill(g[0], s[MaskedFillSaved::mask], 0.0), Tensor()};
    }, [&mask](const std::vector<Tensor>& d) { return std::vector<Tensor>{masked_fill(d[0], mask, 0.0)}; }, where);
  }
  return out;
}

// ---------------------------------------------------------------- where
// forward:  out[i] = cond[i] ? a[i] : b[i]       (cond, a, b broadcast to one shape)
// backward: da = sum_to(cond ? g : 0, a.shape),  db = sum_to(cond ? 0 : g, b.shape)
// — each output element came from exactly one of a, b; sum_to folds broadcast reads back.
// Saves cond; the backward is where() itself against a 0-d zero.
// tangent: ȯ = where(cond, ȧ, ḃ) — each element moves with the operand it chose (0 for one that
// carries no tangent).

constexpr OpDef kWhere{.name = "where", .saves = {{"condition", "each gradient goes to the operand it chose"}},
                       .derivation = "ops/indexing.cpp", .tangent = "ȯ = where(cond, ȧ, ḃ)"};
struct WhereSaved { static constexpr SavedSlot cond = kWhere.slot("condition"); };
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Site site) {
  const char* op = kWhere.c_str();
  require_defined(op, cond, "the condition");
  require_defined(op, a, "input a");
  require_defined(op, b, "input b");
  require_mask(op, cond, "condition");
  if (const DType f = is_floating(a.dtype()) ? a.dtype() : b.dtype(); !is_floating(a.dtype()) || !is_floating(b.dtype())) {
    if (is_floating(f)) return where(cond, a.to(f), b.to(f), site);  // an int or bool side: PyTorch's promotion
    const Shape s = broadcast_shapes(op, cond.shape(), broadcast_shapes(op, a.shape(), b.shape()));
    return integer_where(expand(cond, s), expand(a, s), expand(b, s));  // ops/integer.h
  }
  check_same_dtype_device(op, a, b);
  Shape shape;
  try {
    shape = broadcast_shapes(op, cond.shape(), broadcast_shapes(op, a.shape(), b.shape()));
  } catch (const Error&) {
    fail(op, "condition {}, a {} and b {} cannot be broadcast to one shape (sizes must match or be 1, aligned "
         "from the right)", shape_str(cond.shape()), shape_str(a.shape()), shape_str(b.shape()));
  }
  Tensor out = on_device(op, {cond, a, b}, [&] {
    Tensor o = empty(shape, a.dtype());
    const Shape sc = broadcast_strides(op, cond, shape), sa = broadcast_strides(op, a, shape),
                sb = broadcast_strides(op, b, shape);
    dispatch_float(a.dtype(), op, [&]<typename T>() {
      for_each_row<T, const uint8_t, const T, const T>(
          shape, {&o.strides(), &sc, &sa, &sb},
          std::make_tuple(o.data_ptr<T>(), static_cast<const uint8_t*>(cond.raw_data()),
                          static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data())),
          [&](int64_t n, std::tuple<T*, const uint8_t*, const T*, const T*> p, const std::array<int64_t, 4>& st) {
            auto [w, c, x, y] = p;
            for (int64_t i = 0; i < n; ++i) w[i * st[0]] = c[i * st[1]] ? x[i * st[2]] : y[i * st[3]];
          });
    });
    return o;
  }, HG_CUDA(cuda::where(cond, a.detach(), b.detach())));

  if (should_record({a, b})) {
    const Shape shape_a = a.shape(), shape_b = b.shape();
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    record(kWhere, {cond, a, b}, {out}, {save(WhereSaved::cond, cond)},
           [=](const std::vector<Tensor>& g, const Saved& s) {
             Tensor zero = zeros({}, g[0].dtype(), g[0].device());
             return std::vector<Tensor>{Tensor(), ga ? sum_to(where(s[WhereSaved::cond], g[0], zero), shape_a) : Tensor(),
                                        gb ? sum_to(where(s[WhereSaved::cond], zero, g[0]), shape_b) : Tensor()};
           }, [&](const std::vector<Tensor>& d) {
             Tensor zero = zeros({}, a.dtype(), a.device());
             return std::vector<Tensor>{tangent_sum({where(cond, d[1].defined() ? d[1] : zero, d[2].defined() ? d[2] : zero)},
                                                    out.shape())};
           }, site);
  }
  return out;
}

// ---------------------------------------------------------------- concat
// forward:  out[..., o_k + i, ...] = xs[k][..., i, ...]   along `dim`, o_k = sum of earlier sizes
// backward: dxs[k] = g[..., o_k : o_k + n_k, ...]         — each piece of g goes back to its input.
// Saves nothing: the offsets and sizes are enough.
// tangent: linear, ȯ = concat(ẋs) along the same dimension (zeros for an input without a tangent).

constexpr OpDef kConcat{.name = "concat", .saves_nothing = "the offsets and sizes", .derivation = "ops/indexing.cpp",
                        .tangent = "ȯ = concat(ẋs)"};
Tensor concat(const std::vector<Tensor>& xs, int64_t dim, Site where) {
  const char* op = kConcat.c_str();
  if (xs.empty()) fail(op, "needs at least one tensor, got an empty list");
  for (size_t k = 0; k < xs.size(); ++k)
    if (!xs[k].defined()) fail(op, "input {} is an undefined tensor", k);
  const Tensor& first = xs[0];
  if (first.dim() == 0)
    fail(op, "input 0 is 0-d ({}); concat joins along a dimension — unsqueeze(0) the inputs first", first.describe());
  const int64_t r = first.dim();
  dim = wrap_dim(op, dim, first.shape());
  Shape out_shape = first.shape();
  out_shape[dim] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = xs[k];
    bool same = x.dim() == r;
    for (int64_t i = 0; same && i < r; ++i) same = i == dim || x.shape()[i] == first.shape()[i];
    if (!same)
      fail(op, "input {} has shape {} but input 0 has shape {}; every dimension except the concat dimension {} "
           "must be equal", k, shape_str(x.shape()), shape_str(first.shape()), dim);
    if (x.dtype() != first.dtype() || x.device() != first.device())
      fail(op, "input {} is {} on {} but input 0 is {} on {}; convert it with .to(...) first", k, x.describe(),
           device_name(x.device()), first.describe(), device_name(first.device()));
    out_shape[dim] += x.shape()[dim];
  }

  Tensor out = empty(out_shape, first.dtype(), first.device());
  std::vector<int64_t> offsets, sizes;
  std::vector<bool> needs;
  {
    NoGradGuard ng;
    int64_t off = 0;
    for (const Tensor& x : xs) {
      const int64_t n = x.shape()[dim];
      out.slice(dim, off, off + n).copy_(x.detach());
      offsets.push_back(off);
      sizes.push_back(n);
      needs.push_back(x.requires_grad());
      off += n;
    }
  }

  if (should_record(xs)) {
    record(kConcat, xs, {out}, {}, [=](const std::vector<Tensor>& g, const Saved&) {
      std::vector<Tensor> dxs;
      for (size_t k = 0; k < offsets.size(); ++k)
        dxs.push_back(needs[k] ? g[0].slice(dim, offsets[k], offsets[k] + sizes[k]) : Tensor());
      return dxs;
    }, [&](const std::vector<Tensor>& d) {
      std::vector<Tensor> parts;
      for (size_t k = 0; k < xs.size(); ++k) parts.push_back(d[k].defined() ? d[k] : zeros_like(xs[k]));
      return std::vector<Tensor>{concat(parts, dim)};
    }, where);
  }
  return out;
}

// ---------------------------------------------------------------- chunk, split
// forward:  pieces[k] = x[..., o_k : o_k + n_k, ...] along `dim`: views sharing x's storage.
// backward: dx[..., o_k : o_k + n_k, ...] = g_k — concat's forward: the pieces' gradients put
// back side by side (a piece that received none contributes zeros, as the tape hands it zeros).
// One tape entry with one output per piece, so dx is written once; a slice per piece would give
// each piece its own x-sized gradient, zeros but for its part, which the tape then adds up
// (for the fused qkv of an attention block: three x-sized zero fills, copies and two sums).
// Saves nothing: the offsets and sizes are enough.
// tangent: the pieces of ẋ, split(ẋ) alike.

constexpr OpDef kSplit{.name = "split", .saves_nothing = "the offsets and sizes", .derivation = "ops/indexing.cpp",
                       .fused = "the pieces copied into one buffer (under create_graph: concat)",
                       .tangent = "ȯ_k = the k-th piece of ẋ"};
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim, Site where) {
  const char* op = kSplit.c_str();
  require_defined(op, x, "the input x");
  dim = wrap_existing_dim(op, dim, x.shape());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail(op, "sizes ({}) hold a negative size {}", fmt::join(sizes, ", "), s);
    total += s;
  }
  if (total != x.size(dim))
    fail(op, "sizes ({}) sum to {} but dimension {} of {} has size {}; the sizes must add up to it",
         fmt::join(sizes, ", "), total, dim, x.describe(), x.size(dim));
  std::vector<Tensor> pieces;
  std::vector<int64_t> offsets;
  int64_t off = 0;
  for (int64_t s : sizes) {
    Shape piece_shape = x.shape();
    piece_shape[dim] = s;
    pieces.push_back(make_view(x, piece_shape, x.strides(), x.offset() + off * x.strides()[dim]));
    offsets.push_back(off);
    off += s;
  }
  if (should_record({x})) {
    const Shape shape = x.shape();
    const DType t = x.dtype();
    const Device dev = x.device();
    record(kSplit, {x}, pieces, {}, [=](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{concat(g, dim)};
    }, [=](const std::vector<Tensor>& g, const Saved&) {
      Tensor dx = empty(shape, t, dev);  // (shape of x), every element written below
      for (size_t k = 0; k < sizes.size(); ++k) dx.slice(dim, offsets[k], offsets[k] + sizes[k]).copy_(g[k]);
      return std::vector<Tensor>{dx};
    }, [&](const std::vector<Tensor>& d) { return split(d[0], sizes, dim); }, where);
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, Site where) {
  const char* op = "chunk";
  require_defined(op, x, "the input x");
  dim = wrap_existing_dim(op, dim, x.shape());
  if (chunks <= 0) fail(op, "the number of chunks must be positive, got {}", chunks);
  const int64_t n = x.size(dim);
  // Like torch.chunk: pieces of ceil(n / chunks), the last one smaller, so there may be fewer
  // than `chunks` pieces (5 into 4 gives 2, 2, 1); an empty dimension gives `chunks` empty pieces.
  std::vector<int64_t> sizes;
  if (n == 0) {
    sizes.assign(static_cast<size_t>(chunks), 0);
  } else {
    const int64_t piece = 1 + (n - 1) / chunks;  // ceil(n / chunks), with no overflow for any chunks
    for (int64_t off = 0; off < n; off += piece) sizes.push_back(std::min(piece, n - off));
  }
  return split(x, sizes, dim, where);
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> indexing_ops() {
  static const OpDef* const defs[] = {&kMaskedFill, &kWhere, &kConcat, &kSplit};
  return defs;
}

}  // namespace hg
