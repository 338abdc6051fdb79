// bench/bench_gemm.cpp — the float32 products handgrad runs, on OpenBLAS and on handgrad's own
// kernel (ops/gemm.h), side by side in one run, as GFLOP/s and as a share of the FMA peak measured
// in the same run (bench/fma_peak.h). The data for ops/gemm.cpp's table.
//
//   bench_gemm [--threads N] [--reps R] [--json FILE]
//
// Two groups of shapes. "step": the TinyCharLM step's products (vocab 64, d 128, 4 heads, MLP 512,
// a batch of 128 × 63 positions = 8064 rows) through hg::matmul on N threads, as the step runs them
// (split by rows, or by columns for a weight gradient), against the N-thread peak. "tile": the tiled
// attention's per-tile products, (128 query rows, 256 keys, d_k 64), on one thread each, N at once
// (one per thread, as the tiled kernels run them), against the N-thread peak. Each figure is the
// median of R rounds, the two implementations alternating within each round.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "engine/strided.h"
#include "fma_peak.h"
#include "gpu_bench_util.h"
#include "handgrad.h"

using namespace hg;

namespace {

struct Shape3 {
  const char* name;
  bool ta, tb;
  int64_t M, N, K;
};

// The step's products (x @ W; dX = dY Wᵀ; dW = Xᵀ dY, and the same with W stored transposed) and the attention tile's (S = Q Kᵀ; A += P V;
// dV += Pᵀ dO; dP = dO Vᵀ; dQ += dS K; dK += dSᵀ Q).
const std::vector<Shape3> kStep = {
    {"x W_qkv", false, false, 8064, 384, 128},   {"x W_o", false, false, 8064, 128, 128},
    {"x W_up", false, false, 8064, 512, 128},    {"h W_down", false, false, 8064, 128, 512},
    {"x Eᵀ (head)", false, true, 8064, 64, 128}, {"dY W_qkvᵀ", false, true, 8064, 128, 384},
    {"dY W_downᵀ", false, true, 8064, 512, 128}, {"dY W_upᵀ", false, true, 8064, 128, 512},
    {"xᵀ dY_qkv", true, false, 128, 384, 8064},  {"hᵀ dY_down", true, false, 512, 128, 8064},
    {"dLᵀ x (head)", true, false, 64, 128, 8064},
    // as TinyCharLM's Linear stores W (out, in): y = x Wᵀ, dX = dY W, and the head's dH = dL E
    {"x Wᵀ_qkv", false, true, 8064, 384, 128},  {"dY W_qkv", false, false, 8064, 128, 384},
    {"x Wᵀ_o", false, true, 8064, 128, 128},    {"dY W_o", false, false, 8064, 128, 128},
    {"xᵀ dY_o", true, false, 128, 128, 8064},   {"dL E (head)", false, false, 8064, 128, 64},
};
const std::vector<Shape3> kTile = {
    {"S = Q Kᵀ", false, true, 128, 256, 64},  {"A += P V", false, false, 128, 64, 256},
    {"dV += Pᵀ dO", true, false, 256, 64, 128}, {"dK += dSᵀ Q", true, false, 256, 64, 128},
    // the step's fused attention at T = 63, d_k 32: its second causal row block (31 queries, 63 keys)
    {"S = Q Kᵀ 63", false, true, 31, 63, 32},   {"O = P V 63", false, false, 31, 32, 63},
    {"dV = Pᵀ dO 63", true, false, 63, 32, 31},  {"dP = dO Vᵀ 63", false, true, 31, 63, 32},
    {"dQ = dS K 63", false, false, 31, 32, 63},  {"dK = dSᵀ Q 63", true, false, 63, 32, 31},
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<float> random_floats(int64_t n, std::mt19937& gen) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(gen);
  return v;
}

// Seconds for one product of the step's shape through hg::matmul (median over a few calls).
double time_step_product(const Shape3& s, GemmImpl impl, const Tensor& a, const Tensor& b) {
  ForceGemm force(impl);
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Tensor c = matmul(s.ta ? a.transpose(0, 1) : a, s.tb ? b.transpose(0, 1) : b);
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Seconds for `calls` tile products on every thread at once (each thread its own operands).
double time_tile_product(const Shape3& s, GemmImpl impl, int calls, std::vector<std::vector<float>>& buf) {
  ForceGemm force(impl);
  const int threads = num_threads();
  const auto t0 = std::chrono::steady_clock::now();
  parallel_for(threads, int64_t{1} << 40, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      float* A = buf[3 * w].data();
      float* B = buf[3 * w + 1].data();
      float* C = buf[3 * w + 2].data();
      const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
      for (int i = 0; i < calls; ++i) gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A, lda, B, ldb, 1.0f, C, s.N);
    }
  });
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      fmt::print("usage: bench_gemm [--threads N] [--reps R] [--json FILE]\n"
                 "handgrad's float32 products on OpenBLAS and on handgrad's own kernel, beside the FMA peak.\n");
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "bench_gemm: {} needs a value (see --help)\n", k);
      return 2;
    }
    const std::string v = argv[++i];
    try {
      if (k == "--threads") threads = static_cast<int>(bench::whole_number(k, v));
      else if (k == "--reps") reps = static_cast<int>(bench::whole_number(k, v));
      else if (k == "--json") json = v;
      else {
        fmt::print(stderr, "bench_gemm: unknown option {} (see --help)\n", k);
        return 2;
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "bench_gemm: {}\n", e.what());
      return 2;
    }
  }
  if (threads < 1 || reps < 1) {
    fmt::print(stderr, "bench_gemm: --threads and --reps must be at least 1\n");
    return 2;
  }
  bench::apply_threads(threads, argv);
  if (!own_gemm_available()) {
    fmt::print("bench_gemm: skipped: the {} CPU level has no gemm of handgrad's own (avx2 and avx512 do)\n",
               cpu::name(cpu::kernels().level));
    return 0;
  }
  const bench::FmaPeak peak = bench::measure_fma_peak(threads);
  fmt::print("{}: {} kernels, OpenBLAS {}; FMA peak {:.1f} GFLOP/s on {} thread{}\n", bench::cpu_model(),
             cpu::name(cpu::kernels().level), blas_kernel_name(), peak.gflops, threads, threads == 1 ? "" : "s");
  fmt::print("{:<14} {:>2}{:>2} {:>5} {:>5} {:>5} | {:>9} {:>5} | {:>9} {:>5} | {:>6} {:>6}\n", "product", "tA", "tB",
             "M", "N", "K", "openblas", "share", "handgrad", "share", "ratio", "table");
  std::mt19937 gen(7);
  Generator tgen(7);
  std::vector<std::string> rows;
  auto report = [&](const char* group, const Shape3& s, std::vector<double> ob, std::vector<double> hg_) {
    std::sort(ob.begin(), ob.end());
    std::sort(hg_.begin(), hg_.end());
    const double flop = 2.0 * static_cast<double>(s.M * s.N * s.K);
    const double g_ob = flop / ob[ob.size() / 2] * 1e-9, g_hg = flop / hg_[hg_.size() / 2] * 1e-9;
    const char* table = name(gemm_table(s.ta, s.tb, s.M, s.N, s.K));
    fmt::print("{:<14} {:>2}{:>2} {:>5} {:>5} {:>5} | {:>9.1f} {:>4.0f}% | {:>9.1f} {:>4.0f}% | {:>6.2f} {:>8}\n", s.name,
               s.ta ? "T" : "N", s.tb ? "T" : "N", s.M, s.N, s.K, g_ob, 100 * g_ob / peak.gflops, g_hg,
               100 * g_hg / peak.gflops, g_hg / g_ob, table);
    rows.push_back(fmt::format("{{\"group\": \"{}\", \"product\": \"{}\", \"trans_a\": {}, \"trans_b\": {}, \"M\": {}, "
                               "\"N\": {}, \"K\": {}, \"openblas_gflops\": {:.2f}, \"handgrad_gflops\": {:.2f}, "
                               "\"table\": \"{}\"}}",
                               group, s.name, s.ta, s.tb, s.M, s.N, s.K, g_ob, g_hg, table));
  };
  fmt::print("step products, hg::matmul on {} threads:\n", threads);
  for (const Shape3& s : kStep) {
    Tensor a = randn(s.ta ? Shape{s.K, s.M} : Shape{s.M, s.K}, tgen);
    Tensor b = randn(s.tb ? Shape{s.N, s.K} : Shape{s.K, s.N}, tgen);
    std::vector<double> ob, hg_;
    for (int r = 0; r < reps; ++r) {
      ob.push_back(time_step_product(s, GemmImpl::openblas, a, b));
      hg_.push_back(time_step_product(s, GemmImpl::handgrad, a, b));
    }
    report("step", s, ob, hg_);
  }
  fmt::print("attention tile products, one per thread, {} at once:\n", threads);
  for (const Shape3& s : kTile) {
    std::vector<std::vector<float>> buf;
    for (int t = 0; t < threads; ++t) {
      buf.push_back(random_floats(s.M * s.K, gen));
      buf.push_back(random_floats(s.K * s.N, gen));
      buf.push_back(std::vector<float>(static_cast<size_t>(s.M * s.N), 0.0f));
    }
    const int calls = static_cast<int>(std::max<double>(1.0, 2e8 / (2.0 * s.M * s.N * s.K)));
    std::vector<double> ob, hg_;
    for (int r = 0; r < reps; ++r) {
      ob.push_back(time_tile_product(s, GemmImpl::openblas, calls, buf) / (calls * threads));
      hg_.push_back(time_tile_product(s, GemmImpl::handgrad, calls, buf) / (calls * threads));
    }
    report("tile", s, ob, hg_);
  }
  const std::string line = fmt::format("{{{}, \"threads\": {}, \"fma_peak_gflops\": {:.2f}, \"products\": [{}]}}",
                                       bench::machine_json_fields(), threads, peak.gflops, fmt::join(rows, ", "));
  if (!json.empty()) {
    std::ofstream f(json);
    f << line << "\n";
    f.flush();
    if (!f) {
      fmt::print(stderr, "bench_gemm: could not write {}\n", json);
      return 1;
    }
    fmt::print(stderr, "wrote {}\n", json);
  } else {
    fmt::print("{}\n", line);
  }
  return 0;
}
