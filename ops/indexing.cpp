// ops/indexing.cpp — masks, selection, gathering and joining.
//
// Notation: g = dL/dout. Masks are b8 tensors stored as uint8_t (1 = true). masked_fill and where
// are elementwise selections, so each output element's gradient goes to the one input element it
// was read from; embedding is a gather of rows, so its backward is the matching scatter-add;
// concat, chunk and split only move elements, so their backward moves the gradient back.
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

void require_defined(const char* op, const Tensor& x, const char* what) {
  if (!x.defined()) fail(op, "the {} is an undefined tensor", what);
}

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
  require_defined(op, x, "input x");
  require_defined(op, mask, "mask");
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
    record(kMaskedFill, {x, mask}, {out}, {save(MaskedFillSaved::mask, mask)}, [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
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
  require_defined(op, cond, "condition");
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
           [=](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
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

// ---------------------------------------------------------------- embedding
// forward:  out[p, :] = weight[indices[p], :]          weight (V, d), indices (...), out (..., d)
// backward: dweight[v, :] = sum over p with indices[p] = v of g[p, :]
// — a row read k times receives the sum of its k gradients (scatter-add, `+=`: rows fan out).
// Saves the indices (i64), which say where each gradient row goes; the weight is not needed.
// tangent: linear in the weight, ȯ[p, :] = Ẇ[indices[p], :] = embedding(Ẇ, indices).
constexpr OpDef kEmbedding{.name = "embedding", .saves = {{"indices", "where each gradient row goes"}},
                           .derivation = "ops/indexing.cpp", .tangent = "ȯ = embedding(Ẇ, indices)"};
struct EmbeddingSaved { static constexpr SavedSlot indices = kEmbedding.slot("indices"); };

namespace {

// Under create_graph, embedding's gradient dweight (already summed by the kernel) is recorded as
// an op of g. It is linear in g: dweight[v] = Σ_{p: idx[p] = v} g[p], so its own backward reads
// row idx[p] of the incoming gradient for each position p — embedding itself. Saves the indices.
// Its tangent, linear in g again, is the same scatter-add of ġ.
constexpr OpDef kEmbeddingBackward{.name = "embedding_backward",
                                   .saves = {{"indices", "its gradient is embedding itself"}},
                                   .derivation = "ops/indexing.cpp", .from_backward = true,
                                   .tangent = "the same scatter-add of ġ"};
struct EmbeddingBackwardSaved { static constexpr SavedSlot indices = kEmbeddingBackward.slot("indices"); };
Tensor scatter_rows(const Tensor& g, const Tensor& indices, int64_t V);

Tensor recorded_scatter(const Tensor& g, const Tensor& indices, const Tensor& dweight) {
  if (should_record({g}))
    record(kEmbeddingBackward, {g, indices}, {dweight}, {save(EmbeddingBackwardSaved::indices, indices)},
           [](const std::vector<Tensor>& gg, const std::vector<Tensor>& s) {
             return std::vector<Tensor>{embedding(gg[0], s[EmbeddingBackwardSaved::indices]), Tensor()};
           }, [&](const std::vector<Tensor>& d) {
             return std::vector<Tensor>{recorded_scatter(d[0], indices, scatter_rows(d[0], indices, dweight.size(0)))};
           });
  return dweight;
}

// The CPU kernels: the rows of weight (V, d) that indices name, and the scatter-add back.
Tensor embedding_cpu(const Tensor& weight, const Tensor& indices) {
  const char* op = kEmbedding.c_str();
  const int64_t V = weight.size(0), d = weight.size(1);
  const std::vector<int64_t> ids = indices.to_int_vector();  // row-major over indices' shape
  for (size_t p = 0; p < ids.size(); ++p)
    if (ids[p] < 0 || ids[p] >= V)
      throw IndexError(fmt::format("{}: index {} at position {} of indices {} is out of range for a table of V = {} rows (weight {}); "
           "token ids must lie in [0, {})", op, ids[p], index_str(indices.shape(), static_cast<int64_t>(p)),
           shape_str(indices.shape()), V, shape_str(weight.shape()), V));
  Shape out_shape = indices.shape();
  out_shape.push_back(d);
  Tensor out = empty(out_shape, weight.dtype());  // (..., d)
  dispatch_float(weight.dtype(), op, [&]<typename T>() {
    const T* w = static_cast<const T*>(weight.raw_data());  // (V, d), any strides
    const int64_t sv = weight.strides()[0], sd = weight.strides()[1];
    T* o = out.data_ptr<T>();
    parallel_for(static_cast<int64_t>(ids.size()), d, [&](int64_t begin, int64_t end) {  // rows are independent
      for (int64_t p = begin; p < end; ++p)
        for (int64_t j = 0; j < d; ++j) o[p * d + j] = w[ids[static_cast<size_t>(p)] * sv + j * sd];
    });
  });
  return out;
}

Tensor embedding_backward_cpu(const Tensor& g, const Tensor& indices, int64_t V) {
  const int64_t d = g.size(-1);
  const std::vector<int64_t> rows = indices.to_int_vector();
  const Tensor gc = g.contiguous();      // (..., d)
  Tensor dweight = zeros({V, d}, g.dtype());  // (V, d)
  dispatch_float(g.dtype(), "embedding backward", [&]<typename T>() {
    const T* gp = static_cast<const T*>(gc.raw_data());
    T* dw = dweight.data_ptr<T>();
    // Threads split the d columns, not the positions: each dweight element still sums its rows
    // in position order, whatever the number of threads.
    parallel_for(d, static_cast<int64_t>(rows.size()), [&](int64_t j0, int64_t j1) {
      for (size_t p = 0; p < rows.size(); ++p)
        for (int64_t j = j0; j < j1; ++j) dw[rows[p] * d + j] += gp[static_cast<int64_t>(p) * d + j];
    });
  });
  return dweight;
}

// dweight (V, d) from g (..., d): the scatter-add on g's device.
Tensor scatter_rows(const Tensor& g, const Tensor& indices, int64_t V) {
  return on_device("embedding backward", {g, indices}, [&] { return embedding_backward_cpu(g, indices, V); },
                   HG_CUDA(cuda::embedding_backward(g, indices, V)));
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, Site where) {
  const char* op = kEmbedding.c_str();
  require_defined(op, weight, "weight");
  require_defined(op, indices, "indices");
  if (weight.dim() != 2)
    fail(op, "weight {} must be 2-D (V, d): one row of d numbers per token id", weight.describe());
  if (indices.dtype() != DType::i64)
    fail(op, "indices {} must be i64 token ids; convert with .to(DType::i64)", indices.describe());
  // On the GPU the kernel checks the indices on the device (a deferred Error).
  Tensor out = on_device(op, {weight, indices}, [&] { return embedding_cpu(weight, indices); },
                         HG_CUDA(cuda::embedding(weight.detach(), indices)));
  if (should_record({weight})) {
    const int64_t V = weight.size(0);
    record(kEmbedding, {weight, indices}, {out}, {save(EmbeddingSaved::indices, indices)}, [V](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      const Tensor& ids = s[EmbeddingSaved::indices];
      return std::vector<Tensor>{recorded_scatter(g[0], ids, scatter_rows(g[0], ids, V)), Tensor()};
    }, [&indices](const std::vector<Tensor>& d) { return std::vector<Tensor>{embedding(d[0], indices)}; }, where);
  }
  return out;
}

Tensor embedding_backward(const Tensor& g, const Tensor& indices, int64_t V) {
  return recorded_scatter(g, indices, scatter_rows(g, indices, V));
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
    record(kConcat, xs, {out}, {}, [=](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
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
  require_defined(op, x, "input x");
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
    record(kSplit, {x}, pieces, {}, [=](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{concat(g, dim)};
    }, [=](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      Tensor dx = empty(shape, t, dev);  // (shape of x), every element written below
      for (size_t k = 0; k < sizes.size(); ++k) dx.slice(dim, offsets[k], offsets[k] + sizes[k]).copy_(g[k]);
      return std::vector<Tensor>{dx};
    }, [&](const std::vector<Tensor>& d) { return split(d[0], sizes, dim); }, where);
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, Site where) {
  const char* op = "chunk";
  require_defined(op, x, "input x");
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
  static const OpDef* const defs[] = {&kMaskedFill, &kWhere, &kEmbedding, &kEmbeddingBackward, &kConcat, &kSplit};
  return defs;
}

}  // namespace hg
