// cuda/positional.cpp — the host side of the positions' device ops (kernels: cuda/positional.cu):
// RoPE, the ALiBi bias, the sinusoidal table. The AdamW update's host side is cuda/optim.cpp.
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

}  // namespace hg::cuda
