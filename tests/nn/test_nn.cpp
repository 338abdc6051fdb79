// nn/module.h: dotted parameter names in PyTorch's order, Linear and Embedding against their
// definitions (initial draws, forward by explicit loops), seeded determinism, load_parameters and
// every error it gives.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "handgrad.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "test_util.h"

using namespace hg;
using namespace hg::nn;

namespace {

// A two-level model shaped like TinyCharLM's parameter tree, built from this file's own modules
// so the names are checked independently of nn/tinycharlm.cpp.
struct TestBlock : Module {
  TestBlock(int64_t d, bool bias, Generator& gen, DType dtype) {
    qkv = register_module("qkv", std::make_shared<Linear>(d, 3 * d, bias, gen, dtype));
    proj = register_module("proj", std::make_shared<Linear>(d, d, bias, gen, dtype));
  }
  std::shared_ptr<Linear> qkv, proj;
};

// A container, like nn.ModuleList: children "0", "1", ...
struct Blocks : Module {
  std::shared_ptr<TestBlock> add(const std::string& name, int64_t d, bool bias, Generator& gen, DType dtype) {
    return register_module(name, std::make_shared<TestBlock>(d, bias, gen, dtype));
  }
};

struct TestModel : Module {
  TestModel(int64_t vocab, int64_t d, int64_t n_blocks, bool bias, Generator& gen, DType dtype = DType::f32) {
    token_emb = register_module("token_emb", std::make_shared<Embedding>(vocab, d, gen, dtype));
    auto list = register_module("blks", std::make_shared<Blocks>());
    for (int64_t i = 0; i < n_blocks; ++i) blks.push_back(list->add(std::to_string(i), d, bias, gen, dtype));
    scale = register_parameter("scale", ones({d}, dtype));
  }
  std::shared_ptr<Embedding> token_emb;
  std::vector<std::shared_ptr<TestBlock>> blks;
  Tensor scale;
};

}  // namespace

namespace {
std::vector<std::string> names_of(const NamedTensors& nt) {
  std::vector<std::string> out;
  for (const auto& [n, t] : nt) out.push_back(n);
  return out;
}
}  // namespace

TEST_CASE("named_parameters: own parameters first, then children depth first, dotted names as in PyTorch") {
  Generator gen(1);
  TestModel m(16, 8, 2, /*bias=*/true, gen);
  std::vector<std::string> expect = {"scale",
                                     "token_emb.weight",
                                     "blks.0.qkv.weight", "blks.0.qkv.bias", "blks.0.proj.weight", "blks.0.proj.bias",
                                     "blks.1.qkv.weight", "blks.1.qkv.bias", "blks.1.proj.weight", "blks.1.proj.bias"};
  CHECK(names_of(m.named_parameters()) == expect);
  CHECK(m.num_parameters() == 8 + 16 * 8 + 2 * (24 * 8 + 24 + 8 * 8 + 8));
  CHECK(m.parameters().size() == expect.size());
  for (const auto& [name, t] : m.named_parameters()) {
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
  }
  // Without bias there are no bias entries at all (not undefined placeholders).
  TestModel nb(16, 8, 1, /*bias=*/false, gen);
  CHECK(names_of(nb.named_parameters()) ==
        std::vector<std::string>{"scale", "token_emb.weight", "blks.0.qkv.weight", "blks.0.proj.weight"});
  CHECK_FALSE(nb.blks[0]->qkv->bias.defined());
}

TEST_CASE("named_parameters: a tensor registered twice (tied weights) is listed once, under its first name") {
  struct Tied : Module {
    Tied(Generator& gen) {
      emb = register_module("emb", std::make_shared<Embedding>(5, 3, gen));
      head = register_module("head", std::make_shared<Linear>(3, 5, false, gen));
      head->weight = emb->weight;  // the module's pointer now aliases emb's parameter ...
      alias = register_parameter("alias", emb->weight);  // ... and so does a second registration
    }
    std::shared_ptr<Embedding> emb;
    std::shared_ptr<Linear> head;
    Tensor alias;
  };
  Generator gen(2);
  Tied m(gen);
  // "alias" comes first (own parameters before children) and hides emb.weight, its twin.
  CHECK(names_of(m.named_parameters()) == std::vector<std::string>{"alias", "head.weight"});
}

TEST_CASE("register_parameter refuses dotted, empty and repeated names") {
  struct Bad : Module {
    void add(const std::string& n) { register_parameter(n, zeros({2})); }
  };
  Bad b;
  CHECK_THROWS_WITH_AS(b.add("a.b"), doctest::Contains("contain no '.'"), Error);
  CHECK_THROWS_WITH_AS(b.add(""), doctest::Contains("non-empty"), Error);
  b.add("w");
  CHECK_THROWS_WITH_AS(b.add("w"), doctest::Contains("already registered"), Error);
}

TEST_CASE("Linear: weight then bias drawn row-major from U(-1/sqrt(in), 1/sqrt(in)), as PyTorch's reset_parameters") {
  const int64_t in = 7, out = 5;
  Generator gen(42);
  Linear lin(in, out, true, gen, DType::f64);
  CHECK(lin.weight.shape() == Shape{out, in});
  CHECK(lin.bias.shape() == Shape{out});
  // The same draws, made by hand from a generator with the same seed.
  Generator ref(42);
  const double bound = 1.0 / std::sqrt(7.0);
  std::vector<double> w, b;
  for (int64_t i = 0; i < out * in; ++i) w.push_back(-bound + 2 * bound * ref.uniform());
  for (int64_t i = 0; i < out; ++i) b.push_back(-bound + 2 * bound * ref.uniform());
  CHECK(test::max_abs_diff(lin.weight.to_vector(), w) < 1e-15);
  CHECK(test::max_abs_diff(lin.bias.to_vector(), b) < 1e-15);
}

TEST_CASE("Linear: the initial weights fill ±1/sqrt(in) uniformly (mean 0, variance bound²/3)") {
  Generator gen(3);
  Linear lin(128, 384, false, gen);  // the qkv layer of TinyCharLM: 49,152 draws
  const double bound = 1.0 / std::sqrt(128.0);
  double s = 0, s2 = 0, mx = 0;
  std::vector<double> w = lin.weight.to_vector();
  for (double v : w) {
    s += v;
    s2 += v * v;
    mx = std::max(mx, std::abs(v));
  }
  const double n = static_cast<double>(w.size()), mean = s / n, var = s2 / n - mean * mean;
  CHECK(mx <= bound);
  CHECK(mx > 0.999 * bound);
  CHECK(std::abs(mean) < 0.01 * bound);          // sd of the mean: bound / sqrt(3n) ≈ 0.0026 bound
  CHECK(std::abs(var / (bound * bound / 3) - 1) < 0.02);  // sd of the ratio ≈ 0.0064
}

TEST_CASE("Linear: forward on a 3-D input equals y[b,t,o] = sum_i x[b,t,i] W[o,i] + b[o], with and without bias") {
  Generator gen(5);
  for (bool bias : {true, false}) {
    CAPTURE(bias);
    Linear lin(4, 3, bias, gen, DType::f64);
    Tensor x = randn({2, 5, 4}, gen, DType::f64);
    Tensor y = lin.forward(x);
    REQUIRE(y.shape() == Shape{2, 5, 3});
    double err = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 5; ++t)
        for (int64_t o = 0; o < 3; ++o) {
          double r = bias ? lin.bias.at({o}) : 0.0;
          for (int64_t i = 0; i < 4; ++i) r += x.at({b, t, i}) * lin.weight.at({o, i});
          err = std::max(err, std::abs(r - y.at({b, t, o})));
        }
    CHECK(err < 1e-14);
  }
  Linear lin(4, 3, true, gen);
  CHECK_THROWS_WITH_AS(lin.forward(zeros({2, 5})), doctest::Contains("must end in 4 features"), Error);
}

TEST_CASE("Linear: gradients reach weight and bias through backward") {
  Generator gen(6);
  Linear lin(3, 2, true, gen, DType::f64);
  Tensor x = randn({4, 3}, gen, DType::f64);
  sum(lin.forward(x)).backward();
  // d/dW sum(x Wᵀ + b) = 1ᵀ x for every row of W; d/db = the number of rows.
  for (int64_t o = 0; o < 2; ++o) {
    CHECK(lin.bias.grad().at({o}) == doctest::Approx(4.0));
    for (int64_t i = 0; i < 3; ++i) {
      double col = 0;
      for (int64_t r = 0; r < 4; ++r) col += x.at({r, i});
      CHECK(lin.weight.grad().at({o, i}) == doctest::Approx(col).epsilon(1e-12));
    }
  }
  lin.zero_grad();
  CHECK_FALSE(lin.weight.grad().defined());
  CHECK_FALSE(lin.bias.grad().defined());
}

TEST_CASE("Embedding: N(0, 0.02²) initial rows, row lookup forward, bad sizes refused") {
  Generator gen(7);
  Embedding emb(64, 128, gen);
  std::vector<double> w = emb.weight.to_vector();
  double s = 0, s2 = 0;
  for (double v : w) {
    s += v;
    s2 += v * v;
  }
  const double n = static_cast<double>(w.size()), mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  CHECK(std::abs(mean) < 0.001);           // sd of the mean: 0.02 / sqrt(8192) ≈ 0.00022
  CHECK(std::abs(sd / 0.02 - 1) < 0.03);   // sd of the ratio ≈ 0.008
  // The draws are the generator's normals, row-major.
  Generator ref(7);
  for (size_t k = 0; k < 10; ++k) CHECK(w[k] == static_cast<double>(static_cast<float>(0.02 * ref.normal())));

  Tensor ids = index_tensor({3, 0, 63, 3}, {2, 2});
  Tensor out = emb.forward(ids);
  REQUIRE(out.shape() == Shape{2, 2, 128});
  for (int64_t j = 0; j < 128; j += 17) {
    CHECK(out.at({0, 0, j}) == emb.weight.at({3, j}));
    CHECK(out.at({0, 1, j}) == emb.weight.at({0, j}));
    CHECK(out.at({1, 0, j}) == emb.weight.at({63, j}));
    CHECK(out.at({1, 1, j}) == emb.weight.at({3, j}));
  }
  CHECK_THROWS_AS(Embedding(0, 4, gen), Error);
  CHECK_THROWS_WITH_AS(Linear(4, 2, true, gen, DType::i64), doctest::Contains("float32 or float64"), Error);
}

TEST_CASE("determinism: the same seed gives bit-identical initial weights, another seed different ones") {
  auto weights = [](uint64_t seed) {
    Generator gen(seed);
    TestModel m(16, 8, 2, true, gen);
    std::vector<std::vector<double>> out;
    for (const auto& [n, t] : m.named_parameters()) out.push_back(t.to_vector());
    return out;
  };
  CHECK(weights(11) == weights(11));
  CHECK(weights(11) != weights(12));
}

TEST_CASE("load_parameters copies by name, keeps the parameters leaves, and bumps their versions") {
  Generator g1(1), g2(2);
  TestModel a(16, 8, 2, true, g1), b(16, 8, 2, true, g2);
  const Tensor a_qkv = a.blks[1]->qkv->weight;
  const uint64_t before = a_qkv.impl()->storage->version;
  NamedTensors from_b = b.named_parameters();
  std::reverse(from_b.begin(), from_b.end());  // order does not matter, names do
  a.load_parameters(from_b);
  for (const auto& [name, t] : a.named_parameters()) {
    CAPTURE(name);
    Tensor src;
    for (const auto& [n2, t2] : b.named_parameters())
      if (n2 == name) src = t2;
    CHECK(t.to_vector() == src.to_vector());
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
    CHECK(t.impl() != src.impl());  // copied, not aliased
  }
  CHECK(a.blks[1]->qkv->weight.impl() == a_qkv.impl());  // same tensor, new values
  CHECK(a_qkv.impl()->storage->version > before);
}

TEST_CASE("load_parameters: missing, unexpected and mismatched names are listed, and nothing is copied") {
  Generator g1(1), g2(2);
  TestModel a(16, 8, 2, true, g1);
  TestModel other(16, 8, 1, true, g2);  // one block fewer
  const std::vector<double> emb_before = a.token_emb->weight.to_vector();
  try {
    a.load_parameters(other.named_parameters());
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("load_parameters") != std::string::npos);
    CHECK(m.find("missing") != std::string::npos);
    CHECK(m.find("blks.1.qkv.weight") != std::string::npos);
    CHECK(m.find("blks.1.proj.bias") != std::string::npos);
  }
  CHECK(a.token_emb->weight.to_vector() == emb_before);  // the valid names were not copied either

  NamedTensors extra = a.named_parameters();
  extra.emplace_back("lm_head.weight", zeros({16, 8}));
  CHECK_THROWS_WITH_AS(a.load_parameters(extra), doctest::Contains("unexpected (not parameters of this module): lm_head.weight"), Error);

  NamedTensors wrong_shape = a.named_parameters();
  wrong_shape[1].second = zeros({15, 8});
  CHECK_THROWS_WITH_AS(a.load_parameters(wrong_shape), doctest::Contains("token_emb.weight: given (15, 8) float32, the module has (16, 8) float32"), Error);

  NamedTensors wrong_dtype = a.named_parameters();
  wrong_dtype[0].second = ones({8}, DType::f64);
  CHECK_THROWS_WITH_AS(a.load_parameters(wrong_dtype), doctest::Contains("scale: given (8,) float64"), Error);

  NamedTensors twice = a.named_parameters();
  twice.push_back(twice[0]);
  CHECK_THROWS_WITH_AS(a.load_parameters(twice), doctest::Contains("given twice"), Error);
}

TEST_CASE("Linear + SGD fits a linear map (gradients flow end to end)") {
  Generator gen(9);
  Linear lin(3, 2, true, gen, DType::f64);
  Tensor A = tensor({1.0, -2.0, 0.5, 0.0, 3.0, -1.0}, {2, 3}, DType::f64);  // the target map (out, in)
  Tensor c = tensor({0.25, -0.75}, {2}, DType::f64);
  Tensor x = randn({32, 3}, gen, DType::f64);
  Tensor y = matmul(x, A.transpose(0, 1)) + c;
  SGD opt(lin.parameters(), 0.1);
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor d = lin.forward(x) - y;
    Tensor loss = mean(d * d);
    if (step == 0) first = loss.item();
    last = loss.item();
    loss.backward();
    opt.step();
  }
  CHECK(first > 1.0);
  CHECK(last < 1e-8);
  CHECK(test::max_abs_diff(lin.weight, A) < 1e-4);
  CHECK(test::max_abs_diff(lin.bias, c) < 1e-4);
}
