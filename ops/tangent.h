// ops/tangent.h — what the ops' tangent rules (forward mode, engine/forward.h) share.
//
// A rule is given one tangent per input, undefined where that input carries none, and returns one
// per output. Most are sums of terms, one per moving input (ȯ = ȧ b + a ḃ): a term is computed
// only when its input moves, and the sum of no terms is no tangent at all.
#pragma once
#include <initializer_list>
#include <vector>

#include "engine/tensor.h"

namespace hg {

// f(dot) when the tangent dot is defined, else an undefined Tensor (the term is absent).
template <typename F>
Tensor if_tangent(const Tensor& dot, F f) {
  return dot.defined() ? f(dot) : Tensor();
}

// The defined terms added, read at `shape` (a term of a broadcast operand's shape is expanded to
// it); undefined when every term is.
Tensor tangent_sum(std::initializer_list<Tensor> terms, const Shape& shape);

}  // namespace hg
