// Every differentiable op's tangent rule through the one check helper (fwdcheck): float64 central
// differences along random directions, contiguous and non-contiguous, and the transpose identity
// against reverse mode; attention's tangent on every path and mask kind.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "cases/gradcheck_cases.h"
#include "engine/strided.h"
#include "test_util.h"

using namespace hg;

TEST_CASE("fwdcheck: every gradcheck case, tangents against central differences and against reverse mode") {
  auto cases = cases::all_cases();
  REQUIRE(cases.size() > 30);
  for (const auto& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.variant);
    FwdcheckReport r = fwdcheck(c.fn, c.inputs);
    INFO(r.message());
    CHECK(r.passed);
    CHECK(r.transpose_passed);
    CHECK(r.checked > 0);
  }
}

TEST_CASE("fwdcheck: every op in the registry has a tangent rule") {
  for (const OpDef* op : op_registry()) {
    CAPTURE(op->name);
    CHECK_FALSE(op->tangent.empty());
  }
}

TEST_CASE("fwdcheck: a wrong tangent is caught, by the differences and by the transpose identity") {
  // x² with the tangent 3x ẋ (the true one is 2x ẋ); its backward is right.
  static constexpr OpDef kWrong{.name = "wrong_tangent_square", .saves_nothing = "-",
                                .derivation = "tests/ops/test_fwdcheck.cpp", .tangent = "3 x ẋ (wrong)"};
  auto wrong = [](const std::vector<Tensor>& x) {
    Tensor out;
    {
      NoGradGuard ng;
      out = mul(x[0].detach(), x[0].detach());
    }
    const Tensor in = x[0];
    if (should_record({in}))
      record(kWrong, {in}, {out}, {}, [in](const std::vector<Tensor>& g, const Saved&) {
        return std::vector<Tensor>{mul(mul(g[0], in.detach()), 2.0)};
      }, [in](const std::vector<Tensor>& d) { return std::vector<Tensor>{mul(mul(d[0], in.detach()), 3.0)}; });
    return out;
  };
  Generator gen(3);
  FwdcheckReport r = fwdcheck(wrong, {randn({2, 3}, gen, DType::f64).requires_grad_()});
  CHECK_FALSE(r.passed);
  CHECK_FALSE(r.transpose_passed);
  CHECK(r.worst.find("tangent") != std::string::npos);
  CHECK(r.message().find("FAILED") != std::string::npos);
}

namespace {

// O's tangent along (q̇, k̇, v̇) on one path.
Tensor attention_tangent(const std::vector<Tensor>& qkv, const std::vector<Tensor>& dots, AttentionOptions o,
                         AttentionPath path) {
  o.path = path;
  JvpResult r = jvp([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2], o)}; },
                    qkv, dots);
  return r.tangents[0];
}

}  // namespace

TEST_CASE("fwdcheck: attention's tangent is the same on every path, with every mask kind") {
  Generator gen(11);
  const int64_t B = 2, H = 2, T = 5, d = 3;
  std::vector<Tensor> qkv{randn({B, H, T, d}, gen, DType::f64), randn({B, H, T, d}, gen, DType::f64),
                          randn({B, H, T, d}, gen, DType::f64)};
  std::vector<Tensor> dots{randn({B, H, T, d}, gen, DType::f64), randn({B, H, T, d}, gen, DType::f64),
                           randn({B, H, T, d}, gen, DType::f64)};
  std::vector<bool> pad(static_cast<size_t>(B * T), true);
  pad[static_cast<size_t>(T - 1)] = false;  // the last key of the first sequence hidden
  struct Kind {
    const char* name;
    AttentionOptions o;
  };
  std::vector<Kind> kinds{{"none", {}},
                          {"causal", {.causal = true}},
                          {"boolean padding", {.mask = bool_tensor(pad, {B, 1, 1, T})}},
                          {"additive", {.mask = randn({T, T}, gen, DType::f64)}},
                          {"causal + additive", {.causal = true, .mask = randn({1, H, T, T}, gen, DType::f64)}}};
  for (const Kind& k : kinds) {
    CAPTURE(k.name);
    const Tensor m = attention_tangent(qkv, dots, k.o, AttentionPath::materialized);
    const Tensor t = attention_tangent(qkv, dots, k.o, AttentionPath::tiled);
    CHECK(test::max_abs_diff(m, t) < 1e-12);
    CHECK(test::all_finite(m));
    // and against the central difference along the same direction
    auto at = [&](double step) {
      std::vector<Tensor> x;
      for (size_t i = 0; i < 3; ++i) x.push_back(add(qkv[i], mul(dots[i], step)));
      AttentionOptions o = k.o;
      o.path = AttentionPath::materialized;
      return attention(x[0], x[1], x[2], o);
    };
    const Tensor numeric = mul(sub(at(1e-6), at(-1e-6)), 1.0 / 2e-6);
    CHECK(test::max_abs_diff(m, numeric) < 1e-7);
  }
}

TEST_CASE("fwdcheck: a row with no visible key has tangent 0; a NaN in Q gives NaN in its row only") {
  Generator gen(12);
  const int64_t T = 4, d = 3;
  std::vector<Tensor> qkv{randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64)};
  std::vector<Tensor> dots{randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64)};
  std::vector<bool> m(static_cast<size_t>(T * T), true);
  for (int64_t j = 0; j < T; ++j) m[static_cast<size_t>(2 * T + j)] = false;  // query row 2 sees nothing
  AttentionOptions o{.mask = bool_tensor(m, {T, T})};
  for (AttentionPath path : {AttentionPath::materialized, AttentionPath::tiled}) {
    CAPTURE(attention_path_name(path));
    const Tensor t = attention_tangent(qkv, dots, o, path);
    for (int64_t c = 0; c < d; ++c) CHECK(t.at({2, c}) == 0.0);
    CHECK(test::all_finite(t));
    std::vector<Tensor> nan_q = qkv;
    nan_q[0] = qkv[0].clone();
    nan_q[0].set_at({1, 0}, std::nan(""));
    const Tensor tn = attention_tangent(nan_q, dots, {}, path);
    for (int64_t c = 0; c < d; ++c) CHECK(std::isnan(tn.at({1, c})));
    for (int64_t i : {0, 2, 3})
      for (int64_t c = 0; c < d; ++c) CHECK(std::isfinite(tn.at({i, c})));
  }
}

TEST_CASE("fwdcheck: attention's tangent through a learnable additive mask") {
  Generator gen(13);
  const int64_t T = 4, d = 3;
  const Tensor mask = randn({T, T}, gen, DType::f64).requires_grad_();
  auto f = [](const std::vector<Tensor>& x) {
    return attention(x[0], x[1], x[2], {.causal = true, .mask = x[3], .path = AttentionPath::materialized});
  };
  FwdcheckReport r = fwdcheck(f, {randn({T, d}, gen, DType::f64).requires_grad_(), randn({T, d}, gen, DType::f64).requires_grad_(),
                                  randn({T, d}, gen, DType::f64).requires_grad_(), mask});
  INFO(r.message());
  CHECK(r.passed);
}

TEST_CASE("fwdcheck: forward over reverse on every second-order case — jvp of the gradient is reverse over reverse's Hessian-vector product") {
  // g(x) = ∇ Σ f(x) ∘ R; its tangent along v is H v, which reverse over reverse gives as ∇ Σ_k ⟨g_k, v_k⟩.
  // This pushes tangents through every op's backward, including the ops only a backward records.
  Generator gen(21);
  int checked = 0;
  for (const auto& c : cases::all_cases()) {
    if (!cases::claims_second_order(c)) continue;
    CAPTURE(c.op);
    CAPTURE(c.variant);
    std::vector<size_t> wrt;
    std::vector<Tensor> vs(c.inputs.size());
    for (size_t k = 0; k < c.inputs.size(); ++k)
      if (c.inputs[k].defined() && c.inputs[k].requires_grad()) {
        wrt.push_back(k);
        vs[k] = randn(c.inputs[k].shape(), gen, DType::f64);
      }
    Tensor R;
    {
      NoGradGuard ng;
      R = randn(c.fn(c.inputs).shape(), gen, DType::f64);
    }
    auto gradient = [&](const std::vector<Tensor>& x) {
      std::vector<Tensor> targets;
      for (size_t k : wrt) targets.push_back(x[k]);
      std::vector<Tensor> g = grad({sum(mul(c.fn(x), R))}, targets, {}, {.create_graph = true, .allow_unused = true});
      for (size_t i = 0; i < g.size(); ++i)
        if (!g[i].defined()) g[i] = zeros_like(targets[i]);
      return g;
    };
    std::vector<Tensor> xs;
    for (const Tensor& x : c.inputs) xs.push_back(x.defined() && x.requires_grad() ? x.detach().clone().requires_grad_() : x);
    JvpResult fr = jvp(gradient, xs, vs);
    std::vector<Tensor> g = gradient(xs);
    Tensor inner = zeros({}, DType::f64);
    for (size_t i = 0; i < wrt.size(); ++i) inner = add(inner, sum(mul(g[i], vs[wrt[i]])));
    std::vector<Tensor> targets;
    for (size_t k : wrt) targets.push_back(xs[k]);
    std::vector<Tensor> rr = inner.requires_grad() ? grad({inner}, targets, {}, {.allow_unused = true}) : std::vector<Tensor>(wrt.size());
    for (size_t i = 0; i < wrt.size(); ++i) {
      const Tensor expect = rr[i].defined() ? rr[i] : zeros_like(targets[i]);
      const double scale = 1.0 + std::sqrt(sum(mul(expect, expect)).item());
      CHECK(test::max_abs_diff(fr.tangents[i], expect) <= 1e-9 * scale);
    }
    ++checked;
  }
  CHECK(checked > 30);
}

TEST_CASE("fwdcheck: the tiled tangent over many tiles — the composed tangent's numbers, the forward's O bit for bit, the same bits on one thread") {
  // T = 300: three query tiles and two key tiles (ops/attention_tiled.cpp), so the running max
  // rescales the tangent's accumulators between tiles, and the causal rule skips key tiles.
  Generator gen(14);
  const Shape s{1, 2, 300, 8};
  std::vector<Tensor> qkv{randn(s, gen, DType::f64, 0.0, 2.0), randn(s, gen, DType::f64, 0.0, 2.0), randn(s, gen, DType::f64)};
  std::vector<Tensor> dots{randn(s, gen, DType::f64), randn(s, gen, DType::f64), randn(s, gen, DType::f64)};
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    const AttentionOptions o{.causal = causal};
    const Tensor composed = attention_tangent(qkv, dots, o, AttentionPath::materialized);
    const Tensor tiled = attention_tangent(qkv, dots, o, AttentionPath::tiled);
    CHECK(test::max_abs_diff(composed, tiled) < 1e-11);
    // only some of the inputs moving
    const std::vector<Tensor> only_v{Tensor(), Tensor(), dots[2]}, only_k{Tensor(), dots[1], Tensor()};
    CHECK(test::max_abs_diff(attention_tangent(qkv, only_v, o, AttentionPath::materialized),
                             attention_tangent(qkv, only_v, o, AttentionPath::tiled)) < 1e-11);
    CHECK(test::max_abs_diff(attention_tangent(qkv, only_k, o, AttentionPath::materialized),
                             attention_tangent(qkv, only_k, o, AttentionPath::tiled)) < 1e-11);
    // the primal from the tangent's pass is the tiled forward's, bit for bit
    AttentionOptions ot = o;
    ot.path = AttentionPath::tiled;
    JvpResult r = jvp([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{attention(x[0], x[1], x[2], ot)}; }, qkv, dots);
    CHECK(r.outputs[0].to_vector() == attention(qkv[0], qkv[1], qkv[2], ot).to_vector());
    Tensor serial;  // inside a parallel_for the kernels run on one thread
    parallel_for(2, int64_t{1} << 40, [&](int64_t begin, int64_t) {
      if (begin == 0) serial = attention_tangent(qkv, dots, o, AttentionPath::tiled);
    });
    CHECK(serial.to_vector() == tiled.to_vector());
  }
}

TEST_CASE("fwdcheck: attention_tangent_trace's Ȯ is the engine's tangent, and its Ṗ the central difference of P") {
  Generator gen(15);
  const int64_t T = 4, d = 3;
  std::vector<Tensor> qkv{randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64)};
  std::vector<Tensor> dots{randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64), randn({T, d}, gen, DType::f64)};
  const AttentionOptions o{.causal = true};
  const AttentionTangentTrace t = attention_tangent_trace(qkv[0], qkv[1], qkv[2], dots[0], dots[1], dots[2], o);
  CHECK(test::max_abs_diff(t.dotO, attention_tangent(qkv, dots, o, AttentionPath::materialized)) < 1e-14);
  auto P_at = [&](double step) {
    std::vector<Tensor> x;
    for (size_t i = 0; i < 3; ++i) x.push_back(add(qkv[i], mul(dots[i], step)));
    return attention_trace(x[0], x[1], x[2], zeros({T, d}, DType::f64), o).P;
  };
  CHECK(test::max_abs_diff(t.dotP, mul(sub(P_at(1e-6), P_at(-1e-6)), 1.0 / 2e-6)) < 1e-8);
  CHECK(t.dotS.at({0, 3}) == 0.0);  // hidden by the causal rule: the score does not move
  CHECK_THROWS_WITH_AS(attention_tangent_trace(qkv[0], qkv[1], qkv[2], ones({2, 2}, DType::f64), Tensor(), Tensor(), o),
                       doctest::Contains("must match its input"), Error);
}
