// cuda/elementwise.cu — the elementwise kernels: one thread per element of the index space, any
// strides (a broadcast operand has stride 0), in a grid-stride loop; the kinds of unary and
// binary are cuda/kinds.h's codes. Also the gather of the deferred checks' status buffers.
//
// Each formula is the CPU's (ops/elementwise.cpp, ops/indexing.cpp, engine/tensor.cpp), rounded
// the same way where that is cheap: a scalar op computes in double as the CPU's `x + s` does
// (s is a double there), gelu and its backward compute in double, and the products that the CPU
// rounds before a subtraction are kept out of nvcc's fused multiply-adds (mul_rn).
#include "cpu/pointwise_rules.h"
#include "cuda/device_common.cuh"
#include "cuda/kernels.h"
#include "engine/convert.h"

namespace hg::cuda {
namespace {

// ---------------------------------------------------------------- copy, fill, axpy, scale

// Each element converts by engine/convert.h's rule, as the CPU copy_ does. A float to i64 element
// with no int64 value is written as 0 and its position e (row-major in dst's shape) goes to
// status[kBadIndex] (the first one is kept); status is null for every other dtype pair.
template <typename D, typename S>
__global__ void copy_kernel(D* dst, const S* src, Geometry<2> g, long long* status) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[2];
    offsets_of(g, e, off);
    const S v = src[off[1]];
    if (!convertible<D>(v)) atomicMin(&status[kBadIndex], static_cast<long long>(e));
    dst[off[0]] = convert_element<D>(v);
  }
}

template <typename D, typename S>
cudaError_t copy_as(void* dst, const void* src, const Geometry<2>& g, long long* status, cudaStream_t s) {
  copy_kernel<D, S>
      <<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<D*>(dst), static_cast<const S*>(src), g, status);
  return cudaGetLastError();
}

template <typename D>
cudaError_t copy_to(Elem src_t, void* dst, const void* src, const Geometry<2>& g, long long* status, cudaStream_t s) {
  switch (src_t) {
    case Elem::f32: return copy_as<D, float>(dst, src, g, status, s);
    case Elem::f64: return copy_as<D, double>(dst, src, g, status, s);
    case Elem::i64: return copy_as<D, int64_t>(dst, src, g, status, s);
    case Elem::b8: return copy_as<D, uint8_t>(dst, src, g, status, s);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void fill_kernel(T* dst, double value, Geometry<1> g) {
  const T v = convert_element<T>(value);  // the host has checked that value converts
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[1];
    offsets_of(g, e, off);
    dst[off[0]] = v;
  }
}

template <typename T>
cudaError_t fill_as(void* dst, double value, const Geometry<1>& g, cudaStream_t s) {
  fill_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(dst), value, g);
  return cudaGetLastError();
}

// dst += a · src, a in T (Tensor::add_)
template <typename T>
__global__ void axpy_kernel(T* dst, const T* src, T a, Geometry<2> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[2];
    offsets_of(g, e, off);
    dst[off[0]] = dst[off[0]] + mul_rn(a, src[off[1]]);
  }
}

template <typename T>
__global__ void scale_kernel(T* dst, T f, Geometry<1> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[1];
    offsets_of(g, e, off);
    dst[off[0]] = dst[off[0]] * f;
  }
}

// ---------------------------------------------------------------- unary, binary

constexpr double kSqrt2 = 1.41421356237309504880;  // std::numbers::sqrt2
constexpr double kPi = 3.14159265358979323846;     // std::numbers::pi

// ops/elementwise_math.cpp's functions, each computed in double and rounded once to T (the CPU
// computes in T: float32 results may differ by an ulp, which the device tests allow).
template <typename T>
__device__ T math_value(int code, T v) {
  const double x = static_cast<double>(v);
  switch (code) {
    case kSin: return static_cast<T>(sin(x));
    case kCos: return static_cast<T>(cos(x));
    case kTan: return static_cast<T>(tan(x));
    case kAsin: return static_cast<T>(asin(x));
    case kAcos: return static_cast<T>(acos(x));
    case kAtan: return static_cast<T>(atan(x));
    case kSinh: return static_cast<T>(sinh(x));
    case kCosh: return static_cast<T>(cosh(x));
    case kAsinh: return static_cast<T>(asinh(x));
    case kAcosh: return static_cast<T>(acosh(x));
    case kAtanh: return static_cast<T>(atanh(x));
    case kSigmoid: return static_cast<T>(x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)));
    case kSilu: return static_cast<T>(x * (x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x))));
    case kLog1p: return static_cast<T>(log1p(x));
    case kExpm1: return static_cast<T>(expm1(x));
    case kLog2: return static_cast<T>(log2(x));
    case kExp2: return static_cast<T>(exp2(x));
    case kReciprocal: return static_cast<T>(1 / x);
    case kRsqrt: return static_cast<T>(1 / sqrt(x));
    case kSquare: return v * v;
    case kAbs: return static_cast<T>(fabs(x));
    case kSign: return v > T(0) ? T(1) : v < T(0) ? T(-1) : v == v ? v : T(0);  // NaN gives 0, as the CPU's
    case kFloor: return static_cast<T>(floor(x));
    case kCeil: return static_cast<T>(ceil(x));
    case kRound: return static_cast<T>(rint(x));  // half to even
    case kTrunc: return static_cast<T>(trunc(x));
    case kErf: return static_cast<T>(erf(x));
    case kErfc: return static_cast<T>(erfc(x));
    case kErfinv: return static_cast<T>(rules::erfinv_value(x));
    case kLog10: return static_cast<T>(log10(x));
    default: return static_cast<T>(NAN);  // unreachable: the host checks the code
  }
}

template <typename T>
__device__ T unary_value(int code, T v, double s) {
  switch (code) {
    case kNeg: return -v;
    case kExp: return dexp(v);
    case kLog: return dlog(v);
    case kSqrt: return dsqrt(v);
    case kRelu: return v > T(0) || v != v ? v : T(0);  // NaN stays, as the CPU's
    case kTanh: return dtanh(v);
    case kGelu: {  // x Φ(x), Φ(x) = (1 + erf(x / √2)) / 2, in double
      const double x = static_cast<double>(v);
      return static_cast<T>(x * 0.5 * (1 + erf(x * kSqrt2 / 2)));
    }
    case kPow: return dpow(v, static_cast<T>(s));
    case kAddScalar: return static_cast<T>(static_cast<double>(v) + s);
    case kMulScalar: return static_cast<T>(static_cast<double>(v) * s);
    case kRsubScalar: return static_cast<T>(s - static_cast<double>(v));
    case kRdivScalar: return static_cast<T>(s / static_cast<double>(v));
    case kSoftplus: {  // max(x, 0) + log1p(e^(−|x|)), in double (ops/elementwise.cpp)
      const double x = static_cast<double>(v);
      return static_cast<T>((x > 0 ? x : 0.0) + log1p(exp(-fabs(x))));
    }
    default: return math_value(code, v);
  }
}

template <typename T>
__device__ T binary_value(int code, T a, T b) {
  switch (code) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kReluBackward: return b > T(0) ? a : T(0);        // (g, x): g · [x > 0]
    case kTanhBackward: return a * (T(1) - mul_rn(b, b));  // (g, y): g (1 − y²)
    case kGeluBackward: {                                  // (g, x): g (Φ(x) + x φ(x)), in double
      const double x = static_cast<double>(b);
      const double cdf = 0.5 * (1 + erf(x * kSqrt2 / 2));
      const double pdf = exp(-0.5 * x * x) / sqrt(2 * kPi);
      return a * static_cast<T>(cdf + x * pdf);
    }
    case kSoftplusBackward: {  // (g, x): g σ(x), σ with a non-positive exponent, in double
      const double x = static_cast<double>(b), e = exp(-fabs(x));
      return a * static_cast<T>(x >= 0 ? 1 / (1 + e) : e / (1 + e));
    }
    case kPowTensor: return pow(a, b);
    case kAtan2: return ::atan2(a, b);
    case kFmod: return ::fmod(a, b);
    case kRemainder: return rules::remainder_value(a, b);
    case kFloorDivide: return rules::floor_divide_value(a, b);
    case kXlogy: return rules::xlogy_value(a, b);
    case kCopysign: return ::copysign(a, b);
    case kFmax: return rules::fmax_value(a, b);
    case kFmin: return rules::fmin_value(a, b);
    case kLogaddexp: return rules::logaddexp_value(a, b);
    case kLogaddexp2: return rules::logaddexp2_value(a, b);
    case kHypot: return ::hypot(a, b);
    default: return static_cast<T>(NAN);
  }
}

template <typename T>
__global__ void unary_kernel(int code, T* out, const T* x, double scalar, Geometry<2> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[2];
    offsets_of(g, e, off);
    out[off[0]] = unary_value<T>(code, x[off[1]], scalar);
  }
}

template <typename T>
__global__ void binary_kernel(int code, T* out, const T* a, const T* b, Geometry<3> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[3];
    offsets_of(g, e, off);
    out[off[0]] = binary_value<T>(code, a[off[1]], b[off[2]]);
  }
}

// ---------------------------------------------------------------- masked_fill, where

template <typename T>
__global__ void masked_fill_kernel(T* out, const T* x, const uint8_t* mask, double value, Geometry<3> g) {
  const T fill = static_cast<T>(value);  // −inf stays −inf
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[3];
    offsets_of(g, e, off);
    out[off[0]] = mask[off[2]] ? fill : x[off[1]];
  }
}

template <typename T>
__global__ void where_kernel(T* out, const uint8_t* cond, const T* a, const T* b, Geometry<4> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[4];
    offsets_of(g, e, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

// ---------------------------------------------------------------- status gather
// out[i · kStatusSlots + k] = src.status[i][k]: the deferred checks' statuses in one buffer.
__global__ void status_gather_kernel(StatusSources src, long long* out) {
  HG_GRID_LOOP(e, static_cast<int64_t>(src.count) * kStatusSlots) out[e] = src.status[e / kStatusSlots][e % kStatusSlots];
}

}  // namespace

// ---------------------------------------------------------------- launchers

cudaError_t launch_copy(Elem dst_t, void* dst, Elem src_t, const void* src, const Geometry<2>& g, long long* status,
                        cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  const bool checked = dst_t == Elem::i64 && (src_t == Elem::f32 || src_t == Elem::f64);
  if (checked != (status != nullptr)) return cudaErrorInvalidValue;  // a status exactly for float -> i64
  switch (dst_t) {
    case Elem::f32: return copy_to<float>(src_t, dst, src, g, status, s);
    case Elem::f64: return copy_to<double>(src_t, dst, src, g, status, s);
    case Elem::i64: return copy_to<int64_t>(src_t, dst, src, g, status, s);
    case Elem::b8: return copy_to<uint8_t>(src_t, dst, src, g, status, s);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_fill(Elem t, void* dst, double value, const Geometry<1>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  switch (t) {
    case Elem::f32: return fill_as<float>(dst, value, g, s);
    case Elem::f64: return fill_as<double>(dst, value, g, s);
    case Elem::i64: return fill_as<int64_t>(dst, value, g, s);
    case Elem::b8: return fill_as<uint8_t>(dst, value, g, s);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_axpy(Elem t, void* dst, const void* src, double alpha, const Geometry<2>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    axpy_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(dst), static_cast<const T*>(src),
                                                          static_cast<T>(alpha), g);
  });
}

cudaError_t launch_scale(Elem t, void* dst, double factor, const Geometry<1>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    scale_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(dst), static_cast<T>(factor), g);
  });
}

cudaError_t launch_unary(int code, Elem t, void* out, const void* x, double scalar, const Geometry<2>& g,
                         cudaStream_t s) {
  if (code < 0 || code >= kUnaryCount) return cudaErrorInvalidValue;
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    unary_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(code, static_cast<T*>(out), static_cast<const T*>(x),
                                                           scalar, g);
  });
}

cudaError_t launch_binary(int code, Elem t, void* out, const void* a, const void* b, const Geometry<3>& g,
                          cudaStream_t s) {
  if (code < 0 || code >= kBinaryCount) return cudaErrorInvalidValue;
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    binary_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(code, static_cast<T*>(out), static_cast<const T*>(a),
                                                            static_cast<const T*>(b), g);
  });
}

cudaError_t launch_masked_fill(Elem t, void* out, const void* x, const uint8_t* mask, double value,
                               const Geometry<3>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    masked_fill_kernel<T>
        <<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(x), mask, value, g);
  });
}

cudaError_t launch_where(Elem t, void* out, const uint8_t* cond, const void* a, const void* b, const Geometry<4>& g,
                         cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    where_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(out), cond, static_cast<const T*>(a),
                                                           static_cast<const T*>(b), g);
  });
}

cudaError_t launch_status_gather(const StatusSources& src, long long* out, cudaStream_t s) {
  if (src.count <= 0) return cudaSuccess;
  if (src.count > kGatherMax) return cudaErrorInvalidValue;
  status_gather_kernel<<<grid_for(int64_t{src.count} * kStatusSlots), kThreads, 0, s>>>(src, out);
  return cudaGetLastError();
}

}  // namespace hg::cuda
