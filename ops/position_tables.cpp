// ops/position_tables.cpp — the fixed position tables of Section 10.6's exercises: ALiBi's score
// bias and the sinusoidal positions (declared in ops/positional.h). Constants: no inputs to
// differentiate, so no backward and no tape entry.
#include <cmath>
#include <limits>

#include "cuda/ops.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "ops/device.h"
#include "ops/positional.h"

namespace hg {

// ---------------------------------------------------------------- alibi_bias
//
// b[h-1, i, j] = m_h · (j − i) for j <= i, −inf for j > i, m_h = 2^(−8h/H), h = 1..H.
// A constant added to the scores before the softmax: it has no inputs to differentiate.
Tensor alibi_bias(int64_t heads, int64_t T, DType dtype, Device device) {
  if (heads < 1) fail("alibi_bias", "the number of heads must be >= 1, got {}", heads);
  if (T < 0) fail("alibi_bias", "the sequence length T must be >= 0, got {}", T);
  return on_device("alibi_bias", device, [&] {
    return dispatch_float(dtype, "alibi_bias", [&]<typename E>() {
      Tensor b = empty({heads, T, T}, dtype);  // (H, T, T)
      E* p = b.data_ptr<E>();
      for (int64_t h = 1; h <= heads; ++h) {
        const double slope = std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(heads));
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j)
            *p++ = j <= i ? static_cast<E>(slope * static_cast<double>(j - i)) : -std::numeric_limits<E>::infinity();
      }
      return b;
    });
  }, HG_CUDA(cuda::alibi_bias(heads, T, dtype)));
}

// ---------------------------------------------------------------- sinusoidal_positions
//
// PE[t, 2i] = sin(t · 10000^(−2i/d)), PE[t, 2i+1] = cos(t · 10000^(−2i/d)); an odd d ends with
// a sine column. Computed in double, rounded once. A constant: no gradient.
Tensor sinusoidal_positions(int64_t T, int64_t d, DType dtype, Device device) {
  if (T < 0 || d < 1)
    fail("sinusoidal_positions", "needs T >= 0 positions and a width d >= 1, got T = {}, d = {}", T, d);
  return on_device("sinusoidal_positions", device, [&] {
    return dispatch_float(dtype, "sinusoidal_positions", [&]<typename E>() {
      Tensor pe = empty({T, d}, dtype);  // (T, d)
      E* p = pe.data_ptr<E>();
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < d; ++c) {
          const double angle = static_cast<double>(t) * std::pow(10000.0, -static_cast<double>(c - c % 2) / static_cast<double>(d));
          *p++ = static_cast<E>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
      return pe;
    });
  }, HG_CUDA(cuda::sinusoidal_positions(T, d, dtype)));
}

}  // namespace hg
