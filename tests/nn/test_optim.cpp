// nn/optim.h: AdamW and SGD against scalar float64 reference loops written here from the update
// rules, and against numbers PyTorch printed for the same problem; skipped parameters, per-
// parameter step counts, zero_grad, the version bump, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "handgrad.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "test_util.h"

using namespace hg;
using namespace hg::nn;

namespace {

using Vals = std::vector<double>;

// The fixed problem handed to PyTorch by the script quoted further down: a (2, 3) parameter and the
// gradients of three steps.
const Vals kP0 = {0.5, -1.25, 2.0, 0.1, -0.3, 0.75};
const std::vector<Vals> kGrads = {{0.3, -0.2, 1.5, -0.05, 0.0, 2.5},
                                  {-0.4, 0.1, 1.0, 0.2, -0.7, -1.2},
                                  {0.25, 0.3, -0.5, 0.0, 1.1, 0.6}};

// Runs `opt` over kGrads on a parameter of dtype t and returns the parameter's values.
template <typename Make>
Vals run_fixed(DType t, Make make) {
  Tensor p = tensor(kP0, {2, 3}, t).requires_grad_();
  auto opt = make(std::vector<Tensor>{p});
  for (const Vals& g : kGrads) {
    opt.zero_grad();
    sum(p * tensor(g, {2, 3}, t)).backward();  // dL/dp = g
    opt.step();
  }
  return p.to_vector();
}

// AdamW from its definition (Loshchilov & Hutter, as PyTorch documents it), one scalar at a time.
struct RefAdamW {
  double lr, b1, b2, eps, wd;
  Vals m, v;
  int t = 0;
  void step(Vals& p, const Vals& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] -= lr * wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      const double v_hat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

// Largest |a - b| / (|b| + tiny).
double max_rel_diff(const Vals& a, const Vals& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]) / (std::abs(b[i]) + 1e-300));
  return d;
}

}  // namespace

TEST_CASE("AdamW: float64 matches a scalar reference loop over 8 steps with weight decay, on two parameters") {
  Generator gen(21);
  Tensor w = randn({3, 4}, gen, DType::f64).requires_grad_();
  Tensor b = randn({4}, gen, DType::f64).requires_grad_();
  AdamWOptions o;
  o.lr = 0.03;
  o.weight_decay = 0.1;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  AdamW opt({w, b}, o);
  RefAdamW rw{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, {}, {}}, rb = rw;
  Vals pw = w.to_vector(), pb = b.to_vector();
  for (int step = 0; step < 8; ++step) {
    Tensor gw = randn({3, 4}, gen, DType::f64), gb = randn({4}, gen, DType::f64);
    opt.zero_grad();
    (sum(w * gw) + sum(b * gb)).backward();
    opt.step();
    rw.step(pw, gw.to_vector());
    rb.step(pb, gb.to_vector());
  }
  CHECK(opt.steps() == 8);
  CHECK(max_rel_diff(w.to_vector(), pw) < 1e-13);
  CHECK(max_rel_diff(b.to_vector(), pb) < 1e-13);
  CHECK(max_rel_diff(opt.exp_avg()[0].to_vector(), rw.m) < 1e-13);
  CHECK(max_rel_diff(opt.exp_avg_sq()[1].to_vector(), rb.v) < 1e-13);
}

TEST_CASE("AdamW: float32 stays within float32 rounding of the float64 reference") {
  Generator gen(22);
  Tensor w64 = randn({5, 7}, gen, DType::f64);
  Tensor w = w64.to(DType::f32).requires_grad_();
  AdamW opt({w}, {.lr = 1e-2, .weight_decay = 0.05});
  RefAdamW ref{1e-2, 0.9, 0.999, 1e-8, 0.05, {}, {}};
  Vals p = w.to_vector();  // the float32 start, exactly
  for (int step = 0; step < 5; ++step) {
    Tensor g = randn({5, 7}, gen, DType::f32);
    opt.zero_grad();
    sum(w * g).backward();
    opt.step();
    ref.step(p, g.to_vector());
  }
  CHECK(test::max_abs_diff(w.to_vector(), p) < 1e-6);
  CHECK(test::max_abs_diff(w.to_vector(), p) > 0.0);  // it really ran in float32
}

// The numbers below were printed by PyTorch 1.13 (Debian's python3-torch) from this script:
//
//   import torch
//   p0 = [[0.5, -1.25, 2.0], [0.1, -0.3, 0.75]]
//   grads = [[[0.3, -0.2, 1.5], [-0.05, 0.0, 2.5]],
//            [[-0.4, 0.1, 1.0], [0.2, -0.7, -1.2]],
//            [[0.25, 0.3, -0.5], [0.0, 1.1, 0.6]]]
//   def run(make, dtype):
//       p = torch.tensor(p0, dtype=dtype, requires_grad=True)
//       opt = make([p])
//       for g in grads:
//           p.grad = torch.tensor(g, dtype=dtype)
//           opt.step()
//       return p.detach().flatten().tolist()
//   for dtype in (torch.float32, torch.float64):
//       print("AdamW", dtype, [repr(x) for x in run(lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1), dtype)])
//       print("SGD", dtype, [repr(x) for x in run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01), dtype)])
//
// PyTorch computes each step in the parameter's dtype with the multiply-adds its kernels fuse, and
// so does handgrad (nn/optim.cpp), so the results agree to the last bit in both dtypes.
TEST_CASE("AdamW: the numbers PyTorch's torch.optim.AdamW prints for the same problem (float32 and float64)") {
  const Vals torch_f32 = {0.4889340102672577, -1.2375068664550781, 1.968813419342041,
                          0.09976588934659958, -0.29397010803222656, 0.7314746975898743};
  const Vals torch_f64 = {0.48893398136408384, -1.237506930108789, 1.9688132514665853,
                          0.09976589052022096, -0.2939700589175333, 0.7314746989546353};
  auto make = [](std::vector<Tensor> ps) { return AdamW(std::move(ps), {.lr = 1e-2, .weight_decay = 0.1}); };
  CHECK(run_fixed(DType::f32, make) == torch_f32);
  CHECK(run_fixed(DType::f64, make) == torch_f64);
}

TEST_CASE("SGD with momentum and weight decay: the numbers PyTorch's torch.optim.SGD prints (script above)") {
  const Vals torch_f32 = {0.46697136759757996, -1.2378593683242798, 1.4429595470428467,
                          0.07499048858880997, -0.2753884792327881, 0.23712588846683502};
  const Vals torch_f64 = {0.46697136949999996, -1.2378594787500001, 1.442959448,
                          0.0749904849, -0.27538843969999993, 0.23712584925000005};
  auto make = [](std::vector<Tensor> ps) { return SGD(std::move(ps), 0.1, 0.9, 0.01); };
  CHECK(run_fixed(DType::f32, make) == torch_f32);
  CHECK(run_fixed(DType::f64, make) == torch_f64);
}

TEST_CASE("AdamW: the vectorised loop and the one-element-at-a-time loop give the same bits") {
  // One (103,) parameter goes through the wide loop (and its tail); 103 one-element parameters
  // each go through the scalar loop only.
  for (DType t : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(t));
    Generator gen(31);
    const int64_t n = 103;
    Tensor whole = randn({n}, gen, t).requires_grad_();
    std::vector<Tensor> pieces;
    for (int64_t k = 0; k < n; ++k) pieces.push_back(whole.detach().slice(0, k, k + 1).clone().requires_grad_());
    AdamW a({whole}, {.lr = 3e-2, .weight_decay = 0.1}), b(pieces, {.lr = 3e-2, .weight_decay = 0.1});
    for (int step = 0; step < 4; ++step) {
      Tensor g = randn({n}, gen, t);
      a.zero_grad();
      b.zero_grad();
      sum(whole * g).backward();
      for (int64_t k = 0; k < n; ++k) sum(pieces[static_cast<size_t>(k)] * g.slice(0, k, k + 1)).backward();
      a.step();
      b.step();
    }
    std::vector<double> one_by_one;
    for (const Tensor& p : pieces) one_by_one.push_back(p.item());
    CHECK(whole.to_vector() == one_by_one);
  }
}

TEST_CASE("SGD: plain and with momentum match scalar reference loops (the first step seeds the buffer with g)") {
  for (double momentum : {0.0, 0.5}) {
    CAPTURE(momentum);
    auto make = [momentum](std::vector<Tensor> ps) { return SGD(std::move(ps), 0.2, momentum, 0.0); };
    Vals p = kP0, buf;
    for (const Vals& g : kGrads) {
      if (buf.empty()) buf = g;
      else
        for (size_t i = 0; i < g.size(); ++i) buf[i] = momentum * buf[i] + g[i];
      for (size_t i = 0; i < g.size(); ++i) p[i] -= 0.2 * (momentum != 0.0 ? buf[i] : g[i]);
    }
    CHECK(max_rel_diff(run_fixed(DType::f64, make), p) < 1e-15);
  }
}

TEST_CASE("AdamW: a parameter without a gradient is skipped, and its own step count starts when it first gets one") {
  Tensor a = tensor({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  Tensor b = tensor({3.0, -4.0}, {2}, DType::f64).requires_grad_();
  AdamW opt({a, b}, {.lr = 0.1, .weight_decay = 0.1});
  sum(a * 2.0).backward();  // step 1: only a has a gradient
  opt.step();
  CHECK(b.to_vector() == Vals{3.0, -4.0});  // untouched, not even decayed
  opt.zero_grad();
  sum(a * 2.0 + b * 5.0).backward();  // step 2: both
  opt.step();
  // b's update is a first step (bias corrections with t = 1), as PyTorch's per-parameter state['step'].
  Tensor fresh = tensor({3.0, -4.0}, {2}, DType::f64).requires_grad_();
  AdamW first({fresh}, {.lr = 0.1, .weight_decay = 0.1});
  sum(fresh * 5.0).backward();
  first.step();
  CHECK(b.to_vector() == fresh.to_vector());
  CHECK(opt.steps() == 2);
}

TEST_CASE("Optimizer::zero_grad drops the gradients; a step bumps the parameter's version so a stale graph fails") {
  Generator gen(4);
  Linear lin(3, 2, true, gen, DType::f64);
  AdamW opt(lin.parameters());
  Tensor x = randn({4, 3}, gen, DType::f64);
  sum(lin.forward(x)).backward();
  CHECK(lin.weight.grad().defined());
  opt.zero_grad();
  CHECK_FALSE(lin.weight.grad().defined());
  CHECK_FALSE(lin.bias.grad().defined());

  // forward (x requires grad, so matmul saves W for dx = dy W), then a step, then backward
  sum(lin.forward(x)).backward();
  x.requires_grad_();
  Tensor loss = sum(lin.forward(x));
  opt.step();
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("modified"), Error);
}

TEST_CASE("optimizers refuse bad hyperparameters and bad parameter lists, naming the problem") {
  Tensor p = zeros({2}, DType::f64).requires_grad_();
  CHECK_THROWS_WITH_AS(AdamW({p}, {.lr = -1.0}), doctest::Contains("lr = -1"), Error);
  CHECK_THROWS_WITH_AS(AdamW({p}, {.beta1 = 1.0}), doctest::Contains("beta1"), Error);
  CHECK_THROWS_WITH_AS(AdamW({p}, {.beta2 = -0.1}), doctest::Contains("beta2"), Error);
  CHECK_THROWS_WITH_AS(AdamW({p}, {.eps = std::nan("")}), doctest::Contains("eps"), Error);
  CHECK_THROWS_WITH_AS(SGD({p}, 0.1, 1.5), doctest::Contains("momentum"), Error);
  CHECK_THROWS_WITH_AS(AdamW({p, p}), doctest::Contains("listed twice"), Error);
  CHECK_THROWS_WITH_AS(SGD({zeros({2}, DType::i64)}, 0.1), doctest::Contains("float32/float64"), Error);
  Tensor wide = zeros({3, 4}, DType::f64);
  CHECK_THROWS_WITH_AS(SGD({wide.transpose(0, 1)}, 0.1), doctest::Contains("non-contiguous"), Error);
  CHECK_THROWS_WITH_AS(AdamW({Tensor()}), doctest::Contains("undefined"), Error);
}
