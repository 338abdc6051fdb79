// bench/fma_peak.h — the machine's float32 fused-multiply-add peak at the CPU kernel level in use
// (cpu/kernels.h), measured, so that every CPU figure can be printed as a share of what the cores
// can do rather than of what a library reaches.
//
// Each thread runs 12 independent chains of vector FMAs on registers (acc_i = acc_i · m + c):
// a core that issues two FMAs a cycle with a latency of 4–5 cycles needs 8–10 chains in flight to
// stay busy, and 12 leave room. Nothing touches memory inside the timed loop. A vector FMA is
// 2 · lanes flops (8 lanes at AVX2, 16 at AVX-512, 4 at the baseline's SSE2, which has no FMA and
// so counts a multiply and an add). All threads start together and the peak is the total flops
// over the slowest thread's time: the rate the cores sustain together.
#pragma once
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cpu/kernels.h"

namespace hg::bench {

namespace fma_detail {

// The 12 chains' multiplier keeps the accumulators finite for any number of iterations:
// acc · 0.999999 + 1e-6 converges to 1 instead of overflowing. The loop is a macro, not a
// template, because the intrinsics may only be inlined into a function compiled for their level
// (the target attribute), and a template called from one is not.
#define HG_FMA_CHAINS(V, SET, FMA, REDUCE)                                                           \
  const V m = SET(0.999999f), c = SET(1e-6f);                                                     \
  V a0 = SET(1.0f), a1 = SET(1.1f), a2 = SET(1.2f), a3 = SET(1.3f), a4 = SET(1.4f), a5 = SET(1.5f);  \
  V a6 = SET(1.6f), a7 = SET(1.7f), a8 = SET(1.8f), a9 = SET(1.9f), a10 = SET(2.0f), a11 = SET(2.1f); \
  for (int64_t i = 0; i < iters; ++i) {                                                            \
    a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);                \
    a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);                \
    a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);            \
  }                                                                                                \
  return REDUCE(a0) + REDUCE(a1) + REDUCE(a2) + REDUCE(a3) + REDUCE(a4) + REDUCE(a5) + REDUCE(a6) + \
         REDUCE(a7) + REDUCE(a8) + REDUCE(a9) + REDUCE(a10) + REDUCE(a11)

// (a store and a plain sum: GCC 12's _mm512_reduce_add_ps trips its own -Wuninitialized)
__attribute__((target("avx512f"))) inline float sum512(__m512 v) {
  alignas(64) float x[16];
  _mm512_store_ps(x, v);
  float t = 0;
  for (float e : x) t += e;
  return t;
}
__attribute__((target("avx512f"))) inline __m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
__attribute__((target("avx512f"))) inline float run_avx512(int64_t iters) {
  HG_FMA_CHAINS(__m512, _mm512_set1_ps, fma512, sum512);
}

__attribute__((target("avx2,fma"))) inline float sum256(__m256 v) {
  alignas(32) float x[8];
  _mm256_store_ps(x, v);
  return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
}
__attribute__((target("avx2,fma"))) inline __m256 fma256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
__attribute__((target("avx2,fma"))) inline float run_avx2(int64_t iters) {
  HG_FMA_CHAINS(__m256, _mm256_set1_ps, fma256, sum256);
}

// The baseline (SSE2) has no fused multiply-add: a multiply and an add, 2 flops a lane as well.
inline float sum128(__m128 v) {
  alignas(16) float x[4];
  _mm_store_ps(x, v);
  return x[0] + x[1] + x[2] + x[3];
}
inline __m128 muladd128(__m128 a, __m128 b, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
inline float run_sse2(int64_t iters) {
  HG_FMA_CHAINS(__m128, _mm_set1_ps, muladd128, sum128);
}

#undef HG_FMA_CHAINS

}  // namespace fma_detail

struct FmaPeak {
  double gflops = 0;         // all threads together
  int threads = 0;
  int lanes = 0;             // float32 lanes of one vector at this level
  cpu::Capability level{};   // the level measured (the one in use)
};

// The float32 FMA peak on `threads` threads at the kernel level in use, timed over about
// `seconds` (best of three tries, each of which starts every thread together).
inline FmaPeak measure_fma_peak(int threads, double seconds = 0.3) {
  using Clock = std::chrono::steady_clock;
  const cpu::Capability level = cpu::kernels().level;
  const int lanes = level == cpu::Capability::avx512 ? 16 : level == cpu::Capability::avx2 ? 8 : 4;
  auto body = [level](int64_t iters) {
    if (level == cpu::Capability::avx512) return fma_detail::run_avx512(iters);
    if (level == cpu::Capability::avx2) return fma_detail::run_avx2(iters);
    return fma_detail::run_sse2(iters);
  };
  threads = threads < 1 ? 1 : threads;
  // Calibrate on one thread: iterations that take about `seconds`.
  int64_t iters = 1 << 16;
  volatile float sink = 0;
  for (;;) {
    const auto t0 = Clock::now();
    sink = sink + body(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > seconds / 8 || iters > (int64_t{1} << 40)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / (s > 0 ? s : 1e-9));
      break;
    }
    iters *= 4;
  }
  FmaPeak best{0, threads, lanes, level};
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(static_cast<size_t>(threads));
    std::vector<float> out(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        const auto t0 = Clock::now();
        out[static_cast<size_t>(t)] = body(iters);
        secs[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - t0).count();
      });
    while (ready.load() < threads) {
    }
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    double slowest = 0;
    for (int t = 0; t < threads; ++t) {
      slowest = secs[static_cast<size_t>(t)] > slowest ? secs[static_cast<size_t>(t)] : slowest;
      sink = sink + out[static_cast<size_t>(t)];
    }
    const double flops = 2.0 * 12.0 * lanes * static_cast<double>(iters) * threads;
    const double g = flops / slowest * 1e-9;
    if (g > best.gflops) best.gflops = g;
  }
  return best;
}

}  // namespace hg::bench
