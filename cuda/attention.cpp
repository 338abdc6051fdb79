// cuda/attention.cpp — the host side of attention's GPU kernel (cuda/attention.cu): the scores'
// scale and mask, in place. The rest of attention on the GPU is cuBLAS gemms and the row kernels,
// run by ops/attention.cpp's op-by-op path.
#include "cuda/device_ops.h"
#include "cuda/runtime.h"

namespace hg::cuda {

void attention_scale_mask(const Tensor& S, double scale_by, bool causal, const Tensor& mask) {
  constexpr std::string_view op = "attention_scale_mask (cuda)";
  require_float(op, S, "scores S");
  if (S.dim() < 2) fail(op, "the scores {} need two dimensions (..., Tq, Tk)", S.describe());
  if (!S.is_contiguous())
    fail(op, "the scores {} must be contiguous (the gemm's output); written in place", S.describe());
  int kind = kMaskNone;
  Shape sm(S.shape().size(), 0);
  const void* m = nullptr;
  if (mask.defined()) {
    require_device(op, mask, "mask");
    if (mask.dtype() == DType::b8)
      kind = kMaskBool;
    else if (mask.dtype() == S.dtype())
      kind = kMaskAdditive;
    else
      fail(op, "the mask {} must be b8 (true = may attend) or additive with the scores' dtype {}", mask.describe(),
           dtype_name(S.dtype()));
    sm = broadcast_strides(op, mask, S.shape());
    m = mask.raw_data();
  }
  const Geometry<1> g = geometry<1>(op, S.shape(), {&sm});
  HG_CUDA_CHECK(
      launch_scale_mask(elem(S.dtype()), S.raw_data(), S.size(-2), S.size(-1), scale_by, causal, kind, m, g, stream()));
}

}  // namespace hg::cuda
