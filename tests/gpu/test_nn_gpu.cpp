// nn/ on the GPU: Module::to moves parameters in place; TinyCharLM's logits and every parameter's
// gradient on Device::cuda against the CPU (float64 < 1e-12, float32 < 1e-5, the float32 run
// against the CPU in float64 on the same float32 values) for each positional scheme; attention
// maps and head ablation; checkpoints across devices; batches made on the device; and a
// steady-state training step (forward, cross-entropy, backward, AdamW) that makes no cudaMalloc
// and never makes the host wait for the device (CudaBackend::host_waits).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;
using namespace hg::nn;

namespace {

// Small enough for the emulation (tests/gpu/emulation), large enough for two heads, two blocks
// and every parameter kind.
TinyCharLMConfig small(const std::string& pos, DType t, bool bias = true) {
  return {.vocab = 11, .d = 16, .heads = 2, .blocks = 2, .pos = pos, .bias = bias, .max_len = 8, .dtype = t};
}

const char* const kSchemes[] = {"none", "learned", "sinusoidal", "alibi", "rope"};

// Parameter values of a wider spread than the initialisation (whose N(0, 0.02²) embeddings make
// every attention map nearly uniform), in dtype t, on the cpu, aligned with named_parameters().
NamedTensors spread_values(const Module& m, Generator& gen, DType t, double sd = 0.5) {
  NamedTensors out;
  for (const auto& [name, p] : m.named_parameters()) out.emplace_back(name, randn(p.shape(), gen, DType::f64, 0.0, sd).to(t));
  return out;
}

NamedTensors converted(const NamedTensors& values, DType t) {
  NamedTensors out;
  for (const auto& [name, v] : values) out.emplace_back(name, v.detach().to(t));
  return out;
}

// Forward, mean cross-entropy, backward (the gradients land in the model's parameters).
struct Pass {
  Tensor logits, loss;
};
Pass forward_backward(TinyCharLM& m, const Tensor& x, const Tensor& y) {
  m.zero_grad();
  Pass p;
  p.logits = m.forward(x);  // (B, T, V)
  p.loss = cross_entropy(p.logits, y);
  p.loss.backward();
  return p;
}

// Inputs x[:, :-1] and targets x[:, 1:] of a repeated-pattern batch, on `device`.
struct Batch {
  Tensor x, y, lengths;
};
Batch batch_on(Device device, uint64_t seed, int64_t B = 3, int64_t T = 8, int64_t vocab = 11) {
  Generator gen(seed);
  const RepeatedBatch r = repeated_batch(B, T, vocab, 2, 4, gen, device);
  return {r.tokens.slice(1, 0, T - 1), r.tokens.slice(1, 1, T), r.lengths};
}

struct TempFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      fmt::format("handgrad_nn_gpu_{}_{}.safetensors", ::getpid(), counter++)).string();
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  static inline int counter = 0;
};

}  // namespace

TEST_CASE("Module::to(Device) moves every parameter in place: same tensors, names, leaves; values and gradients travel") {
  Generator gen(1);
  TinyCharLM m(small("learned", DType::f32), gen);
  const NamedTensors before = m.named_parameters();
  std::vector<const TensorImpl*> impls;
  std::vector<Tensor> values;
  for (const auto& [name, p] : before) {
    impls.push_back(p.impl());
    values.push_back(p.detach().clone());
  }
  const Batch cpu = batch_on(Device::cpu, 7);
  forward_backward(m, cpu.x, cpu.y);
  std::vector<Tensor> grads;
  for (const auto& [name, p] : before) grads.push_back(p.grad().clone());
  const Tensor qkv_member = m.blks[0]->qkv->weight;  // a handle held outside named_parameters()

  m.to(Device::cuda);
  CHECK(m.device() == Device::cuda);
  CHECK(qkv_member.device() == Device::cuda);
  const NamedTensors after = m.named_parameters();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    const auto& [name, p] = after[i];
    CAPTURE(name);
    CHECK(name == before[i].first);
    CHECK(p.impl() == impls[i]);  // the same tensor object
    CHECK(p.name() == before[i].second.name());
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
    CHECK(p.is_contiguous());
    expect_equal("to(cuda) " + name, p, values[i]);
    REQUIRE(p.grad().defined());
    expect_equal("to(cuda) " + name + " grad", p.grad(), grads[i]);
  }

  // A dtype round trip on the device, then back to the cpu: every value as it was.
  m.to(DType::f64);
  CHECK(m.config().dtype == DType::f64);
  for (const auto& [name, p] : m.named_parameters()) {
    CHECK(p.dtype() == DType::f64);
    CHECK(p.device() == Device::cuda);
  }
  m.to(DType::f32).to(Device::cpu);
  CHECK(m.device() == Device::cpu);
  CHECK(m.config().dtype == DType::f32);
  for (size_t i = 0; i < after.size(); ++i) {
    const Tensor p = m.named_parameters()[i].second;
    CHECK(p.impl() == impls[i]);
    CHECK(p.device() == Device::cpu);
    CHECK(p.to_vector() == values[i].to_vector());
  }
  CHECK_THROWS_WITH_AS(m.to(DType::i64), doctest::Contains("use float32 or float64"), Error);
}

TEST_CASE("Module::to: a graph recorded before the move refuses its backward; the tokens must be on the model's device") {
  Generator gen(2);
  TinyCharLM m(small("none", DType::f32), gen);
  const Batch cpu = batch_on(Device::cpu, 3);
  Tensor loss = cross_entropy(m.forward(cpu.x), cpu.y);
  m.to(Device::cuda);
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("modified by an in-place operation"), Error);

  CHECK_THROWS_WITH_AS(m.forward(cpu.x), doctest::Contains("are on cpu but the model's parameters are on cuda"), Error);
  const Batch dev = batch_on(Device::cuda, 3);
  m.to(Device::cpu);
  CHECK_THROWS_WITH_AS(m.forward(dev.x), doctest::Contains("are on cuda but the model's parameters are on cpu"), Error);

  // Parameters spread over two devices are named.
  TinyCharLM mixed(small("none", DType::f32), gen);
  mixed.blks[1]->to(Device::cuda);
  CHECK_THROWS_WITH_AS((void)mixed.device(), doctest::Contains("blks.1.qkv.weight on cuda"), Error);
}

TEST_CASE("TinyCharLM on the GPU: logits and every parameter's gradient match the CPU, for each positional scheme") {
  for (const std::string pos : kSchemes) {
    for (DType t : kFloatTypes) {
      CAPTURE(pos);
      Generator gen(11);
      // The reference: the CPU model in float64 holding exactly the values the GPU model gets.
      TinyCharLM ref(small(pos, DType::f64), gen);
      const NamedTensors values = spread_values(ref, gen, t);  // in t
      ref.load_parameters(converted(values, DType::f64));
      TinyCharLM dev(small(pos, t), gen);
      dev.to(Device::cuda);
      dev.load_parameters(values);  // uploads into the parameters' device

      const Batch hb = batch_on(Device::cpu, 5), db = batch_on(Device::cuda, 5);
      expect_equal("repeated_batch tokens", db.x.contiguous(), hb.x.contiguous());
      const Pass c = forward_backward(ref, hb.x, hb.y), g = forward_backward(dev, db.x, db.y);
      const std::string what = "TinyCharLM(pos=" + pos + ")";
      expect_close(what + " logits", g.logits, c.logits, t);
      expect_close(what + " loss", g.loss, c.loss, t);
      const NamedTensors rp = ref.named_parameters(), dp = dev.named_parameters();
      REQUIRE(rp.size() == dp.size());
      for (size_t i = 0; i < rp.size(); ++i) {
        REQUIRE(dp[i].second.grad().defined());
        expect_close(what + " d/d" + dp[i].first, dp[i].second.grad(), rp[i].second.grad(), t);
      }
    }
  }
}

TEST_CASE("attention_weights and ablate_head on the GPU match the CPU") {
  const std::string pos = "alibi";  // a scheme whose forward has a constant (the bias) to move
  for (DType t : kFloatTypes) {
    Generator gen(21);
    TinyCharLM ref(small(pos, DType::f64), gen);
    const NamedTensors values = spread_values(ref, gen, t);
    ref.load_parameters(converted(values, DType::f64));
    TinyCharLM dev(small(pos, t), gen);
    dev.load_parameters(values);
    dev.to(Device::cuda);

    const Batch hb = batch_on(Device::cpu, 9), db = batch_on(Device::cuda, 9);
    const std::vector<Tensor> cm = ref.attention_weights(hb.x), gm = dev.attention_weights(db.x);
    REQUIRE(cm.size() == gm.size());
    for (size_t l = 0; l < cm.size(); ++l) expect_close(fmt::format("attention_weights block {}", l), gm[l], cm[l], t);

    ref.ablate_head(1, 0);
    dev.ablate_head(0, 1);
    dev.ablate_head(1, 0);
    dev.ablate_head(0, 1, false);
    NoGradGuard ng;
    expect_close("ablated head (1, 0) logits", dev.forward(db.x), ref.forward(hb.x), t);
  }
}

TEST_CASE("checkpoints across devices: trained on the GPU, saved, loaded on the CPU, the same logits") {
  const std::string pos = "rope";
  Generator gen(31);
  TinyCharLM gpu_model(small(pos, DType::f32), gen);
  gpu_model.to(Device::cuda);
  const Batch db = batch_on(Device::cuda, 13);
  for (int step = 0; step < 3; ++step) {  // a few plain gradient steps, on the device
    forward_backward(gpu_model, db.x, db.y);
    NoGradGuard ng;
    for (const Tensor& p : gpu_model.parameters()) {
      Tensor w = p;
      w.add_(p.grad(), -0.5);
    }
  }
  Tensor gpu_logits;
  {
    NoGradGuard ng;
    gpu_logits = gpu_model.forward(db.x);
  }
  TempFile file;
  save_checkpoint(file.path, gpu_model, {{"from", "cuda"}});

  Generator other(99);  // different initial values, overwritten by the load
  TinyCharLM cpu_model(small(pos, DType::f32), other);
  load_checkpoint(file.path, cpu_model);
  const NamedTensors gp = gpu_model.named_parameters(), cp = cpu_model.named_parameters();
  REQUIRE(gp.size() == cp.size());
  for (size_t i = 0; i < gp.size(); ++i) {
    CHECK(cp[i].second.device() == Device::cpu);
    expect_equal("checkpoint " + gp[i].first + " saved from cuda, loaded on cpu", gp[i].second, cp[i].second);
  }
  const Batch hb = batch_on(Device::cpu, 13);
  NoGradGuard ng;
  expect_close("checkpoint logits: gpu run vs cpu model loaded from its checkpoint", gpu_logits, cpu_model.forward(hb.x),
               DType::f32);

  // ... and back onto a GPU model: the same parameters, the same logits, bit for bit.
  TinyCharLM again(small(pos, DType::f32), other);
  again.to(Device::cuda);
  load_checkpoint(file.path, again);
  for (const auto& [name, p] : again.named_parameters()) CHECK(p.device() == Device::cuda);
  expect_equal("checkpoint logits: gpu run vs gpu model loaded from its checkpoint", again.forward(db.x), gpu_logits);
}

TEST_CASE("repeated_batch on the GPU: the CPU's tokens, uploaded; split_losses reads GPU logits") {
  Generator a(4), b(4);
  const RepeatedBatch h = repeated_batch(5, 12, 9, 3, 6, a);
  const RepeatedBatch d = repeated_batch(5, 12, 9, 3, 6, b, Device::cuda);
  CHECK(d.tokens.device() == Device::cuda);
  CHECK(d.tokens.is_contiguous());
  CHECK(d.tokens.dtype() == DType::i64);
  expect_equal("repeated_batch tokens", d.tokens, h.tokens);
  expect_equal("repeated_batch lengths", d.lengths, h.lengths);

  Generator gen(6);
  const Tensor z = randn({5, 11, 9}, gen, DType::f64);  // (B, T, V)
  const SplitLoss hs = split_losses(z, h.tokens.slice(1, 1, 12), h.lengths);
  const SplitLoss ds = split_losses(z.to(Device::cuda), d.tokens.slice(1, 1, 12), d.lengths);
  expect_close("split_losses loss", ds.loss, hs.loss, DType::f64);
  CHECK(ds.first == doctest::Approx(hs.first).epsilon(1e-12));
  CHECK(ds.later == doctest::Approx(hs.later).epsilon(1e-12));
  CHECK(ds.later_acc == hs.later_acc);
  CHECK(accuracy_per_position(z.to(Device::cuda), d.tokens.slice(1, 1, 12)) ==
        accuracy_per_position(z, h.tokens.slice(1, 1, 12)));
}

// The allocator's counters exist only in a build with the CUDA backend.
#ifdef HANDGRAD_WITH_CUDA
TEST_CASE("a steady-state training step on the GPU makes no cudaMalloc and never waits for the device") {
  const std::string pos = "rope";
  Generator gen(41);
  TinyCharLM model({.vocab = 16, .d = 32, .heads = 2, .blocks = 2, .pos = pos, .bias = false, .max_len = 16}, gen);
  model.to(Device::cuda);
  const Batch b = batch_on(Device::cuda, 17, 4, 9, 16);  // x, y (4, 8) on the device, made once
  AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.0});
  Tensor loss;
  auto step = [&]() {
    loss = cross_entropy(model.forward(b.x), b.y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  // Warm-up as a training loop runs it: as many steps as are measured, then the loss read for
  // printing (a host wait, which also reads the index checks the backend defers to it). The cache
  // then holds every block that many steps hold at once (each deferred check keeps a small status
  // block until the next host wait).
  constexpr int kSteps = 3;
  for (int i = 0; i < kSteps; ++i) step();
  const double warm_loss = loss.item();
  const uint64_t mallocs = cuda::allocator_stats().cuda_malloc_calls;
  const uint64_t waits = cu().host_waits();
  for (int i = 0; i < kSteps; ++i) step();  // the loss is not read in here
  const uint64_t waits_after = cu().host_waits();
  const uint64_t new_mallocs = cuda::allocator_stats().cuda_malloc_calls - mallocs;
  MESSAGE("training step (pos=", pos, ", AdamW): cudaMalloc calls in ", kSteps, " steps after warm-up: ", new_mallocs);
  CHECK(new_mallocs == 0);
  MESSAGE("host waits for the device in ", kSteps, " steps: ", waits_after - waits);
  CHECK(waits_after == waits);
  const double last_loss = loss.item();  // read once, after the steps
  CHECK(std::isfinite(last_loss));
  CHECK(last_loss < warm_loss);  // AdamW at lr 1e-3 on one fixed batch: the loss goes down
}
#endif  // HANDGRAD_WITH_CUDA
