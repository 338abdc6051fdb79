// The graph per result: independent graphs, shared forwards, freeing, threads, grad(), hooks.
#include <doctest/doctest.h>

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
