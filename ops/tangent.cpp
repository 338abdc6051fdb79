// ops/tangent.cpp — the helpers of ops/tangent.h.
#include "ops/tangent.h"

#include "ops/broadcast.h"
#include "ops/elementwise.h"

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
