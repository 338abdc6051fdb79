// ops/positional.cpp — rotary embedding (RoPE) and the heads of a fused qkv (the fixed tables,
// ALiBi's bias and the sinusoidal positions, are in ops/position_tables.cpp).
//
// Notation (Section 10.4, Eq. 10.4.4; TinyCharLM of Section 10.6): a head's queries or keys
// x (..., T, d_h), position t, pair i = 0..d_h/2-1 made of the interleaved coordinates
// (x_2i, x_2i+1), frequency ω_i = base^(−2i/d_h), angle θ_ti = t · ω_i.
#include "ops/positional.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cuda/ops.h"
#include "cpu/row_rules.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "ops/broadcast.h"
#include "ops/device.h"
#include "ops/indexing.h"
#include "ops/registry.h"
#include "ops/rope_rows.h"

namespace hg {

namespace {

// One (T, d_h) slice: row t of y = R_θ (row t of x), pair by pair, with the tables' row t.
// x's rows are st_t apart and its coordinates st_d apart; y's rows y_row apart, unit stride
// within (2·half for a contiguous slice). HALF > 0 fixes
// d_h/2 at compile time so the pair loop unrolls completely: on the model's (128, 4, 63, 32)
// float32 head view of the qkv output that took 0.4 ms instead of 2 ms (one thread) with the
// same loop and a runtime trip count — 32k rows of only 16 pairs, each row's loads strided 3d
// apart, and the unrolled loop keeps more of them in flight.
template <typename T, int64_t HALF>
void rotate_slice(const T* x, int64_t st_t, int64_t st_d, T* y, int64_t y_row, const T* c, const T* s, int64_t T_len,
                  int64_t half) {
  if constexpr (HALF > 0) half = HALF;
  for (int64_t t = 0; t < T_len; ++t, x += st_t, y += y_row, c += half, s += half) {
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
using SliceFn = void (*)(const T*, int64_t, int64_t, T*, int64_t, const T*, const T*, int64_t, int64_t);

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

}  // namespace

// The tables (ops/rope_rows.h): computed in double (t · ω_i reaches ~T radians, where float32
// angles lose digits) and then rounded once to the element type.
template <typename E>
void rope_detail::tables(int64_t T_len, int64_t half, int64_t start, double base, int direction, std::vector<E>& cos_t,
                         std::vector<E>& sin_t) {
  cos_t.resize(static_cast<size_t>(T_len * half));
  sin_t.resize(static_cast<size_t>(T_len * half));
  const double d_h = static_cast<double>(2 * half);
  std::vector<double> omega(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) omega[i] = std::pow(base, -2.0 * static_cast<double>(i) / d_h);
  for (int64_t t = 0; t < T_len; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const double theta = static_cast<double>(start + t) * omega[i];
      cos_t[t * half + i] = static_cast<E>(std::cos(theta));
      sin_t[t * half + i] = static_cast<E>(direction * std::sin(theta));
    }
}

// Unit-stride rows: float32 runs the CPU level's kernel (cpu/kernels.h), the same arithmetic as
// rotate_slice at the level's vector width; float64 the unrolled slice loop.
template <typename E>
void rope_detail::rotate_rows(const E* x, int64_t x_ld, E* y, int64_t y_ld, const E* c, const E* s, int64_t T_len,
                              int64_t half) {
  if constexpr (std::is_same_v<E, float>) cpu::level_kernels<E>()->rope(y, y_ld, x, x_ld, c, s, half, T_len, half);
  else slice_fn<E>(half)(x, x_ld, 1, y, y_ld, c, s, T_len, half);
}

template void rope_detail::tables<float>(int64_t, int64_t, int64_t, double, int, std::vector<float>&, std::vector<float>&);
template void rope_detail::tables<double>(int64_t, int64_t, int64_t, double, int, std::vector<double>&,
                                          std::vector<double>&);
template void rope_detail::rotate_rows<float>(const float*, int64_t, float*, int64_t, const float*, const float*,
                                              int64_t, int64_t);
template void rope_detail::rotate_rows<double>(const double*, int64_t, double*, int64_t, const double*, const double*,
                                               int64_t, int64_t);

namespace {

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
  rope_detail::tables<T>(T_len, half, start, base, direction, cos_t, sin_t);
  const SliceFn<T> rotate = slice_fn<T>(half);

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
      if (st_d == 1) rope_detail::rotate_rows(in, st_t, out, d_h, cos_t.data(), sin_t.data(), T_len, half);
      else rotate(in, st_t, st_d, out, d_h, cos_t.data(), sin_t.data(), T_len, half);
      for (int64_t d = lead_rank - 1; d >= 0; --d) {
        in_off += st[d];
        if (++idx[d] < shape[d]) break;
        in_off -= st[d] * shape[d];
        idx[d] = 0;
      }
    }
  });
}

void check_base(const char* op, double base) {
  if (!(base > 0.0) || !std::isfinite(base))
    fail(op, "base must be a positive finite number (10000 is the usual choice), got {}", base);
}

void check_rope(const char* op, const Tensor& x, double base) {
  if (x.dim() < 2)
    fail(op, "expects x of shape (..., T, d_h), got {}; add a position dimension with unsqueeze(0)", x.describe());
  if (x.size(-1) % 2 != 0)
    fail(op, "the head dimension d_h = {} of x {} is odd; RoPE rotates interleaved pairs (x_2i, x_2i+1), "
             "so d_h must be even (choose d and the number of heads so that d / H is even)",
         x.size(-1), x.describe());
  check_base(op, base);
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
// tangent. Linear in x as well: ẏ = R_θ ẋ, the same rotation of the tangent.
constexpr OpDef kRope{.name = "rope", .saves_nothing = "R_θ is recomputed (T · d_h/2 cos/sin pairs); the backward rotates by −θ",
                      .derivation = "ops/positional.cpp", .tangent = "ẏ = R_θ ẋ"};
constexpr OpDef kRopeAt{.name = "rope_at", .saves_nothing = "as rope, from a given first position",
                        .derivation = "ops/positional.cpp", .tangent = "ẏ = R_θ ẋ"};
constexpr OpDef kRopeBackward{.name = "rope backward",
                              .saves_nothing = "it is rope by −θ, whose gradient is rope by +θ",
                              .derivation = "ops/positional.cpp", .from_backward = true, .tangent = "ẏ = R_−θ ẋ"};
Tensor rotate(const OpDef& def, const Tensor& x, int64_t start, double base, int direction, Site where) {
  const char* op = def.c_str();
  check_rope(op, x, base);
  Tensor out = on_device(op, {x}, [&] {
    return dispatch_float(x.dtype(), op, [&]<typename T>() {
      Tensor y = empty(x.shape(), x.dtype());  // (..., T, d_h), contiguous
      if (y.numel() > 0) rope_kernel<T>(x.detach(), y, start, base, direction);
      return y;
    });
  }, HG_CUDA(cuda::rope(x.detach(), start, base, direction)));
  if (should_record({x}))
    record(def, {x}, {out}, {}, [start, base, direction, where](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{rotate(direction > 0 ? kRopeBackward : kRope, g[0], start, base, -direction, where)};
    }, [&](const std::vector<Tensor>& d) { return std::vector<Tensor>{rotate(def, d[0], start, base, direction, where)}; },
    where);
  return out;
}

}  // namespace

Tensor rope(const Tensor& x, double base, Site where) { return rotate(kRope, x, 0, base, +1, where); }

Tensor rope_at(const Tensor& x, int64_t start, double base, Site where) {
  if (start < 0) fail(kRopeAt.c_str(), "the first position must be >= 0, got {} (x {})", start, x.describe());
  return rotate(kRopeAt, x, start, base, +1, where);
}

// ---------------------------------------------------------------- qkv_heads
//
// Index qkv (B, T, 3d) as (b, t, p, h, i): part p (0 q, 1 k, 2 v), head h, coordinate i < d_h.
// forward:  out (2, B, H, T, d_h), fresh: out[p, b, h, t] = R_θt qkv[b, t, p, h] for p = 0 (q),
//           1 (k), rope's rotation; q and k are its two contiguous halves (attention's gemms read a
//           contiguous (T, d_h) block per head faster than rows 2d apart: 3 ms a step at the
//           model's size). v — and q and k when not `rotate` — are (B, H, T, d_h) views of qkv
//           itself, as split's pieces are: never copied.
// backward: each output's gradient flows back through its own part only, so, with g_p = dL/d(part p),
//           dqkv[b, t, p, h] = R_θtᵀ g_p[b, h, t] for p = 0, 1 (R_θᵀ = R_−θ, as in rope's backward)
//           and g_2[b, h, t] for v: one pass over dqkv, token by token.
// Saves nothing: the angles come from the positions.
namespace {

// The rows of one part: for every (b, t), H rows of d_h — src row (b, t, h) at
// src + b·sB + t·sT + h·sH (coordinates sD apart), dst row at dst + b·dB + t·dT + h·dH (unit
// stride) — rotated by position t's angles when cos_t is given, else copied.
struct PartWalk {
  int64_t B, T, H, d_h;
  int64_t sB, sT, sH, sD;  // source strides, elements
  int64_t dB, dT, dH;      // destination strides, elements
};

template <typename E>
void move_part(const PartWalk& w, const E* src, E* dst, const std::vector<E>* cos_t, const std::vector<E>* sin_t) {
  const int64_t half = w.d_h / 2;
  const SliceFn<E> rotate = slice_fn<E>(half);
  // One (b, h) slice at a time, its T rows in order: measured faster than token by token (all
  // heads of row t, then t + 1), as for rope's own kernel above.
  parallel_for(w.B * w.H, w.T * w.d_h * 2, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / w.H, h = bh % w.H;
      const E* x = src + b * w.sB + h * w.sH;
      E* y = dst + b * w.dB + h * w.dH;
      if (!cos_t) {  // v: copied
        for (int64_t t = 0; t < w.T; ++t, x += w.sT, y += w.dT) {
          if (w.sD == 1) std::copy(x, x + w.d_h, y);
          else for (int64_t i = 0; i < w.d_h; ++i) y[i] = x[i * w.sD];
        }
        continue;
      }
      const E* c = cos_t->data();
      const E* s = sin_t->data();
      if (w.sD == 1) rope_detail::rotate_rows(x, w.sT, y, w.dT, c, s, w.T, half);  // as attention_qkv's kernels
      else rotate(x, w.sT, w.sD, y, w.dT, c, s, w.T, half);  // rope's own slice loop, any strides
    }
  });
}


// The written-out path (any device; under create_graph the backward's recorded ops).
QkvHeads qkv_heads_composed(const Tensor& qkv, int64_t heads, bool rot, double base, Site where) {
  const int64_t B = qkv.size(0), T = qkv.size(1), d = qkv.size(2) / 3, d_h = d / heads;
  std::vector<Tensor> parts = split(qkv.view({B, T, 3, heads, d_h}), {1, 1, 1}, 2, where);  // (B, T, 1, H, d_h) each
  auto as_heads = [](const Tensor& x) { return x.squeeze(2).transpose(1, 2); };             // (B, H, T, d_h)
  QkvHeads r{as_heads(parts[0]), as_heads(parts[1]), as_heads(parts[2])};
  if (rot) {
    r.q = rotate(kRope, r.q, 0, base, +1, where);
    r.k = rotate(kRope, r.k, 0, base, +1, where);
  }
  return r;
}

}  // namespace

constexpr OpDef kQkvHeads{.name = "qkv_heads",
                          .saves_nothing = "the head layout and RoPE's angles come from the shapes",
                          .derivation = "ops/positional.cpp",
                          .fused = "one strided pass that moves the gradients back and rotates by −θ",
                          .tangent = "q̇, k̇, v̇ = qkv_heads(q̇kv): the same split, layout and rotation"};
QkvHeads qkv_heads(const Tensor& qkv, int64_t heads, bool rot, double base, Site where) {
  const char* op = kQkvHeads.c_str();
  rope_detail::check_qkv_heads(op, qkv, heads, rot, base);
  if (qkv.device() != Device::cpu) return qkv_heads_composed(qkv, heads, rot, base, where);
  const int64_t B = qkv.size(0), T = qkv.size(1), d = qkv.size(2) / 3, H = heads, d_h = d / H;
  const Shape& st = qkv.strides();  // qkv (B, T, 3d): part p, head h, coordinate i at column p·d + h·d_h + i
  // v, and q and k when not rotated, are views of qkv itself, as split's pieces are: no copy.
  QkvHeads r{rope_detail::head_view(qkv, H, 0), rope_detail::head_view(qkv, H, 1), rope_detail::head_view(qkv, H, 2)};
  if (rot) {  // rotated q and k: contiguous (B, H, T, d_h) halves of one fresh (2, B, H, T, d_h) buffer
    Tensor out = empty({2, B, H, T, d_h}, qkv.dtype());  // every element written below
    if (out.numel() > 0)
      dispatch_float(qkv.dtype(), op, [&]<typename E>() {
        std::vector<E> cos_t, sin_t;
        rope_detail::tables<E>(T, d_h / 2, 0, base, +1, cos_t, sin_t);
        const E* x = qkv.data_ptr<const E>();
        E* y = out.data_ptr<E>();
        for (int64_t p = 0; p < 2; ++p) {
          const PartWalk w{B, T, H, d_h, st[0], st[1], d_h * st[2], st[2], H * T * d_h, d_h, T * d_h};
          move_part<E>(w, x + p * d * st[2], y + p * B * H * T * d_h, &cos_t, &sin_t);
        }
      });
    r.q = out.select(0, 0);
    r.k = out.select(0, 1);
  }
  if (should_record({qkv})) {
    const DType dt = qkv.dtype();
    const Shape shape = qkv.shape();
    record(kQkvHeads, {qkv}, {r.q, r.k, r.v}, {}, [=](const std::vector<Tensor>& g, const Saved&) {
      return std::vector<Tensor>{rope_detail::qkv_heads_grad(g[0], g[1], g[2], shape, rot, base, where)};
    }, [=](const std::vector<Tensor>& g, const Saved&) {
      Tensor dqkv = empty({B, T, 3 * d}, dt);  // (B, T, 3d), every element written below
      if (dqkv.numel() > 0)
        dispatch_float(dt, "qkv_heads backward", [&]<typename E>() {
          std::vector<E> cos_t, sin_t;
          rope_detail::tables<E>(T, d_h / 2, 0, base, -1, cos_t, sin_t);  // the angles −θ: R_θᵀ
          for (int64_t p = 0; p < 3; ++p) {
            const Tensor& gp = g[static_cast<size_t>(p)];  // (B, H, T, d_h), any strides
            const Shape& gs = gp.strides();
            const PartWalk w{B, T, H, d_h, gs[0], gs[2], gs[1], gs[3], T * 3 * d, 3 * d, d_h};
            const bool turn = rot && p < 2;
            move_part<E>(w, gp.data_ptr<const E>(), dqkv.data_ptr<E>() + p * d, turn ? &cos_t : nullptr,
                         turn ? &sin_t : nullptr);
          }
        });
      return std::vector<Tensor>{dqkv};
    }, [&](const std::vector<Tensor>& dots) {
      const QkvHeads t = qkv_heads(dots[0], heads, rot, base, where);
      return std::vector<Tensor>{t.q, t.k, t.v};
    }, where);
  }
  return r;
}

void rope_detail::check_qkv_heads(const char* op, const Tensor& qkv, int64_t heads, bool rot, double base) {
  if (!qkv.defined()) fail(op, "qkv is undefined; pass the (B, T, 3d) output of the fused q, k, v projection");
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0)
    fail(op, "expects qkv (B, T, 3d), q, k and v side by side on the last dimension; got {}", qkv.describe());
  const int64_t d = qkv.size(2) / 3;
  if (heads < 1 || d % heads != 0)
    fail(op, "cannot cut d = {} (qkv {}) into {} heads; the number of heads must divide d", d, qkv.describe(),
         heads);
  if (rot && (d / heads) % 2 != 0)
    fail(op, "the head dimension d_h = d / H = {} / {} = {} is odd; RoPE rotates interleaved pairs, so d_h must "
         "be even (choose d and the number of heads so that d / H is even)", d, heads, d / heads);
  check_base(op, base);
}

Tensor rope_detail::head_view(const Tensor& qkv, int64_t heads, int64_t part) {
  const Shape& st = qkv.strides();  // qkv (B, T, 3d): part p, head h, coordinate i at column p·d + h·d_h + i
  const int64_t B = qkv.size(0), T = qkv.size(1), d = qkv.size(2) / 3, d_h = d / heads;
  return make_view(qkv, {B, heads, T, d_h}, {st[0], d_h * st[2], st[1], st[2]}, qkv.offset() + part * d * st[2]);
}

// The written-out path's backward (ops/rope_rows.h): each (B, H, T, d_h) gradient back to
// (B, T, 1, H, d_h), q's and k's through rope's backward, then the three side by side.
Tensor rope_detail::qkv_heads_grad(const Tensor& gq, const Tensor& gk, const Tensor& gv, const Shape& qkv_shape,
                                   bool rot, double base, Site where) {
  auto back = [&](const Tensor& gp, bool turn) {
    const Tensor x = turn ? rotate(kRopeBackward, gp, 0, base, -1, where) : gp;
    return x.transpose(1, 2).unsqueeze(2);
  };
  return concat({back(gq, rot), back(gk, rot), back(gv, false)}, 2).reshape(qkv_shape);
}

// ---------------------------------------------------------------- the definitions, for the registry
std::span<const OpDef* const> positional_ops() {
  static const OpDef* const defs[] = {&kRope, &kRopeAt, &kQkvHeads, &kRopeBackward};
  return defs;
}

}  // namespace hg
