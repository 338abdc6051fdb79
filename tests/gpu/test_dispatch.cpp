// The op layer dispatching to the CUDA backend, and the errors when devices are mixed.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "handgrad.h"

using namespace hg;

TEST_CASE("softmax(x on cuda) runs the CUDA kernel and agrees with the CPU op") {
  Generator gen(11);
  for (DType t : {DType::f64, DType::f32}) {
    Tensor x = randn({6, 33}, gen, t, 0.0, 3.0);
    x.set_at({2, 0}, -std::numeric_limits<double>::infinity());
    Tensor cpu = softmax(x, -1);
    Tensor gpu = softmax(x.to(Device::cuda), -1);
    CHECK(gpu.device() == Device::cuda);
    std::vector<double> a = gpu.to_vector(), b = cpu.to_vector();
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += b[i] * b[i];
    }
    double rel = std::sqrt(num / den);
    MESSAGE("softmax op ", std::string(dtype_name(t)), ": ||gpu - cpu|| / ||cpu|| = ", rel);
    CHECK(rel < (t == DType::f64 ? 1e-12 : 1e-5));
  }
}

TEST_CASE("softmax on cuda along another dim, or its backward, is a clear error, not a crash") {
  Generator gen(12);
  Tensor x = randn({3, 4}, gen, DType::f64).to(Device::cuda);
  CHECK_THROWS_WITH_AS(softmax(x, 0), doctest::Contains("last dimension"), Error);
  Tensor leaf = randn({3, 4}, gen, DType::f64).requires_grad_();
  Tensor p = softmax(leaf.to(Device::cuda), -1);
  CHECK_THROWS_WITH_AS(sum(p.to(Device::cpu) * p.to(Device::cpu)).backward(), doctest::Contains("cuda"), Error);
}

TEST_CASE("mixing devices names both devices and the op") {
  Tensor a = zeros({2, 3}, DType::f32), b = zeros({2, 3}, DType::f32, Device::cuda);
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("add: device mismatch"), Error);
  CHECK_THROWS_WITH_AS(matmul(a, b.transpose(0, 1)), doctest::Contains("device"), Error);
}
