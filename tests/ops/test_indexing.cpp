// ops/indexing.h: forward values against hand-computed expectations, backward by hand where it
// is short (the gradcheck cases cover the rest), and every error a user can hit.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "handgrad.h"

using namespace hg;

namespace {
Tensor leaf64(std::vector<double> v, Shape s) { return tensor(v, s, DType::f64).requires_grad_(); }
using Vals = std::vector<double>;
const double inf = std::numeric_limits<double>::infinity();
}  // namespace

// ---------------------------------------------------------------- masked_fill

TEST_CASE("masked_fill: a (1, 3) mask broadcasts over the rows of a (2, 3) input") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor out = masked_fill(x, bool_tensor({false, true, false}, {1, 3}), 9.0);
  CHECK(out.shape() == Shape{2, 3});
  CHECK(out.to_vector() == Vals{1, 9, 3, 4, 9, 6});
  CHECK(x.to_vector() == Vals{1, 2, 3, 4, 5, 6});  // the input is untouched
}

TEST_CASE("masked_fill: -inf from a causal mask, then exp, gives exact zeros and a NaN-free backward") {
  // scores (3, 3); mask the keys after each query (upper triangle), as attention does
  Tensor s = leaf64({0.5, 1, 2, -1, 0, 3, 2, 2, 2}, {3, 3});
  Tensor future = bool_tensor({false, true, true, false, false, true, false, false, false}, {3, 3});
  Tensor m = masked_fill(s, future, -inf);
  Vals mv = m.to_vector();
  CHECK(std::isinf(mv[1]));
  CHECK(mv[1] < 0);
  CHECK(mv[3] == -1.0);
  Tensor e = exp(m);
  Vals ev = e.to_vector();
  CHECK(ev[1] == 0.0);
  CHECK(ev[2] == 0.0);
  CHECK(ev[5] == 0.0);
  CHECK(ev[0] == doctest::Approx(std::exp(0.5)));
  sum(e).backward();
  // d/ds sum(exp(masked)) = exp(s) where kept, 0 where masked
  Vals gv = s.grad().to_vector();
  Vals sv = s.to_vector();
  const std::vector<bool> fut = {false, true, true, false, false, true, false, false, false};
  for (size_t i = 0; i < gv.size(); ++i) {
    CHECK_FALSE(std::isnan(gv[i]));
    CHECK(gv[i] == doctest::Approx(fut[i] ? 0.0 : std::exp(sv[i])));
  }
}

TEST_CASE("masked_fill backward: dx = mask ? 0 : g") {
  Tensor x = leaf64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor out = masked_fill(x, bool_tensor({false, true, false}, {3}), 7.0);
  out.backward(tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64));
  CHECK(x.grad().to_vector() == Vals{1, 0, 3, 4, 0, 6});
}

TEST_CASE("masked_fill errors name the op, the shapes and the fix") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(masked_fill(x, ones({2, 3}), 0.0), doctest::Contains("masked_fill: the mask"), Error);
  CHECK_THROWS_WITH_AS(masked_fill(x, ones({2, 3}), 0.0), doctest::Contains("b8"), Error);
  try {
    masked_fill(x, bool_tensor({true, false}, {2}), 0.0);
    FAIL("expected a shape error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("masked_fill") == 0);
    CHECK(m.find("(2,)") != std::string::npos);
    CHECK(m.find("(2, 3)") != std::string::npos);
  }
  // a mask may not enlarge x: the output has x's shape
  CHECK_THROWS_WITH_AS(masked_fill(x, bool_tensor({true, false, true, true, false, true}, {2, 1, 3}), 0.0),
                       doctest::Contains("does not broadcast to x's shape (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(masked_fill(index_tensor({1, 2}, {2}), bool_tensor({true, false}, {2}), 0.0),
                       doctest::Contains("masked_fill: dtype int64"), Error);
}

// ---------------------------------------------------------------- where

TEST_CASE("where: cond (2, 1), a (2, 3), b (3,) broadcast to (2, 3)") {
  Tensor cond = bool_tensor({true, false}, {2, 1});
  Tensor a = leaf64({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = leaf64({10, 20, 30}, {3});
  Tensor out = where(cond, a, b);
  CHECK(out.shape() == Shape{2, 3});
  CHECK(out.to_vector() == Vals{1, 2, 3, 10, 20, 30});
  out.backward(tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64));
  CHECK(a.grad().to_vector() == Vals{1, 2, 3, 0, 0, 0});  // row 0 came from a
  CHECK(b.grad().to_vector() == Vals{4, 5, 6});           // row 1 came from b, summed to (3,)
}

TEST_CASE("where: b read by several rows accumulates; an input without grad gets none") {
  Tensor cond = bool_tensor({false, true, false, false}, {2, 2});
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, DType::f64);  // constant
  Tensor b = leaf64({-1}, {1});
  Tensor out = where(cond, a, b);
  CHECK(out.to_vector() == Vals{-1, 2, -1, -1});
  sum(out).backward();
  CHECK(b.grad().to_vector() == Vals{3});
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("where errors name the op and every shape") {
  Tensor a = zeros({3}), b = zeros({3});
  CHECK_THROWS_WITH_AS(where(ones({3}), a, b), doctest::Contains("where: the condition"), Error);
  CHECK_THROWS_WITH_AS(where(bool_tensor({true, true, false}, {3}), a, zeros({3}, DType::f64)),
                       doctest::Contains("where: dtype mismatch"), Error);
  try {
    where(bool_tensor({true, false}, {2}), a, b);
    FAIL("expected a shape error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("where") == 0);
    CHECK(m.find("condition (2,), a (3,) and b (3,)") != std::string::npos);
  }
}

// ---------------------------------------------------------------- embedding

TEST_CASE("embedding: indices (2, 3) into weight (4, 2) give (2, 3, 2) rows; repeats accumulate in backward") {
  // row v of the table is (10 v, 10 v + 1)
  Tensor w = leaf64({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor ids = index_tensor({3, 0, 3, 1, 1, 2}, {2, 3});
  Tensor out = embedding(w, ids);
  CHECK(out.shape() == Shape{2, 3, 2});
  CHECK(out.to_vector() == Vals{30, 31, 0, 1, 30, 31, 10, 11, 10, 11, 20, 21});
  // seed: position p sends (2p, 2p + 1)
  out.backward(arange(12, DType::f64).view({2, 3, 2}));
  // row 0 <- p1; row 1 <- p3 + p4; row 2 <- p5; row 3 <- p0 + p2
  CHECK(w.grad().to_vector() == Vals{2, 3, 6 + 8, 7 + 9, 10, 11, 0 + 4, 1 + 5});
}

TEST_CASE("embedding: reads a non-contiguous (transposed) weight correctly") {
  Tensor wt = tensor({0, 10, 20, 1, 11, 21}, {2, 3});  // (d, V): its transpose is the (V, d) table
  Tensor out = embedding(wt.transpose(0, 1), index_tensor({2, 0}, {2}));
  CHECK(out.to_vector() == Vals{20, 21, 0, 1});
}

TEST_CASE("embedding errors name the index, its position and V") {
  Tensor w = zeros({4, 2});
  try {
    embedding(w, index_tensor({0, 1, 2, 4, 0, 1}, {2, 3}));
    FAIL("expected a range error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("embedding") == 0);
    CHECK(m.find("index 4") != std::string::npos);
    CHECK(m.find("position [1, 0]") != std::string::npos);
    CHECK(m.find("V = 4") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(embedding(w, index_tensor({-1}, {1})), doctest::Contains("index -1 at position [0]"), Error);
  CHECK_THROWS_WITH_AS(embedding(w, tensor({1}, {1})), doctest::Contains("embedding: indices"), Error);
  CHECK_THROWS_WITH_AS(embedding(zeros({4}), index_tensor({1}, {1})), doctest::Contains("must be 2-D"), Error);
  CHECK_THROWS_WITH_AS(embedding(Tensor(), index_tensor({1}, {1})), doctest::Contains("embedding: the weight is an undefined tensor"), Error);
  CHECK_THROWS_WITH_AS(embedding(w, Tensor()), doctest::Contains("embedding: the indices are an undefined tensor"), Error);
}

// ---------------------------------------------------------------- concat

TEST_CASE("concat along dim 0 and dim 1 (and -1)") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}), b = tensor({5, 6}, {1, 2}), c = tensor({7, 8}, {2, 1});
  Tensor r = concat({a, b}, 0);
  CHECK(r.shape() == Shape{3, 2});
  CHECK(r.to_vector() == Vals{1, 2, 3, 4, 5, 6});
  Tensor k = concat({a, c, a}, 1);
  CHECK(k.shape() == Shape{2, 5});
  CHECK(k.to_vector() == Vals{1, 2, 7, 1, 2, 3, 4, 8, 3, 4});
  CHECK(concat({a, c}, -1).to_vector() == Vals{1, 2, 7, 3, 4, 8});
  CHECK(concat({index_tensor({1}, {1}), index_tensor({2, 3}, {2})}, 0).to_int_vector() == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("concat backward slices g apart; an input that needs no grad gets an undefined gradient") {
  Tensor a = leaf64({1, 2, 3, 4}, {2, 2});
  Tensor c = tensor({7, 8}, {2, 1}, DType::f64);
  Tensor out = concat({a, c}, 1);
  std::vector<bool> defined;
  BackwardObserver obs;
  obs.after = [&](size_t, const Node& e, const std::vector<Tensor>&, const std::vector<Tensor>& gin) {
    if (e.op == "concat")
      for (const Tensor& g : gin) defined.push_back(g.defined());
  };
  BackwardOptions o;
  o.observer = &obs;
  backward(out, tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64), o);
  CHECK(a.grad().to_vector() == Vals{1, 2, 4, 5});
  CHECK_FALSE(c.grad().defined());
  CHECK(defined == std::vector<bool>{true, false});
}

TEST_CASE("concat errors name the offending input's index and shape") {
  Tensor a = zeros({2, 2});
  CHECK_THROWS_WITH_AS(concat({}, 0), doctest::Contains("concat: needs at least one tensor"), Error);
  try {
    concat({a, zeros({1, 2}), zeros({2, 3})}, 0);
    FAIL("expected a shape error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("concat") == 0);
    CHECK(m.find("input 2 has shape (2, 3)") != std::string::npos);
    CHECK(m.find("input 0 has shape (2, 2)") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(concat({a, zeros({2, 2, 1})}, 0), doctest::Contains("input 1 has shape (2, 2, 1)"), Error);
  CHECK_THROWS_WITH_AS(concat({a, zeros({2, 2}, DType::f64)}, 0), doctest::Contains("concat: input 1"), Error);
  CHECK_THROWS_WITH_AS(concat({scalar(1.0)}, 0), doctest::Contains("concat: input 0 is 0-d"), Error);
  CHECK_THROWS_WITH_AS(concat({a, a}, 2), doctest::Contains("concat"), Error);
}

// ---------------------------------------------------------------- chunk, split

namespace {
std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks) {
  std::vector<int64_t> s;
  for (const Tensor& p : chunk(zeros({n, 2}), chunks, 0)) s.push_back(p.size(0));
  return s;
}
}  // namespace

TEST_CASE("chunk: pieces of ceil(n / chunks), like torch.chunk, possibly fewer than asked") {
  using S = std::vector<int64_t>;
  CHECK(chunk_sizes(6, 3) == S{2, 2, 2});
  CHECK(chunk_sizes(5, 2) == S{3, 2});
  CHECK(chunk_sizes(5, 4) == S{2, 2, 1});
  CHECK(chunk_sizes(4, 3) == S{2, 2});  // torch.chunk(torch.arange(4), 3) gives two pieces
  CHECK(chunk_sizes(1, 3) == S{1});
  CHECK(chunk_sizes(0, 3) == S{0, 0, 0});
}

TEST_CASE("chunk returns views that share storage; backward places each piece's gradient") {
  Tensor x = leaf64({0, 1, 2, 3, 4}, {5});
  auto p = chunk(x, 2, -1);
  REQUIRE(p.size() == 2);
  CHECK(p[1].to_vector() == Vals{3, 4});
  {
    NoGradGuard ng;
    x.detach().set_flat(4, 40.0);
  }
  CHECK(p[1].to_vector() == Vals{3, 40});  // a view, not a copy
  Tensor loss = sum(p[0]) + sum(p[1]) * 2.0;
  loss.backward();
  CHECK(x.grad().to_vector() == Vals{1, 1, 1, 2, 2});
}

TEST_CASE("split: the given sizes along a dimension") {
  Tensor x = arange(6).view({2, 3});
  auto p = split(x, {1, 2}, 1);
  REQUIRE(p.size() == 2);
  CHECK(p[0].shape() == Shape{2, 1});
  CHECK(p[0].to_vector() == Vals{0, 3});
  CHECK(p[1].to_vector() == Vals{1, 2, 4, 5});
  auto q = split(x, {0, 2}, 0);
  CHECK(q[0].numel() == 0);
  CHECK(q[1].to_vector() == x.to_vector());
}

TEST_CASE("chunk and split errors name the op, the sizes and the dimension") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(chunk(x, 0, 0), doctest::Contains("chunk: the number of chunks must be positive"), Error);
  CHECK_THROWS_WITH_AS(chunk(scalar(1.0), 2, 0), doctest::Contains("chunk: dim 0 names no dimension of a 0-d tensor"), Error);
  CHECK_THROWS_WITH_AS(split(x, {1, 1}, 1), doctest::Contains("split: sizes (1, 1) sum to 2"), Error);
  CHECK_THROWS_WITH_AS(split(x, {1, 1}, 1), doctest::Contains("has size 3"), Error);
  CHECK_THROWS_WITH_AS(split(x, {4, -1}, 1), doctest::Contains("negative size -1"), Error);
  CHECK_THROWS_WITH_AS(split(x, {2}, 2), doctest::Contains("split"), Error);
}
