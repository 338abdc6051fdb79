// Engine semantics: the tape, backward, views, versions and the errors a user can hit.
#include <doctest/doctest.h>

#include "handgrad.h"

using namespace hg;

namespace {
Tensor leaf64(std::vector<double> v, Shape s) { return tensor(v, s, DType::f64).requires_grad_(); }
}  // namespace

TEST_CASE("b = a + a; c = b + b gives dc/da = 4 (fan-out accumulates, no recursion)") {
  Tensor a = leaf64({1.5, -2.0}, {2});
  Tensor b = a + a;
  Tensor c = b + b;
  sum(c).backward();
  CHECK(a.grad().to_vector() == std::vector<double>{4.0, 4.0});
}

TEST_CASE("a deep chain is walked iteratively") {
  Tensor a = leaf64({1.0}, {1});
  Tensor x = a;
  for (int i = 0; i < 20000; ++i) x = x * 1.0;
  sum(x).backward();
  CHECK(a.grad().item() == 1.0);
}

TEST_CASE("gradients accumulate across two backward calls with retain_graph; a third without it throws") {
  Tensor a = leaf64({1.0, 2.0, 3.0}, {3});
  Tensor loss = sum(a * a);
  loss.backward(Tensor(), /*retain_graph=*/true);
  CHECK(a.grad().to_vector() == std::vector<double>{2.0, 4.0, 6.0});
  loss.backward();  // frees the saved tensors of the nodes it walked
  CHECK(a.grad().to_vector() == std::vector<double>{4.0, 8.0, 12.0});
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("backward through the graph a second time"), Error);
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("retain_graph=true"), Error);
  CHECK(loss.grad_fn()->freed);
}

TEST_CASE("backward from a non-scalar needs a seed gradient") {
  Tensor a = leaf64({1.0, 2.0}, {2});
  Tensor y = a * 3.0;
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("not a scalar"), Error);
  y.backward(tensor({1.0, 10.0}, {2}, DType::f64));
  CHECK(a.grad().to_vector() == std::vector<double>{3.0, 30.0});
}

TEST_CASE("a seed of the wrong shape is refused, naming both shapes") {
  Tensor a = leaf64({1.0, 2.0}, {2});
  Tensor y = a * 3.0;
  CHECK_THROWS_WITH_AS(y.backward(ones({3}, DType::f64)), doctest::Contains("(3,)"), Error);
}

TEST_CASE("a saved tensor modified in place makes backward throw, naming op, tensor and versions") {
  Tensor x = leaf64({1.0, 2.0, 3.0}, {3});
  Tensor w = tensor({4.0, 5.0, 6.0}, {3}, DType::f64);  // a constant the mul saves
  Tensor y = sum(x * w);
  w.mul_(2.0);  // bumps w's version from 1 to 2
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("mul backward"), Error);
  Tensor x2 = leaf64({1.0}, {1});
  Tensor e = exp(x2);
  Tensor l = sum(e);
  e.detach().add_(ones({1}, DType::f64));  // detach shares the version counter
  try {
    l.backward();
    FAIL("expected an in-place error");
  } catch (const Error& err) {
    std::string m = err.what();
    CHECK(m.find("exp backward") != std::string::npos);
    CHECK(m.find("exp output") != std::string::npos);
    CHECK(m.find("saved at version 0, now version 1") != std::string::npos);
  }
}

TEST_CASE("in-place writes to a tensor that requires grad are refused in grad mode, allowed under NoGradGuard") {
  Tensor x = leaf64({1.0, 2.0}, {2});
  CHECK_THROWS_WITH_AS(x.fill_(0.0), doctest::Contains("NoGradGuard"), Error);
  {
    NoGradGuard ng;
    x.mul_(2.0);
  }
  CHECK(x.to_vector() == std::vector<double>{2.0, 4.0});
}

TEST_CASE("no-grad records nothing") {
  Tensor x = leaf64({1.0, 2.0}, {2});
  NoGradGuard ng;
  Tensor y = exp(x) * 2.0;
  CHECK_FALSE(y.requires_grad());
  CHECK(y.is_leaf());
  CHECK(y.grad_fn() == nullptr);
}

TEST_CASE("a dropped forward frees its graph and what it saved") {
  Tensor x = leaf64({1.0, 2.0, 3.0}, {3});
  const size_t nodes0 = Node::live_count();
  const size_t bytes0 = Storage::live_bytes();
  {
    Tensor y = exp(x * x);
    Tensor z = sum(y);
    CHECK(Node::live_count() == nodes0 + 3);
    CHECK(Storage::live_bytes() > bytes0);
  }
  CHECK(Node::live_count() == nodes0);
  CHECK(Storage::live_bytes() == bytes0);
}

TEST_CASE("backward frees the saved tensors of the nodes it walked unless retain_graph") {
  Tensor x = leaf64({1.0, 2.0}, {2});
  Tensor l = sum(exp(x));
  REQUIRE(tape_of(l).size() == 2);
  const Node& e = *tape_of(l)[0];
  CHECK(e.saved.at(0).data.defined());
  l.backward();
  CHECK(tape_of(l).size() == 2);  // the structure stays, for printing and drawing
  CHECK(e.freed);
  CHECK_FALSE(e.saved.at(0).data.defined());
}

TEST_CASE("a gradient reaching a node an earlier backward freed throws") {
  Tensor x = leaf64({1.0, 2.0}, {2});
  Tensor h = exp(x);
  sum(h).backward();
  Tensor l2 = sum(h * 2.0);
  CHECK_THROWS_WITH_AS(l2.backward(), doctest::Contains("already freed"), Error);
}

TEST_CASE("the tape prints its nodes and an observer sees every step of backward") {
  Tensor x = leaf64({1.0, 2.0}, {2}).set_name("x");
  Tensor l = sum(exp(x));
  std::string s = tape_str(l);
  CHECK(s.find("exp") != std::string::npos);
  CHECK(s.find("sum") != std::string::npos);
  CHECK(s.find("saves: exp output") != std::string::npos);
  std::vector<std::string> seen;
  std::vector<size_t> index;
  BackwardObserver obs;
  obs.before = [&](size_t i, const Node& e, const std::vector<Tensor>& gout) {
    seen.push_back(e.op);
    index.push_back(i);
    CHECK(gout.size() == e.outputs.size());
  };
  obs.after = [&](size_t, const Node& e, const std::vector<Tensor>&, const std::vector<Tensor>& gin) {
    CHECK(gin.size() == e.inputs.size());
  };
  BackwardOptions o;
  o.observer = &obs;
  backward(l, Tensor(), o);
  CHECK(seen == std::vector<std::string>{"sum", "exp"});
  CHECK(index == std::vector<size_t>{1, 0});
}

TEST_CASE("views share storage; view after transpose fails with the engine's error; reshape copies") {
  Tensor y = arange(24, DType::f64).view({2, 3, 4});
  Tensor t = y.transpose(1, 2);  // (2, 4, 3), not contiguous
  CHECK_FALSE(t.is_contiguous());
  CHECK_THROWS_WITH_AS(t.view({2, 12}), doctest::Contains("Use .reshape(2, 12)"), Error);
  Tensor r = t.reshape({2, 12});
  CHECK(r.is_contiguous());
  CHECK(r.at({0, 1}) == 4.0);  // t[0, 0, 1] = y[0, 1, 0]
  // a view that keeps non-contiguous dims apart still works
  Tensor v = t.view({2, 2, 2, 3});
  CHECK(v.at({1, 1, 1, 2}) == y.at({1, 2, 3}));
  // slicing shares storage
  Tensor s = y.slice(2, 1, 3);
  {
    NoGradGuard ng;
    s.fill_(-1.0);
  }
  CHECK(y.at({1, 2, 1}) == -1.0);
}

TEST_CASE("the errors a user can hit name the op and the shapes") {
  Tensor a = zeros({2, 3}, DType::f64), b = zeros({4, 3}, DType::f64), c = zeros({2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("add: shapes (2, 3) and (4, 3) cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(mul(a, c), doctest::Contains("mul: dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(a.view({5}), doctest::Contains("view: shape (5,)"), Error);
  CHECK_THROWS_WITH_AS(a.transpose(0, 2), doctest::Contains("transpose: dim 2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(a.select(0, 5), doctest::Contains("select: index 5 is out of range"), Error);
  CHECK_THROWS_WITH_AS(sum(a, {3}), doctest::Contains("sum: dim 3 is out of range"), Error);
  CHECK_THROWS_WITH_AS(tensor({1.0, 2.0}, {3}), doctest::Contains("tensor: 2 values"), Error);
  CHECK_THROWS_WITH_AS(zeros({2}, DType::i64).requires_grad_(), doctest::Contains("float32/float64"), Error);
  CHECK_THROWS_WITH_AS(logsumexp(zeros({2}, DType::i64), {0}), doctest::Contains("logsumexp: "), Error);
  CHECK(exp(zeros({2}, DType::i64)).dtype() == DType::f32);  // an integer meets a float function as float32
}

TEST_CASE("a CUDA tensor without CUDA or without a GPU is an error, not a crash") {
  if (cuda_backend() && cuda_backend()->device_available()) return;  // covered by the GPU tests
  CHECK_THROWS_WITH_AS(zeros({2}, DType::f32, Device::cuda), doctest::Contains("CUDA"), Error);
}

TEST_CASE("dtype conversion is differentiable: the gradient comes back in the input's dtype") {
  Tensor x = tensor({1.0, 2.0}, {2}, DType::f32).requires_grad_();
  Tensor l = sum(x.to(DType::f64) * 3.0);
  l.backward();
  CHECK(x.grad().dtype() == DType::f32);
  CHECK(x.grad().to_vector() == std::vector<double>{3.0, 3.0});
}

TEST_CASE("dtype conversion: its tangent is converted alike; to an integer dtype nothing is recorded") {
  Tensor x = tensor({1.0, -2.0}, {2}, DType::f32).requires_grad_();
  {
    DualLevel level;
    const Dual d = unpack_dual(make_dual(x.detach(), tensor({0.5, 4.0}, {2}, DType::f32)).to(DType::f64));
    CHECK(d.primal.dtype() == DType::f64);
    CHECK(d.tangent.dtype() == DType::f64);
    CHECK(d.tangent.to_vector() == std::vector<double>{0.5, 4.0});
  }
  const Tensor n = x.to(DType::i64);
  CHECK_FALSE(n.requires_grad());
  CHECK(n.to_int_vector() == std::vector<int64_t>{1, -2});
  CHECK(x.to(DType::f32).id() == x.id());  // the same dtype: the tensor itself
}

TEST_CASE("the seeded generator repeats exactly") {
  Generator g1(42), g2(42);
  CHECK(randn({5}, g1, DType::f64).to_vector() == randn({5}, g2, DType::f64).to_vector());
  Generator g3(43);
  CHECK(randn({5}, g1, DType::f64).to_vector() != randn({5}, g3, DType::f64).to_vector());
}

TEST_CASE("printing shows shape, dtype and values") {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2}, DType::f64);
  std::string s = x.str(1);
  CHECK(s.find("(2, 2) float64") != std::string::npos);
  CHECK(s.find("[[ 1.0,  2.0],") != std::string::npos);
}

TEST_CASE("hostile shapes: a size that overflows is an Error naming the op and the shape, never a short buffer") {
  const int64_t huge = (int64_t{1} << 61) + 1;
  // (2^61 + 1) · 8 wraps to 8 in int64 arithmetic; it must not give an 8-element tensor.
  CHECK_THROWS_WITH_AS(empty({huge, 8}), doctest::Contains("empty: shape (2305843009213693953, 8) of float32 is too large"),
                       Error);
  CHECK_THROWS_WITH_AS(zeros({huge, 8}), doctest::Contains("too large"), Error);
  // A 0 makes the count 0, but the strides of the other sizes would still overflow.
  CHECK_THROWS_WITH_AS(empty({0, int64_t{1} << 62, 4}), doctest::Contains("too large"), Error);
  CHECK_THROWS_WITH_AS(empty({3, -1}), doctest::Contains("negative size"), Error);
  const Tensor none = empty({0, 5});
  CHECK(none.numel() == 0);
  CHECK_THROWS_WITH_AS(none.reshape({0, int64_t{1} << 62, 4}), doctest::Contains("reshape: shape"), Error);
  CHECK_THROWS_WITH_AS(none.view({int64_t{1} << 62, int64_t{1} << 62, 0}), doctest::Contains("view"), Error);
  CHECK_THROWS_WITH_AS(expand(ones({1, 4}), {int64_t{1} << 62, 4}), doctest::Contains("expand: shape"), Error);
  // The backstops, for a shape that reaches them some other way.
  CHECK_THROWS_WITH_AS(shape_numel({huge, 8}), doctest::Contains("overflows int64"), Error);
  CHECK_THROWS_WITH_AS(contiguous_strides({2, int64_t{1} << 62, 4}), doctest::Contains("overflows int64"), Error);
  CHECK(shape_numel({0, int64_t{1} << 62, 4}) == 0);
}

TEST_CASE("copy_ from a view of the destination's own memory reads the source before writing") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, DType::f64);
  a.copy_(a.transpose(0, 1));
  CHECK(a.to_vector() == std::vector<double>{1, 3, 2, 4});  // in place it gave 1, 3, 3, 4
  Tensor b = tensor({1, 2, 3, 4, 5}, {5}, DType::f64);
  b.slice(0, 1, 5).copy_(b.slice(0, 0, 4));  // shift right by one, overlapping
  CHECK(b.to_vector() == std::vector<double>{1, 1, 2, 3, 4});
}

TEST_CASE("add_ of a view of the destination's own memory reads it before writing") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, DType::f64);
  a.add_(a.transpose(0, 1));
  CHECK(a.to_vector() == std::vector<double>{2, 5, 5, 8});
}

TEST_CASE("a raw write through data_ptr() marked with bump_version() is caught by the backward that saved the tensor") {
  Tensor x = tensor({1, 2}, {2}, DType::f64).requires_grad_();
  Tensor y = x * 1.0;          // a non-leaf whose memory we write directly
  Tensor l = sum(mul(y, y));   // mul saves y
  y.detach().data_ptr<double>()[0] = 5.0;
  y.bump_version();
  CHECK_THROWS_WITH_AS(l.backward(), doctest::Contains("modified"), Error);
}
