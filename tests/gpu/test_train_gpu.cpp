// The training path's device ops against the CPU: RoPE forward and backward (strided head views,
// a start position), the ALiBi bias and the sinusoidal table, the fused AdamW update (the same
// bits as the CPU's), SGD, optimizer state that follows the parameters between devices, and
// embedding's backward (the same bits as the CPU's).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "gpu_compare.h"
#include "cuda/ops.h"
#include "handgrad.h"
#include "nn/module.h"
#include "nn/optim.h"

using namespace hg;
using namespace hg::gpu_test;

TEST_CASE("rope and rope_at on cuda: forward and backward, contiguous and strided head views") {
  Generator gen(401);
  using V = std::vector<Tensor>;
  const Tensor x = randn({2, 3, 7, 8}, gen, DType::f64);  // (B, H, T, d_h)
  check_op("rope (2, 3, 7, 8)", [](const V& v) { return rope(v[0]); }, {x});
  check_op("rope_at start 5, base 500", [](const V& v) { return rope_at(v[0], 5, 500.0); }, {x});
  // The model's head view of a fused qkv output: (B, T, 3, H, d_h) permuted to (B, H, T, d_h).
  const Tensor qkv = randn({2, 7, 3, 4, 16}, gen, DType::f64);
  check_op("rope of a permuted qkv head view", [](const V& v) { return rope(v[0].select(2, 1).permute({0, 2, 1, 3})); },
           {qkv});
  check_op("rope then rope backward (twice differentiated)", [](const V& v) { return rope(rope(v[0], 100.0)); }, {x});
}

TEST_CASE("alibi_bias and sinusoidal_positions built on cuda equal the CPU tables") {
  for (DType t : kFloatTypes) {
    expect_close("alibi_bias(4, 9)", poisoned([&] { return alibi_bias(4, 9, t, Device::cuda); }), ref(alibi_bias(4, 9, t)),
                 t);
    expect_close("sinusoidal_positions(33, 10)", poisoned([&] { return sinusoidal_positions(33, 10, t, Device::cuda); }),
                 ref(sinusoidal_positions(33, 10, t)), t);
    expect_close("sinusoidal_positions(5, 7), odd width", sinusoidal_positions(5, 7, t, Device::cuda),
                 ref(sinusoidal_positions(5, 7, t)), t);
  }
}

namespace {

// Three optimizer steps on the CPU and on the GPU from the same parameters and gradients.
// Returns the parameters after each device's steps.
template <typename Make>
std::pair<std::vector<Tensor>, std::vector<Tensor>> three_steps(DType t, Make make) {
  Generator gen(402);
  std::vector<Tensor> init = {randn({5, 7}, gen, t), randn({300}, gen, t), randn({2, 3, 4}, gen, t)};
  std::vector<std::vector<Tensor>> grads;
  for (int s = 0; s < 3; ++s) {
    grads.emplace_back();
    for (const Tensor& p : init) grads.back().push_back(randn(p.shape(), gen, t, 0.0, 0.1 * (s + 1)));
  }
  std::vector<Tensor> out[2];
  for (int dev = 0; dev < 2; ++dev) {
    const Device d = dev == 0 ? Device::cpu : Device::cuda;
    std::vector<Tensor> params;
    for (const Tensor& p : init) params.push_back(p.to(d).clone().detach().requires_grad_());
    auto opt = make(params);
    for (int s = 0; s < 3; ++s) {
      for (size_t k = 0; k < params.size(); ++k) {
        params[k].zero_grad();
        sum(mul(params[k], grads[s][k].to(d))).backward();  // the gradient is exactly grads[s][k]
      }
      opt.step();
    }
    out[dev] = params;
  }
  return {out[0], out[1]};
}

}  // namespace

TEST_CASE("AdamW on cuda: one fused kernel, bit for bit the CPU's update, with weight decay") {
  for (DType t : kFloatTypes) {
    auto [cpu, gpu] = three_steps(t, [](const std::vector<Tensor>& p) {
      return nn::AdamW(p, {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1});
    });
    for (size_t k = 0; k < cpu.size(); ++k) expect_equal("AdamW 3 steps, parameter " + std::to_string(k), gpu[k], cpu[k]);
  }
}

TEST_CASE("SGD with momentum and weight decay on cuda agrees with the CPU") {
  for (DType t : kFloatTypes) {
    auto [cpu, gpu] = three_steps(t, [](const std::vector<Tensor>& p) { return nn::SGD(p, 0.1, 0.9, 0.01); });
    for (size_t k = 0; k < cpu.size(); ++k) expect_close("SGD 3 steps, parameter " + std::to_string(k), gpu[k], ref(cpu[k]), t);
  }
}

TEST_CASE("optimizer state follows the parameters: to(device), and a clear error when it was not moved") {
  Generator gen(403);
  nn::Linear lin(3, 4, /*bias=*/false, gen);
  Tensor x = randn({2, 3}, gen, DType::f32);
  nn::AdamW opt(lin.parameters(), {.lr = 1e-2, .weight_decay = 0.0});
  sum(lin.forward(x)).backward();
  opt.step();  // state created and used on the CPU
  lin.to(Device::cuda);  // the parameters move in place; the optimizer's state does not
  lin.zero_grad();
  sum(lin.forward(x.to(Device::cuda))).backward();
  CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("optimizer.to(Device::cuda)"), Error);
  opt.to(Device::cuda);
  CHECK(opt.exp_avg()[0].device() == Device::cuda);
  opt.step();
  CHECK(lin.weight.device() == Device::cuda);
  CHECK(opt.steps() == 2);  // the refused step changed nothing
}

TEST_CASE("a training step on cuda never waits for the device: embedding, matmul, cross_entropy, backward, AdamW") {
  Generator gen(404);
  const int64_t V = 11, d = 8, B = 3, T = 5;
  Tensor E = randn({V, d}, gen, DType::f32).to(Device::cuda).detach().requires_grad_();
  Tensor W = randn({d, d}, gen, DType::f32).to(Device::cuda).detach().requires_grad_();
  const Tensor x = randint({B, T}, gen, 0, V).to(Device::cuda), y = randint({B, T}, gen, 0, V).to(Device::cuda);
  nn::AdamW opt({E, W}, {.lr = 1e-2, .weight_decay = 0.0});
  Tensor loss;
  const auto step = [&] {
    opt.zero_grad();
    loss = cross_entropy(matmul(matmul(embedding(E, x), W), E.transpose(0, 1)), y);  // tied head
    loss.backward();
    opt.step();
  };
  step();  // warm-up: fills the allocator's cache
  const double first = loss.item();
  const uint64_t waits = cuda_backend()->host_waits();
  for (int i = 0; i < 3; ++i) step();
  CHECK(cuda_backend()->host_waits() == waits);  // no copy to the host, no synchronize, no status read
  const double later = loss.item();              // the one wait: reading the loss
  CHECK(cuda_backend()->host_waits() == waits + 1);
  MESSAGE("loss ", first, " -> ", later, " after 3 more steps");
  CHECK(later < first);
}

TEST_CASE("embedding's backward on cuda: the CPU's bits (position order, no atomics), the same on every run") {
  // TinyCharLM's sizes (V 64, d 128, 128 x 63 positions), then a table wider than one block of
  // columns with more positions than one tile of ids (1024), and a narrow one; in the last two the
  // ids stay below `hi`: heavy repeats, and rows no position reads (their gradient is 0).
  struct Case {
    int64_t V, d;
    Shape ids;
    DType t;
    int64_t hi;
  };
  const Case cases[] = {{64, 128, {128, 63}, DType::f32, 64}, {7, 300, {1400}, DType::f64, 5}, {9, 5, {2, 3}, DType::f32, 6}};
  Generator gen(405);
  for (const Case& c : cases) {
    const std::string what = fmt::format("embedding backward V {} d {} ids {} {}", c.V, c.d, shape_str(c.ids),
                                         dtype_name(c.t));
    CAPTURE(what);
    const Tensor ids = randint(c.ids, gen, 0, c.hi);
    Shape gs = c.ids;
    gs.push_back(c.d);
    const Tensor g = randn(gs, gen, c.t);
    Tensor w = zeros({c.V, c.d}, c.t).requires_grad_();
    embedding(w, ids).backward(g);
    Tensor dw[2];
    for (Tensor& out : dw) {
      Tensor wg = zeros({c.V, c.d}, c.t, Device::cuda).requires_grad_();
      embedding(wg, gpu(ids)).backward(gpu(g));
      out = wg.grad();
    }
    expect_equal(what + ": the CPU's bits", dw[0], w.grad());
    CHECK(dw[1].to_vector() == dw[0].to_vector());
  }
  // A bad id is reported by the backward's deferred check too, at the first look at a result.
  const Tensor bad = gpu(index_tensor({1, 2, 9, 0}, {4}));
#ifdef HANDGRAD_WITH_CUDA  // the kernel itself: the forward would report the bad id first
  const Tensor dw = cuda::embedding_backward(gpu(randn({4, 3}, gen, DType::f32)), bad, 5);
  CHECK_THROWS_WITH_AS(dw.to_vector(), doctest::Contains("index 9 at position [2] of indices (4,)"), Error);
#endif
}
