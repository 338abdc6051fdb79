// cuda/optim.cu — the fused AdamW update's kernel (host side: cuda/optim.cpp). It performs the
// CPU's operations in the CPU's order with the same roundings (nn/optim.cpp), so given the same
// gradients the GPU and CPU updates are the same bits.
#include "cuda/device_common.cuh"

namespace hg::cuda {

namespace {

__device__ inline float dfma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double dfma(double a, double b, double c) { return fma(a, b, c); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }

// ---------------------------------------------------------------- AdamW
// m = b1 m + (1 − b1) g;  v = b2 v + (1 − b2) g²;  w = w · decay + neg_step · m / (√v / bc2_sqrt + eps)
// with nn/optim.cpp's fused multiply-adds exactly where it has them and every other product
// rounded on its own (mul_rn: nvcc would otherwise contract w · decay + ... into one fma).
template <typename T>
struct AdamWConsts {
  T decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, neg_step;
};

template <typename T>
__global__ void adamw_kernel(T* __restrict__ w, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                             AdamWConsts<T> c, int64_t n) {
  HG_GRID_LOOP(k, n) {
    const T gk = g[k];
    const T mk = dfma(c.one_minus_b1, gk, mul_rn(m[k], c.b1));
    const T vk = dfma(mul_rn(c.one_minus_b2, gk), gk, mul_rn(v[k], c.b2));
    const T denom = add_rn(div_rn(dsqrt(vk), c.bc2_sqrt), c.eps);
    m[k] = mk;
    v[k] = vk;
    w[k] = add_rn(mul_rn(w[k], c.decay), div_rn(mul_rn(c.neg_step, mk), denom));
  }
}

template <typename T>
AdamWConsts<T> consts(const AdamWScalars& s) {
  return {static_cast<T>(s.decay),    static_cast<T>(s.b1),       static_cast<T>(s.one_minus_b1),
          static_cast<T>(s.b2),       static_cast<T>(s.one_minus_b2), static_cast<T>(s.bc2_sqrt),
          static_cast<T>(s.eps),      static_cast<T>(s.neg_step)};
}

}  // namespace

cudaError_t launch_adamw(Elem t, void* w, const void* g, void* m, void* v, const AdamWScalars& c, int64_t n,
                         cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return launch_float(t, [&](auto zero) {
    using T = decltype(zero);
    adamw_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(w), static_cast<const T*>(g),
                                                     static_cast<T*>(m), static_cast<T*>(v), consts<T>(c), n);
  });
}

}  // namespace hg::cuda
