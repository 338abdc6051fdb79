// The op layer on CUDA tensors: each op dispatches to the backend, forward and backward agree
// with the CPU op, the attention intermediates agree one by one, the engine's copies and
// in-place writes work on the device, and mixing devices is a clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/convert.h"
#include "gpu_compare.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

Tensor normal64(const Shape& s, Generator& gen, double sd = 1.0) { return randn(s, gen, DType::f64, 0.0, sd); }

}  // namespace

TEST_CASE("elementwise ops on cuda, forward and backward, with broadcasting and strided inputs") {
  Generator gen(301);
  const Tensor a = normal64({3, 4, 5}, gen), b = normal64({4, 1}, gen), pos = rand({3, 4, 5}, gen, DType::f64, 0.5, 2.0);
  using V = std::vector<Tensor>;
  check_op("add", [](const V& x) { return add(x[0], x[1]); }, {a, b});
  check_op("sub", [](const V& x) { return sub(x[0], x[1]); }, {b, a});
  check_op("mul", [](const V& x) { return mul(x[0], x[1].transpose(0, 1).transpose(0, 1)); }, {a, b});
  check_op("div", [](const V& x) { return div(x[0], x[1]); }, {a, pos});
  check_op("scalars", [](const V& x) { return rdiv(rsub(mul(add(x[0], 1.5), -2.0), 3.0), 7.0); }, {pos});
  check_op("neg exp", [](const V& x) { return exp(neg(x[0])); }, {a});
  check_op("log sqrt pow", [](const V& x) { return add(log(x[0]), pow(sqrt(x[0]), -1.5)); }, {pos});
  check_op("relu tanh gelu", [](const V& x) { return add(relu(x[0]), mul(tanh(x[0]), gelu(x[0]))); }, {a});
  check_op("on a transposed view", [](const V& x) { return exp(x[0].transpose(0, 2)); }, {a});
}

TEST_CASE("reductions on cuda: sum, mean, max over several dimensions; argmax") {
  Generator gen(302);
  const Tensor x = normal64({4, 5, 6}, gen);
  using V = std::vector<Tensor>;
  check_op("sum all", [](const V& v) { return sum(v[0]); }, {x});
  check_op("sum {0, 2} keepdim", [](const V& v) { return sum(v[0], {0, 2}, true); }, {x});
  check_op("mean {1}", [](const V& v) { return mean(v[0], {1}, false); }, {x});
  check_op("max dim 1", [](const V& v) { return max(v[0], 1, false); }, {x});
  check_op("max dim 0 keepdim", [](const V& v) { return max(v[0], 0, true); }, {x});
  expect_equal("argmax dim 2", argmax(gpu(x), 2, false), argmax(x, 2, false));
  expect_equal("argmax dim 0", argmax(gpu(x), 0, true), argmax(x, 0, true));
}

TEST_CASE("matmul on cuda: matrices, vectors, batches, broadcast batches, transposed operands") {
  Generator gen(303);
  using V = std::vector<Tensor>;
  check_op("(5, 7) @ (7, 3)", [](const V& x) { return matmul(x[0], x[1]); }, {normal64({5, 7}, gen), normal64({7, 3}, gen)});
  check_op("(7,) @ (7, 3)", [](const V& x) { return matmul(x[0], x[1]); }, {normal64({7}, gen), normal64({7, 3}, gen)});
  check_op("(5, 7) @ (7,)", [](const V& x) { return matmul(x[0], x[1]); }, {normal64({5, 7}, gen), normal64({7}, gen)});
  check_op("(2, 3, 5, 7) @ (7, 4) shared", [](const V& x) { return matmul(x[0], x[1]); },
           {normal64({2, 3, 5, 7}, gen), normal64({7, 4}, gen)});
  check_op("(2, 1, 5, 7) @ (3, 7, 4) broadcast", [](const V& x) { return matmul(x[0], x[1]); },
           {normal64({2, 1, 5, 7}, gen), normal64({3, 7, 4}, gen)});
  check_op("Aᵀ @ Bᵀ", [](const V& x) { return matmul(x[0].transpose(-1, -2), x[1].transpose(-1, -2)); },
           {normal64({3, 7, 5}, gen), normal64({3, 4, 7}, gen)});
}

TEST_CASE("the softmax family on cuda: any dim, −inf rows, the row rule, log_softmax, the Jacobian") {
  Generator gen(304);
  Tensor s = normal64({4, 6, 5}, gen, 2.0);
  for (int64_t j = 0; j < 5; ++j) s.set_at({1, 2, j}, -kInf);  // a row with no visible key
  s.set_at({2, 0, 3}, -kInf);
  using V = std::vector<Tensor>;
  check_op("softmax dim -1", [](const V& x) { return softmax(x[0], -1); }, {s});
  check_op("softmax dim 0", [](const V& x) { return softmax(x[0], 0); }, {normal64({4, 6, 5}, gen)});
  check_op("softmax dim 1", [](const V& x) { return softmax(x[0], 1); }, {normal64({4, 6, 5}, gen)});
  check_op("log_softmax dim -1", [](const V& x) { return log_softmax(x[0], -1); }, {normal64({4, 6, 5}, gen)});
  check_op("log_softmax dim 1", [](const V& x) { return log_softmax(x[0], 1); }, {normal64({4, 6, 5}, gen)});
  const Tensor P = softmax(normal64({3, 7}, gen), -1);
  check_op("softmax_backward (row rule) and its backward", [](const V& x) { return softmax_backward(x[0], x[1]); },
           {P, normal64({3, 7}, gen)});
  check_op("softmax_jacobian and its backward", [](const V& x) { return softmax_jacobian(x[0]); }, {P});
  check_op("softmax then Jacobian", [](const V& x) { return softmax_jacobian(softmax(x[0], -1)); }, {normal64({2, 5}, gen)});
}

TEST_CASE("masked_fill, where, embedding, concat, split and cross_entropy on cuda") {
  Generator gen(305);
  using V = std::vector<Tensor>;
  const Tensor mask = bool_tensor({true, false, false, true, false}, {5});
  check_op("masked_fill broadcast mask", [mask](const V& x) { return masked_fill(x[0], mask.to(x[0].device()), -3.0); },
           {normal64({4, 5}, gen)});
  const Tensor cond = bool_tensor({true, false, true, true, false, false}, {2, 3});
  check_op("where broadcast", [cond](const V& x) { return where(cond.to(x[0].device()), x[0], x[1]); },
           {normal64({2, 3}, gen), normal64({3}, gen)});
  const Tensor ids = index_tensor({3, 0, 3, 5, 1, 3}, {2, 3});
  check_op("embedding (repeated ids: scatter-add)", [ids](const V& x) { return embedding(x[0], ids.to(x[0].device())); },
           {normal64({6, 4}, gen)});
  check_op("embedding of a transposed table", [ids](const V& x) { return embedding(x[0].transpose(0, 1), ids.to(x[0].device())); },
           {normal64({4, 6}, gen)});
  check_op("concat dim 1", [](const V& x) { return concat({x[0], x[1], x[0]}, 1); }, {normal64({3, 2}, gen), normal64({3, 4}, gen)});
  check_op("split dim 0, pieces recombined", [](const V& x) {
    std::vector<Tensor> p = split(x[0], {1, 3, 2}, 0);
    return add(mul(p[0], p[2].slice(0, 0, 1)), sum(p[1], {0}, true));
  }, {normal64({6, 3}, gen)});
  const Tensor targets = index_tensor({2, -100, 0, 4, 4, -100}, {2, 3});
  check_op("cross_entropy with ignore_index", [targets](const V& x) { return cross_entropy(x[0], targets.to(x[0].device()), -100); },
           {normal64({2, 3, 5}, gen, 3.0)});
}

TEST_CASE("attention on cuda: output and gradients for every mask kind, and the trace's intermediates one by one") {
  Generator gen(306);
  const int64_t B = 2, H = 3, T = 6, dk = 4, dv = 5;
  const Tensor q = normal64({B, H, T, dk}, gen), k = normal64({B, H, T, dk}, gen), v = normal64({B, H, T, dv}, gen);
  Tensor pad = ones({B, 1, 1, T}, DType::b8);  // sequence 1 hides its last two keys
  pad.set_at({1, 0, 0, T - 1}, 0.0);
  pad.set_at({1, 0, 0, T - 2}, 0.0);
  Tensor additive = normal64({T, T}, gen, 0.5);
  additive.set_at({0, 0}, -kInf);  // query 0 sees no key at all under the causal rule: its row is zero
  using V = std::vector<Tensor>;
  check_op("attention plain", [](const V& x) { return attention(x[0], x[1], x[2]); }, {q, k, v});
  check_op("attention causal", [](const V& x) { return attention(x[0], x[1], x[2], {.causal = true}); }, {q, k, v});
  check_op("attention padding mask", [pad](const V& x) {
    return attention(x[0], x[1], x[2], {.mask = pad.to(x[0].device())});
  }, {q, k, v});
  check_op("attention causal + additive, a fully masked row", [additive](const V& x) {
    return attention(x[0], x[1], x[2], {.causal = true, .mask = additive.to(x[0].dtype()).to(x[0].device())});
  }, {q, k, v});
  check_op("attention no scale, K and V broadcast over heads", [](const V& x) {
    return attention(x[0], x[1], x[2], {.scale = 1.0});
  }, {q, normal64({B, 1, T, dk}, gen), normal64({B, 1, T, dv}, gen)});

  // The trace: S, P, O, dP, D, dS, dQ, dK, dV on the GPU against the CPU, one by one.
  const Tensor dO = normal64({B, H, T, dv}, gen);
  for (DType t : kFloatTypes) {
    const AttentionOptions opts{.causal = true, .mask = pad};
    const AttentionTrace c = attention_trace(q, k, v, dO, opts);
    const AttentionOptions gopts{.causal = true, .mask = pad.to(Device::cuda)};
    const AttentionTrace g = attention_trace(gpu(q.to(t)), gpu(k.to(t)), gpu(v.to(t)), gpu(dO.to(t)), gopts);
    const std::pair<const char*, std::pair<Tensor, Tensor>> pairs[] = {
        {"trace S", {g.S, c.S}},   {"trace P", {g.P, c.P}},   {"trace O", {g.O, c.O}},
        {"trace dP", {g.dP, c.dP}}, {"trace D", {g.D, c.D}},   {"trace dS", {g.dS, c.dS}},
        {"trace dQ", {g.dQ, c.dQ}}, {"trace dK", {g.dK, c.dK}}, {"trace dV", {g.dV, c.dV}}};
    for (const auto& [what, gc] : pairs) expect_close(what, gc.first, gc.second, t);
    CHECK(g.scale == c.scale);
  }
}

TEST_CASE("the engine on cuda: copies across devices and dtypes, strided writes, fill_, add_, mul_") {
  Generator gen(307);
  const Tensor x = normal64({4, 6}, gen);
  // host -> device into a strided view, with broadcasting and a dtype change
  Tensor d = zeros({6, 4}, DType::f32, Device::cuda);
  d.transpose(0, 1).slice(1, 0, 6, 2).copy_(x.slice(0, 0, 1).slice(1, 0, 3));  // (4, 3) <- (1, 3)
  Tensor h = zeros({6, 4}, DType::f32);
  h.transpose(0, 1).slice(1, 0, 6, 2).copy_(x.slice(0, 0, 1).slice(1, 0, 3));
  expect_equal("copy_ host -> strided device view, broadcast, f64 -> f32", d, h);
  // device -> host into a strided view
  Tensor back = zeros({4, 12}, DType::f64);
  back.slice(1, 0, 12, 2).copy_(gpu(x).transpose(0, 1).transpose(0, 1));
  Tensor expect = zeros({4, 12}, DType::f64);
  expect.slice(1, 0, 12, 2).copy_(x);
  CHECK(back.to_vector() == expect.to_vector());
  // device -> device, i64 and b8 conversions
  expect_equal("to(i64) on cuda", mul(gpu(x), 10.0).to(DType::i64), mul(x, 10.0).to(DType::i64));
  expect_equal("to(b8) on cuda", gpu(x).to(DType::b8), x.to(DType::b8));
  // fill_ of a strided view, add_ and mul_
  Tensor f = zeros({3, 4}, DType::f64, Device::cuda);
  f.slice(1, 1, 4, 2).fill_(2.5);
  Tensor fh = zeros({3, 4}, DType::f64);
  fh.slice(1, 1, 4, 2).fill_(2.5);
  expect_equal("fill_ of a strided cuda view", f, fh);
  f.add_(gpu(x.slice(1, 0, 4).slice(0, 0, 3)), -0.5).mul_(3.0);
  fh.add_(x.slice(1, 0, 4).slice(0, 0, 3), -0.5).mul_(3.0);
  expect_close("add_ then mul_ on cuda", f, fh, DType::f64);
}

namespace {

const double kNaN = std::nan("");
constexpr double kTwo63 = 9223372036854775808.0;  // 2^63

// The text of the Error `f` throws, after its op ("to(i64): " or "to(i64) (cuda): "); "" if none.
std::string error_after_op(const std::function<void()>& f, const std::string& op) {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.rfind(op + ": ", 0) == 0);
    return what.rfind(op + ": ", 0) == 0 ? what.substr(op.size() + 2) : what;
  }
  FAIL_CHECK("no Error from ", op);
  return "";
}

}  // namespace

TEST_CASE("conversions on cuda follow the CPU's rule on the edge values: to(b8) is v != 0, to(i64) truncates or fails") {
  // engine/convert.h: the values where a static_cast differs between g++ and the GPU (negatives to
  // an unsigned byte, NaN, ±inf and out-of-range to i64), and their neighbours.
  const std::vector<double> edge = {-1.42, -1.0, -0.0, 0.0, 0.3, 255.0, 256.0, -256.0, 1e-300,
                                    kNaN,  kInf, -kInf, 2.7, -2.7, std::nextafter(kTwo63, 0.0), -kTwo63, 1e18};
  const int64_t n = static_cast<int64_t>(edge.size());
  for (DType t : kFloatTypes) {
    CAPTURE(dtype_name(t));
    const Tensor x = tensor(edge, {n}, t);
    std::vector<double> finite;  // the values with an int64 value, once rounded to t
    for (double v : x.to_vector())
      if (fits_i64(v)) finite.push_back(v);
    const Tensor xf = tensor(finite, {static_cast<int64_t>(finite.size())}, t);
    // device -> device, host -> device (converted on the device after the upload), device -> host
    expect_equal("to(b8) of the edge values", gpu(x).to(DType::b8), x.to(DType::b8));
    Tensor up = zeros({n}, DType::b8, Device::cuda);
    up.copy_(x);
    expect_equal("copy_ host -> device into b8", up, x.to(DType::b8));
    Tensor down = zeros({n}, DType::b8);
    down.copy_(gpu(x));
    CHECK(down.to_vector() == x.to(DType::b8).to_vector());
    CHECK(gpu(xf).to(DType::i64).to_int_vector() == xf.to(DType::i64).to_int_vector());
    CHECK(gpu(x).to(DType::b8).to(t).to_vector() == x.to(DType::b8).to(t).to_vector());  // b8 reads as 0 or 1

    // Each value without an int64 value, alone and behind a good one: the same Error on both
    // devices (the GPU's at the first look at the result), the same value and position.
    for (double bad : {kNaN, kInf, -kInf, kTwo63, 1e30}) {
      CAPTURE(bad);
      const Tensor b = tensor({1.5, bad, -7.0, bad}, {2, 2}, t);  // first bad one at [0, 1]
      const std::string cpu = error_after_op([&] { (void)b.to(DType::i64); }, "to(i64)");
      CHECK(cpu.find("value") != std::string::npos);
      CHECK(cpu.find("at position [0, 1] of the source (2, 2)") != std::string::npos);
      CHECK(error_after_op([&] { (void)gpu(b).to(DType::i64).to_vector(); }, "to(i64) (cuda)") == cpu);
      Tensor into = zeros({2, 2}, DType::i64, Device::cuda);
      into.copy_(b);  // host -> device: converted on the device, the check deferred like the others
      CHECK(error_after_op([&] { (void)into.to_vector(); }, "to(i64) (cuda)") == cpu);
      Tensor host = zeros({2, 2}, DType::i64);  // device -> host: converted on the device, read at once
      CHECK(error_after_op([&] { host.copy_(gpu(b)); }, "to(i64) (cuda)") == cpu);
      // A source that copy_ broadcasts: the position is the source's own, [0, 1] of (1, 2).
      Tensor wide = zeros({3, 2}, DType::i64, Device::cuda), wide_host = zeros({3, 2}, DType::i64);
      wide.copy_(gpu(b).slice(0, 0, 1));
      CHECK(error_after_op([&] { (void)wide.to_vector(); }, "to(i64) (cuda)") ==
            error_after_op([&] { wide_host.copy_(b.slice(0, 0, 1)); }, "to(i64)"));
    }
  }
  // The check is deferred: queued, no host wait; a good conversion afterwards reads cleanly.
  const Tensor bad_dev = gpu(tensor({kNaN}, {1}, DType::f64));
  const uint64_t waits = cu().host_waits();
  const Tensor converted = bad_dev.to(DType::i64);
  CHECK(cu().host_waits() == waits);
  CHECK_THROWS_WITH_AS(cu().synchronize(), doctest::Contains("to(i64) (cuda): float64 value nan at position [0]"), Error);
  CHECK(gpu(tensor({-3.5}, {1}, DType::f64)).to(DType::i64).to_int_vector() == std::vector<int64_t>{-3});
  // i64 -> b8, and fill_ with the same rule (a value with no int64 value refused at once)
  expect_equal("to(b8) of i64", gpu(index_tensor({-1, 0, 2, 256}, {4})).to(DType::b8),
               index_tensor({-1, 0, 2, 256}, {4}).to(DType::b8));
  expect_equal("fill_(-1.42) of b8", zeros({3}, DType::b8, Device::cuda).fill_(-1.42), full({3}, -1.42, DType::b8));
  expect_equal("fill_(nan) of b8", zeros({3}, DType::b8, Device::cuda).fill_(kNaN), full({3}, kNaN, DType::b8));
  Tensor ids = zeros({3}, DType::i64, Device::cuda);
  CHECK_THROWS_WITH_AS(ids.fill_(kNaN), doctest::Contains("fill_: float64 value nan (the fill value)"), Error);
  CHECK_THROWS_WITH_AS(cu().fill(ids, -kInf), doctest::Contains("fill (cuda): float64 value -inf"), Error);
}

TEST_CASE("a graph that crosses devices: to(cuda) and back, gradients land on the leaf's device") {
  Generator gen(308);
  Tensor leaf = normal64({3, 4}, gen).requires_grad_();
  Tensor y = softmax(leaf.to(Device::cuda), 0);         // on the GPU
  Tensor z = sum(mul(y.to(Device::cpu), y.to(Device::cpu)));  // back on the CPU
  z.backward();
  REQUIRE(leaf.grad().defined());
  CHECK(leaf.grad().device() == Device::cpu);
  Tensor ref_leaf = leaf.detach().requires_grad_();
  Tensor yr = softmax(ref_leaf, 0);
  sum(mul(yr, yr)).backward();
  CHECK(rel_error(leaf.grad().to_vector(), ref_leaf.grad().to_vector()) < 1e-12);
}

TEST_CASE("mixing devices names both devices and the op; bad ids on cuda are errors, not crashes") {
  Tensor a = zeros({2, 3}, DType::f32), b = zeros({2, 3}, DType::f32, Device::cuda);
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("add: device mismatch"), Error);
  CHECK_THROWS_WITH_AS(matmul(a, b.transpose(0, 1)), doctest::Contains("device"), Error);
  CHECK_THROWS_WITH_AS(embedding(b, index_tensor({0}, {1})), doctest::Contains("cpu"), Error);
  // Ids are checked on the device: the error comes with the first look at a result.
  CHECK_THROWS_WITH_AS(embedding(b, index_tensor({0, 7}, {2}).to(Device::cuda)).to_vector(),
                       doctest::Contains("index 7 at position [1]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(b, index_tensor({1, 3}, {2}).to(Device::cuda)).item(),
                       doctest::Contains("target 3 at position [1]"), Error);
  CHECK_THROWS_WITH_AS(attention(b.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)), doctest::Contains("device"), Error);
}
