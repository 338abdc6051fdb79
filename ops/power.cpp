// ops/power.cpp — a tensor raised to a tensor's powers (ops/power.h).
//
// out = a^b elementwise after broadcasting; g = dL/dout.
//   backward  ∂out/∂a = b a^(b−1)  =>  da = sum_to(g · b · a^(b−1))
//             At b = 0, out = 1 whatever a is: ∂out/∂a = 0, also at a = 0 where b a^(b−1) is 0 · ∞
//             (PyTorch's 0 too).
//             ∂out/∂b = a^b ln a   =>  db = sum_to(g · out · ln a)
//             At a = 0 with b ≥ 0, out · ln a is 0 · (−∞): its limit along a → 0⁺ is 0 (b > 0), and
//             PyTorch writes 0 there too (b = 0 included), so db does.
//   tangent   ȯ = b a^(b−1) ȧ + out ln a ḃ, with the same 0.
// Both derivatives are built from recorded ops (pow itself for a^(b−1)), so they can be
// differentiated again. An int64 or bool operand beside a float one becomes that float; two
// integers raise exactly (ops/integer.h).
#include "ops/power.h"

#include "cuda/ops.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/compare.h"
#include "ops/cpu_map.h"
#include "ops/device.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/integer.h"
#include "ops/registry.h"
#include "ops/tangent.h"

namespace hg {

constexpr OpDef kPowTensor{.name = "pow_tensor",
                           .saves = {{"base a", "both derivatives read it"},
                                     {"exponent b", "∂/∂a = b a^(b−1)"},
                                     {"pow output", "∂/∂b = out ln a"}},
                           .derivation = "ops/power.cpp", .tangent = "ȯ = b a^(b−1) ȧ + out ln a ḃ"};
struct PowTensorSaved {  // the slots of kPowTensor's saves
  static constexpr SavedSlot a = kPowTensor.slot("base a");
  static constexpr SavedSlot b = kPowTensor.slot("exponent b");
  static constexpr SavedSlot out = kPowTensor.slot("pow output");
};

namespace {

// b · a^(b−1), with 0 where b = 0.
Tensor b_a_pow(const Tensor& a, const Tensor& b) {
  return where(eq(b, 0.0), zeros({}, a.dtype(), a.device()), mul(b, pow(a, add(b, -1.0))));
}

// out · ln a, with 0 where a = 0 and b ≥ 0 (the limit, PyTorch's value).
Tensor out_log_a(const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor zero_base = logical_and(eq(a, 0.0), ge(b, 0.0));
  return where(zero_base, zeros({}, out.dtype(), out.device()), mul(out, log(a)));
}

}  // namespace

Tensor pow(const Tensor& a, const Tensor& b, Site where) {
  const char* op = kPowTensor.c_str();
  require_defined(op, a, "an operand");
  require_defined(op, b, "an operand");
  if (!is_floating(a.dtype()) && !is_floating(b.dtype())) {
    return integer_binary(op, IntArith::pow, a, b);
  }
  if (!is_floating(a.dtype())) return pow(a.to(b.dtype()), b, where);
  if (!is_floating(b.dtype())) return pow(a, b.to(a.dtype()), where);
  check_same_dtype_device(op, a, b);
  Tensor out = on_device(op, {a, b}, [&] {
    return dispatch_float(a.dtype(), op, [&]<typename T>() {
      return strided_map2<T, T>(op, a.dtype(), a.detach(), b.detach(), [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
    });
  }, HG_CUDA(cuda::binary(cuda::kPowTensor, a.detach(), b.detach())));
  if (should_record({a, b})) {
    const Shape sa = a.shape(), sb = b.shape();
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    using S = PowTensorSaved;
    record(kPowTensor, {a, b}, {out}, {save(S::a, a), save(S::b, b), save(S::out, out)},
           [=](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{
                 ga ? sum_to(mul(g[0], b_a_pow(s[S::a], s[S::b])), sa) : Tensor(),
                 gb ? sum_to(mul(g[0], out_log_a(s[S::a], s[S::b], s[S::out])), sb) : Tensor()};
           },
           [a, b, out](const std::vector<Tensor>& d) {
             return std::vector<Tensor>{tangent_sum(
                 {if_tangent(d[0], [&](const Tensor& t) { return mul(b_a_pow(a, b), t); }),
                  if_tangent(d[1], [&](const Tensor& t) { return mul(out_log_a(a, b, out), t); })},
                 out.shape())};
           },
           where);
  }
  return out;
}

std::span<const OpDef* const> power_ops() {
  static const OpDef* const defs[] = {&kPowTensor};
  return defs;
}

}  // namespace hg
