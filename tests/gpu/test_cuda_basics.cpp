// The CUDA backend skeleton: copies and the caching allocator through the CudaBackend table
// (engine/backend.h), the softmax kernel (through the op) against a CPU float64 reference, and
// the errors. main.cpp skips the whole suite where no GPU is present.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/error.h"
#include "engine/random.h"
#include "engine/tensor.h"
#include "ops/softmax.h"
#ifdef HANDGRAD_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace hg;

namespace {

const CudaBackend& cu() { return *cuda_backend(); }  // main.cpp ran only if it is there and usable

constexpr double kInf = std::numeric_limits<double>::infinity();

// Normal draws scaled by `scale`, with a few values that a lossy copy would change.
Tensor random_host(const Shape& shape, DType t, Generator& gen, double scale) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& e : v) e = scale * gen.normal();
  if (v.size() > 8) {
    v[0] = -0.0;
    v[1] = 1e-310;  // subnormal in float64 (0 in float32)
    v[2] = kInf;
    v[3] = -kInf;
    v[4] = std::numeric_limits<double>::quiet_NaN();
    v[5] = 1.0 / 3.0;  // every mantissa bit set
  }
  return tensor(v, shape, t);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  size_t n = static_cast<size_t>(a.numel()) * dtype_size(a.dtype());
  return a.dtype() == b.dtype() && a.numel() == b.numel() && a.is_contiguous() && b.is_contiguous() &&
         std::memcmp(a.raw_data(), b.raw_data(), n) == 0;
}

// The reference: softmax of each row in float64, two passes, written independently of the kernel.
std::vector<double> softmax_reference(const std::vector<double>& s, int64_t rows, int64_t cols) {
  std::vector<double> p(s.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = &s[static_cast<size_t>(r * cols)];
    double* y = &p[static_cast<size_t>(r * cols)];
    double m = -kInf;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, x[j]);
    if (m == -kInf) continue;  // every entry masked: zeros
    double z = 0.0;
    for (int64_t j = 0; j < cols; ++j) z += std::exp(x[j] - m);
    for (int64_t j = 0; j < cols; ++j) y[j] = std::exp(x[j] - m) / z;
  }
  return p;
}

double relative_error(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::sqrt(den);  // NaN anywhere in out makes this NaN: the check fails
}

}  // namespace

TEST_CASE("the device summary names the GPU and its compute capability") {
  CHECK(cu().device_available());
  CHECK(std::string(cu().device_summary()).find("sm_") != std::string::npos);
}

TEST_CASE("cpu -> cuda -> cpu is bit-identical (float32, float64)") {
  Generator gen(11);
  for (DType t : {DType::f32, DType::f64}) {
    const std::string dtype = dtype_name(t);
    CAPTURE(dtype);
    Tensor x = random_host({37, 53}, t, gen, 1e3);  // 1961 elements, no round size
    Tensor g = x.to(Device::cuda);
    CHECK(g.device() == Device::cuda);
    CHECK(same_bytes(g.to(Device::cpu), x));

    // Through the table alone, with a device-to-device hop in between.
    size_t nbytes = static_cast<size_t>(x.numel()) * dtype_size(t);
    void* a = cu().alloc(nbytes);
    void* b = cu().alloc(nbytes);
    cu().memcpy_h2d(a, x.raw_data(), nbytes);
    cu().memcpy_d2d(b, a, nbytes);
    Tensor back = empty(x.shape(), t);
    cu().memcpy_d2h(back.raw_data(), b, nbytes);
    cu().free(a);
    cu().free(b);
    CHECK(same_bytes(back, x));
  }
}

#ifdef HANDGRAD_WITH_CUDA
TEST_CASE("allocator buckets: 512-byte steps up to 1 MiB, 1 MiB steps above (exact sizes when asked)") {
  if (cuda::allocator_exact()) {  // HANDGRAD_CUDA_EXACT_ALLOC=1, as the checking runs set it
    for (size_t n : {size_t{1}, size_t{513}, (size_t{1} << 20) + 1}) CHECK(cuda::allocator_bucket(n) == n);
    return;
  }
  CHECK(cuda::allocator_bucket(1) == 512);
  CHECK(cuda::allocator_bucket(512) == 512);
  CHECK(cuda::allocator_bucket(513) == 1024);
  CHECK(cuda::allocator_bucket(1 << 20) == (1 << 20));
  CHECK(cuda::allocator_bucket((1 << 20) + 1) == (2 << 20));
}

TEST_CASE("a freed block is reused: the second alloc of the same size makes no cudaMalloc") {
  cuda::allocator_release_cached();
  const size_t n = (3 << 20) + 17;  // bucket: 4 MiB (n itself with exact sizes)
  const size_t bucket = cuda::allocator_bucket(n);
  CHECK(bucket == (cuda::allocator_exact() ? n : size_t{4} << 20));
  const size_t second = cuda::allocator_exact() ? n : n + 1000;  // the same bucket
  cuda::AllocatorStats s0 = cuda::allocator_stats();
  CHECK(s0.blocks_cached == 0);
  void* a = cu().alloc(n);
  cuda::AllocatorStats s1 = cuda::allocator_stats();
  CHECK(s1.cuda_malloc_calls == s0.cuda_malloc_calls + 1);
  cu().free(a);
  CHECK(cuda::allocator_stats().bytes_cached == bucket);
  void* b = cu().alloc(second);
  cuda::AllocatorStats s2 = cuda::allocator_stats();
  CHECK(b == a);
  CHECK(s2.cuda_malloc_calls == s1.cuda_malloc_calls);
  CHECK(s2.reuses == s1.reuses + 1);
  CHECK(s2.bytes_cached == 0);
  void* c = cu().alloc(n);  // the cached block is taken: a new one
  CHECK(cuda::allocator_stats().cuda_malloc_calls == s1.cuda_malloc_calls + 1);
  cu().free(b);
  cu().free(c);
  CHECK(cuda::allocator_stats().blocks_cached == 2);
  cuda::allocator_release_cached();
  cuda::AllocatorStats s3 = cuda::allocator_stats();
  CHECK(s3.blocks_cached == 0);
  CHECK(s3.bytes_cached == 0);
  CHECK(s3.cuda_free_calls == s0.cuda_free_calls + 2);
}

TEST_CASE("steady state: repeating the same tensor work makes no new cudaMalloc") {
  Generator gen(5);
  uint64_t after_first = 0;
  for (int step = 0; step < 5; ++step) {
    Tensor x = random_host({8, 300}, DType::f32, gen, 1.0).to(Device::cuda);  // (8, 300)
    Tensor y = hg::softmax(x, -1);
    (void)y.to(Device::cpu);
    if (step == 0) after_first = cuda::allocator_stats().cuda_malloc_calls;
  }
  CHECK(cuda::allocator_stats().cuda_malloc_calls == after_first);
}
#endif

TEST_CASE("softmax along the last dim matches a float64 CPU reference, masked rows give zeros") {
  struct Case {
    int64_t rows, cols;
  };
  const Case cases[] = {{1, 1}, {3, 5}, {5, 32}, {6, 33}, {64, 1000}, {4, 4097}, {2, 20000}};
  const double tol[] = {1e-5, 1e-12};  // float32, float64
  Generator gen(2024);
  for (DType t : {DType::f32, DType::f64}) {
    for (const Case& c : cases) {
      const std::string dtype = dtype_name(t);
      CAPTURE(dtype);
      CAPTURE(c.rows);
      CAPTURE(c.cols);
      std::vector<double> s(static_cast<size_t>(c.rows * c.cols));
      for (double& e : s) e = 3.0 * gen.normal();
      if (c.rows >= 3) {
        for (int64_t j = 0; j < c.cols; ++j) s[static_cast<size_t>(c.cols + j)] = -kInf;  // row 1: fully masked
        for (int64_t j = 0; j < c.cols; j += 2) s[static_cast<size_t>(2 * c.cols + j)] = -kInf;  // row 2: half
        if (c.rows >= 4)
          for (int64_t j = 0; j < c.cols; ++j) s[static_cast<size_t>(3 * c.cols + j)] += 1000.0;  // exp would overflow
      }
      Tensor x_host = tensor(s, {c.rows, c.cols}, t);
      std::vector<double> ref = softmax_reference(x_host.to_vector(), c.rows, c.cols);  // from the rounded inputs

      Tensor x = x_host.to(Device::cuda);
      Tensor y = hg::softmax(x, -1);
      std::vector<double> out = y.to(Device::cpu).to_vector();

      double rel = relative_error(out, ref);
      std::printf("softmax rows %s (%lld, %lld): ||gpu - cpu|| / ||cpu|| = %.3e\n", dtype_name(t),
                  static_cast<long long>(c.rows), static_cast<long long>(c.cols), rel);
      CHECK(rel < tol[t == DType::f64 ? 1 : 0]);
      if (c.rows >= 3) {
        bool masked_row_zero = true;
        for (int64_t j = 0; j < c.cols; ++j) masked_row_zero = masked_row_zero && out[static_cast<size_t>(c.cols + j)] == 0.0;
        CHECK(masked_row_zero);
      }
    }
  }
}

TEST_CASE("errors: a failed cudaMalloc throws hg::Error naming it; the backend works afterwards") {
  CHECK_THROWS_WITH_AS(cu().alloc(size_t{1} << 50), doctest::Contains("cudaMalloc"), Error);  // 1 PiB
  try {
    cu().alloc(size_t{1} << 50);
  } catch (const Error& e) {
    std::printf("the error reads: %s\n", e.what());
    CHECK(std::string(e.what()).find("cuda/allocator.cpp:") != std::string::npos);  // file and line
  }
  CHECK_THROWS_WITH_AS(hg::softmax(full({2, 3}, 1.0, DType::i64, Device::cuda), -1), doctest::Contains("int64"), Error);

  // The failure left no error behind for the next launch check to misreport.
  Tensor x = tensor({1.0, 2.0, 3.0}, {1, 3}, DType::f64).to(Device::cuda);
  Tensor y = hg::softmax(x, -1);
  std::vector<double> out = y.to(Device::cpu).to_vector();
  double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  CHECK(out[2] == doctest::Approx(1.0 / z).epsilon(1e-14));
}
