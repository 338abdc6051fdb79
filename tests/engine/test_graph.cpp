// The graph per result: independent graphs, shared forwards, freeing, threads, grad(), hooks.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "handgrad.h"

using namespace hg;

namespace {
Tensor leaf64(std::vector<double> v, Shape s) { return tensor(v, s, DType::f64).requires_grad_(); }
}  // namespace

TEST_CASE("two unrelated graphs on one thread back-propagate in either order") {
  for (bool first_l1 : {true, false}) {
    Tensor a = leaf64({1, 2, 3}, {3});
    Tensor b = leaf64({4, 5, 6}, {3});
    Tensor l1 = sum(mul(a, a)), l2 = sum(mul(b, b));
    if (first_l1) {
      l1.backward();
      l2.backward();
    } else {
      l2.backward();
      l1.backward();
    }
    CHECK(a.grad().to_vector() == std::vector<double>{2, 4, 6});
    CHECK(b.grad().to_vector() == std::vector<double>{8, 10, 12});
  }
}

TEST_CASE("a graph built after a backward, from the same leaves, is its own") {
  Tensor a = leaf64({1, 2}, {2});
  sum(exp(a)).backward();
  a.zero_grad();
  Tensor l = sum(mul(a, 3.0));
  l.backward();
  CHECK(a.grad().to_vector() == std::vector<double>{3, 3});
}

TEST_CASE("two losses from one shared forward: the second backward needs retain_graph on the first") {
  Tensor x = leaf64({0.5, -1.0, 2.0}, {3});
  SUBCASE("without retain_graph the second fails with PyTorch's meaning") {
    Tensor h = exp(x);
    Tensor l1 = sum(h), l2 = sum(mul(h, h));
    l1.backward();
    CHECK_THROWS_WITH_AS(l2.backward(), doctest::Contains("trying to backward through the graph a second time"), Error);
    CHECK_THROWS_WITH_AS(l2.backward(), doctest::Contains("Specify retain_graph=true"), Error);
  }
  SUBCASE("with retain_graph both run and the gradients accumulate") {
    Tensor h = exp(x);
    Tensor l1 = sum(h), l2 = sum(mul(h, h));
    l1.backward(Tensor(), /*retain_graph=*/true);
    l2.backward();
    std::vector<double> g = x.grad().to_vector(), xv = x.to_vector();
    for (size_t i = 0; i < 3; ++i) CHECK(g[i] == doctest::Approx(std::exp(xv[i]) + 2 * std::exp(2 * xv[i])).epsilon(1e-14));
  }
}

TEST_CASE("holding step 0's output while building 200 more graphs keeps nodes and memory flat") {
  Generator gen(3);
  Tensor w = randn({16, 16}, gen, DType::f64).requires_grad_();
  auto step = [&](int i) {
    Tensor x = full({4, 16}, 0.01 * i, DType::f64);
    return sum(tanh(matmul(x, w)));
  };
  Tensor kept = step(0);  // held, never back-propagated
  Tensor warm = step(1);  // the allocator's cache settles
  warm = Tensor();
  const size_t nodes = Node::live_count(), bytes = Storage::live_bytes();
  std::vector<size_t> node_counts, byte_counts;
  for (int i = 1; i <= 200; ++i) {
    Tensor out = step(i);  // dropped at the end of each iteration, as in a loop that never calls backward
    node_counts.push_back(Node::live_count());
    byte_counts.push_back(Storage::live_bytes());
  }
  CHECK(Node::live_count() == nodes);
  CHECK(Storage::live_bytes() == bytes);
  CHECK(node_counts.front() == node_counts.back());  // the same at step 1 as at step 200
  CHECK(byte_counts.front() == byte_counts.back());
  CHECK(kept.requires_grad());
  kept.backward();  // step 0's graph is still whole
  CHECK(w.grad().defined());
}

TEST_CASE("a chain of 1,000,000 nodes back-propagates and frees without recursion") {
  Tensor a = leaf64({2.0}, {1});
  const size_t nodes0 = Node::live_count();
  {
    Tensor x = a;
    for (int i = 0; i < 1000000; ++i) x = add(x, 1.0);
    CHECK(Node::live_count() == nodes0 + 1000000);
    sum(x).backward();
    CHECK(a.grad().item() == 1.0);
  }
  CHECK(Node::live_count() == nodes0);  // the chain was dropped iteratively
}

TEST_CASE("two threads build and back-propagate their own graphs at the same time") {
  auto work = [](double base, std::vector<double>* out) {
    Tensor a = leaf64({base, base + 1, base + 2}, {3});
    for (int it = 0; it < 200; ++it) {
      a.zero_grad();
      Tensor l = sum(mul(exp(a), a));  // d/da = e^a (1 + a)
      l.backward();
    }
    *out = a.grad().to_vector();
  };
  std::vector<double> g1, g2;
  std::thread t1(work, 0.1, &g1), t2(work, -0.7, &g2);
  t1.join();
  t2.join();
  for (int i = 0; i < 3; ++i) {
    double x1 = 0.1 + i, x2 = -0.7 + i;
    CHECK(g1[i] == doctest::Approx(std::exp(x1) * (1 + x1)).epsilon(1e-14));
    CHECK(g2[i] == doctest::Approx(std::exp(x2) * (1 + x2)).epsilon(1e-14));
  }
}

TEST_CASE("grad() returns gradients without touching .grad, for leaves and intermediate results") {
  Tensor x = leaf64({1, 2, 3}, {3});
  Tensor h = mul(x, x);  // h = x²
  Tensor l = sum(mul(h, 3.0));
  std::vector<Tensor> g = grad({l}, {x, h}, {}, {.retain_graph = true});
  CHECK(g[0].to_vector() == std::vector<double>{6, 12, 18});  // 6x
  CHECK(g[1].to_vector() == std::vector<double>{3, 3, 3});
  CHECK_FALSE(x.grad().defined());
  // the graph was retained: a backward still works
  l.backward();
  CHECK(x.grad().to_vector() == std::vector<double>{6, 12, 18});
}

TEST_CASE("grad(): unused inputs are an error unless allow_unused; a seed is needed for non-scalars") {
  Tensor x = leaf64({1, 2}, {2}), y = leaf64({3, 4}, {2});
  Tensor l = sum(exp(x));
  CHECK_THROWS_WITH_AS(grad({l}, {x, y}, {}, {.retain_graph = true}), doctest::Contains("allow_unused=true"), Error);
  std::vector<Tensor> g = grad({l}, {x, y}, {}, {.retain_graph = true, .allow_unused = true});
  CHECK(g[0].defined());
  CHECK_FALSE(g[1].defined());
  Tensor v = exp(x);
  CHECK_THROWS_WITH_AS(grad({v}, {x}), doctest::Contains("not a scalar"), Error);
  std::vector<Tensor> gv = grad({v}, {x}, {tensor({1, 10}, {2}, DType::f64)});
  CHECK(gv[0].to_vector()[1] == doctest::Approx(10 * std::exp(2.0)).epsilon(1e-14));
  CHECK_THROWS_WITH_AS(grad({l}, {zeros({2}, DType::f64)}), doctest::Contains("does not require grad"), Error);
}

TEST_CASE("hooks read and replace gradients as they pass, on leaves and on intermediate results") {
  Tensor x = leaf64({1, 2}, {2});
  Tensor h = mul(x, 2.0);
  std::vector<double> seen;
  h.register_hook([&](const Tensor& g) {
    seen = g.to_vector();
    return mul(g, 10.0);  // replaces dL/dh
  });
  int leaf_calls = 0;
  x.register_hook([&](const Tensor&) {
    ++leaf_calls;
    return Tensor();  // keeps it
  });
  Tensor l = sum(add(mul(h, 3.0), h));  // h fans out twice: the hook sees the summed gradient once
  l.backward();
  CHECK(seen == std::vector<double>{4, 4});
  CHECK(leaf_calls == 1);
  CHECK(x.grad().to_vector() == std::vector<double>{80, 80});
  CHECK_THROWS_WITH_AS(zeros({2}).register_hook([](const Tensor&) { return Tensor(); }),
                       doctest::Contains("does not require grad"), Error);
}

TEST_CASE("the tape of a result lists only its own graph's nodes, in recording order") {
  Tensor a = leaf64({1, 2}, {2}), b = leaf64({3, 4}, {2});
  Tensor unrelated = exp(b);
  Tensor l = sum(mul(a, 2.0));
  std::vector<std::shared_ptr<Node>> t = tape_of(l);
  REQUIRE(t.size() == 2);
  CHECK(t[0]->op == "mul_scalar");
  CHECK(t[1]->op == "sum");
  CHECK(t[0]->seq < t[1]->seq);
  CHECK(tape_of(unrelated).size() == 1);
}

TEST_CASE("anomaly mode: log of a negative entry names log and the caller's file:line") {
  Tensor x = leaf64({1.0, -2.0}, {2});
  {
    Tensor quiet = log(x);  // off by default: NaN, no error
    CHECK(std::isnan(quiet.to_vector()[1]));
  }
  AnomalyMode guard;
  const int line = __LINE__ + 2;
  try {
    Tensor y = log(x);
    FAIL("expected an anomaly error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.rfind("log:", 0) == 0);
    CHECK(m.find("NaN or Inf") != std::string::npos);
    CHECK(m.find("(2,)") != std::string::npos);
    CHECK(m.find(fmt::format("test_graph.cpp:{}", line)) != std::string::npos);
  }
}

TEST_CASE("anomaly mode: a backward that makes NaN from finite gradients names the op and its call site") {
  Tensor x = leaf64({0.0, 4.0}, {2});
  AnomalyMode guard;
  const int line = __LINE__ + 1;
  Tensor y = sqrt(x);  // sqrt(0) = 0 is finite; its derivative 1 / (2 sqrt 0) is not
  Tensor l = sum(y);
  try {
    l.backward();
    FAIL("expected an anomaly error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("backward of sqrt") != std::string::npos);
    CHECK(m.find(fmt::format("test_graph.cpp:{}", line)) != std::string::npos);
  }
  AnomalyMode off(false);
  Tensor x2 = leaf64({0.0}, {1});
  sum(sqrt(x2)).backward();  // off again: Inf, no error
  CHECK(std::isinf(x2.grad().item()));
}

namespace {
// f(x) = Σ sin-free smooth test function: Σ_i exp(x_i) x_{i+1}² + tanh(x_0 x_1), built from ops.
Tensor smooth(const Tensor& x) {
  Tensor a = x.slice(0, 0, 2), b = x.slice(0, 1, 3);
  return add(sum(mul(exp(a), mul(b, b))), sum(tanh(mul(x.select(0, 0), x.select(0, 1)))));
}
// Central difference of v ↦ ∇f(x + t v) at t = 0, from the first-order gradient (itself exact).
std::vector<double> numeric_hvp(const std::vector<double>& x0, const std::vector<double>& v) {
  const double eps = 1e-6;
  auto gradient_at = [&](double t) {
    std::vector<double> xs(x0.size());
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = x0[i] + t * v[i];
    Tensor x = tensor(xs, {3}, DType::f64).requires_grad_();
    smooth(x).backward();
    return x.grad().to_vector();
  };
  std::vector<double> up = gradient_at(eps), down = gradient_at(-eps), hv(x0.size());
  for (size_t i = 0; i < hv.size(); ++i) hv[i] = (up[i] - down[i]) / (2 * eps);
  return hv;
}
}  // namespace

TEST_CASE("a Hessian-vector product by double backward matches finite differences of the gradient") {
  const std::vector<double> x0 = {0.3, -0.8, 1.1}, v0 = {1.0, -2.0, 0.5};
  Tensor x = tensor(x0, {3}, DType::f64).requires_grad_();
  Tensor v = tensor(v0, {3}, DType::f64);
  Tensor g = grad({smooth(x)}, {x}, {}, {.create_graph = true})[0];  // ∇f, on the graph
  Tensor hv = grad({sum(mul(g, v))}, {x})[0];                        // ∇(∇f · v) = H v
  std::vector<double> expect = numeric_hvp(x0, v0), got = hv.to_vector();
  for (size_t i = 0; i < 3; ++i) CHECK(got[i] == doctest::Approx(expect[i]).epsilon(1e-7));
}

TEST_CASE("a gradient penalty ‖∂L/∂x‖² back-propagates through the gradient and matches finite differences") {
  // L(x, w) = Σ tanh(x W) ; penalty P(w) = ‖∂L/∂x‖², differentiated w.r.t. W by double backward.
  Generator gen(11);
  Tensor x = randn({2, 3}, gen, DType::f64).requires_grad_();
  Tensor W = randn({3, 2}, gen, DType::f64).requires_grad_();
  auto penalty = [&](const Tensor& w) {
    Tensor gx = grad({sum(tanh(matmul(x, w)))}, {x}, {}, {.create_graph = true})[0];
    return sum(mul(gx, gx));
  };
  penalty(W).backward();
  const std::vector<double> analytic = W.grad().to_vector();
  std::vector<double> w0 = W.to_vector();
  for (size_t i = 0; i < w0.size(); ++i) {
    auto at = [&](double d) {
      std::vector<double> w = w0;
      w[i] += d;
      return penalty(tensor(w, {3, 2}, DType::f64).requires_grad_()).item();
    };
    const double numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
    CHECK(analytic[i] == doctest::Approx(numeric).epsilon(1e-6));
  }
  CHECK(x.grad().defined());  // the penalty depends on x too, and backward() fills every leaf it reaches
}

TEST_CASE("double backward through a first-order-only op fails naming it, not with silent zeros") {
  // A square whose backward is a "fused kernel" (computed without recording), declared first order.
  static constexpr OpDef kFusedSquare{.name = "fused_square", .saves = {{"input", "2x"}},
                                      .derivation = "tests/engine/test_graph.cpp", .second_order = false};
  auto fused_square = [](const Tensor& x) {
    Tensor out;
    {
      NoGradGuard ng;
      out = mul(x, x);
    }
    record(kFusedSquare, {x}, {out}, {save(kFusedSquare.slot("input"), x)}, [](const std::vector<Tensor>& g, const Saved& s) {
      NoGradGuard ng;
      return std::vector<Tensor>{mul(mul(g[0], s[kFusedSquare.slot("input")]), 2.0)};
    });
    return out;
  };
  Tensor x = leaf64({0.5, -1.5}, {2});
  Tensor g = grad({sum(fused_square(x))}, {x}, {}, {.create_graph = true})[0];
  CHECK(g.to_vector() == std::vector<double>{1.0, -3.0});  // the first order is right
  CHECK_THROWS_WITH_AS(sum(g).backward(), doctest::Contains("double backward of fused_square is not implemented"), Error);
  // without create_graph the gradient is a plain constant, as for any op
  Tensor g2 = grad({sum(fused_square(x))}, {x})[0];
  CHECK_FALSE(g2.requires_grad());
}

TEST_CASE("anomaly mode follows HANDGRAD_DETECT_ANOMALY when no guard is set") {
  // ctest runs this case twice: as part of the suite, and once with HANDGRAD_DETECT_ANOMALY=1.
  const char* env = std::getenv("HANDGRAD_DETECT_ANOMALY");
  const bool on = env && std::string(env) == "1";
  CHECK(anomaly_enabled() == on);
  Tensor x = leaf64({-1.0}, {1});
  if (on) CHECK_THROWS_WITH_AS(log(x), doctest::Contains("anomaly"), Error);
  else CHECK(std::isnan(log(x).item()));
  AnomalyMode off(false);  // a guard overrides the environment
  CHECK_FALSE(anomaly_enabled());
}

TEST_CASE("grad(): no outputs, or a grad_outputs list of the wrong length, is refused") {
  Tensor x = leaf64({1, 2}, {2});
  Tensor l = sum(exp(x));
  CHECK_THROWS_WITH_AS(grad({}, {x}), doctest::Contains("grad: no outputs given"), Error);
  CHECK_THROWS_WITH_AS(grad({l}, {x}, {ones({}, DType::f64), ones({}, DType::f64)}),
                       doctest::Contains("2 grad_outputs for 1 outputs"), Error);
}
