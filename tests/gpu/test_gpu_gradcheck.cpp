// Every op's float64 gradcheck, run on the GPU: the same cases as tests/ops/test_gradcheck.cpp and the
// `gradcheck` table (tests/cases/gradcheck_cases.h), through the one helper with {.device = cuda}, so
// the forward, the backward and every finite-difference evaluation run on the CUDA kernels.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "cases/gradcheck_cases.h"  // the shared case list (tests/cases/gradcheck_cases.h)
#include "handgrad.h"

using namespace hg;

TEST_CASE("gradcheck on cuda: every op with a CUDA kernel, float64, contiguous and non-contiguous inputs") {
  const auto cases = cases::all_cases();
  std::set<std::string> ran;
  for (const auto& c : cases) {
    if (!c.runs_on(Device::cuda)) {
      MESSAGE(c.op << ", " << c.variant << ": not run on cuda (" << c.not_on_cuda << ")");
      continue;
    }
    CAPTURE(c.op);
    CAPTURE(c.variant);
    GradcheckReport r;
    try {
      r = gradcheck(c.fn, c.inputs, {.device = Device::cuda});
    } catch (const std::exception& e) {
      FAIL_CHECK(c.op << ", " << c.variant << " threw on cuda: " << std::string(e.what()));
      continue;
    }
    MESSAGE(c.op << ", " << c.variant << ": max abs err " << r.max_abs_err << ", max rel err " << r.max_rel_err);
    CHECK_MESSAGE(r.passed, r.message());
    CHECK(r.checked > 0);
    CHECK(r.device == Device::cuda);
    ran.insert(c.op);
  }
  CHECK_FALSE(ran.empty());
  for (const char* op : {"attention", "softmax", "log_softmax", "cross_entropy", "embedding", "matmul"}) {
    CAPTURE(op);
    CHECK(ran.count(op) == 1);
  }
}

TEST_CASE("fwdcheck on cuda: every op's tangent on the CUDA kernels, against central differences and reverse mode") {
  std::set<std::string> ran;
  for (const auto& c : cases::all_cases()) {
    if (!c.runs_on(Device::cuda)) continue;  // said by the gradcheck case above
    CAPTURE(c.op);
    CAPTURE(c.variant);
    FwdcheckReport r;
    try {
      r = fwdcheck(c.fn, c.inputs, {.device = Device::cuda});
    } catch (const std::exception& e) {
      FAIL_CHECK(c.op << ", " << c.variant << " threw on cuda: " << std::string(e.what()));
      continue;
    }
    CHECK_MESSAGE(r.passed, r.message());
    CHECK(r.device == Device::cuda);
    ran.insert(c.op);
  }
  for (const char* op : {"attention", "softmax", "log_softmax", "cross_entropy", "embedding", "matmul"}) {
    CAPTURE(op);
    CHECK(ran.count(op) == 1);
  }
}

TEST_CASE("gradcheck on cuda: noncontiguous_copy keeps a CUDA tensor's values and device, strided") {
  Generator gen(6);
  Tensor x = randn({3, 4}, gen, DType::f64);
  Tensor y = noncontiguous_copy(x.to(Device::cuda));
  CHECK(y.device() == Device::cuda);
  CHECK_FALSE(y.is_contiguous());
  CHECK(y.to_vector() == x.to_vector());
}

TEST_CASE("gradcheck on cuda: a wrong backward fails, and the report names the device") {
  auto wrong = cases::wrong_square;  // forward x², backward claims 3x
  Generator gen(3);
  GradcheckReport r = gradcheck(wrong, {randn({2, 3}, gen, DType::f64).requires_grad_()}, {.device = Device::cuda});
  CHECK_FALSE(r.passed);
  CHECK(r.message().find("FAILED on cuda") != std::string::npos);
  CHECK(r.worst.find("input 0 [") != std::string::npos);
}

TEST_CASE("gradcheck on cuda: numeric_gradient runs where its inputs are and agrees with the CPU") {
  Generator gen(8);
  Tensor s = randn({2, 3}, gen, DType::f64);
  TensorFn f = [](const std::vector<Tensor>& x) { return sum(mul(softmax(x[0], -1), x[0])); };
  Tensor on_cpu = numeric_gradient(f, {s}, 0);
  Tensor on_gpu = numeric_gradient(f, {s.to(Device::cuda)}, 0);
  CHECK(on_gpu.device() == Device::cuda);
  const std::vector<double> a = on_gpu.to_vector(), b = on_cpu.to_vector();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-8));
}
