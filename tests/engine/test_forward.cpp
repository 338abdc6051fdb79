// Forward mode in the engine: dual levels and tensors, jvp(), the refusals, and the two mixed
// orders (forward over reverse: a Hessian-vector product; reverse over forward) against reverse
// over reverse.
#include <doctest/doctest.h>

#include "test_util.h"

using namespace hg;

TEST_CASE("forward: make_dual carries a tangent that unpack_dual returns, within its level only") {
  Tensor x = tensor({1, 2, 3}, {3}, DType::f64), u = tensor({0.5, -1, 2}, {3}, DType::f64);
  Tensor y;
  {
    DualLevel level;
    Tensor xd = make_dual(x, u);
    CHECK(has_tangent(xd));
    CHECK_FALSE(has_tangent(x));  // the primal itself is untouched
    y = mul(xd, xd);
    Dual d = unpack_dual(y);
    CHECK(d.tangent.to_vector() == std::vector<double>{1, -4, 12});  // 2 x ẋ
    CHECK(d.primal.to_vector() == std::vector<double>{1, 4, 9});
    CHECK_FALSE(has_tangent(d.primal));
  }
  CHECK_FALSE(has_tangent(y));                       // the level closed: its tangents are gone
  CHECK(y.to_vector() == std::vector<double>{1, 4, 9});
}

TEST_CASE("forward: refusals name what is wrong") {
  Tensor x = ones({2, 3}, DType::f64);
  CHECK_THROWS_WITH_AS(make_dual(x, ones({2, 3}, DType::f64)), doctest::Contains("no dual level is open"), Error);
  DualLevel level;
  CHECK_THROWS_WITH_AS(DualLevel(), doctest::Contains("already open"), Error);
  CHECK_THROWS_WITH_AS(make_dual(x, ones({3, 2}, DType::f64)), doctest::Contains("must match the primal"), Error);
  CHECK_THROWS_WITH_AS(make_dual(x, ones({2, 3}, DType::f32)), doctest::Contains("must match the primal"), Error);
  Tensor xd = make_dual(x, ones({2, 3}, DType::f64));
  CHECK_THROWS_WITH_AS(xd.fill_(2.0), doctest::Contains("carries a tangent"), Error);
  CHECK_THROWS_WITH_AS(xd.add_(x), doctest::Contains("carries a tangent"), Error);
}

TEST_CASE("forward: an op without a tangent rule fails naming the op, never a zero tangent") {
  static constexpr OpDef kNoRule{.name = "rule_less", .saves_nothing = "-", .derivation = "tests/engine/test_forward.cpp"};
  auto op = [](const Tensor& x) {
    Tensor out = x.detach().clone();
    if (should_record({x}))
      record(kNoRule, {x}, {out}, {}, [](const std::vector<Tensor>& g, const Saved&) { return g; });
    return out;
  };
  Tensor x = ones({2}, DType::f64);
  CHECK_NOTHROW(op(x));  // outside a level it is an ordinary op
  DualLevel level;
  Tensor xd = make_dual(x, ones({2}, DType::f64));
  CHECK_THROWS_WITH_AS(op(xd), doctest::Contains("forward-mode AD of rule_less is not implemented"), Error);
  // and a definition that describes a rule must be given one, and the other way round
  static constexpr OpDef kDescribed{.name = "described", .saves_nothing = "-", .derivation = "tests/engine/test_forward.cpp",
                                    .tangent = "ȯ = ẋ"};
  Tensor out = x.detach().clone();
  auto pass = [](const std::vector<Tensor>& g, const Saved&) { return g; };
  CHECK_THROWS_WITH_AS(record(kDescribed, {xd}, {out}, {}, pass), doctest::Contains("none was recorded"), Error);
  CHECK_THROWS_WITH_AS(record(kNoRule, {xd}, {out}, {}, pass, [](const std::vector<Tensor>& d) { return d; }),
                       doctest::Contains("does not describe"), Error);
}

TEST_CASE("forward: jvp of a small function equals its hand-derived tangent") {
  // f(x, y) = x y + exp(x) (broadcast y), ḟ = ẋ y + x ẏ + exp(x) ẋ
  Generator gen(1);
  Tensor x = randn({2, 3}, gen, DType::f64), y = randn({3}, gen, DType::f64);
  Tensor u = randn({2, 3}, gen, DType::f64), v = randn({3}, gen, DType::f64);
  JvpResult r = jvp([](const std::vector<Tensor>& a) { return std::vector<Tensor>{add(mul(a[0], a[1]), exp(a[0]))}; },
                    {x, y}, {u, v});
  Tensor expect = add(add(mul(u, y), mul(x, v)), mul(exp(x), u));
  CHECK(test::max_abs_diff(r.tangents[0], expect) < 1e-14);
  CHECK(test::max_abs_diff(r.outputs[0], add(mul(x, y), exp(x))) == 0.0);
  // a primal that does not move (undefined tangent), and an output that depends on none: zeros
  JvpResult r2 = jvp([](const std::vector<Tensor>& a) { return std::vector<Tensor>{mul(a[0], a[1]), a[1] * 2.0}; },
                     {x, y}, {u, Tensor()});
  CHECK(test::max_abs_diff(r2.tangents[0], mul(u, y)) < 1e-15);
  CHECK(test::all_zero(r2.tangents[1]));
  CHECK_THROWS_WITH_AS(jvp([](const std::vector<Tensor>& a) { return a; }, {x, y}, {u}), doctest::Contains("tangents for"), Error);
}

namespace {
// A scalar loss with curvature in every entry: sum(tanh(x W)²) + sum(softmax(x W) ∘ c).
Tensor curved_loss(const Tensor& x, const Tensor& W, const Tensor& c) {
  Tensor h = matmul(x, W);
  Tensor t = tanh(h);
  return add(sum(mul(t, t)), sum(mul(softmax(h, -1), c)));
}
}  // namespace

TEST_CASE("forward: forward over reverse (jvp of grad) is the Hessian-vector product of reverse over reverse") {
  Generator gen(2);
  Tensor x = randn({3, 4}, gen, DType::f64).requires_grad_(), W = randn({4, 5}, gen, DType::f64),
         c = randn({3, 5}, gen, DType::f64), v = randn({3, 4}, gen, DType::f64);
  // reverse over reverse: d/dx <grad L, v>
  Tensor g = grad({curved_loss(x, W, c)}, {x}, {}, {.create_graph = true})[0];
  Tensor hv_rr = grad({sum(mul(g, v))}, {x})[0];
  // forward over reverse: the tangent of grad L along v
  JvpResult r = jvp([&](const std::vector<Tensor>& a) { return grad({curved_loss(a[0], W, c)}, {a[0]}); }, {x}, {v});
  CHECK(test::max_abs_diff(r.tangents[0], hv_rr) < 1e-12);
  CHECK(test::max_abs_diff(r.outputs[0], g.detach()) < 1e-14);
}

TEST_CASE("forward: reverse over forward (grad of a tangent) is the same Hessian-vector product") {
  Generator gen(3);
  Tensor x = randn({3, 4}, gen, DType::f64).requires_grad_(), W = randn({4, 5}, gen, DType::f64),
         c = randn({3, 5}, gen, DType::f64), v = randn({3, 4}, gen, DType::f64);
  Tensor g = grad({curved_loss(x, W, c)}, {x}, {}, {.create_graph = true})[0];
  Tensor hv_rr = grad({sum(mul(g, v))}, {x})[0];
  // L̇ = <grad L, v>, computed forwards; its gradient with respect to x is H v.
  JvpResult r = jvp([&](const std::vector<Tensor>& a) { return std::vector<Tensor>{curved_loss(a[0], W, c)}; }, {x}, {v});
  REQUIRE(r.tangents[0].requires_grad());
  Tensor hv_rf = grad({r.tangents[0]}, {x})[0];
  CHECK(test::max_abs_diff(hv_rf, hv_rr) < 1e-12);
  // and a tangent that itself requires grad: d L̇ / d v = grad L
  Tensor vg = v.clone().requires_grad_();
  JvpResult r2 = jvp([&](const std::vector<Tensor>& a) { return std::vector<Tensor>{curved_loss(a[0], W, c)}; }, {x.detach()}, {vg});
  Tensor gv = grad({r2.tangents[0]}, {vg})[0];
  CHECK(test::max_abs_diff(gv, g.detach()) < 1e-13);
}

TEST_CASE("forward: dtype conversions carry the tangent converted alike") {
  Tensor x = tensor({1, 2}, {2}, DType::f64), u = tensor({0.25, -3}, {2}, DType::f64);
  JvpResult r = jvp([](const std::vector<Tensor>& a) { return std::vector<Tensor>{mul(a[0].to(DType::f32), a[0].to(DType::f32))}; },
                    {x}, {u});
  CHECK(r.tangents[0].dtype() == DType::f32);
  CHECK(r.tangents[0].to_vector() == std::vector<double>{0.5, -12});
}

TEST_CASE("forward: a backward that is a raw kernel refuses to carry tangents, by name; unpack_dual of nothing too") {
  static constexpr OpDef kRaw{.name = "raw_twice", .saves = {{"input x", "the raw backward reads it"}},
                              .derivation = "tests/engine/test_forward.cpp", .second_order = false, .tangent = "ȯ = 2 ẋ"};
  auto twice = [](const Tensor& x) {
    Tensor out;
    {
      NoGradGuard ng;
      out = mul(x.detach(), 2.0);
    }
    if (should_record({x}))
      record(kRaw, {x}, {out}, {save(kRaw.slot("input x"), x)}, [](const std::vector<Tensor>& g, const Saved&) {
        return std::vector<Tensor>{mul(g[0].detach(), 2.0)};
      }, [](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(d[0], 2.0)}; });
    return out;
  };
  Tensor x = ones({3}, DType::f64).requires_grad_();
  CHECK_THROWS_WITH_AS(jvp([&](const std::vector<Tensor>& a) { return grad({sum(twice(a[0]))}, {a[0]}); }, {x},
                           {ones({3}, DType::f64)}),
                       doctest::Contains("forward-mode AD through the backward of raw_twice is not implemented"), Error);
  CHECK_THROWS_WITH_AS(unpack_dual(Tensor()), doctest::Contains("undefined"), Error);
}
