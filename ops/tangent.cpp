// ops/tangent.cpp — the tangent rules' helpers, declared in ops/primitives.h.
#include "ops/primitives.h"

namespace hg {

Tensor tangent_sum(std::initializer_list<Tensor> terms, const Shape& shape) {
  Tensor total;
  for (const Tensor& t : terms) {
    if (!t.defined()) continue;
    total = total.defined() ? add(total, t) : t;
  }
  if (total.defined() && total.shape() != shape) total = expand(total, shape);
  return total;
}

}  // namespace hg
