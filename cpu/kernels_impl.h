// cpu/kernels_impl.h — the kernels' one source, included by cpu/level_*.cpp, each
// compiled with its own instruction-set flags and with contraction off (CMakeLists.txt), into
// namespace hg::cpu::HG_CPU_LEVEL. Plain loops the compiler vectorises at the level's width;
// the reductions' lanes are spelled out (cpu/rows.h), so every level sums in one order.
#ifndef HG_CPU_LEVEL
#error "define HG_CPU_LEVEL (baseline, avx2 or avx512) before including cpu/kernels_impl.h"
#endif
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/rows.h"
#if defined(__FMA__)
#include "cpu/gemm_impl.h"  // the levels with FMA have a gemm of their own
#endif

namespace hg::cpu::HG_CPU_LEVEL {
namespace {

float max(const float* x, int64_t n) { return max_lanes(x, n); }

float sum(const float* x, int64_t n) {
  return sum_lanes<float>(n, [x](int64_t j) { return x[j]; });
}

void exp_shift(float* x, int64_t n, float m) {
  for (int64_t j = 0; j < n; ++j) x[j] = exp_fast(x[j] - m);
}

void exp_shift_to(float* __restrict y, const float* __restrict x, int64_t n, float m) {
  for (int64_t j = 0; j < n; ++j) y[j] = exp_fast(x[j] - m);
}

float exp_shift_sum(float* x, int64_t n, float m) {
  return sum_lanes<float>(n, [x, m](int64_t j) { return x[j] = exp_fast(x[j] - m); });
}

double exp_shift_sum_f64(const float* x, int64_t n, float m) {
  return sum_lanes<double>(n, [x, m](int64_t j) { return static_cast<double>(exp_fast(x[j] - m)); });
}

void scale(float* x, int64_t n, float s) {
  for (int64_t j = 0; j < n; ++j) x[j] *= s;
}

float dot(const float* a, const float* b, int64_t n) {
  return sum_lanes<float>(n, [a, b](int64_t j) { return a[j] * b[j]; });
}

void softmax_grad(float* __restrict g, const float* __restrict p, int64_t n, float c) {
  for (int64_t j = 0; j < n; ++j) g[j] = p[j] * (g[j] - c);
}

// o may be a or b itself (an in-place update); the loop reads element j before writing it, and
// each element once, so that is safe with the vectorised loop too.
#define HG_BINARY(NAME, OP)                                                  \
  void NAME(float* o, const float* a, const float* b, int64_t n) {         \
    for (int64_t j = 0; j < n; ++j) o[j] = a[j] OP b[j];                   \
  }
HG_BINARY(add, +)
HG_BINARY(sub, -)
HG_BINARY(mul, *)
HG_BINARY(div, /)
#undef HG_BINARY

template <int64_t HALF>
void rope_rows(float* __restrict y, int64_t y_row, const float* __restrict x, int64_t x_row, const float* __restrict c,
               const float* __restrict s, int64_t cs_row, int64_t rows, int64_t half) {
  if constexpr (HALF > 0) half = HALF;
  for (int64_t r = 0; r < rows; ++r, x += x_row, y += y_row, c += cs_row, s += cs_row) {
    // The rows are often far apart (a head's rows of the (B, T, 3d) qkv, 3d floats apart), too far
    // for the hardware to run ahead: ask for the lines 8 rows on, read and written. With it the
    // kernel's share of a 40-step TinyCharLM run fell from ~5 % to ~3.5 % of the samples
    // (bench/RESULTS.md, "RoPE inside the attention kernels").
    if (r + 8 < rows)
      for (int64_t b = 0; b < 2 * half; b += 16) {  // 16 floats: one 64-byte line
        __builtin_prefetch(x + 8 * x_row + b);
        __builtin_prefetch(y + 8 * y_row + b, 1);
      }
    for (int64_t i = 0; i < half; ++i) {
      // x0 c + x1 (−s) is x0 c − x1 s exactly (a negation is exact). Written as a sum because
      // GCC 12 turns the alternating "−, +" of the plain form into vfmaddsub — a fused multiply-add
      // despite -ffp-contract=off — and the wider levels would round differently from the baseline.
      const float x0 = x[2 * i], x1 = x[2 * i + 1], neg_s = -s[i];
      y[2 * i] = x0 * c[i] + x1 * neg_s;
      y[2 * i + 1] = x0 * s[i] + x1 * c[i];
    }
  }
}

// The usual head sizes d_h = 16, 32, 64, 128 get a pair loop of known length.
void rope(float* y, int64_t y_row, const float* x, int64_t x_row, const float* c, const float* s, int64_t cs_row,
          int64_t rows, int64_t half) {
  switch (half) {
    case 8: return rope_rows<8>(y, y_row, x, x_row, c, s, cs_row, rows, half);
    case 16: return rope_rows<16>(y, y_row, x, x_row, c, s, cs_row, rows, half);
    case 32: return rope_rows<32>(y, y_row, x, x_row, c, s, cs_row, rows, half);
    case 64: return rope_rows<64>(y, y_row, x, x_row, c, s, cs_row, rows, half);
    default: return rope_rows<0>(y, y_row, x, x_row, c, s, cs_row, rows, half);
  }
}

// torch.optim.AdamW's single-tensor step, operation by operation in its order; std::fma where
// PyTorch's kernels fuse (nn/optim.cpp says which and why). std::fma is exact, so the baseline's
// library call and AVX2's vfmadd give the same bits.
template <typename T>
void adamw(const AdamWConstants<T>& k, T* __restrict w, const T* __restrict g, T* __restrict m, T* __restrict v,
           int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const T mj = std::fma(k.one_minus_b1, g[j], m[j] * k.b1);
    const T vj = std::fma(k.one_minus_b2 * g[j], g[j], v[j] * k.b2);
    const T denom = std::sqrt(vj) / k.bc2_sqrt + k.eps;
    m[j] = mj;
    v[j] = vj;
    w[j] = w[j] * k.decay + k.neg_step * mj / denom;
  }
}

}  // namespace

extern const Kernels table;
const Kernels table = {
    .level = Capability::HG_CPU_LEVEL,
    .max = max,
    .sum = sum,
    .exp_shift = exp_shift,
    .exp_shift_to = exp_shift_to,
    .exp_shift_sum_f64 = exp_shift_sum_f64,
    .exp_shift_sum = exp_shift_sum,
    .scale = scale,
    .dot = dot,
    .softmax_grad = softmax_grad,
    .vadd = add,
    .vsub = sub,
    .vmul = mul,
    .vdiv = div,
    .rope = rope,
    .adamw_f32 = adamw<float>,
    .adamw_f64 = adamw<double>,
#if defined(__FMA__)
    .sgemm = gemm_detail::sgemm,
    .sgemm_packed_size = gemm_detail::packed_size,
    .sgemm_pack_b = gemm_detail::pack_b_whole,
    .sgemm_packed = gemm_detail::sgemm_packed,
#else
    .sgemm = nullptr,
    .sgemm_packed_size = nullptr,
    .sgemm_pack_b = nullptr,
    .sgemm_packed = nullptr,
#endif
};

}  // namespace hg::cpu::HG_CPU_LEVEL
