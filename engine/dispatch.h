// engine/dispatch.h — run a templated body for a tensor's element type.
#pragma once
#include <cstdint>

#include "engine/dtype.h"
#include "engine/error.h"

namespace hg {

// body.template operator()<T>() for T = float or double; other dtypes are an error naming `op`.
template <typename F>
decltype(auto) dispatch_float(DType t, const char* op, F&& body) {
  switch (t) {
    case DType::f32: return body.template operator()<float>();
    case DType::f64: return body.template operator()<double>();
    default:
      fail(op, "dtype {} is not supported; this op needs float32 or float64 (convert with .to(DType::f64))",
           dtype_name(t));
  }
}

// The same for every dtype; b8 is stored as uint8_t.
template <typename F>
decltype(auto) dispatch_any(DType t, F&& body) {
  switch (t) {
    case DType::f32: return body.template operator()<float>();
    case DType::f64: return body.template operator()<double>();
    case DType::i64: return body.template operator()<int64_t>();
    case DType::b8: return body.template operator()<uint8_t>();
  }
  throw Error("dispatch_any: unknown dtype");
}

}  // namespace hg
