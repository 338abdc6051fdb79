// Second order: every op's backward differentiated again, against float64 central differences
// of the backward (gradgradcheck), or refused by name where the op does not claim it.
#include <doctest/doctest.h>

#include <chrono>

#include "cases/gradcheck_cases.h"

using namespace hg;

TEST_CASE("gradgradcheck: every op that claims second order passes; every other refuses by name") {
  auto cases = cases::all_cases();
  int claimed = 0;
  for (const auto& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.variant);
    if (cases::claims_second_order(c)) {
      ++claimed;
      GradcheckReport r = gradgradcheck(c.fn, c.inputs);
      INFO(r.message());
      CHECK(r.passed);
      CHECK(r.checked > 0);
    } else {
      CHECK_THROWS_WITH_AS(gradgradcheck(c.fn, c.inputs), doctest::Contains("double backward of"), Error);
    }
  }
  MESSAGE(claimed << " of " << cases.size() << " cases claim second order");
  CHECK(claimed > 0);
}

TEST_CASE("gradgradcheck catches a backward that is not differentiated correctly") {
  // x³ whose backward claims 3x² but is built as 3 · x · stop(x): first order right, second wrong.
  static constexpr OpDef kBadCube{.name = "bad_cube", .saves = {{"input", "3x²"}}, .derivation = "tests/ops/test_gradgradcheck.cpp"};
  auto cube = [](const std::vector<Tensor>& x) {
    Tensor out;
    {
      NoGradGuard ng;
      out = mul(mul(x[0], x[0]), x[0]);
    }
    record(kBadCube, {x[0]}, {out}, {save(kBadCube.slot("input"), x[0])},
           [](const std::vector<Tensor>& g, const Saved& s) {
             return std::vector<Tensor>{mul(mul(g[0], mul(s[kBadCube.slot("input")], s[kBadCube.slot("input")].detach())), 3.0)};
           });
    return out;
  };
  Generator gen(8);
  Tensor x = randn({4}, gen, DType::f64).requires_grad_();
  CHECK(gradcheck(cube, {x}).passed);
  GradcheckReport r = gradgradcheck(cube, {x});
  CHECK_FALSE(r.passed);
  CHECK(r.message().find("FAILED") != std::string::npos);
}
