// bench/bench_tinycharlm.cpp — one training step of the 2-block attention-only TinyCharLM.
//
// The peer of bench/tinycharlm_step.py (PyTorch): vocab 64, d 128, 4 heads, 2 blocks, RoPE, no
// bias, tied head; a batch of 128 sequences of 63 input positions, float32; forward,
// cross-entropy (mean), backward, AdamW (lr 1e-3, weight decay 0).
// Prints one line of JSON with ms/step (bench/run-tinycharlm prints both side by side), the
// step's floating-point operations counted from the shapes (flop_per_step below) and the rate
// they imply.
//
//   bench_tinycharlm [--threads N] [--warmup N] [--steps N] [--batch B] [--seq T] [--seed S]
//                    [--d D] [--heads H] [--blocks N] [--gemm-rate]
//                    [--phases] [--profile] [--check-determinism] [--forward model|ops|ops-table]
//
// --seq T is tokens per sequence: the model sees T - 1 input positions. --d, --heads and
// --blocks set the model's width (default 128), heads (4; d / heads must be even, as RoPE rotates
// pairs) and blocks (2); bench/run-scaling runs a table of them. --gemm-rate also times
// handgrad's matmul alone on the qkv projection's product, (B·(T-1), d) x (d, 3d), in this process
// on the same threads, and reports its GFLOP/s: what the step's gemms reach on this machine.
// --threads N sets HANDGRAD_NUM_THREADS, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to N and
// re-executes the program when they differ (OpenBLAS reads its setting once, when it is loaded;
// handgrad's pool reads HANDGRAD_NUM_THREADS, else OMP_NUM_THREADS, and keeps OpenBLAS on one
// thread of its own, engine/strided.h; bench/bench_util.h). --phases adds the time of forward,
// loss, backward and optimizer; --profile the backward time of each tape entry, by op, and of
// each matmul entry by its operands' shapes with the rate its gradients' products reached; and
// --check-determinism trains twice from the same seed and fails unless the losses are bit-identical.
// --forward ops (or ops-table) runs the model's forward written out here from ops
// (forward_from_ops), to try a change to nn/tinycharlm.cpp's forward before making it there; the
// default is the model's own.
//
// Under `mpirun -np N` it trains data-parallel (nn/data_parallel.h): each rank runs forward and
// backward on its B/N rows of the batch, the gradients are averaged before the AdamW step (inside
// the "backward" phase), and rank 0 prints the JSON, with "ranks": N (bench/run-data-parallel).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fma_peak.h"
#include "engine/random.h"
#include "cpu/kernels.h"
#include "engine/strided.h"
#include "engine/tape.h"
#include "nn/comm.h"
#include "nn/data.h"
#include "nn/data_parallel.h"
#include "nn/optim.h"
#include "nn/tinycharlm.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/positional.h"

using namespace hg;
using hg::bench::apply_threads;
using hg::bench::cpu_ms;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int threads = 0;  // 0: keep the environment's settings
  int warmup = 5, steps = 20;
  int64_t batch = 128, seq = 64;  // inputs are the first seq - 1 tokens, targets the last seq - 1
  int64_t d = 128, heads = 4, blocks = 2;
  uint64_t seed = 0;
  bool phases = false, profile = false, check_determinism = false, gemm_rate = false;
  std::string forward = "model";  // model | ops | ops-table
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + k);
      return argv[++i];
    };
    auto integer = [&]() -> int64_t {  // the whole value, or a message that names the option
      const std::string v = next();
      size_t used = 0;
      int64_t x = 0;
      try {
        x = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != v.size()) throw std::runtime_error(k + " takes an integer, not '" + v + "'");
      return x;
    };
    if (k == "--threads") a.threads = static_cast<int>(integer());
    else if (k == "--warmup") a.warmup = static_cast<int>(integer());
    else if (k == "--steps") a.steps = static_cast<int>(integer());
    else if (k == "--batch") a.batch = integer();
    else if (k == "--seq") a.seq = integer();
    else if (k == "--seed") a.seed = std::stoull(next());
    else if (k == "--d") a.d = integer();
    else if (k == "--heads") a.heads = integer();
    else if (k == "--blocks") a.blocks = integer();
    else if (k == "--gemm-rate") a.gemm_rate = true;
    else if (k == "--phases") a.phases = true;
    else if (k == "--profile") a.profile = true;
    else if (k == "--check-determinism") a.check_determinism = true;
    else if (k == "--forward") {
      const std::string f = next();
      if (f != "model" && f != "ops" && f != "ops-table")
        throw std::runtime_error("--forward takes model, ops or ops-table, not " + f);
      a.forward = f;
    }
    else throw std::runtime_error("unknown option " + k + " (see the head of bench/bench_tinycharlm.cpp)");
  }
  // Checked here, before a model is built, so that the message names the option to change.
  auto at_least = [](const char* name, int64_t v, int64_t lo) {
    if (v < lo) throw std::runtime_error(fmt::format("{} must be at least {}, got {}", name, lo, v));
  };
  at_least("--batch", a.batch, 1);
  at_least("--d", a.d, 1);
  at_least("--heads", a.heads, 1);
  at_least("--blocks", a.blocks, 1);
  at_least("--steps", a.steps, 1);
  at_least("--warmup", a.warmup, 0);
  if (a.seq < 2)
    throw std::runtime_error(fmt::format("--seq is tokens per sequence and must be at least 2 (one input position "
                                         "and its target), got {}", a.seq));
  if (a.d % a.heads != 0)
    throw std::runtime_error(fmt::format("--d {} is not divisible by --heads {}: each head takes d / heads "
                                         "dimensions", a.d, a.heads));
  if ((a.d / a.heads) % 2 != 0)
    throw std::runtime_error(fmt::format("d / heads = {} / {} = {} must be even: RoPE rotates pairs of each head's "
                                         "dimensions", a.d, a.heads, a.d / a.heads));
  return a;
}

nn::TinyCharLMConfig model_config(const Args& a) {
  nn::TinyCharLMConfig c;
  c.d = a.d;
  c.heads = a.heads;
  c.blocks = a.blocks;
  return c;
}

// The step's floating-point operations, counted from the shapes (a multiply-add is 2), for
// B sequences of T = seq - 1 positions, N = B·T rows, d_h = d / H, V the vocabulary. Forward:
//   per block  qkv projection    2·N·d·3d
//              output projection 2·N·d·d
//              attention         2 · 2·(B·H)·T·T·d_h   (q kᵀ and P v over the full T×T, as computed)
//   tied head                    2·N·d·V
// Backward computes two products the size of each (da = G bᵀ, db = aᵀ G), so the step is 3 × the
// forward. Elementwise work (RoPE, softmax, loss, AdamW) is left out. At the default shape
// (B 128, T 63, d 128, 4 heads, 2 blocks, V 64): 8.30e9. bench/tinycharlm_step.py counts the same.
double flop_per_step(int64_t B, int64_t T, int64_t d, int64_t H, int64_t blocks, int64_t V) {
  const double N = static_cast<double>(B * T), D = static_cast<double>(d), d_h = static_cast<double>(d / H);
  const double per_block = 2 * N * D * 3 * D + 2 * N * D * D +
                           2 * (2 * static_cast<double>(B * H) * static_cast<double>(T * T) * d_h);
  return 3 * (static_cast<double>(blocks) * per_block + 2 * N * D * static_cast<double>(V));
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// TinyCharLM's forward (pos = rope, no bias, no ablation) from ops, on the model's parameters:
// nn/tinycharlm.cpp's run_with, except for how q, k, v are cut from the fused qkv output: the
// written-out path qkv_heads replaces there — one split() of its (B, T, 3, H, d_h) view along the
// 3, transposes, and rope() on q and k (the same numbers; the model's path is one pass and one
// tape entry each way, bench/RESULTS.md).
//
// table = true tries one more change: block 0's qkv = E[x] W_qkvᵀ is computed as (E W_qkvᵀ)[x],
// a (V, 3d) table looked up by token — the same dot products, V rows instead of B·T — whose
// backward is a scatter into the table's (V, 3d) gradient and two small gemms, instead of two
// (B·T)-row gemms. Valid while the residual stream entering block 0 is E[x] alone (no learned or
// sinusoidal positions added).
Tensor forward_from_ops(const nn::TinyCharLM& model, const Tensor& tokens, bool table) {
  const nn::TinyCharLMConfig& c = model.config();
  const int64_t B = tokens.size(0), T = tokens.size(1), d = c.d, H = c.heads, d_h = d / H;
  const Tensor E = model.token_emb->weight;
  Tensor h = embedding(E, tokens);  // (B, T, d)
  for (const auto& blk : model.blks) {
    const Tensor Wt = blk->qkv->weight.transpose(0, 1);  // (d, 3d)
    Tensor qkv = (table && blk == model.blks.front() ? embedding(matmul(E, Wt), tokens) : matmul(h, Wt))
                     .view({B, T, 3, H, d_h});  // (B, T, 3, H, d_h)
    std::vector<Tensor> parts = split(qkv, {1, 1, 1}, 2);                                // (B, T, 1, H, d_h) each
    auto heads = [](const Tensor& x) { return x.squeeze(2).transpose(1, 2); };           // (B, H, T, d_h)
    Tensor o = attention(rope(heads(parts[0])), rope(heads(parts[1])), heads(parts[2]), {.causal = true});
    Tensor merged = o.transpose(1, 2).reshape({B, T, d});                    // (B, T, d)
    h = add(h, matmul(merged, blk->proj->weight.transpose(0, 1)));           // the residual stream
  }
  return matmul(h, E.transpose(0, 1));  // (B, T, V), the tied head
}

struct Timings {
  std::vector<double> step, cpu, forward, loss, backward, optim;
  std::map<std::string, double> backward_by_op;  // summed over the timed steps
  std::map<std::string, std::pair<double, double>> backward_by_product;  // matmul entries by shapes: ms, GFLOP
  std::vector<double> losses;
};

// Trains `steps` steps on one fixed batch from a fresh model built with `seed`.
Timings train(const Args& a, int warmup, int steps) {
  Generator gen(a.seed);
  nn::TinyCharLM model(model_config(a), gen);
  nn::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.0});
  nn::RepeatedBatch data = nn::repeated_batch(a.batch, a.seq, model.config().vocab, 16, 32, gen);  // (B, seq)
  std::optional<nn::DataParallel> dp;
  if (nn::world().size() > 1) {  // this rank's rows of the batch
    dp.emplace(nn::world(), model.parameters());
    dp->broadcast_parameters();
    const nn::DataParallel::Shard r = dp->shard(a.batch);
    data.tokens = data.tokens.slice(0, r.begin, r.end);
  }
  const Tensor inputs = data.tokens.slice(1, 0, a.seq - 1).contiguous();   // (B, T)
  const Tensor targets = data.tokens.slice(1, 1, a.seq).contiguous();      // (B, T)

  Timings tm;
  Clock::time_point entry_start;
  std::map<std::string, double> by_op;
  std::map<std::string, std::pair<double, double>> by_product;
  BackwardObserver obs;
  obs.before = [&](size_t, const Node&, const std::vector<Tensor>&) { entry_start = Clock::now(); };
  obs.after = [&](size_t, const Node& e, const std::vector<Tensor>&, const std::vector<Tensor>&) {
    const double ms = ms_since(entry_start);
    by_op[e.op] += ms;
    if (e.op != "matmul" || e.inputs.size() != 2 || e.outputs.empty() || e.inputs[0].shape.empty()) return;
    // Each input's gradient is one product of the forward's size: 2 · numel(C) · k floating-point operations.
    const double k = static_cast<double>(e.inputs[0].shape.back());
    const double grads = (e.inputs[0].needs_grad ? 1.0 : 0.0) + (e.inputs[1].needs_grad ? 1.0 : 0.0);
    auto& slot = by_product[fmt::format("{} @ {}", shape_str(e.inputs[0].shape), shape_str(e.inputs[1].shape))];
    slot.first += ms;
    slot.second += grads * 2.0 * static_cast<double>(shape_numel(e.outputs[0].shape)) * k / 1e9;
  };

  for (int i = 0; i < warmup + steps; ++i) {
    const bool timed = i >= warmup;
    if (timed && a.profile) by_op.clear(), by_product.clear();
    const double c0 = cpu_ms();
    const auto t0 = Clock::now();
    Tensor logits = a.forward == "model" ? model.forward(inputs)
                                         : forward_from_ops(model, inputs, a.forward == "ops-table");  // (B, T, V)
    const auto t1 = Clock::now();
    Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
    const auto t2 = Clock::now();
    opt.zero_grad();
    BackwardOptions bo;
    if (a.profile) bo.observer = &obs;
    backward(loss, Tensor(), bo);
    if (dp) dp->average_gradients();
    const auto t3 = Clock::now();
    opt.step();
    const auto t4 = Clock::now();
    const double c4 = cpu_ms();
    tm.losses.push_back(loss.item());
    if (!timed) continue;
    auto ms = [](auto x, auto y) { return std::chrono::duration<double, std::milli>(y - x).count(); };
    tm.step.push_back(ms(t0, t4));
    tm.cpu.push_back(c4 - c0);
    tm.forward.push_back(ms(t0, t1));
    tm.loss.push_back(ms(t1, t2));
    tm.backward.push_back(ms(t2, t3));
    tm.optim.push_back(ms(t3, t4));
    for (auto& [op, t] : by_op) tm.backward_by_op[op] += t;
    for (auto& [shapes, t] : by_product) {
      tm.backward_by_product[shapes].first += t.first;
      tm.backward_by_product[shapes].second += t.second;
    }
  }
  return tm;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// GFLOP/s of handgrad's matmul (OpenBLAS's sgemm, split over handgrad's pool as in the step) on
// an (m, k) x (k, n) f32 product whose right operand is a transposed (n, k) weight, as in the
// model's Linear: 3 warm-up calls, then the median of 10. Each call allocates its output, as the
// step's do. Under mpirun, rank 0 measures it alone, after training.
double gemm_gflops(int64_t m, int64_t k, int64_t n, uint64_t seed) {
  NoGradGuard no_grad;
  Generator gen(seed + 1);
  const Tensor a = randn({m, k}, gen), w = randn({n, k}, gen);
  const Tensor wt = w.transpose(0, 1);  // (k, n)
  std::vector<double> ms;
  for (int i = 0; i < 3 + 10; ++i) {
    const auto t0 = Clock::now();
    const Tensor c = matmul(a, wt);  // (m, n)
    const double t = ms_since(t0);
    if (i >= 3) ms.push_back(t);
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n) / (median(ms) * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    apply_threads(a.threads, argv);
    if (a.check_determinism) {
      const int n = std::max(a.steps, 3);
      Timings r1 = train(a, 0, n), r2 = train(a, 0, n);
      for (int i = 0; i < n; ++i)
        if (std::memcmp(&r1.losses[i], &r2.losses[i], sizeof(double)) != 0) {
          fmt::print(stderr, "not deterministic: step {} loss {:.9g} vs {:.9g}\n", i, r1.losses[i], r2.losses[i]);
          return 1;
        }
      fmt::print(stderr, "deterministic: {} steps, bit-identical losses in two runs (last {:.9g})\n", n,
                 r1.losses.back());
    }
    Timings t = train(a, a.warmup, a.steps);
    if (nn::world().rank() != 0) return 0;  // under mpirun, rank 0 reports
    std::string out = fmt::format(
        "{{\"impl\": \"handgrad\", {}, \"ranks\": {}, \"forward\": \"{}\", \"threads\": {}, "
        "\"batch\": {}, \"positions\": {}, \"steps\": {}, \"ms_per_step_median\": {:.3f}, \"ms_per_step_mean\": {:.3f}, "
        "\"ms_per_step_min\": {:.3f}, \"cpu_ms_per_step_median\": {:.3f}, \"first_loss\": {:.9g}, \"last_loss\": {:.9g}",
        bench::machine_json_fields(), nn::world().size(), a.forward, num_threads(), a.batch, a.seq - 1, a.steps, median(t.step), mean(t.step),
        t.step.empty() ? 0.0 : *std::min_element(t.step.begin(), t.step.end()), median(t.cpu), t.losses.front(), t.losses.back());
    const double gflop = flop_per_step(a.batch, a.seq - 1, a.d, a.heads, a.blocks, model_config(a).vocab) * 1e-9;
    out += fmt::format(", \"d\": {}, \"heads\": {}, \"blocks\": {}, \"gflop_per_step\": {:.4f}, \"gflops\": {:.2f}",
                       a.d, a.heads, a.blocks, gflop, gflop / (median(t.step) * 1e-3));
    // The cores' float32 FMA peak at the kernel level in use, measured now, in this run
    // (bench/fma_peak.h): the step's rate as a share of what the cores can do.
    const bench::FmaPeak peak = bench::measure_fma_peak(num_threads());
    out += fmt::format(", \"fma_peak_gflops\": {:.2f}, \"fma_peak_lanes\": {}, \"share_of_fma_peak\": {:.4f}",
                       peak.gflops, peak.lanes, gflop / (median(t.step) * 1e-3) / peak.gflops);
    if (a.gemm_rate) {
      const int64_t m = a.batch * (a.seq - 1), k = a.d, n = 3 * a.d;
      out += fmt::format(", \"gemm_shape\": [{}, {}, {}], \"gemm_gflops\": {:.2f}", m, k, n,
                         gemm_gflops(m, k, n, a.seed));
    }
    if (a.phases)
      out += fmt::format(", \"phases_ms_median\": {{\"forward\": {:.3f}, \"loss\": {:.3f}, \"backward\": {:.3f}, "
                         "\"optimizer\": {:.3f}}}",
                         median(t.forward), median(t.loss), median(t.backward), median(t.optim));
    if (a.profile) {
      std::vector<std::pair<double, std::string>> ops;
      for (auto& [op, ms] : t.backward_by_op) ops.emplace_back(ms / a.steps, op);
      std::sort(ops.rbegin(), ops.rend());
      std::vector<std::string> parts;
      for (auto& [ms, op] : ops) parts.push_back(fmt::format("\"{}\": {:.3f}", op, ms));
      out += fmt::format(", \"backward_ms_by_op\": {{{}}}", fmt::join(parts, ", "));
      parts.clear();
      for (auto& [shapes, ms_gflop] : t.backward_by_product) {
        const auto [p_ms, p_gflop] = ms_gflop;
        parts.push_back(fmt::format("\"{}\": {{\"ms\": {:.3f}, \"gflops\": {:.1f}}}", shapes, p_ms / a.steps,
                                    p_ms > 0 ? p_gflop / (p_ms / 1e3) : 0.0));
      }
      out += fmt::format(", \"backward_matmul_by_shapes\": {{{}}}", fmt::join(parts, ", "));
    }
    fmt::print("{}}}\n", out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_tinycharlm{}: {}\n", hg::nn::rank_label().empty() ? "" : " on " + hg::nn::rank_label(),
               e.what());
    hg::nn::abort_job_if_parallel(2);
    return 2;
  }
}
