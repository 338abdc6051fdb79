// Every differentiable op through the one gradcheck helper, contiguous and non-contiguous.
#include <doctest/doctest.h>

#include "cases/gradcheck_cases.h"

using namespace hg;

TEST_CASE("gradcheck: every op, float64 central differences, contiguous and non-contiguous inputs") {
  auto cases = cases::all_cases();
  REQUIRE(cases.size() > 30);
  for (const auto& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.variant);
    GradcheckReport r = gradcheck(c.fn, c.inputs);
    INFO(r.message());
    CHECK(r.passed);
    CHECK(r.checked > 0);
  }
}

TEST_CASE("gradcheck: the helper catches a wrong backward and names the worst element") {
  // A deliberately wrong op: forward x^2, backward claims 3x.
  auto wrong = cases::wrong_square;  // forward x², backward claims 3x
  Generator gen(3);
  GradcheckReport r = gradcheck(wrong, {randn({2, 3}, gen, DType::f64).requires_grad_()});
  CHECK_FALSE(r.passed);
  CHECK(r.worst.find("input 0 [") != std::string::npos);
  CHECK(r.worst.find("analytic") != std::string::npos);
  CHECK(r.message().find("FAILED") != std::string::npos);
}

TEST_CASE("gradcheck: an op that records nothing fails instead of passing with zeros") {
  auto silent = [](const std::vector<Tensor>& x) { return x[0].detach() * 2.0; };
  Generator gen(4);
  GradcheckReport r = gradcheck(silent, {randn({3}, gen, DType::f64).requires_grad_()});
  CHECK_FALSE(r.passed);
  CHECK(r.worst.find("no gradient reached") != std::string::npos);
}

TEST_CASE("gradcheck: float32 inputs are refused with a clear error") {
  Generator gen(5);
  Tensor x = randn({3}, gen, DType::f32).requires_grad_();
  CHECK_THROWS_WITH_AS(gradcheck([](const std::vector<Tensor>& v) { return v[0] * 2.0; }, {x}),
                       doctest::Contains("float64"), Error);
}

TEST_CASE("noncontiguous_copy holds the same values in a non-contiguous layout") {
  Generator gen(6);
  Tensor x = randn({3, 4}, gen, DType::f64);
  Tensor y = noncontiguous_copy(x);
  CHECK_FALSE(y.is_contiguous());
  CHECK(y.to_vector() == x.to_vector());
}
