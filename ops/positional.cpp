// ops/positional.cpp — rotary embedding (RoPE), the ALiBi score bias, the sinusoidal table.
//
// Notation (Section 10.4, Eq. 10.4.4; TinyCharLM of Section 10.6): a head's queries or keys
// x (..., T, d_h), position t, pair i = 0..d_h/2-1 made of the interleaved coordinates
// (x_2i, x_2i+1), frequency ω_i = base^(−2i/d_h), angle θ_ti = t · ω_i.
#include "ops/positional.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda/ops.h"
#include "cpu/kernels.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/registry.h"

namespace hg {

namespace {

// cos θ_ti and sin θ_ti for t = start..start+T-1, i = 0..half-1, each (T, half) row-major.
// Computed in double (t · ω_i reaches ~T radians, where float32 angles lose digits) and then
// rounded once to the element type; `direction` = -1 gives the tables of −θ (sin negated).
template <typename T>
void rope_tables(int64_t T_len, int64_t half, int64_t start, double base, int direction,
                 std::vector<T>& cos_t, std::vector<T>& sin_t) {
  cos_t.resize(static_cast<size_t>(T_len * half));
  sin_t.resize(static_cast<size_t>(T_len * half));
  const double d_h = static_cast<double>(2 * half);
  std::vector<double> omega(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) omega[i] = std::pow(base, -2.0 * static_cast<double>(i) / d_h);
  for (int64_t t = 0; t < T_len; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const double theta = static_cast<double>(start + t) * omega[i];
      cos_t[t * half + i] = static_cast<T>(std::cos(theta));
      sin_t[t * half + i] = static_cast<T>(direction * std::sin(theta));
    }
}

// One (T, d_h) slice: row t of y = R_θ (row t of x), pair by pair, with the tables' row t.
// x's rows are st_t apart and its coordinates st_d apart; y's slice is contiguous. HALF > 0 fixes
// d_h/2 at compile time so the pair loop unrolls completely: on the model's (128, 4, 63, 32)
// float32 head view of the qkv output that took 0.4 ms instead of 2 ms (one thread) with the
// same loop and a runtime trip count — 32k rows of only 16 pairs, each row's loads strided 3d
// apart, and the unrolled loop keeps more of them in flight.
template <typename T, int64_t HALF>
void rotate_slice(const T* x, int64_t st_t, int64_t st_d, T* y, const T* c, const T* s, int64_t T_len, int64_t half) {
  if constexpr (HALF > 0) half = HALF;
  for (int64_t t = 0; t < T_len; ++t, x += st_t, y += 2 * half, c += half, s += half) {
    if (st_d == 1) {
      for (int64_t i = 0; i < half; ++i) {
        const T x0 = x[2 * i], x1 = x[2 * i + 1];
        y[2 * i] = x0 * c[i] - x1 * s[i];
        y[2 * i + 1] = x0 * s[i] + x1 * c[i];
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const T x0 = x[2 * i * st_d], x1 = x[(2 * i + 1) * st_d];
        y[2 * i] = x0 * c[i] - x1 * s[i];
        y[2 * i + 1] = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

template <typename T>
using SliceFn = void (*)(const T*, int64_t, int64_t, T*, const T*, const T*, int64_t, int64_t);

// The usual head sizes d_h = 16, 32, 64, 128 get an unrolled pair loop; others the general one.
template <typename T>
SliceFn<T> slice_fn(int64_t half) {
  switch (half) {
    case 8: return rotate_slice<T, 8>;
    case 16: return rotate_slice<T, 16>;
    case 32: return rotate_slice<T, 32>;
    case 64: return rotate_slice<T, 64>;
    default: return rotate_slice<T, 0>;
  }
}

// y (contiguous, shape of x) = R_θ x pair by pair. x is read through its own strides, so the
// (B, H, T, d_h) head views that a permute of the fused qkv output gives need no copy first.
// Slices are visited in y's order (leading dims by odometer, then t), so y is written front to
// back; visiting the rows in x's memory order instead (b, t, h for a qkv head view) measured
// 1.4x slower on (128, 4, 63, 32) float32.
template <typename T>
void rope_kernel(const Tensor& x, Tensor& y, int64_t start, double base, int direction) {
  const Shape& shape = x.shape();
  const Shape& st = x.strides();
  const int64_t rank = x.dim();
  const int64_t T_len = shape[rank - 2], d_h = shape[rank - 1], half = d_h / 2;
  const int64_t st_t = st[rank - 2], st_d = st[rank - 1];
  std::vector<T> cos_t, sin_t;  // (T, d_h/2) each
  rope_tables<T>(T_len, half, start, base, direction, cos_t, sin_t);
  const SliceFn<T> rotate = slice_fn<T>(half);
  // float32 slices with unit-stride rows run the CPU level's kernel (cpu/kernels.h): the
  // same arithmetic as rotate_slice, at the level's vector width.
  [[maybe_unused]] const cpu::Kernels* K = std::is_same_v<T, float> ? &cpu::kernels() : nullptr;

  // The leading index slices (b, h) are independent: split them across threads. Each range
  // finds its first slice's offset, then walks the leading dimensions by odometer.
  const int64_t lead_rank = rank - 2;
  int64_t outer = 1;
  for (int64_t d = 0; d < lead_rank; ++d) outer *= shape[d];
  const T* in_base = x.data_ptr<const T>();
  T* out_base = y.data_ptr<T>();
  parallel_for(outer, T_len * d_h * 3, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(static_cast<size_t>(lead_rank), 0);
    int64_t in_off = 0;
    for (int64_t d = lead_rank - 1, rest = begin; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
      in_off += idx[d] * st[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      const T* in = in_base + in_off;
      T* out = out_base + o * T_len * d_h;
      if constexpr (std::is_same_v<T, float>) {
        if (st_d == 1) K->rope(out, in, st_t, cos_t.data(), sin_t.data(), T_len, half);  // the CPU level's kernel
        else rotate(in, st_t, st_d, out, cos_t.data(), sin_t.data(), T_len, half);
      } else {
        rotate(in, st_t, st_d, out, cos_t.data(), sin_t.data(), T_len, half);
      }
      for (int64_t d = lead_rank - 1; d >= 0; --d) {
        in_off += st[d];
        if (++idx[d] < shape[d]) break;
        in_off -= st[d] * shape[d];
        idx[d] = 0;
      }
    }
  });
}

void check_rope(const char* op, const Tensor& x, double base) {
  if (x.dim() < 2)
    fail(op, "expects x of shape (..., T, d_h), got {}; add a position dimension with unsqueeze(0)", x.describe());
  if (x.size(-1) % 2 != 0)
    fail(op, "the head dimension d_h = {} of x {} is odd; RoPE rotates interleaved pairs (x_2i, x_2i+1), "
             "so d_h must be even (choose d and the number of heads so that d / H is even)",
         x.size(-1), x.describe());
  if (!(base > 0.0) || !std::isfinite(base))
    fail(op, "base must be a positive finite number (10000 is the usual choice), got {}", base);
}

// ---------------------------------------------------------------- rope
//
// forward, for each position t and pair i (θ = θ_ti):
//   [y_2i  ]   [cos θ  −sin θ] [x_2i  ]
//   [y_2i+1] = [sin θ   cos θ] [x_2i+1]      i.e. y = R_θ x, pair by pair; nothing else mixes.
//
// backward. y depends on x linearly through R_θ, so with g = dL/dy,
//   dL/dx = R_θᵀ g.
// R_θ is a rotation, hence orthogonal: R_θᵀ = R_θ⁻¹ = R_−θ (cos is even, sin is odd). So
//   dx_2i   =  g_2i cos θ + g_2i+1 sin θ,
//   dx_2i+1 = −g_2i sin θ + g_2i+1 cos θ,
// which is the forward kernel run on g with the angles negated: the backward calls this same
// op with the opposite direction (so it would record itself, were grad mode on).
//
// Saves nothing: R_θ depends only on T, d_h, base and the first position, all of which the
// backward closure holds as numbers; the tables are recomputed (T · d_h/2 cos/sin pairs,
// negligible beside the B · H · T · d_h rotations).
Tensor rotate(const char* op, const Tensor& x, int64_t start, double base, int direction, Site where) {
  check_rope(op, x, base);
  Tensor out = on_device(op, {x}, [&] {
    return dispatch_float(x.dtype(), op, [&]<typename T>() {
      Tensor y = empty(x.shape(), x.dtype());  // (..., T, d_h), contiguous
      if (y.numel() > 0) rope_kernel<T>(x.detach(), y, start, base, direction);
      return y;
    });
  }, HG_CUDA(cuda::rope(x.detach(), start, base, direction)));
  if (should_record({x}))
    record(op, {x}, {out}, {}, [start, base, direction, where](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
      return std::vector<Tensor>{rotate(direction > 0 ? "rope backward" : "rope", g[0], start, base, -direction, where)};
    }, DoubleBackward::composed, where);
  return out;
}

}  // namespace

Tensor rope(const Tensor& x, double base, Site where) { return rotate("rope", x, 0, base, +1, where); }

Tensor rope_at(const Tensor& x, int64_t start, double base, Site where) {
  if (start < 0) fail("rope_at", "the first position must be >= 0, got {} (x {})", start, x.describe());
  return rotate("rope_at", x, start, base, +1, where);
}

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

// ---------------------------------------------------------------- registry rows (ops/registry.h)

std::span<const OpInfo> positional_ops() {
  static const OpInfo rows[] = {
      {"rope", "nothing: R_θ comes from the positions, the backward rotates by −θ", "ops/positional.cpp"},
      {"rope_at", "nothing: as rope, from a given first position", "ops/positional.cpp"},
      {"rope backward", "nothing: it is rope by −θ, whose gradient is rope by +θ", "ops/positional.cpp", true, true, true,
       true, true},
  };
  return rows;
}

}  // namespace hg
