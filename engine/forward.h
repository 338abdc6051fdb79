// engine/forward.h — forward mode: dual tensors that carry a tangent through every op, and jvp().
//
// Reverse mode asks "how does the loss change with each input?" and answers with one backward walk
// per output. Forward mode asks "how does every result change when the inputs move along a
// direction u?" and answers in the same pass as the forward: each tensor x carries, beside its
// value, its tangent ẋ = (∂x/∂inputs)·u, and each op maps its inputs' tangents to its outputs'
// with its tangent rule (the Jacobian-vector product; PyTorch's torch.autograd.forward_ad, JAX's
// jvp). For out = a·b the rule is ȯ = ȧ·b + a·ḃ; every op's rule is written beside its backward.
//
//   DualLevel level;                              // tangents live while the level does
//   Tensor x = make_dual(x0, u);                  // x0 carrying the tangent u
//   Tensor y = f(x);                              // each op of f pushes the tangent on
//   Tensor ydot = unpack_dual(y).tangent;         // J·u, computed beside y
//
// or, without managing a level: auto [ys, ydots] = jvp(f, {x0}, {u}).
//
// The engine knows no op: record() (engine/tape.h) is handed each op's rule and runs it through
// engine/tangents.h, the state below the tape (the open level, the tangent each tensor carries);
// this file's functions record on the tape, so they sit above it. An op recorded without a rule,
// given an input that carries a tangent, fails naming the op — it never returns a zero tangent.
// Rules are made of recorded ops, so a tangent that requires grad can be differentiated (reverse
// over forward), and a backward run inside a level pushes tangents through its gradients (forward
// over reverse: jvp of grad is a Hessian-vector product).
//
// One level at a time per thread. Leaving it drops every tangent made inside it; a tangent read
// outside its level is not there. In-place writes to a tensor that carries a tangent are refused
// (the tangent would no longer describe the values).
#pragma once
#include <functional>
#include <vector>

#include "engine/op_def.h"
#include "engine/tangents.h"
#include "engine/tensor.h"

namespace hg {

// An alias of `primal` (same storage; differentiable, as an identity) carrying `tangent`, which
// must match it in shape, dtype and device. Needs an open level.
Tensor make_dual(const Tensor& primal, const Tensor& tangent, Site where = Site::current());

struct Dual {
  Tensor primal;   // an alias without the tangent (differentiable, as an identity)
  Tensor tangent;  // undefined when t carries none at this level
};
Dual unpack_dual(const Tensor& t, Site where = Site::current());

// outputs = f(primals) and their tangents along `tangents` (one per primal, same shapes; an
// undefined one means that primal does not move). Opens its own level, so it cannot be nested.
// An output that does not depend on a moving primal gets zeros, not an undefined tangent.
struct JvpResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> tangents;
};
JvpResult jvp(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& f,
              const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);

// The engine's own ops of this file, for the registry.
std::span<const OpDef* const> forward_defs();

}  // namespace hg
