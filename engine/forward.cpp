// engine/forward.cpp — forward mode's two ops, make_dual and unpack_dual, and jvp(): they record on
// the tape. The state they use (levels, the tangent a tensor carries) is engine/tangents.cpp.
#include "engine/forward.h"

#include <fmt/format.h>

#include <vector>

#include "engine/error.h"
#include "engine/tape.h"

namespace hg {

namespace {
// An alias of t (same storage, geometry and version counter), with no graph and no tangent.
Tensor alias_of(const Tensor& t) { return make_view(t, t.shape(), t.strides(), t.offset()); }

// make_dual's output is its primal; unpack_dual's primal is its input without the tangent. Both
// are identities for reverse mode: the gradient passes through.
constexpr OpDef kMakeDual{.name = "make_dual", .saves_nothing = "an identity: the gradient passes through",
                          .derivation = "engine/forward.cpp", .checked_by = "tests/engine/test_forward.cpp",
                          .tangent = "the given tangent"};
constexpr OpDef kUnpackDual{.name = "unpack_dual", .saves_nothing = "an identity: the gradient passes through",
                            .derivation = "engine/forward.cpp", .checked_by = "tests/engine/test_forward.cpp",
                            .tangent = "none: the primal is the value alone"};

std::vector<Tensor> pass_through(const std::vector<Tensor>& g, const Saved&) { return {g[0]}; }
}  // namespace

std::span<const OpDef* const> forward_defs() {
  static const OpDef* const defs[] = {&kMakeDual, &kUnpackDual};
  return defs;
}

Tensor make_dual(const Tensor& primal, const Tensor& tangent, Site where) {
  if (detail::open_level() == 0)
    fail(kMakeDual.name, "no dual level is open; open one first (hg::DualLevel level;), or use jvp()");
  if (!primal.defined() || !tangent.defined())
    fail(kMakeDual.name, "given an undefined {}", primal.defined() ? "tangent" : "primal");
  if (tangent.shape() != primal.shape() || tangent.dtype() != primal.dtype() || tangent.device() != primal.device())
    fail(kMakeDual.name, "the tangent {} must match the primal {} in shape, dtype and device", tangent.describe(),
         primal.describe());
  Tensor out = alias_of(primal);
  if (should_record({primal}))
    record(kMakeDual, {primal}, {out}, {}, pass_through,
           [tangent](const std::vector<Tensor>&) { return std::vector<Tensor>{tangent}; }, where);
  detail::set_tangent(out, tangent);
  return out;
}

Dual unpack_dual(const Tensor& t, Site where) {
  if (!t.defined()) fail(kUnpackDual.name, "given an undefined tensor");
  Tensor dot = tangent_of(t);
  Tensor primal = alias_of(t);
  if (should_record({t}))
    record(kUnpackDual, {t}, {primal}, {}, pass_through,
           [](const std::vector<Tensor>&) { return std::vector<Tensor>{Tensor()}; }, where);
  return {primal, dot};
}

JvpResult jvp(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& f,
              const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
  if (tangents.size() != primals.size())
    fail("jvp", "{} tangents for {} primals; give one per primal (an undefined Tensor for one that does not move)",
         tangents.size(), primals.size());
  DualLevel level;
  std::vector<Tensor> duals;
  for (size_t i = 0; i < primals.size(); ++i)
    duals.push_back(tangents[i].defined() ? make_dual(primals[i], tangents[i]) : primals[i]);
  std::vector<Tensor> outs = f(duals);
  JvpResult r;
  for (const Tensor& o : outs) {
    Dual d = unpack_dual(o);
    r.outputs.push_back(d.primal);
    r.tangents.push_back(d.tangent.defined() ? d.tangent : zeros(o.shape(), o.dtype(), o.device()));
  }
  return r;
}

}  // namespace hg
