// engine/tangents.h — forward mode's state (engine/forward.h tells the whole of forward mode):
// the dual level open on this thread, the tangent each tensor carries at it, and the push of an
// op's tangent rule. record() (engine/tape.h) pushes tangents through every op it records, so this
// sits below the tape; make_dual, unpack_dual and jvp, which record, sit above it (engine/forward.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/op_def.h"
#include "engine/tensor.h"

namespace hg {

class DualLevel {
 public:
  DualLevel();   // fails when one is already open on this thread
  ~DualLevel();  // drops the tangents made inside it
  DualLevel(const DualLevel&) = delete;
  DualLevel& operator=(const DualLevel&) = delete;
  uint64_t id() const { return id_; }

 private:
  uint64_t id_;
};

// A level is open on this thread (and tangents are not suspended, as they are inside a rule).
bool forward_ad_enabled();

bool has_tangent(const Tensor& t);  // t carries a tangent at the open level
Tensor tangent_of(const Tensor& t);  // that tangent, or an undefined Tensor

// An op's tangent rule: its inputs' tangents (one per input, undefined where an input carries
// none) to its outputs' (one per output; undefined: that output carries none). The primal values
// it needs it captures from the op. It runs with tangents suspended, so the ops inside it compute
// values (and record, for reverse mode) but push no tangents of their own.
using TangentFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& input_tangents)>;

namespace detail {
// The id of the level open on this thread, suspended or not; 0 when none is.
uint64_t open_level();
// Some input carries a tangent at the open level.
bool any_tangent(const std::vector<Tensor>& inputs);
// Runs `rule` on the inputs' tangents and sets each output's; checks what it returns.
void push_tangents(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   const TangentFn& rule);
// Gives `t` the tangent `dot` at the open level (a saved alias, an output).
void set_tangent(const Tensor& t, const Tensor& dot);
}  // namespace detail

}  // namespace hg
