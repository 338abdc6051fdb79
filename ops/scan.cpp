// ops/scan.cpp — running sums and products along a dim (ops/scan.h), one loop for both.
//
// cumsum: out_i = Σ_{j ≤ i} x_j, so dx_j = Σ_{i ≥ j} g_i: the running sum of g taken from the end,
// rev(g) = flip(cumsum(flip(g))); linear, so ȯ = cumsum(ẋ).
//
// cumprod: out_i = Π_{j ≤ i} x_j, so ∂out_i/∂x_k = Π_{j ≤ i, j ≠ k} x_j for i ≥ k (0 for i < k).
//   Where x_k ≠ 0 that is out_i / x_k:      dx_k = rev(g ∘ out)_k / x_k
//   At a row's first zero z, out_i / x_z is 0/0; the product without x_z is out′_i, the running
//   product of x with x_z read as 1:        dx_z = rev(g ∘ out′)_z
//   Past z every product holds x_z = 0, so dx_k = 0 for k > z: the first formula gives it where
//   x_k ≠ 0 (out_i = 0 for i ≥ z). At a later zero it is rev(g ∘ out″)_k, out″ the running product
//   with the row's second zero read as 1: 0 too, but with the right derivative in x_z, so that the
//   gradient differentiates again (gradgradcheck holds rows with two and three zeros to it).
//   tangent  ȯ_i = Σ_{k ≤ i} ẋ_k ∂out_i/∂x_k: before the first zero out_i · Σ_{k ≤ i} ẋ_k / x_k,
//   from it on only k = z is left: ẋ_z · out′_i.
// Both are recorded ops (out′ is cumprod itself), so the gradient differentiates again. The loops
// run on the CPU; a CUDA tensor goes through the host (to and from the device, both recorded).
#include "ops/scan.h"

#include "engine/dims.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/rearrange.h"
#include "ops/reduce.h"
#include "ops/registry.h"

namespace hg {

namespace {

enum class Running { sum, product };

// out along dim d: out_i = out_{i−1} ⋄ x_i, ⋄ the sum or the product, on the CPU, in x's dtype
// (float, or int64 exactly, wrapping as int64 does). Nothing recorded.
Tensor running(const char* op, Running kind, const Tensor& x, int64_t d) {
  NoGradGuard constant;
  Tensor rows = movedim(x.detach(), {d}, {-1}).contiguous().clone();  // dim last: each row a contiguous run
  const int64_t n = x.size(d), count = n == 0 ? 0 : x.numel() / n;
  const auto loop = [&]<typename T>() {
    T* p = rows.data_ptr<T>();
    for (int64_t r = 0; r < count; ++r)
      for (int64_t i = 1; i < n; ++i)
        p[r * n + i] = kind == Running::sum ? p[r * n + i] + p[r * n + i - 1] : p[r * n + i] * p[r * n + i - 1];
  };
  if (x.dtype() == DType::i64) loop.template operator()<int64_t>();
  else dispatch_float(x.dtype(), op, loop);
  return movedim(rows, {-1}, {d}).contiguous();
}

// The dim, wrapped, of a tensor the scans take (float, or int64 where `integers`), or an Error.
int64_t scan_dim(const char* op, const Tensor& x, int64_t dim, bool integers) {
  if (!x.defined()) fail(op, "the input is undefined");
  if (!is_floating(x.dtype()) && !(integers && x.dtype() == DType::i64))
    fail(op, "{} is not floating point{}; convert it with .to(DType::f64)", x.describe(), integers ? " or int64" : "");
  return wrap_dim(op, dim, x.shape());
}

// g's running sum taken from the end along d.
Tensor from_the_end(const Tensor& g, int64_t d) { return flip(cumsum(flip(g, {d}), d), {d}); }

}  // namespace

constexpr OpDef kCumsum{.name = "cumsum", .saves_nothing = "the gradient is g's running sum from the end",
                        .derivation = "ops/scan.cpp", .cuda = false, .tangent = "ȯ = cumsum(ẋ)"};

Tensor cumsum(const Tensor& x, int64_t dim, Site where) {
  if (x.defined() && x.dtype() == DType::b8) return cumsum(x.to(DType::i64), dim, where);  // PyTorch's: a count
  const int64_t d = scan_dim("cumsum", x, dim, true);
  if (x.device() != Device::cpu) return cumsum(x.to(Device::cpu, where), dim, where).to(x.device(), where);
  if (x.dim() == 0) return x.clone(where);
  const Tensor out = running("cumsum", Running::sum, x, d);
  if (should_record({x})) {
    record(kCumsum, {x}, {out}, {}, [d](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{from_the_end(g[0], d)};
    }, [d](const std::vector<Tensor>& t) { return std::vector<Tensor>{cumsum(t[0], d)}; }, where);
  }
  return out;
}

constexpr OpDef kCumprod{.name = "cumprod",
                         .saves = {{"cumprod input x", "dx = rev(g ∘ out) / x, and where x has zeros out′"},
                                   {"cumprod output", "dx = rev(g ∘ out) / x"}},
                         .derivation = "ops/scan.cpp", .cuda = false,
                         .tangent = "ȯ = out · cumsum(ẋ / x) before a row's first zero z, ẋ_z · out′ from it on"};
struct CumprodSaved {  // the slots of kCumprod's saves
  static constexpr SavedSlot x = kCumprod.slot("cumprod input x");
  static constexpr SavedSlot out = kCumprod.slot("cumprod output");
};

namespace {

// What cumprod's backward and tangent read of x's zeros along d, all constants of the graph.
struct Zeros {
  Tensor is_zero;     // x = 0
  Tensor first;       // the row's first zero
  Tensor before;      // before the row's first zero
  Tensor safe_x;      // x with 1 in a zero's place (a divisor)
  Tensor without;     // out′: the running product with the first zero read as 1 (recorded)
  Tensor without_second;  // out″: with the second zero read as 1 (recorded; undefined without one)
};

Zeros zeros_of(const Tensor& x, int64_t d) {
  Zeros z;
  Tensor seen, second;
  bool two = false;
  {
    NoGradGuard constant;
    z.is_zero = eq(x.detach(), 0.0);
    seen = cumsum(z.is_zero.to(x.dtype()), d);
    z.first = logical_and(z.is_zero, eq(seen, 1.0));
    z.before = eq(seen, 0.0);
    second = logical_and(z.is_zero, eq(seen, 2.0));
    two = any(second).to(Device::cpu).item() != 0;
  }
  const Tensor one = ones({}, x.dtype(), x.device());
  z.safe_x = hg::where(z.is_zero, one, x);
  z.without = cumprod(hg::where(z.first, one, x), d);
  if (two) z.without_second = cumprod(hg::where(second, one, x), d);
  return z;
}

bool has_zero(const Tensor& x) {
  NoGradGuard constant;
  return any(eq(x.detach(), 0.0)).to(Device::cpu).item() != 0;
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t dim, Site where) {
  if (x.defined() && x.dtype() == DType::b8) return cumprod(x.to(DType::i64), dim, where);
  const int64_t d = scan_dim("cumprod", x, dim, true);
  if (x.device() != Device::cpu) return cumprod(x.to(Device::cpu, where), dim, where).to(x.device(), where);
  if (x.dim() == 0) return x.clone(where);
  const Tensor out = running("cumprod", Running::product, x, d);
  if (should_record({x})) {
    using S = CumprodSaved;
    record(kCumprod, {x}, {out}, {save(S::x, x), save(S::out, out)},
           [d](const std::vector<Tensor>& g, const Saved& s) {
             const Tensor& xs = s[S::x];
             const Tensor most = from_the_end(mul(g[0], s[S::out]), d);
             if (!has_zero(xs)) return std::vector<Tensor>{div(most, xs)};
             const Zeros z = zeros_of(xs, d);
             Tensor at_zeros = from_the_end(mul(g[0], z.without), d);
             if (z.without_second.defined())
               at_zeros = hg::where(z.first, at_zeros, from_the_end(mul(g[0], z.without_second), d));
             return std::vector<Tensor>{hg::where(z.is_zero, at_zeros, div(most, z.safe_x))};
           },
           [x, out, d](const std::vector<Tensor>& t) {
             if (!has_zero(x)) return std::vector<Tensor>{mul(out, cumsum(div(t[0], x), d))};
             const Zeros z = zeros_of(x, d);
             const Tensor at_first = sum(mul(t[0], z.first.to(x.dtype())), {d}, true);  // ẋ_z, broadcast along d
             return std::vector<Tensor>{hg::where(z.before, mul(out, cumsum(div(t[0], z.safe_x), d)), mul(at_first, z.without))};
           },
           where);
  }
  return out;
}

std::span<const OpDef* const> scan_ops() {
  static const OpDef* const defs[] = {&kCumsum, &kCumprod};
  return defs;
}

}  // namespace hg
