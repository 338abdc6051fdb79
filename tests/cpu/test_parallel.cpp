// The CPU performance paths (bench/RESULTS.md) against simple references: parallel_for and the
// threaded strided walk, the split gemms, the fused attention kernels against the op-by-op trace,
// split() as one tape entry, in-place gradient sums, and the CPU block cache. Run them with
// OMP_NUM_THREADS=2 (or more) to exercise the threads; with one thread they check the same
// numbers through the serial path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "engine/strided.h"
#include "handgrad.h"
#include "ops/cpu_map.h"
#include "test_util.h"

using namespace hg;
using namespace hg::test;

namespace {

// Naive C = A B in double, A (n, k), B (k, m) row-major.
std::vector<double> naive_matmul(const std::vector<double>& A, const std::vector<double>& B, int64_t n, int64_t k,
                                 int64_t m) {
  std::vector<double> C(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < m; ++j) C[i * m + j] += A[i * k + p] * B[p * m + j];
  return C;
}

double max_rel_diff(const Tensor& x, const Tensor& y) {
  REQUIRE(x.shape() == y.shape());
  const std::vector<double> a = x.to_vector(), b = y.to_vector();
  double scale = 0, d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    d = std::max(d, std::abs(a[i] - b[i]));
  }
  return scale > 0 ? d / scale : d;
}

}  // namespace

TEST_CASE("parallel_for visits every index from 0 to n - 1 exactly once, whatever the size and cost") {
  for (int64_t n : {0, 1, 7, 1000, 200000})
    for (int64_t cost : {1, 1000}) {
      CAPTURE(n);
      CAPTURE(cost);
      std::vector<int> visits(static_cast<size_t>(n), 0);
      parallel_for(n, cost, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
      });
      bool once = true;
      for (int v : visits) once = once && v == 1;
      CHECK(once);
    }
  CHECK(num_threads() >= 1);
}

TEST_CASE("threaded elementwise kernels: a transposed copy and a broadcast add equal an element-by-element loop") {
  Generator gen(71);
  const int64_t R = 300, C = 257;  // 77k elements: enough to be split over the threads
  Tensor x = randn({R, C}, gen, DType::f64);
  const std::vector<double> xv = x.to_vector();
  Tensor xt = x.transpose(0, 1).contiguous();  // (C, R), copy_ through the strided walk
  std::vector<double> expect(static_cast<size_t>(R * C));
  for (int64_t i = 0; i < C; ++i)
    for (int64_t j = 0; j < R; ++j) expect[i * R + j] = xv[j * C + i];
  CHECK(xt.to_vector() == expect);

  Tensor b = randn({C}, gen, DType::f64);
  const std::vector<double> bv = b.to_vector();
  Tensor s = add(x, b);  // (R, C) + (C,)
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) expect[i * C + j] = xv[i * C + j] + bv[j];
  CHECK(s.to_vector() == expect);

  // A destination whose rows share memory (an expand, stride 0) is never split across threads:
  // add_ into it sums the rows in order, as one thread would.
  Tensor acc = zeros({C}, DType::f64);
  expand(acc, {R, C}).add_(x);
  std::vector<double> sums(static_cast<size_t>(C), 0.0);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) sums[j] += xv[i * C + j];
  CHECK(acc.to_vector() == sums);
}

TEST_CASE("split gemms (rows, and columns for a weight gradient) equal a naive product, repeated runs agree bitwise") {
  Generator gen(72);
  // x W: (700, 96) @ (96, 50), split by rows of C.
  Tensor a = randn({700, 96}, gen, DType::f64), w = randn({96, 50}, gen, DType::f64);
  Tensor c = matmul(a, w);
  CHECK(max_abs_diff(c.to_vector(), naive_matmul(a.to_vector(), w.to_vector(), 700, 96, 50)) < 1e-11);
  // Xᵀ G with a long K: (3000, 40)ᵀ @ (3000, 60) -> (40, 60), split by columns of C.
  Tensor X = randn({3000, 40}, gen, DType::f64), G = randn({3000, 60}, gen, DType::f64);
  Tensor dW = matmul(X.transpose(0, 1), G);
  CHECK(max_abs_diff(dW.to_vector(), naive_matmul(X.transpose(0, 1).contiguous().to_vector(), G.to_vector(), 40, 3000, 60)) <
        1e-10);
  // float32 at TinyCharLM's sizes: the same bits every time.
  Tensor h = randn({2016, 128}, gen, DType::f32), W = randn({384, 128}, gen, DType::f32);
  Tensor y1 = matmul(h, W.transpose(0, 1)), y2 = matmul(h, W.transpose(0, 1));
  CHECK(y1.to_vector() == y2.to_vector());
  Tensor y64 = matmul(h.to(DType::f64), W.to(DType::f64).transpose(0, 1));
  CHECK(max_rel_diff(y1, y64) < 1e-5);
}

TEST_CASE("fused attention (the tape's kernels) equals the op-by-op trace on TinyCharLM's head views") {
  // q, k, v as the model cuts them from a fused qkv output: strided (B, H, T, d_h) views.
  Generator gen(73);
  const int64_t B = 3, T = 9, H = 4, dh = 8;
  for (DType dt : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(dt));
    Tensor qkv = randn({B, T, 3 * H * dh}, gen, dt).requires_grad_();
    std::vector<Tensor> parts = split(qkv.view({B, T, 3, H, dh}), {1, 1, 1}, 2);
    auto heads = [&](const Tensor& x) { return x.squeeze(2).transpose(1, 2); };  // (B, H, T, dh)
    Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    CHECK(!q.is_contiguous());
    Tensor dO = randn({B, H, T, dh}, gen, dt);
    AttentionTrace t = attention_trace(q, k, v, dO, {.causal = true});
    Tensor o = attention(q, k, v, {.causal = true});
    o.backward(dO);
    const double tol = dt == DType::f64 ? 1e-12 : 1e-5;
    CHECK(max_rel_diff(o, t.O) < tol);
    // qkv's gradient holds dQ, dK, dV side by side in the (B, T, 3, H, d_h) layout
    Tensor g = qkv.grad().view({B, T, 3, H, dh});
    CHECK(max_rel_diff(g.select(2, 0).transpose(1, 2), t.dQ) < tol);
    CHECK(max_rel_diff(g.select(2, 1).transpose(1, 2), t.dK) < tol);
    CHECK(max_rel_diff(g.select(2, 2).transpose(1, 2), t.dV) < tol);
  }
}

TEST_CASE("fused attention at TinyCharLM's size gives the same bits twice (slices spread over threads)") {
  Generator gen(74);
  Tensor q = randn({16, 4, 63, 32}, gen, DType::f32), k = randn({16, 4, 63, 32}, gen, DType::f32),
         v = randn({16, 4, 63, 32}, gen, DType::f32), dO = randn({16, 4, 63, 32}, gen, DType::f32);
  std::vector<std::vector<double>> runs;
  for (int r = 0; r < 2; ++r) {
    Tensor qr = q.clone().requires_grad_(), kr = k.clone().requires_grad_(), vr = v.clone().requires_grad_();
    Tensor o = attention(qr, kr, vr, {.causal = true});
    o.backward(dO);
    std::vector<double> all = o.to_vector();
    for (const Tensor& gr : {qr.grad(), kr.grad(), vr.grad()}) {
      std::vector<double> gv = gr.to_vector();
      all.insert(all.end(), gv.begin(), gv.end());
    }
    runs.push_back(all);
  }
  CHECK(runs[0] == runs[1]);
}

TEST_CASE("split is one tape entry, a piece without a gradient contributes zeros") {
  Tensor x = arange(12, DType::f64).reshape({3, 4}).detach().requires_grad_();
  std::vector<Tensor> p = split(x, {1, 3}, 1);
  REQUIRE(p.size() == 2);
  CHECK(p[0].grad_fn() == p[1].grad_fn());
  CHECK(p[0].output_nr() == 0);
  CHECK(p[1].output_nr() == 1);
  CHECK(p[1].at({2, 0}) == 9.0);  // a view of x
  sum(mul(p[1], 2.0)).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{0, 2, 2, 2, 0, 2, 2, 2, 0, 2, 2, 2});
}

TEST_CASE("a gradient that reaches a tensor from three uses is summed right (the third added in place)") {
  Tensor a = tensor({1.0, -2.0, 3.0}, {3}, DType::f64).requires_grad_();
  Tensor x = mul(a, 1.0);  // a non-leaf used three times
  Tensor y = add(add(mul(x, 2.0), mul(x, 3.0)), mul(x, x));  // dy/dx = 2 + 3 + 2x
  sum(y).backward();
  CHECK(a.grad().to_vector() == std::vector<double>{7.0, 1.0, 11.0});
}

TEST_CASE("the CPU block cache hands a freed block back and keeps live_bytes exact") {
  const size_t before = Storage::live_bytes();
  const int64_t n = 1 << 16;  // 256 KiB in float32: above the cache's threshold
  void* first = nullptr;
  {
    Tensor t = empty({n}, DType::f32);
    first = t.raw_data();
    CHECK(Storage::live_bytes() == before + static_cast<size_t>(n) * 4);
  }
  CHECK(Storage::live_bytes() == before);
  Tensor again = empty({n}, DType::f32);
  const char* off = std::getenv("HANDGRAD_CPU_CACHE");
  if (!(off && std::string(off) == "0")) CHECK(again.raw_data() == first);
  again.fill_(1.5);
  CHECK(again.to_vector()[static_cast<size_t>(n - 1)] == 1.5);
}

TEST_CASE("exp_fast (the row kernels' exp) is within 2 ulp of std::exp in float32 and exact in float64") {
  double worst = 0;
  for (float x = -86.9f; x < 88.7f; x += 0.00731f) {
    const double ref = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(static_cast<double>(exp_fast(x)) - ref) / ref);
  }
  CHECK(worst < 2 * 5.97e-8);  // 2 ulp: float32's epsilon / 2 per ulp near 1
  CHECK(exp_fast(0.0f) == 1.0f);
  CHECK(exp_fast(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(exp_fast(-100.0f) == 0.0f);
  CHECK(exp_fast(100.0f) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(exp_fast(std::numeric_limits<float>::quiet_NaN())));
  for (double x : {-700.0, -3.5, 0.0, 1e-3, 42.0}) CHECK(exp_fast(x) == std::exp(x));
}

TEST_CASE("parallel_for: an exception from the body reaches the caller, a nested call runs inline") {
  CHECK_THROWS_WITH_AS(parallel_for(1 << 20, 8,
                                    [](int64_t begin, int64_t) {
                                      if (begin == 0) throw Error("chunk 0 failed");
                                    }),
                       "chunk 0 failed", Error);
  std::vector<int> visits(1000, 0);
  parallel_for(10, 1 << 20, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      parallel_for(100, 1 << 20, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) ++visits[static_cast<size_t>(i * 100 + j)];
      });
  });
  bool once = true;
  for (int v : visits) once = once && v == 1;
  CHECK(once);
}
