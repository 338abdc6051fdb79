// ops/unary_map.h — out = f(x) elementwise for a unary op: the CPU loop (ops/cpu_map.h), or on a
// CUDA tensor the kernel of its kind (cuda/kinds.h). Shared by ops/elementwise.cpp and
// ops/elementwise_math.cpp.
#pragma once
#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/op_def.h"
#include "ops/cpu_map.h"
#include "ops/device.h"

namespace hg {

// out = f(x), the op `def`: the CPU loop, or on a CUDA tensor the kernel `kind` with `scalar`.
template <typename F>
Tensor unary_map(const OpDef& def, cuda::UnaryCode kind, double scalar, const Tensor& x, F f) {
  const char* op = def.c_str();
  return on_device(op, {x}, [&] {
    return dispatch_float(x.dtype(), op, [&]<typename T>() { return cpu_map1<T>(x.detach(), [&](T v) { return static_cast<T>(f(v)); }); });
  }, HG_CUDA(cuda::unary(kind, x.detach(), scalar)));
}

}  // namespace hg
