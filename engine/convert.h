// engine/convert.h — the one rule for converting an element from one dtype to another, on both
// devices: the CPU's copy_ and the factories that write a double into a tensor (engine/tensor.cpp)
// and the CUDA copy and fill kernels (cuda/elementwise.cu) all convert through convert_element.
//
// The rule (PyTorch's, except that it refuses what PyTorch leaves undefined):
//   - to b8: v != 0. NaN is != 0, so NaN becomes true; −0.0 is false.
//   - float to i64: truncation toward zero, for values that fits_i64 (finite, in [−2^63, 2^63)).
//     Any other value (NaN, ±inf, out of range) has no i64 value: the callers make it an hg::Error
//     (the CPU at once; CUDA as a deferred check, cuda/device_ops.h). convert_element itself gives
//     0 there, so that no path ever reaches C++'s undefined float-to-integer cast.
//   - everything else is static_cast: b8 reads as 0 or 1, i64 to float and f64 to f32 are
//     rounded to nearest (f64 to f32 overflows to ±inf, as IEEE arithmetic does on both devices).
// Plain C++17 without engine types, so that nvcc compiles it into the kernels.
#pragma once
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define HG_HOST_DEVICE __host__ __device__
#else
#define HG_HOST_DEVICE
#endif

namespace hg {

// Whether the float v has an i64 value: finite, and v truncated toward 0 in [−2^63, 2^63). Both bounds are
// exact doubles, and every comparison with NaN is false.
template <typename S>
HG_HOST_DEVICE constexpr bool fits_i64(S v) {
  return static_cast<double>(v) >= -9223372036854775808.0 && static_cast<double>(v) < 9223372036854775808.0;
}

// Whether converting the value v (of type S) to D is defined; false only for float to i64 of a
// value that does not fits_i64.
template <typename D, typename S>
HG_HOST_DEVICE constexpr bool convertible(S v) {
  if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>)
    return fits_i64(v);
  else
    return true;
}

// v converted to D by the rule above (D, S: float, double, int64_t, uint8_t for b8).
template <typename D, typename S>
HG_HOST_DEVICE constexpr D convert_element(S v) {
  if constexpr (std::is_same_v<D, uint8_t>)
    return v != S(0) ? D(1) : D(0);
  else if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>)
    return fits_i64(v) ? static_cast<D>(v) : D(0);
  else
    return static_cast<D>(v);
}

}  // namespace hg
