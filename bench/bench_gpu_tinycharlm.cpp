// bench/bench_gpu_tinycharlm.cpp — one TinyCharLM training step on the GPU, beside PyTorch eager.
//
// The workload: the 2-block attention-only TinyCharLM (vocab 64, d 128, 4 heads,
// RoPE, no bias, tied head) on a batch of 128 sequences of 63 input positions, float32, on
// Device::cuda; one step is
//   logits = model.forward(x); loss = cross_entropy(logits, y); zero_grad; loss.backward(); AdamW step
// (lr 1e-3, weight decay 0), on one fixed batch made and uploaded once. After one step whose loss
// is read, and max(--warmup, --steps) untimed steps with no host wait between them (as in a timed
// round, so the caching allocator holds every block a round needs at once: the backend keeps each
// deferred index check's small status block until the next host wait), --rounds rounds of
// --steps steps are each timed between two cuda_backend()->synchronize() calls (no sync inside:
// the GPU runs as far ahead of the host as the step lets it), and ms/step is the median over the
// rounds of (round time / steps). The loss is read only outside the clock.
// Then the same model and step in PyTorch on the same GPU (bench/tinycharlm_step_gpu.py, timed
// the same way with torch.cuda.synchronize), and the ratio handgrad ms / PyTorch ms (the
// target: at most 0.5).
//
//   bench_gpu_tinycharlm [--batch 128] [--seq 64] [--warmup 20] [--steps 20] [--rounds 5]
//                        [--pos rope] [--no-torch] [--python EXE] [--help]
//
// --seq is tokens per sequence (inputs are the first seq - 1, targets the last seq - 1). --python
// names the interpreter for the peer (default $HANDGRAD_PYTHON, else python3). Before timing, the
// program checks one step's logits and every parameter gradient against the CPU at batch 8
// (‖gpu − cpu‖ / ‖cpu‖ ≤ 1e-4) and refuses to time a model that disagrees. It also prints how many
// cudaMalloc calls the timed steps made (the caching allocator should make none). Without a usable
// GPU it prints "bench_gpu_tinycharlm: skipped: <why>" and exits 0 (scripts/gpu-check runs it).
// Exit status: 0 done or skipped, 1 an hg::Error or a failed check, 2 bad arguments.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/random.h"
#include "engine/tape.h"
#include "gpu_bench_util.h"
#include "nn/data.h"
#include "nn/optim.h"
#include "nn/tinycharlm.h"
#include "ops/loss.h"
#ifdef HANDGRAD_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace hg;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kMaxRelErr = 1e-4;

struct Args {
  int64_t batch = 128, seq = 64;
  int warmup = 20, steps = 20, rounds = 5;
  std::string pos = "rope";
  bench::PeerFlags peer;
};

constexpr const char* kUsage =
    "usage: bench_gpu_tinycharlm [--batch 128] [--seq 64] [--warmup 20] [--steps 20] [--rounds 5]\n"
    "                            [--pos rope] [--no-torch] [--python EXE]\n"
    "(see the head of bench/bench_gpu_tinycharlm.cpp)\n";

Args parse(int argc, char** argv) {
  Args a;
  bench::each_flag(argc, argv, kUsage, [&](const std::string& k, auto next) {
    auto number = [&](const std::string& text) { return bench::whole_number(k, text); };
    if (k == "--batch") a.batch = number(next());
    else if (k == "--seq") a.seq = number(next());
    else if (k == "--warmup") a.warmup = static_cast<int>(number(next()));
    else if (k == "--steps") a.steps = static_cast<int>(number(next()));
    else if (k == "--rounds") a.rounds = static_cast<int>(number(next()));
    else if (k == "--pos") a.pos = next();
    else return a.peer.take(k, next);
    return true;
  });
  if (a.batch < 1 || a.seq < 2 || a.steps < 1 || a.rounds < 1 || a.warmup < 0)
    throw std::runtime_error("--batch, --steps and --rounds must be positive, --seq at least 2, --warmup not negative");
  if (a.peer.torch && a.pos != "rope")
    throw std::runtime_error("the PyTorch peer is written for --pos rope; add --no-torch to time --pos " + a.pos);
  return a;
}

nn::TinyCharLMConfig config(const Args& a) {
  return {.vocab = 64, .d = 128, .heads = 4, .blocks = 2, .pos = a.pos, .bias = false, .max_len = a.seq,
          .dtype = DType::f32};
}

// Inputs x[:, :-1] and targets x[:, 1:] of a repeated-pattern batch (patterns of 16 to 32
// tokens), made contiguous once, on `device`.
struct Batch {
  Tensor x, y;
};
Batch make_batch(const Args& a, int64_t B, uint64_t seed, Device device) {
  Generator gen(seed);
  const nn::RepeatedBatch r = nn::repeated_batch(B, a.seq, 64, 16, 32, gen, device);
  return {r.tokens.slice(1, 0, a.seq - 1).contiguous(), r.tokens.slice(1, 1, a.seq).contiguous()};
}

// ‖gpu − cpu‖ / ‖cpu‖ over all elements, in double.
double rel_err(const Tensor& gpu, const Tensor& cpu) {
  const std::vector<double> x = gpu.to(Device::cpu).to_vector(), y = cpu.to_vector();
  double diff = 0, ref = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    ref += y[i] * y[i];
  }
  return std::sqrt(diff) / std::sqrt(ref);
}

// One forward + backward at batch 8, the GPU model against the same model on the CPU.
bool check_against_cpu(const Args& a) {
  Generator gen(1);
  nn::TinyCharLM cpu(config(a), gen), gpu(config(a), gen);
  gpu.load_parameters(cpu.named_parameters());
  gpu.to(Device::cuda);
  const Batch hb = make_batch(a, 8, 2, Device::cpu), db = make_batch(a, 8, 2, Device::cuda);
  auto pass = [](nn::TinyCharLM& m, const Batch& b) {
    Tensor logits = m.forward(b.x);
    cross_entropy(logits, b.y).backward();
    return logits;
  };
  const Tensor zc = pass(cpu, hb), zg = pass(gpu, db);
  std::vector<std::pair<std::string, double>> errs = {{"logits", rel_err(zg, zc)}};
  const nn::NamedTensors pc = cpu.named_parameters(), pg = gpu.named_parameters();
  for (size_t i = 0; i < pc.size(); ++i) errs.emplace_back("d " + pc[i].first, rel_err(pg[i].second.grad(), pc[i].second.grad()));
  bool ok = true;
  std::string line;
  for (const auto& [what, e] : errs) {
    line += fmt::format("\n  {:<24} {:.2e}", what, e);
    ok = ok && e <= kMaxRelErr;  // NaN fails too
  }
  fmt::print("check (batch 8, one step): ||gpu - cpu|| / ||cpu||{}\n  (limit {:.0e}) {}\n", line, kMaxRelErr,
             ok ? "ok" : "FAIL");
  return ok;
}

struct Timed {
  double ms_per_step = 0, first_loss = 0, last_loss = 0;
  std::vector<double> rounds_ms;
  uint64_t timed_mallocs = 0;
};

Timed time_steps(const Args& a) {
  const CudaBackend& cu = *cuda_backend();
  Generator gen(0);
  nn::TinyCharLM model(config(a), gen);
  model.to(Device::cuda);
  nn::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.0});
  const Batch b = make_batch(a, a.batch, 0, Device::cuda);  // (B, seq - 1) each, uploaded once

  Tensor loss;
  auto step = [&]() {
    Tensor logits = model.forward(b.x);  // (B, T, V)
    loss = cross_entropy(logits, b.y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  Timed t;
  step();
  t.first_loss = loss.item();  // before the clock
  for (int i = 0; i < std::max(a.warmup, a.steps); ++i) step();  // as a round runs: no host wait
#ifdef HANDGRAD_WITH_CUDA
  const uint64_t mallocs = cuda::allocator_stats().cuda_malloc_calls;
#endif
  for (int r = 0; r < a.rounds; ++r) {
    cu.synchronize();
    const auto t0 = Clock::now();
    for (int i = 0; i < a.steps; ++i) step();
    cu.synchronize();
    t.rounds_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / a.steps);
  }
#ifdef HANDGRAD_WITH_CUDA
  t.timed_mallocs = cuda::allocator_stats().cuda_malloc_calls - mallocs;
#endif
  t.last_loss = loss.item();
  t.ms_per_step = bench::median(t.rounds_ms);
  return t;
}

std::string list(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format("{}{:.3f}", s.empty() ? "" : " ", x);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::gpu_bench_main("bench_gpu_tinycharlm", argc, argv, parse, [](const Args& a, const CudaBackend& gpu) {
    fmt::print("bench_gpu_tinycharlm on {}: TinyCharLM training step (vocab 64, d 128, 4 heads, 2 blocks, pos {}, "
               "no bias, tied head), batch {}, {} positions, float32, AdamW(lr 1e-3, wd 0)\n",
               gpu.device_summary(), a.pos, a.batch, a.seq - 1);
    if (!check_against_cpu(a)) return 1;

    const Timed t = time_steps(a);
    fmt::print("handgrad: {:.3f} ms/step (median of {} rounds of {} steps after {} warm-up; rounds: {} ms/step)\n",
               t.ms_per_step, a.rounds, a.steps, 1 + std::max(a.warmup, a.steps), list(t.rounds_ms));
    fmt::print("handgrad: loss {:.4f} after the first step, {:.4f} after the last; cudaMalloc calls in the timed "
               "steps: {}\n", t.first_loss, t.last_loss, t.timed_mallocs);

    if (!a.peer.torch) return 0;
    std::string why;
    const std::optional<nlohmann::json> peer = bench::run_peer(
        a.peer.python, bench::peer_script("tinycharlm_step_gpu.py"),
        fmt::format("--batch {} --seq {} --warmup {} --steps {} --rounds {}", a.batch, a.seq, a.warmup, a.steps,
                    a.rounds),
        "ms_per_step", &why);
    if (!peer) {
      fmt::print("PyTorch peer: not available ({})\n", why);
      return 0;
    }
    const double theirs = (*peer)["ms_per_step"].get<double>();
    fmt::print("PyTorch eager: {:.3f} ms/step (torch {} on {}, attention path {}; bench/tinycharlm_step_gpu.py; "
               "loss {:.4f} after the first step, {:.4f} after the last)\n",
               theirs, peer->value("torch", "?"), peer->value("device", "?"), peer->value("attention", "?"),
               peer->value("first_loss", NAN), peer->value("last_loss", NAN));
    const double ratio = t.ms_per_step / theirs;
    fmt::print("ratio handgrad / PyTorch = {:.2f} (target: at most 0.5 — {})\n", ratio,
               ratio <= 0.5 ? "met" : "not met");
    return 0;
  });
}
