// ops/rearrange.cpp — ops that move entries without changing them (ops/rearrange.h).
//
// Every gather here is one: index_select moves the chosen dim to the front, reads x as a table of
// rows (x.size(dim), everything else) and looks the rows up with embedding, whose backward
// (ops/indexing.cpp) adds each incoming gradient row back into the row it came from:
//   forward  out[k, ...] = x[index[k], ...]        backward  dx[i, ...] = Σ_{k: index[k] = i} g[k, ...]
//   tangent  ȯ = index_select(ẋ)                  (linear in x)
// (An int or bool tensor carries no gradient: its rows are copied as they are.)
// flip, roll, diagonal and diag are index_select with the index that says where each entry comes
// from; tril and triu keep x where a fixed mask is true (where: the gradient passes there only);
// flatten, unflatten, movedim and narrow are reshape, permute and slice. So each has the backward,
// tangent and second order of the recorded ops it is made of, on the CPU and on CUDA.
#include "ops/rearrange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <string>

#include "engine/dims.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/indexing.h"

namespace hg {

namespace {

// Rows `rows` of an (n, rest) table of ints or bools (no gradient to carry), copied as they are.
Tensor copy_rows(const Tensor& table, const std::vector<int64_t>& rows) {
  NoGradGuard ng;
  const Tensor t = table.detach().to(Device::cpu).contiguous();
  const int64_t rest = t.size(1);
  const size_t row_bytes = static_cast<size_t>(rest) * dtype_size(t.dtype());
  Tensor out = empty({static_cast<int64_t>(rows.size()), rest}, t.dtype());
  const char* from = static_cast<const char*>(t.raw_data());
  char* to = static_cast<char*>(out.raw_data());
  for (size_t k = 0; k < rows.size() && row_bytes > 0; ++k)
    std::memcpy(to + k * row_bytes, from + static_cast<size_t>(rows[k]) * row_bytes, row_bytes);
  return out.to(table.device());
}

// The permutation that moves dim `from` to place `to`, the others keeping their order.
Shape moved_order(int64_t rank, int64_t from, int64_t to) {
  Shape order;
  for (int64_t d = 0; d < rank; ++d)
    if (d != from) order.push_back(d);
  order.insert(order.begin() + to, from);
  return order;
}

}  // namespace

Tensor positions_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, DType::i64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t.to(device);
}

int64_t diagonal_plane_side(const char* op, int64_t n, int64_t offset) {
  constexpr int64_t kMaxSide = int64_t{1} << 24;  // a plane of 2^48 entries is past any memory
  if (offset > kMaxSide || offset < -kMaxSide || n + (offset < 0 ? -offset : offset) > kMaxSide)
    fail(op, "a diagonal of {} entries at offset {} needs a square plane {} on a side, past the machine's memory",
         n, offset, offset > kMaxSide || offset < -kMaxSide ? "over 2^24" : std::to_string(n + (offset < 0 ? -offset : offset)));
  const int64_t side = n + (offset < 0 ? -offset : offset);
  if (side > 0 && side > (int64_t{1} << 40) / side)
    fail(op, "a diagonal of {} entries at offset {} needs a {} × {} plane, past the machine's memory", n, offset, side, side);
  return side;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, Site where) {
  constexpr const char* op = "index_select";
  if (!x.defined() || !index.defined()) fail(op, "an undefined tensor was given");
  if (index.dtype() != DType::i64 || index.dim() > 1)
    fail(op, "index must be a 0-d or 1-d int64 tensor, not {}; make it with hg.tensor([...], dtype=hg.int64)",
         index.describe());
  dim = wrap_dim(op, dim, x.shape());
  if (x.dim() == 0) return index_select(x.reshape({1}), 0, index, where).reshape(index.dim() == 0 ? Shape{} : Shape{-1});
  const int64_t n = x.size(dim);
  const std::vector<int64_t> rows = index.to_int_vector();
  for (int64_t i : rows)
    if (i < 0 || i >= n)
      throw IndexError(fmt::format("{}: index {} is out of range for dim {} of {} (size {}: from 0 to {})", op, i, dim,
                                   x.describe(), n, n - 1));
  const Shape order = moved_order(x.dim(), dim, 0);
  const Tensor front = x.permute(order, where);  // dim first
  Shape picked_shape = front.shape();
  picked_shape[0] = static_cast<int64_t>(rows.size());
  const int64_t rest = n == 0 ? 0 : x.numel() / n;
  const Tensor table = front.reshape({n, rest}, where);
  // A float table through embedding, whose backward adds each row back; ints and bools as a copy.
  const Tensor picked = (is_floating(x.dtype()) ? embedding(table, positions_tensor(rows, x.device()), where) : copy_rows(table, rows))
                            .reshape(picked_shape, where);
  Shape back(static_cast<size_t>(x.dim()));  // the inverse of `order`
  for (int64_t d = 0; d < x.dim(); ++d) back[order[d]] = d;
  Tensor out = picked.permute(back, where);
  return index.dim() == 0 ? out.squeeze(dim, where) : out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask, Site where) {
  constexpr const char* op = "masked_select";
  if (!x.defined() || !mask.defined()) fail(op, "an undefined tensor was given");
  if (mask.dtype() != DType::b8) fail(op, "the mask must be a bool tensor, not {}; compare to make one (x > 0)", mask.describe());
  const Shape shape = broadcast_shapes(op, x.shape(), mask.shape());
  const std::vector<int64_t> m = expand(mask.to(Device::cpu), shape).contiguous().to_int_vector();
  std::vector<int64_t> chosen;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i]) chosen.push_back(static_cast<int64_t>(i));
  return index_select(expand(x, shape, where).reshape({-1}, where), 0, positions_tensor(chosen, x.device()), where);
}

Tensor flip(const Tensor& x, const Shape& dims, Site where) {
  Tensor out = x.clone(where);
  for (int64_t d : wrap_dims("flip", dims, x.shape())) {
    if (x.dim() == 0) break;
    std::vector<int64_t> idx(static_cast<size_t>(x.size(d)));
    std::iota(idx.rbegin(), idx.rend(), 0);
    out = index_select(out, d, positions_tensor(idx, x.device()), where);
  }
  return out;
}

Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims, Site where) {
  if (dims.empty()) {
    if (shifts.size() != 1)
      fail("roll", "without dims it takes one shift (x is rolled flattened), not {}", shifts.size());
    return roll(x.reshape({-1}, where), shifts, {0}, where).reshape(x.shape(), where);
  }
  if (shifts.size() != dims.size())
    fail("roll", "{} shifts for {} dims: give one shift per dim", shifts.size(), dims.size());
  const Shape ds = wrap_dims("roll", dims, x.shape());
  Tensor out = x.clone(where);
  for (size_t k = 0; k < ds.size() && x.dim() > 0; ++k) {
    const int64_t n = x.size(ds[k]);
    if (n == 0) continue;
    const int64_t s = ((shifts[k] % n) + n) % n;  // out[i] = x[i − s], wrapping
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[i] = (i - s + n) % n;
    out = index_select(out, ds[k], positions_tensor(idx, x.device()), where);
  }
  return out;
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2, Site where) {
  if (x.dim() < 2) fail("diagonal", "{} has fewer than 2 dims; a diagonal needs two", x.describe());
  const int64_t d1 = wrap_dim("diagonal", dim1, x.shape()), d2 = wrap_dim("diagonal", dim2, x.shape());
  if (d1 == d2) fail("diagonal", "dim1 and dim2 are both dim {} of {}; give two different dims", d1, x.describe());
  Shape order, others;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != d1 && d != d2) {
      order.push_back(d);
      others.push_back(x.size(d));
    }
  order.push_back(d1);
  order.push_back(d2);
  const int64_t n = x.size(d1), m = x.size(d2);
  // Entry i of the diagonal is (i, i + offset) above the main one, (i − offset, i) below it.
  const int64_t length = offset >= 0 ? std::max<int64_t>(0, std::min(n, m - offset)) : std::max<int64_t>(0, std::min(n + offset, m));
  std::vector<int64_t> flat(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) flat[i] = offset >= 0 ? i * m + i + offset : (i - offset) * m + i;
  Shape plane = others;
  plane.push_back(n * m);
  const Tensor planes = x.permute(order, where).reshape(plane, where);
  return index_select(planes, -1, positions_tensor(flat, x.device()), where);
}

Tensor diag(const Tensor& x, int64_t offset, Site where) {
  if (x.dim() == 2) return diagonal(x, offset, 0, 1, where);
  if (x.dim() != 1) fail("diag", "{} is neither 1-d (a diagonal to place) nor 2-d (a matrix to read)", x.describe());
  const int64_t n = x.size(0), N = diagonal_plane_side("diag", n, offset);
  // Each entry of the (N, N) result reads x[i] on the diagonal and a zero appended to x elsewhere.
  const Tensor padded = concat({x, zeros({1}, x.dtype(), x.device())}, 0, where);
  std::vector<int64_t> from(static_cast<size_t>(N * N), n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = offset >= 0 ? i : i - offset, c = offset >= 0 ? i + offset : i;
    from[r * N + c] = i;
  }
  return index_select(padded, 0, positions_tensor(from, x.device()), where).reshape({N, N}, where);
}

namespace {

Tensor triangle(const char* op, const Tensor& x, int64_t offset, bool lower, Site where) {
  if (x.dim() < 2) fail(op, "{} has fewer than 2 dims; the triangle is of its last two", x.describe());
  const int64_t rows = x.size(-2), cols = x.size(-1);
  std::vector<double> keep(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) keep[r * cols + c] = lower ? (c - r <= offset) : (c - r >= offset);
  if (!is_floating(x.dtype())) {  // ints and bools (a mask built with triu, as the text does): no gradient, zeros written
    NoGradGuard ng;
    Tensor out = x.detach().to(Device::cpu).contiguous().clone();
    const size_t size = dtype_size(x.dtype());
    char* p = static_cast<char*>(out.raw_data());
    for (int64_t e = 0; e < out.numel(); ++e)
      if (!keep[static_cast<size_t>(e % (rows * cols))]) std::memset(p + static_cast<size_t>(e) * size, 0, size);
    return out.to(x.device());
  }
  const Tensor mask = tensor(keep, {rows, cols}, DType::b8).to(x.device());
  return hg::where(mask, x, zeros({}, x.dtype(), x.device()), where);
}

}  // namespace

Tensor tril(const Tensor& x, int64_t offset, Site where) { return triangle("tril", x, offset, true, where); }
Tensor triu(const Tensor& x, int64_t offset, Site where) { return triangle("triu", x, offset, false, where); }

Tensor stack(const std::vector<Tensor>& xs, int64_t dim, Site where) {
  if (xs.empty()) fail("stack", "no tensors given; stack needs at least one");
  for (const Tensor& t : xs)
    if (!t.defined() || t.shape() != xs[0].shape())
      fail("stack", "{} and {} differ in shape; stack joins tensors of one shape", xs[0].describe(),
           t.defined() ? t.describe() : "an undefined tensor");
  const int64_t d = wrap_insert_dim("stack", dim, xs[0].shape());
  std::vector<Tensor> parts;
  for (const Tensor& t : xs) parts.push_back(t.unsqueeze(d, where));
  return concat(parts, d, where);
}

// repeat: each dim k becomes (repeats[k], size k) by a broadcast, then one merged dim.
Tensor repeat(const Tensor& x, const Shape& repeats, Site where) {
  if (static_cast<int64_t>(repeats.size()) < x.dim())
    fail("repeat", "{} repeats for {}: give at least one per dim", repeats.size(), x.describe());
  for (int64_t r : repeats)
    if (r < 0) fail("repeat", "repeats {} has a negative count", shape_str(repeats));
  Shape padded(repeats.size() - static_cast<size_t>(x.dim()), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape pairs_in, pairs_out, out_shape;
  for (size_t k = 0; k < padded.size(); ++k) {
    pairs_in.insert(pairs_in.end(), {1, padded[k]});
    pairs_out.insert(pairs_out.end(), {repeats[k], padded[k]});
    out_shape.push_back(repeats[k] * padded[k]);
  }
  return expand(x.reshape(pairs_in, where), pairs_out, where).reshape(out_shape, where);
}

Tensor tile(const Tensor& x, const Shape& reps, Site where) {
  Shape full(static_cast<size_t>(std::max<int64_t>(0, x.dim() - static_cast<int64_t>(reps.size()))), 1);
  full.insert(full.end(), reps.begin(), reps.end());
  return repeat(x, full, where);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim, Site where) {
  if (repeats < 0) fail("repeat_interleave", "repeats is {}; it must be 0 or more", repeats);
  if (!dim) return repeat_interleave(x.reshape({-1}, where), repeats, 0, where);
  const int64_t d = wrap_dim("repeat_interleave", *dim, x.shape());
  if (x.dim() == 0) return repeat_interleave(x.reshape({1}, where), repeats, 0, where);
  Shape out_shape = x.shape();
  if (__builtin_mul_overflow(x.size(d), repeats, &out_shape[d]))
    fail("repeat_interleave", "{} repeats of dim {} of {} overflow int64; give fewer", repeats, d, x.describe());
  check_shape("repeat_interleave", out_shape, x.dtype());
  Tensor index;
  try {  // the index list itself is as long as the result's dim
    std::vector<int64_t> idx;
    idx.reserve(static_cast<size_t>(out_shape[d]));
    for (int64_t i = 0; i < x.size(d); ++i)
      for (int64_t r = 0; r < repeats; ++r) idx.push_back(i);
    index = positions_tensor(idx, x.device());
  } catch (const std::bad_alloc&) {
    fail("repeat_interleave", "{} repeats of dim {} of {} make {} entries, more than this machine can hold; give fewer",
         repeats, d, x.describe(), out_shape[d]);
  }
  return index_select(x, d, index, where);
}

Tensor flatten(const Tensor& x, int64_t start, int64_t end, Site where) {
  if (x.dim() == 0) return x.reshape({1}, where);
  const int64_t s = wrap_dim("flatten", start, x.shape()), e = wrap_dim("flatten", end, x.shape());
  if (s > e) fail("flatten", "start_dim {} comes after end_dim {} in {}; give start_dim <= end_dim", start, end, x.describe());
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= x.size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return x.reshape(shape, where);
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes, Site where) {
  const int64_t d = wrap_dim("unflatten", dim, x.shape());
  if (x.dim() == 0) fail("unflatten", "a 0-d tensor has no dim to split");
  if (sizes.empty()) fail("unflatten", "sizes is empty; give the sizes dim {} splits into", d);
  int64_t known = 1, unknown = 0;
  for (int64_t s : sizes) {
    if (s == -1) ++unknown;
    else if (s < 0) fail("unflatten", "size {} in {} is negative", s, shape_str(sizes));
    else known *= s;
  }
  if (unknown > 1) fail("unflatten", "{} has more than one -1; at most one size can be inferred", shape_str(sizes));
  if ((unknown == 0 && known != x.size(d)) || (unknown == 1 && (known == 0 || x.size(d) % known != 0)))
    fail("unflatten", "sizes {} do not split dim {} of {} (size {})", shape_str(sizes), d, x.describe(), x.size(d));
  Shape shape(x.shape().begin(), x.shape().begin() + d);
  shape.insert(shape.end(), sizes.begin(), sizes.end());
  shape.insert(shape.end(), x.shape().begin() + d + 1, x.shape().end());
  return x.reshape(shape, where);
}

Tensor movedim(const Tensor& x, const Shape& source, const Shape& destination, Site where) {
  if (source.size() != destination.size())
    fail("movedim", "{} source dims and {} destinations; give one destination per source", source.size(),
         destination.size());
  const Shape from = wrap_dims("movedim", source, x.shape()), to = wrap_dims("movedim", destination, x.shape());
  if (x.dim() == 0) return x.clone(where);
  Shape order(static_cast<size_t>(x.dim()), -1);
  std::vector<bool> used(static_cast<size_t>(x.dim()), false);
  for (size_t k = 0; k < from.size(); ++k) {
    order[to[k]] = from[k];
    used[from[k]] = true;
  }
  int64_t next = 0;
  for (int64_t& o : order)
    if (o < 0) {
      while (used[next]) ++next;
      o = next++;
    }
  return x.permute(order, where);
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Site where) {
  const int64_t d = wrap_dim("narrow", dim, x.shape());
  if (x.dim() == 0) fail("narrow", "a 0-d tensor has no dim to narrow");
  const int64_t n = x.size(d);
  const int64_t s = start < 0 ? start + n : start;
  if (s < 0 || s > n)
    throw IndexError(fmt::format("narrow: start {} is out of range for dim {} of {} (size {})", start, d, x.describe(), n));
  if (length < 0 || length > n - s)
    fail("narrow", "start {} and length {} run past dim {} of {} (size {}); give length from 0 to {}", start, length, d,
         x.describe(), n, n - s);
  return x.slice(d, s, s + length, 1, where);
}

}  // namespace hg
