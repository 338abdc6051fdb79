// cuda/positional.cu — the kernels of the positions' device ops (host side: cuda/positional.cpp):
// rotary embedding (RoPE), the ALiBi bias, the sinusoidal table. They compute their angles and
// slopes in double and round once to the element type, as ops/positional.cpp does on the CPU.
#include "cuda/device_common.cuh"

namespace hg::cuda {

namespace {

// ---------------------------------------------------------------- rope
// One thread per pair (x_2i, x_2i+1) of a row t: y = R_θ x, θ = (start + t) · base^(−2i/d_h),
// direction −1 rotating by −θ (the backward). g spans (lead..., T, d_h/2): operand 0 is y
// (contiguous, pair stride 2), operand 1 is x (pair stride 2 · sd); the pair's second element is
// one `sd` further in x and one further in y.
template <typename T>
__global__ void rope_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t sd, int64_t T_len, int64_t half,
                            int64_t start, double base, int direction, Geometry<2> g) {
  HG_GRID_LOOP(e, g.numel) {
    int64_t off[2];
    offsets_of(g, e, off);
    const int64_t i = e % half, t = (e / half) % T_len;
    const double omega = pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
    const double theta = static_cast<double>(start + t) * omega;
    const T c = static_cast<T>(cos(theta)), s = static_cast<T>(direction * sin(theta));
    const T x0 = x[off[1]], x1 = x[off[1] + sd];
    y[off[0]] = mul_rn(x0, c) - mul_rn(x1, s);
    y[off[0] + 1] = mul_rn(x0, s) + mul_rn(x1, c);
  }
}

// ---------------------------------------------------------------- alibi, sinusoidal
// b[h−1, i, j] = 2^(−8h/H) · (j − i) for j ≤ i, −inf above the diagonal; b (H, T, T) contiguous.
template <typename T>
__global__ void alibi_kernel(T* __restrict__ b, int64_t H, int64_t T_len) {
  HG_GRID_LOOP(e, H * T_len * T_len) {
    const int64_t h = e / (T_len * T_len) + 1, i = (e / T_len) % T_len, j = e % T_len;
    const double slope = exp2(-8.0 * static_cast<double>(h) / static_cast<double>(H));
    b[e] = j <= i ? static_cast<T>(slope * static_cast<double>(j - i)) : neg_infinity<T>();
  }
}

// PE[t, c] = sin (c even) or cos (c odd) of t · 10000^(−(c − c mod 2)/d); PE (T, d) contiguous.
template <typename T>
__global__ void sinusoidal_kernel(T* __restrict__ pe, int64_t T_len, int64_t d) {
  HG_GRID_LOOP(e, T_len * d) {
    const int64_t t = e / d, c = e % d;
    const double angle = static_cast<double>(t) * pow(10000.0, -static_cast<double>(c - c % 2) / static_cast<double>(d));
    pe[e] = static_cast<T>(c % 2 == 0 ? sin(angle) : cos(angle));
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

cudaError_t launch_rope(Elem t, void* y, const void* x, int64_t sd, int64_t T_len, int64_t half, int64_t start,
                        double base, int direction, const Geometry<2>& g, cudaStream_t s) {
  if (g.numel <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    rope_kernel<T><<<grid_for(g.numel), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), sd, T_len,
                                                          half, start, base, direction, g);
  });
}

cudaError_t launch_alibi(Elem t, void* b, int64_t H, int64_t T_len, cudaStream_t s) {
  const int64_t n = H * T_len * T_len;
  if (n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    alibi_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(b), H, T_len);
  });
}

cudaError_t launch_sinusoidal(Elem t, void* pe, int64_t T_len, int64_t d, cudaStream_t s) {
  const int64_t n = T_len * d;
  if (n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    sinusoidal_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(pe), T_len, d);
  });
}

}  // namespace hg::cuda
