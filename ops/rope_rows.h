// ops/rope_rows.h — RoPE's angle tables and row rotation (ops/positional.cpp), for the kernels
// that rotate queries and keys on the way into another op: attention_qkv's fused CPU kernels
// (ops/attention_cpu.cpp) call these very functions, so their rotations are rope()'s and
// qkv_heads()'s bit for bit. Internal to ops/.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace hg::rope_detail {

// cos θ_ti and sin θ_ti for t = start..start+T-1, pair i = 0..half-1, each (T, half) row-major,
// θ_ti = t · base^(−2i/d_h). Computed in double, rounded once; direction −1 gives the tables of
// −θ (sin negated), the rotation R_θᵀ of the backward.
template <typename E>
void tables(int64_t T_len, int64_t half, int64_t start, double base, int direction, std::vector<E>& cos_t,
            std::vector<E>& sin_t);

// Row t of y (rows y_ld apart) = R_θt (row t of x, rows x_ld apart), pair by pair, for t = 0..T-1,
// with the tables' rows; both rows unit-stride, 2·half long. float runs the CPU level's kernel.
template <typename E>
void rotate_rows(const E* x, int64_t x_ld, E* y, int64_t y_ld, const E* cos_t, const E* sin_t, int64_t T_len,
                 int64_t half);

// qkv_heads' checks of qkv (B, T, 3d), the number of heads and the base: an Error naming `op`.
void check_qkv_heads(const char* op, const Tensor& qkv, int64_t heads, bool rotate, double base);

// Part `part` of qkv (B, T, 3d) — 0 q, 1 k, 2 v — as its (B, H, T, d_h) view of heads, unrotated:
// split's piece, no copy. qkv as check_qkv_heads accepts it.
Tensor head_view(const Tensor& qkv, int64_t heads, int64_t part);

// The backward of qkv_heads written out with recorded ops (differentiable again): dqkv (B, T, 3d)
// from the gradients of q, k, v (B, H, T, d_h) — q's and k's rotated by −θ when `rotate` — placed
// back side by side.
Tensor qkv_heads_grad(const Tensor& gq, const Tensor& gk, const Tensor& gv, const Shape& qkv_shape, bool rotate,
                      double base, Site where);

}  // namespace hg::rope_detail
