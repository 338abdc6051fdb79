// ops/cpu_map.h — the CPU loops behind elementwise ops: out = f(a) or f(a, b) with broadcasting.
// Rows whose operands are all unit-stride get a plain loop the compiler can vectorise, or, for
// float32 with a kernel given, the kernel of the CPU's level (cpu/kernels.h). The row
// kernels' exp and lane-wise reductions are cpu/rows.h's.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>

#include "cpu/kernels.h"
#include "cuda/ops.h"
#include "cpu/rows.h"
#include "engine/dispatch.h"
#include "engine/op_def.h"
#include "engine/strided.h"
#include "engine/tensor.h"
#include "ops/device.h"
#include "ops/primitives.h"

namespace hg {

// out (fresh, shape of x) = f(x) elementwise, f: T -> T.
template <typename T, typename F>
Tensor cpu_map1(const Tensor& x, F f) {
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  for_each_row<T, const T>(out.shape(), {&out.strides(), &x.strides()},
                           std::make_tuple(out.data_ptr<T>(), static_cast<const T*>(x.raw_data())),
                           [&](int64_t n, std::tuple<T*, const T*> p, const std::array<int64_t, 2>& st) {
                             auto [o, a] = p;
                             if (st[0] == 1 && st[1] == 1) {
                               for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
                             } else {
                               for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]]);
                             }
                           });
  return out;
}

// out (fresh, the broadcast shape of a and b, dtype `out_dtype` holding Out) = f(a, b)
// elementwise, f: (T, T) -> Out, each operand read through its own strides (0 where it is
// broadcast): the one strided binary loop of ops/, behind the float ops (Out = T), the comparisons
// (Out = bool) and integer arithmetic (Out = T = int64). `row_f32`, when given, computes f on
// unit-stride float32 rows (one of cpu/kernels.h's, the same bits as f).
template <typename Out, typename T, typename F>
Tensor strided_map2(const char* op, DType out_dtype, const Tensor& a, const Tensor& b, F f,
                    cpu::BinaryRow row_f32 = nullptr) {
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor out = empty(shape, out_dtype, a.device());
  Shape sa = broadcast_strides(op, a, shape), sb = broadcast_strides(op, b, shape);
  for_each_row<Out, const T, const T>(
      shape, {&out.strides(), &sa, &sb},
      std::make_tuple(static_cast<Out*>(out.raw_data()), static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data())),
      [&](int64_t n, std::tuple<Out*, const T*, const T*> p, const std::array<int64_t, 3>& st) {
        auto [o, x, y] = p;
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
          if constexpr (std::is_same_v<T, float> && std::is_same_v<Out, float>) {
            if (row_f32) return row_f32(o, x, y, n);
          }
          for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(x[i * st[1]], y[i * st[2]]);
        }
      });
  return out;
}

// A unary op's forward, shared by ops/elementwise.cpp and ops/elementwise_math.cpp:
// out = f(x), the op `def`: the CPU loop, or on a CUDA tensor the kernel `kind` with `scalar`.
// An int64 or bool x meets a float function as float32, PyTorch's promotion (it carries no gradient).
template <typename F>
Tensor unary_map(const OpDef& def, cuda::UnaryCode kind, double scalar, const Tensor& x, F f) {
  const char* op = def.c_str();
  if (x.defined() && !is_floating(x.dtype())) return unary_map(def, kind, scalar, x.to(DType::f32), f);
  return on_device(op, {x}, [&] {
    return dispatch_float(x.dtype(), op, [&]<typename T>() { return cpu_map1<T>(x.detach(), [&](T v) { return static_cast<T>(f(v)); }); });
  }, HG_CUDA(cuda::unary(kind, x.detach(), scalar)));
}

// The unary ops that keep an integer an integer (abs, sign, square, relu, the roundings), on an
// int64 x, or a bool x read as int64: out = f(x) exactly, f: int64 → int64, on the CPU (a CUDA
// tensor goes through the host). Nothing is recorded: an integer carries no gradient.
template <typename F>
Tensor integer_map(const Tensor& x, F f) {
  const Tensor xi = x.dtype() == DType::b8 ? x.to(DType::i64) : x;
  if (xi.device() != Device::cpu) return integer_map(xi.to(Device::cpu), f).to(x.device());
  return cpu_map1<int64_t>(xi, f);
}

// A binary op's forward (or a fused backward's pass), shared by ops/elementwise.cpp and ops/gelu.cpp:
// out = f(a, b), broadcast: the CPU loop, or on CUDA tensors the kernel `kind`. `row`, when given,
// names the kernel table's float32 row loop for f (cpu/kernels.h).
template <typename F>
Tensor map2(const char* op, cuda::BinaryCode kind, const Tensor& a, const Tensor& b, F f,
            cpu::BinaryRow cpu::Kernels::*row = nullptr) {
  check_same_dtype_device(op, a, b);
  return on_device(op, {a, b}, [&] {
    return dispatch_float(a.dtype(), op, [&]<typename T>() {
      return strided_map2<T, T>(op, a.dtype(), a.detach(), b.detach(), [&](T x, T y) { return static_cast<T>(f(x, y)); },
                                row ? cpu::kernels().*row : nullptr);
    });
  }, HG_CUDA(cuda::binary(kind, a.detach(), b.detach())));
}

}  // namespace hg
