// cuda/train.cpp — the host side of the training path's device ops (kernels: cuda/train.cu):
// RoPE, the ALiBi bias, the sinusoidal table, the fused AdamW update.
#include "cuda/device_ops.h"
#include "cuda/runtime.h"

namespace hg::cuda {

Tensor rope(const Tensor& x, int64_t start, double base, int direction) {
  constexpr std::string_view op = "rope (cuda)";
  require_float(op, x, "input");
  if (x.dim() < 2 || x.size(-1) % 2 != 0)
    fail(op, "x {} must be (..., T, d_h) with d_h even", x.describe());
  Tensor y = empty(x.shape(), x.dtype(), Device::cuda);  // (..., T, d_h)
  if (y.numel() == 0) return y;
  const int64_t T_len = x.size(-2), half = x.size(-1) / 2, sd = x.strides().back();
  // The index space (lead..., T, d_h/2): one element per pair.
  Shape pairs = x.shape(), ys = y.strides(), xs = x.strides();
  pairs.back() = half;
  ys.back() = 2;
  xs.back() = 2 * sd;
  const Geometry<2> g = geometry<2>(op, pairs, {&ys, &xs});
  HG_CUDA_CHECK(launch_rope(elem(x.dtype()), y.raw_data(), x.raw_data(), sd, T_len, half, start, base, direction, g,
                            stream()));
  return y;
}

Tensor alibi_bias(int64_t heads, int64_t T, DType t) {
  constexpr std::string_view op = "alibi_bias (cuda)";
  if (!is_floating(t)) fail(op, "dtype {} is not supported; the bias needs float32 or float64", dtype_name(t));
  Tensor b = empty({heads, T, T}, t, Device::cuda);
  HG_CUDA_CHECK(launch_alibi(elem(t), b.raw_data(), heads, T, stream()));
  return b;
}

Tensor sinusoidal_positions(int64_t T, int64_t d, DType t) {
  constexpr std::string_view op = "sinusoidal_positions (cuda)";
  if (!is_floating(t)) fail(op, "dtype {} is not supported; the table needs float32 or float64", dtype_name(t));
  Tensor pe = empty({T, d}, t, Device::cuda);
  HG_CUDA_CHECK(launch_sinusoidal(elem(t), pe.raw_data(), T, d, stream()));
  return pe;
}

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
