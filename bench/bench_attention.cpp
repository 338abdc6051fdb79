// bench/bench_attention.cpp — causal attention on the CPU, one path, one T: forward + backward,
// the forward alone, or the forward with its tangent (forward mode).
//
// Q, K, V of shape (B, H, T, d_k) = (1, 8, T, 64), float32; one iteration is, by --mode,
//   fwdbwd   o = attention(q, k, v, {.causal = true, .path = P});  o.backward(dO)   // dO: fixed random (B, H, T, d_k)
//            with the leaves' gradients dropped between iterations (the default);
//   forward  o = attention(q, k, v, ...) under NoGradGuard;
//   jvp      (o, ȯ) = jvp(attention, {q, k, v}, {q̇, k̇, v̇}) under NoGradGuard, the tangents fixed random. Prints one line of JSON: the median
// wall time of the timed iterations, and the peak extra memory of the first call. bench/run-attention
// runs it for each path and T beside PyTorch (bench/attention_cpu.py) and prints the table.
//
//   bench_attention [--T 1024] [--path materialized|tiled|automatic] [--mode fwdbwd|forward|jvp]
//                   [--threads N] [--warmup 1] [--iters 5] [--batch 1] [--heads 8] [--dk 64] [--seed 0]
//
// Memory: the program is meant to run once per (path, T), in a fresh process. After one call at
// T = 64 (so that the thread pool's start and OpenBLAS's buffers are not counted), before the
// first call at T it reads the resident size (VmRSS) and resets the peak
// (/proc/self/clear_refs, "5"); after the call, forward and backward, the peak (VmHWM) minus that
// resident size is the call's peak extra memory: everything the call touched at once, the saved
// tensors, the gradients, the scratch and what the caching allocator keeps (as a user sees it;
// HANDGRAD_CPU_CACHE=0 turns the cache off). Later iterations reuse the cached blocks, so only
// the first call measures this. Then --warmup untimed and --iters timed iterations.
//
// --threads N as in bench_tinycharlm (bench/bench_util.h): N threads in all, OpenBLAS kept to one
// inside handgrad's pool. Exit status: 0 done; 1 the attention call failed with an hg::Error (the
// JSON line then carries "error": its message; e.g. a path not implemented yet); 2 bad arguments.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fma_peak.h"
#include "engine/error.h"
#include "engine/forward.h"
#include "engine/random.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "gpu_bench_util.h"
#include "ops/attention.h"

using namespace hg;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int64_t T = 1024, batch = 1, heads = 8, dk = 64;
  AttentionPath path = AttentionPath::materialized;
  std::string mode = "fwdbwd";
  int threads = 0, warmup = 1, iters = 5;
  uint64_t seed = 0;
};

constexpr const char* kUsage =
    "usage: bench_attention [--T 1024] [--path materialized|tiled|automatic] [--mode fwdbwd|forward|jvp]\n"
    "                       [--threads N] [--warmup 1] [--iters 5] [--batch 1] [--heads 8] [--dk 64] [--seed 0]\n"
    "(see the head of bench/bench_attention.cpp; bench/run-attention runs it beside PyTorch)\n";

Args parse(int argc, char** argv) {
  Args a;
  bench::each_flag(argc, argv, kUsage, [&](const std::string& k, auto next) {
    auto number = [&]() { return bench::whole_number(k, next()); };
    if (k == "--T") a.T = number();
    else if (k == "--path") a.path = attention_path_named(next());
    else if (k == "--mode") a.mode = next();
    else if (k == "--threads") a.threads = static_cast<int>(number());
    else if (k == "--warmup") a.warmup = static_cast<int>(number());
    else if (k == "--iters") a.iters = static_cast<int>(number());
    else if (k == "--batch") a.batch = number();
    else if (k == "--heads") a.heads = number();
    else if (k == "--dk") a.dk = number();
    else if (k == "--seed") a.seed = static_cast<uint64_t>(number());
    else return false;
    return true;
  });
  if (a.mode != "fwdbwd" && a.mode != "forward" && a.mode != "jvp")
    throw std::runtime_error("--mode " + a.mode + ": use fwdbwd, forward or jvp");
  if (std::min({a.T, a.batch, a.heads, a.dk, int64_t{a.iters}}) < 1 || a.warmup < 0)
    throw std::runtime_error("--T, --batch, --heads, --dk and --iters must be positive, --warmup not negative");
  return a;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse(argc, argv);
    bench::apply_threads(a.threads, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_attention: {}\n", e.what());
    return 2;
  }
  nlohmann::json out = {{"impl", "handgrad"}, {"path", attention_path_name(a.path)}, {"mode", a.mode}, {"T", a.T},
                        {"shape", {a.batch, a.heads, a.T, a.dk}}, {"threads", num_threads()}};
  const std::string machine = fmt::format("{{{}}}", bench::machine_json_fields());
  out.update(nlohmann::json::parse(machine));
  try {
    Generator gen(a.seed);
    const Shape s{a.batch, a.heads, a.T, a.dk};
    const bool grads = a.mode == "fwdbwd";
    Tensor q = randn(s, gen).requires_grad_(grads), k = randn(s, gen).requires_grad_(grads), v = randn(s, gen).requires_grad_(grads);
    const Tensor dO = randn(s, gen);
    const std::vector<Tensor> dots{randn(s, gen), randn(s, gen), randn(s, gen)};
    const AttentionOptions opts{.causal = true, .path = a.path};
    auto call = [&](const Tensor& qq, const Tensor& kk, const Tensor& vv, const std::vector<Tensor>& dd, const Tensor& g) {
      if (grads) {
        for (const Tensor& t : {qq, kk, vv}) Tensor(t).zero_grad();
        attention(qq, kk, vv, opts).backward(g);  // (B, H, T, d_k)
        return;
      }
      NoGradGuard ng;
      if (a.mode == "forward") attention(qq, kk, vv, opts);
      else jvp([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2], opts)}; }, {qq, kk, vv}, dd);
    };
    auto iteration = [&] { call(q, k, v, dots, dO); };

    {
      const int64_t t = std::min<int64_t>(a.T, 64);
      auto first = [&](const Tensor& x) { return x.detach().slice(2, 0, t).contiguous(); };  // (B, H, t, d_k)
      Tensor qs = first(q).requires_grad_(grads), ks = first(k).requires_grad_(grads), vs = first(v).requires_grad_(grads);
      call(qs, ks, vs, {first(dots[0]), first(dots[1]), first(dots[2])}, first(dO));
    }
    const double before_mib = bench::status_mib("VmRSS");
    const bool reset = bench::reset_peak_rss();
    const auto t0 = Clock::now();
    iteration();
    const double first_ms = ms_since(t0);
    out["extra_mib"] = bench::status_mib("VmHWM") - before_mib;
    out["rss_before_mib"] = before_mib;
    out["peak_method"] = reset ? "VmHWM reset by clear_refs before the call, minus VmRSS then"
                               : "VmHWM since the start (clear_refs not writable), minus VmRSS before the call";
    out["first_call_ms"] = first_ms;

    for (int i = 0; i < a.warmup; ++i) iteration();
    std::vector<double> ms, cpu;
    for (int i = 0; i < a.iters; ++i) {
      const double c0 = bench::cpu_ms();
      const auto t = Clock::now();
      iteration();
      ms.push_back(ms_since(t));
      cpu.push_back(bench::cpu_ms() - c0);
    }
    out["iters"] = a.iters;
    out["ms"] = ms;
    out["ms_median"] = bench::median(ms);
    out["ms_min"] = *std::min_element(ms.begin(), ms.end());
    out["cpu_ms_median"] = bench::median(cpu);
    // The cores' float32 FMA peak at the kernel level in use, measured in this run after the timed
    // iterations (bench/fma_peak.h); bench/run-attention prints each rate as a share of it.
    out["fma_peak_gflops"] = bench::measure_fma_peak(num_threads()).gflops;
    fmt::print("{}\n", out.dump());
    return 0;
  } catch (const Error& e) {
    out["error"] = e.what();
    fmt::print("{}\n", out.dump());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_attention: {}\n", e.what());
    return 2;
  }
}
