// ops/positional.h — positional schemes for attention (used by nn/tinycharlm).
#pragma once
#include "engine/tensor.h"

namespace hg {

// Rotary embedding on interleaved pairs: for x (..., T, d_h), position t and pair i
// (x_2i, x_2i+1) is rotated by angle θ = t · base^(−2i/d_h):
//   y_2i = x_2i cos θ − x_2i+1 sin θ,   y_2i+1 = x_2i sin θ + x_2i+1 cos θ.
// d_h must be even. Positions are 0..T-1. Backward: rotate the gradient by −θ.
Tensor rope(const Tensor& x, double base = 10000.0, Site where = Site::current());

// The same rotation with positions start..start+T-1 instead of 0..T-1 (a suffix of a longer
// sequence, e.g. decoding with a key/value cache). rope(x, base) == rope_at(x, 0, base).
Tensor rope_at(const Tensor& x, int64_t start, double base = 10000.0, Site where = Site::current());

// The fused projection's output cut into attention heads, with RoPE on q and k on the way:
// qkv (B, T, 3d) — q, k and v side by side, each H heads of d_h = d / H — gives q, k, v, each
// (B, H, T, d_h), q and k rotated by rope() (positions 0..T-1) when `rotate` (d_h even then). The same numbers as
//   split(qkv.view({B, T, 3, H, d_h}), {1, 1, 1}, 2), each squeezed and transposed to (B, H, T, d_h),
//   then rope(q), rope(k)
// in one pass over qkv and one tape entry; the backward writes dqkv in one pass too (the written-out
// path's backward: two rope backwards, then split's three strided copies). Off the CPU it runs
// that written-out path.
struct QkvHeads {
  Tensor q, k, v;  // (B, H, T, d_h) each
};
QkvHeads qkv_heads(const Tensor& qkv, int64_t heads, bool rotate = true, double base = 10000.0,
                   Site where = Site::current());

// ALiBi's additive score bias (H, T, T): slope_h · (j − i) for key j <= query i, with
// slope_h = 2^(−8h/H), h = 1..H; entries j > i are −inf (the causal mask built in).
Tensor alibi_bias(int64_t heads, int64_t T, DType dtype = DType::f32, Device device = Device::cpu);

// The sinusoidal table (T, d) of "Attention Is All You Need": PE[t, 2i] = sin(t / 10000^(2i/d)),
// PE[t, 2i+1] = cos(t / 10000^(2i/d)). A constant (no gradient).
Tensor sinusoidal_positions(int64_t T, int64_t d, DType dtype = DType::f32, Device device = Device::cpu);

}  // namespace hg
