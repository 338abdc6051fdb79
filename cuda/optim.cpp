// cuda/optim.cpp — the host side of the optimizer's step on the GPU (cuda/optim.h; the kernel is in
// cuda/optim.cu): checks, then one launch over the flat storage.
#include "cuda/device_ops.h"
#include "cuda/optim.h"
#include "cuda/runtime.h"

namespace hg::cuda {

void adamw(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWStep& c) {
  constexpr std::string_view op = "AdamW (cuda)";
  require_float(op, w, "parameter");
  const std::pair<const Tensor*, const char*> others[] = {{&g, "gradient"}, {&m, "first moment"}, {&v, "second moment"}};
  for (const auto& [t, what] : others) {
    require_float(op, *t, what);
    require_same_dtype(op, w, *t);
    if (t->shape() != w.shape())
      fail(op, "the {} {} must have the parameter's shape {}", what, t->describe(), shape_str(w.shape()));
  }
  for (const Tensor* t : {&w, &g, &m, &v})
    if (!t->is_contiguous()) fail(op, "{} must be contiguous (the update runs over the flat storage)", t->describe());
  const AdamWScalars k{c.decay, c.b1, c.one_minus_b1, c.b2, c.one_minus_b2, c.bc2_sqrt, c.eps, c.neg_step};
  HG_CUDA_CHECK(launch_adamw(elem(w.dtype()), w.raw_data(), g.raw_data(), m.raw_data(), v.raw_data(), k, w.numel(),
                             stream()));
}

}  // namespace hg::cuda
