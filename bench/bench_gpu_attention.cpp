// bench/bench_gpu_attention.cpp — causal attention forward + backward on the GPU, beside PyTorch.
//
// The workload: q, k, v of shape (B, H, T, d_k) = (4, 8, T, 64), float32, on
// Device::cuda, for T = 1024 and 4096; one timed iteration is
//   o = attention(q, k, v, {.causal = true, .path = P});  o.backward(dO)   // dO: a fixed random (B, H, T, d_k)
// with the leaves' gradients dropped between iterations, the GPU synchronised before the clock
// starts and before it stops, and the median of the timed iterations reported. Then the same
// workload in PyTorch (bench/attention_gpu.py, the peer) on the same GPU, and the ratio
// handgrad ms / PyTorch ms.
//
//   bench_gpu_attention [--T 1024,4096] [--paths materialized,tiled] [--bh 32] [--dk 64] [--warmup 3]
//                       [--iters 10] [--no-torch] [--python EXE] [--help]
//
// Every path in --paths (materialized: S and P in full; tiled: FlashAttention-2's kernels of
// cuda/attention_tiled_*.cu; automatic) is checked and timed; the peer is PyTorch's
// scaled_dot_product_attention, whose memory-efficient backend takes float32.
//
// B·H is split as H = gcd(B·H, 8), B = B·H / H (the peer does the same). --python names the
// interpreter for the peer (default $HANDGRAD_PYTHON, else python3). Before timing, the program
// checks the GPU against the CPU (relative error ‖gpu − cpu‖ / ‖cpu‖ of O, dQ, dK, dV at T = 128,
// all heads; and of O and dQ of head (0, 0) at each timed T) and refuses to time a kernel whose
// error exceeds 1e-4. Without a usable GPU it prints why and exits 0 (scripts/gpu-check runs it).
// Exit status: 0 done or skipped, 1 an hg::Error or a failed check, 2 bad arguments.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/random.h"
#include "engine/tape.h"
#include "gpu_bench_util.h"
#include "ops/attention.h"

using namespace hg;
using hg::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kMaxRelErr = 1e-4;

struct Args {
  std::vector<int64_t> Ts{1024, 4096};
  std::vector<AttentionPath> paths{AttentionPath::materialized, AttentionPath::tiled};
  int64_t bh = 32, dk = 64;
  int warmup = 3, iters = 10;
  bench::PeerFlags peer;
};

constexpr const char* kUsage =
    "usage: bench_gpu_attention [--T 1024,4096] [--paths materialized,tiled] [--bh 32] [--dk 64]\n"
    "                           [--warmup 3] [--iters 10] [--no-torch] [--python EXE]\n"
    "(see the head of bench/bench_gpu_attention.cpp)\n";

Args parse(int argc, char** argv) {
  Args a;
  bench::each_flag(argc, argv, kUsage, [&](const std::string& k, auto next) {
    auto number = [&](const std::string& text) { return bench::whole_number(k, text); };
    if (k == "--T") {
      a.Ts.clear();
      for (const std::string& item : bench::comma_list(next())) a.Ts.push_back(number(item));
    }
    else if (k == "--paths") {
      a.paths.clear();
      for (const std::string& item : bench::comma_list(next())) a.paths.push_back(attention_path_named(item));
    }
    else if (k == "--bh") a.bh = number(next());
    else if (k == "--dk") a.dk = number(next());
    else if (k == "--warmup") a.warmup = static_cast<int>(number(next()));
    else if (k == "--iters") a.iters = static_cast<int>(number(next()));
    else return a.peer.take(k, next);
    return true;
  });
  if (a.bh < 1 || a.dk < 1 || a.iters < 1 || a.warmup < 0 || a.Ts.empty() || a.paths.empty() ||
      std::any_of(a.Ts.begin(), a.Ts.end(), [](int64_t T) { return T < 1; }))
    throw std::runtime_error("--T, --bh, --dk and --iters must be positive, --warmup not negative");
  return a;
}

// Counted as FlashAttention-2's benchmark counts them, so figures compare with published ones:
// forward = two (T × T × d) gemms, S = Q Kᵀ and O = P V, of 2·T²·d each, halved by the causal
// mask: 2·2·BH·T²·d / 2; backward = 2.5× forward (its four gemms plus recomputing S). In all
// 3.5 × 2·BH·T²·d = 7·BH·T²·d. handgrad's backward has no recompute; the count is a convention.
double flops(int64_t bh, int64_t T, int64_t d) {
  return 7.0 * static_cast<double>(bh) * static_cast<double>(T) * static_cast<double>(T) * static_cast<double>(d);
}

// ‖gpu − cpu‖ / ‖cpu‖ over all elements, in double.
double rel_err(const Tensor& gpu, const Tensor& cpu) {
  const std::vector<double> a = gpu.contiguous().to(Device::cpu).to_vector(), b = cpu.to_vector();
  double diff = 0, ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return std::sqrt(diff) / std::sqrt(ref);
}

Shape shape_of(int64_t bh, int64_t T, int64_t d) {
  const int64_t H = std::gcd(bh, int64_t{8});
  return {bh / H, H, T, d};
}

// Causal attention forward + backward on the CPU, from host copies of the given tensors.
struct CpuResult { Tensor o, dq, dk, dv; };
CpuResult cpu_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dO) {
  auto leaf = [](const Tensor& t) { return t.detach().contiguous().to(Device::cpu).requires_grad_(); };
  Tensor qc = leaf(q), kc = leaf(k), vc = leaf(v);
  Tensor o = attention(qc, kc, vc, {.causal = true});
  o.backward(dO.detach().contiguous().to(Device::cpu));
  return {o.detach(), qc.grad(), kc.grad(), vc.grad()};
}

bool report_check(const std::string& what, const std::vector<std::pair<const char*, double>>& errs) {
  bool ok = true;
  std::string line;
  for (auto& [name, e] : errs) {
    line += fmt::format("  {} {:.2e}", name, e);
    ok = ok && e <= kMaxRelErr;  // NaN fails too
  }
  fmt::print("check {}: ||gpu - cpu|| / ||cpu||{}  (limit {:.0e}) {}\n", what, line, kMaxRelErr, ok ? "ok" : "FAIL");
  return ok;
}

// The whole workload at a small T, every head, GPU against CPU.
bool check_small(const Args& a, AttentionPath path) {
  const int64_t T = 128;
  Generator gen(1);
  const Shape s = shape_of(a.bh, T, a.dk);
  Tensor q = randn(s, gen).to(Device::cuda).requires_grad_(), k = randn(s, gen).to(Device::cuda).requires_grad_(),
         v = randn(s, gen).to(Device::cuda).requires_grad_(), dO = randn(s, gen).to(Device::cuda);
  Tensor o = attention(q, k, v, {.causal = true, .path = path});
  o.backward(dO);
  const CpuResult c = cpu_attention(q, k, v, dO);
  return report_check(fmt::format("{} T={} (all {} heads)", attention_path_name(path), T, a.bh),
                      {{"O", rel_err(o, c.o)}, {"dQ", rel_err(q.grad(), c.dq)}, {"dK", rel_err(k.grad(), c.dk)},
                       {"dV", rel_err(v.grad(), c.dv)}});
}

struct Timed { double ms = 0; bool ok = false; };

Timed time_one(const Args& a, int64_t T, AttentionPath path) {
  const CudaBackend& cu = *cuda_backend();
  Generator gen(0);
  const Shape s = shape_of(a.bh, T, a.dk);
  Tensor q = randn(s, gen).to(Device::cuda).requires_grad_(), k = randn(s, gen).to(Device::cuda).requires_grad_(),
         v = randn(s, gen).to(Device::cuda).requires_grad_(), dO = randn(s, gen).to(Device::cuda);  // (B, H, T, d_k)
  Tensor o;
  std::vector<double> ms;
  for (int i = 0; i < a.warmup + a.iters; ++i) {
    for (Tensor* leaf : {&q, &k, &v}) leaf->zero_grad();
    cu.synchronize();
    const auto t0 = Clock::now();
    o = attention(q, k, v, {.causal = true, .path = path});  // (B, H, T, d_k)
    o.backward(dO);
    cu.synchronize();
    if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  // The last iteration's answers for head (0, 0), against the CPU at this T.
  auto head = [](const Tensor& t) { return t.detach().index({0, 0}); };  // (T, d_k)
  const CpuResult c = cpu_attention(head(q), head(k), head(v), head(dO));
  const bool ok = report_check(fmt::format("{} T={} (head 0 of {})", attention_path_name(path), T, a.bh),
                               {{"O", rel_err(head(o), c.o)}, {"dQ", rel_err(head(q.grad()), c.dq)}});
  return {median(ms), ok};
}

// Runs the peer for one T; its last line is one JSON object. On failure, the reason in *why.
std::optional<nlohmann::json> run_peer(const Args& a, int64_t T, std::string* why) {
  return bench::run_peer(a.peer.python, bench::peer_script("attention_gpu.py"),
                         fmt::format("--T {} --bh {} --dk {} --warmup {} --iters {}", T, a.bh, a.dk, a.warmup, a.iters),
                         "ms", why);
}

}  // namespace

int main(int argc, char** argv) {
  return bench::gpu_bench_main("bench_gpu_attention", argc, argv, parse, [](const Args& a, const CudaBackend& gpu) {
    const Shape s = shape_of(a.bh, 1, a.dk);
    fmt::print("bench_gpu_attention on {}: causal attention forward + backward, float32, B·H = {} (B {}, H {}), "
               "d_k = {}; median of {} iterations after {} warm-up\n",
               gpu.device_summary(), a.bh, s[0], s[1], a.dk, a.iters, a.warmup);
    fmt::print("FLOPs counted as 7·B·H·T²·d_k (forward 2·B·H·T²·d_k: two T×T×d_k gemms halved by the causal mask; "
               "backward 2.5× forward, FlashAttention-2's convention)\n");
    for (AttentionPath path : a.paths)
      if (!check_small(a, path)) return 1;

    std::vector<std::vector<double>> ours(a.paths.size());  // [path][T]
    for (size_t pi = 0; pi < a.paths.size(); ++pi)
      for (int64_t T : a.Ts) {
        const Timed t = time_one(a, T, a.paths[pi]);
        if (!t.ok) return 1;
        fmt::print("T={}: handgrad {} {:.3f} ms forward + backward, {:.2f} TFLOP/s\n", T,
                   attention_path_name(a.paths[pi]), t.ms, flops(a.bh, T, a.dk) / (t.ms * 1e-3) / 1e12);
        ours[pi].push_back(t.ms);
      }

    if (!a.peer.torch) return 0;
    std::vector<nlohmann::json> peer;
    for (int64_t T : a.Ts) {
      std::string why;
      std::optional<nlohmann::json> j = run_peer(a, T, &why);
      if (!j) {
        fmt::print("PyTorch peer: not available ({})\n", why);
        return 0;
      }
      peer.push_back(*j);
    }
    fmt::print("PyTorch peer: torch {} on {}, {} path (bench/attention_gpu.py)\n", peer[0].value("torch", "?"),
               peer[0].value("device", "?"), peer[0].value("path", "?"));
    fmt::print("{:>6}  {:>12}  {:>11}  {:>10}  {:>6}  {:>16}  {:>15}\n", "T", "path", "handgrad ms", "PyTorch ms",
               "ratio", "handgrad TFLOP/s", "PyTorch TFLOP/s");
    for (size_t pi = 0; pi < a.paths.size(); ++pi)
      for (size_t i = 0; i < a.Ts.size(); ++i) {
        const double theirs = peer[i]["ms"].get<double>(), f = flops(a.bh, a.Ts[i], a.dk) / 1e9;  // GFLOP
        fmt::print("{:>6}  {:>12}  {:>11.3f}  {:>10.3f}  {:>6.2f}  {:>16.2f}  {:>15.2f}\n", a.Ts[i],
                   attention_path_name(a.paths[pi]), ours[pi][i], theirs, ours[pi][i] / theirs, f / ours[pi][i],
                   f / theirs);
      }
    fmt::print("ratio = handgrad ms / PyTorch ms (below 1: handgrad is faster)\n");
    return 0;
  });
}
