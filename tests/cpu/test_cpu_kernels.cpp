// The CPU kernel table (cpu/kernels.h): the baseline kernels against their formulas, every
// other level this CPU runs against the baseline bit for bit (every tail length, NaN and the
// infinities included), whole ops and a TinyCharLM training run at every level (a level this CPU
// cannot run is a visible skip), the choice of level by HANDGRAD_CPU_CAPABILITY, and — with levels
// hidden by cpu::HideCapabilities — what a CPU without AVX-512, or with the baseline only, does.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "handgrad.h"
#include "ops/gemm.h"
#include "test_util.h"

using namespace hg;
using cpu::Capability;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

// Lengths that exercise every tail: below, at and past each vector width and the 8 lanes.
const std::vector<int64_t> kLengths = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000};

// n floats, normal with scale `s`; with `special`, some NaN, ±inf, ±0, subnormals and large values.
std::vector<float> data(int64_t n, uint32_t seed, float s = 3.0f, bool special = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, s);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  if (special) {
    const float odd[] = {kNaN, kInfF, -kInfF, 0.0f, -0.0f, 1e-40f, -1e-40f, 90.0f, -100.0f, 3e38f};
    for (size_t i = 0; i < v.size(); i += 5) v[i] = odd[(i / 5 + seed) % std::size(odd)];
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("the baseline is always available and comes first; every available level has its table") {
  const std::vector<Capability> levels = cpu::available();
  REQUIRE(!levels.empty());
  CHECK(levels.front() == Capability::baseline);
  for (Capability c : levels) {
    REQUIRE(cpu::kernels_for(c) != nullptr);
    CHECK(cpu::kernels_for(c)->level == c);
  }
  MESSAGE("CPU kernel levels here: ", [&] {
    std::string s;
    for (Capability c : levels) s += std::string(s.empty() ? "" : ", ") + cpu::name(c);
    return s;
  }());
#if defined(__x86_64__) && defined(__GNUC__)
  // On this project's machines (x86-64 with AVX2) the wider levels must not silently vanish.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(cpu::kernels_for(Capability::avx2));
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    CHECK(cpu::kernels_for(Capability::avx512));
#endif
}

TEST_CASE("baseline kernels against their formulas") {
  const cpu::Kernels& K = *cpu::kernels_for(Capability::baseline);
  for (int64_t n : kLengths) {
    CAPTURE(n);
    const std::vector<float> a = data(n, 1), b = data(n, 2);
    double ref_sum = 0, ref_dot = 0;
    float ref_max = -kInfF;
    for (int64_t j = 0; j < n; ++j) {
      ref_sum += a[j];
      ref_dot += static_cast<double>(a[j]) * b[j];
      ref_max = std::max(ref_max, a[j]);
    }
    CHECK(same_bits(K.max(a.data(), n), ref_max));  // max is exact in any order
    CHECK(std::abs(K.sum(a.data(), n) - ref_sum) <= 1e-5 * (1 + n));
    CHECK(std::abs(K.dot(a.data(), b.data(), n) - ref_dot) <= 1e-4 * (1 + n));

    std::vector<float> e = a;
    K.exp_shift(e.data(), n, 1.5f);
    double e_sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double want = std::exp(static_cast<double>(a[j] - 1.5f));  // the kernel's argument, rounded to float
      CHECK(std::abs(e[j] - want) <= 3e-7 * want);  // exp_fast: within 2 ulp
      e_sum += static_cast<float>(e[j]);
    }
    std::vector<float> e2 = a;
    const float s2 = K.exp_shift_sum(e2.data(), n, 1.5f);
    CHECK(same_bits(e2, e));  // the same exponentials as exp_shift
    CHECK(std::abs(s2 - e_sum) <= 1e-5 * (1 + e_sum));
    CHECK(std::abs(K.exp_shift_sum_f64(a.data(), n, 1.5f) - e_sum) <= 1e-12 * (1 + e_sum));
    std::vector<float> e_to(static_cast<size_t>(n));
    K.exp_shift_to(e_to.data(), a.data(), n, 1.5f);
    CHECK(same_bits(e_to, e));

    std::vector<float> o(static_cast<size_t>(n)), g = b;
    K.vadd(o.data(), a.data(), b.data(), n);
    for (int64_t j = 0; j < n; ++j) CHECK(o[j] == a[j] + b[j]);
    K.vsub(o.data(), a.data(), b.data(), n);
    for (int64_t j = 0; j < n; ++j) CHECK(o[j] == a[j] - b[j]);
    K.vmul(o.data(), a.data(), b.data(), n);
    for (int64_t j = 0; j < n; ++j) CHECK(o[j] == a[j] * b[j]);
    K.vdiv(o.data(), a.data(), b.data(), n);
    for (int64_t j = 0; j < n; ++j) CHECK(o[j] == a[j] / b[j]);
    K.softmax_grad(g.data(), a.data(), n, 0.25f);
    for (int64_t j = 0; j < n; ++j) CHECK(g[j] == a[j] * (b[j] - 0.25f));
    o = a;
    K.scale(o.data(), n, -2.5f);
    for (int64_t j = 0; j < n; ++j) CHECK(o[j] == a[j] * -2.5f);
  }
  CHECK(K.max(nullptr, 0) == -kInfF);
}

TEST_CASE("baseline RoPE and AdamW kernels against their formulas") {
  const cpu::Kernels& K = *cpu::kernels_for(Capability::baseline);
  for (int64_t half : {1, 3, 8, 16, 32, 64}) {
    CAPTURE(half);
    const int64_t T = 5, row = 2 * half + 3;  // x's rows 2·half + 3 apart, as in a view of a wider tensor
    const std::vector<float> x = data(T * row, 3), c = data(T * half, 4, 1.0f), s = data(T * half, 5, 1.0f);
    std::vector<float> y(static_cast<size_t>(T * 2 * half));
    K.rope(y.data(), 2 * half, x.data(), row, c.data(), s.data(), half, T, half);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = x[t * row + 2 * i], x1 = x[t * row + 2 * i + 1], ci = c[t * half + i], si = s[t * half + i];
        CHECK(y[t * 2 * half + 2 * i] == x0 * ci - x1 * si);
        CHECK(y[t * 2 * half + 2 * i + 1] == x0 * si + x1 * ci);
      }
  }
  const cpu::AdamWConstants<double> k{0.99, 0.9, 0.1, 0.999, 0.001, 0.3, 1e-8, -1e-3};
  for (int64_t n : kLengths) {
    std::vector<double> w(static_cast<size_t>(n)), g(w.size()), m(w.size()), v(w.size());
    for (size_t j = 0; j < w.size(); ++j) {
      w[j] = std::sin(j + 1.0);
      g[j] = std::cos(3.0 * j);
      m[j] = 0.01 * j;
      v[j] = 0.001 * j;
    }
    std::vector<double> w2 = w, m2 = m, v2 = v;
    K.adamw_f64(k, w2.data(), g.data(), m2.data(), v2.data(), n);
    for (size_t j = 0; j < w.size(); ++j) {  // torch.optim.AdamW's single-tensor step (nn/optim.cpp)
      const double mj = std::fma(k.one_minus_b1, g[j], m[j] * k.b1);
      const double vj = std::fma(k.one_minus_b2 * g[j], g[j], v[j] * k.b2);
      CHECK(same_bits(m2[j], mj));
      CHECK(same_bits(v2[j], vj));
      CHECK(same_bits(w2[j], w[j] * k.decay + k.neg_step * mj / (std::sqrt(vj) / k.bc2_sqrt + k.eps)));
    }
  }
}

namespace {

// True (after saying why, as a visible skip) when `level` cannot run on this CPU and build.
bool skip_level(Capability level) {
  const std::string why = cpu::unavailable_reason(level);
  if (why.empty()) return false;
  test::skip_case(fmt::format("the {} kernels cannot run here: {}", cpu::name(level), why));
  return true;
}

// `level`'s kernels against the baseline's, bit for bit, kernel by kernel.
void compare_kernels_with_baseline(Capability level) {
  const cpu::Kernels& B = *cpu::kernels_for(Capability::baseline);
  {
    const cpu::Kernels& K = *cpu::kernels_for(level);
    CAPTURE(cpu::name(level));
    for (bool special : {false, true})
      for (int64_t n : kLengths) {
        CAPTURE(n);
        CAPTURE(special);
        const std::vector<float> a = data(n, 11, 3.0f, special), b = data(n, 12, 3.0f, special);
        CHECK(same_bits(K.max(a.data(), n), B.max(a.data(), n)));
        CHECK(same_bits(K.sum(a.data(), n), B.sum(a.data(), n)));
        CHECK(same_bits(K.dot(a.data(), b.data(), n), B.dot(a.data(), b.data(), n)));
        CHECK(same_bits(K.exp_shift_sum_f64(a.data(), n, 0.5f), B.exp_shift_sum_f64(a.data(), n, 0.5f)));
        std::vector<float> x = a, y = a;
        CHECK(same_bits(K.exp_shift_sum(x.data(), n, 0.5f), B.exp_shift_sum(y.data(), n, 0.5f)));
        CHECK(same_bits(x, y));
        x = a, y = a;
        K.exp_shift(x.data(), n, 0.5f);
        B.exp_shift(y.data(), n, 0.5f);
        CHECK(same_bits(x, y));
        K.exp_shift_to(x.data(), b.data(), n, -1.0f);
        B.exp_shift_to(y.data(), b.data(), n, -1.0f);
        CHECK(same_bits(x, y));
        x = a, y = a;
        K.scale(x.data(), n, 0.37f);
        B.scale(y.data(), n, 0.37f);
        CHECK(same_bits(x, y));
        x = b, y = b;
        K.softmax_grad(x.data(), a.data(), n, 0.7f);
        B.softmax_grad(y.data(), a.data(), n, 0.7f);
        CHECK(same_bits(x, y));
        for (auto op : {&cpu::Kernels::vadd, &cpu::Kernels::vsub, &cpu::Kernels::vmul, &cpu::Kernels::vdiv}) {
          (K.*op)(x.data(), a.data(), b.data(), n);
          (B.*op)(y.data(), a.data(), b.data(), n);
          CHECK(same_bits(x, y));
          x = a, y = a;  // in place, o == a
          (K.*op)(x.data(), x.data(), b.data(), n);
          (B.*op)(y.data(), y.data(), b.data(), n);
          CHECK(same_bits(x, y));
        }
        std::vector<float> w = data(n, 13), g = data(n, 14, 3.0f, special), m = data(n, 15, 0.1f), v = data(n, 16);
        for (float& e : v) e = e * e;
        std::vector<float> w2 = w, m2 = m, v2 = v;
        const cpu::AdamWConstants<float> c{0.999f, 0.9f, 0.1f, 0.999f, 0.001f, 0.03f, 1e-8f, -1e-3f};
        K.adamw_f32(c, w.data(), g.data(), m.data(), v.data(), n);
        B.adamw_f32(c, w2.data(), g.data(), m2.data(), v2.data(), n);
        CHECK(same_bits(w, w2));
        CHECK(same_bits(m, m2));
        CHECK(same_bits(v, v2));
      }
    for (int64_t half : {1, 5, 8, 16, 32, 64}) {
      CAPTURE(half);
      const int64_t T = 7, row = 6 * half;
      const std::vector<float> x = data(T * row, 21), c = data(T * half, 22, 1.0f), s = data(T * half, 23, 1.0f);
      std::vector<float> y1(static_cast<size_t>(T * 2 * half)), y2 = y1;
      K.rope(y1.data(), 2 * half, x.data(), row, c.data(), s.data(), half, T, half);
      B.rope(y2.data(), 2 * half, x.data(), row, c.data(), s.data(), half, T, half);
      CHECK(same_bits(y1, y2));
      // every row at one position (cs_row 0), y's rows apart too, as qkv_heads calls it
      std::vector<float> y3(static_cast<size_t>(T * (2 * half + 3))), y4 = y3;
      K.rope(y3.data(), 2 * half + 3, x.data(), row, c.data() + half, s.data() + half, 0, T, half);
      B.rope(y4.data(), 2 * half + 3, x.data(), row, c.data() + half, s.data() + half, 0, T, half);
      CHECK(same_bits(y3, y4));
    }
  }
}

// The ops that call the kernel table, float32, forward and backward, and three TinyCharLM
// training steps, at `level`, with every float32 product on `impl` (ops/gemm.h; the baseline has
// no gemm of its own, so levels are compared with the baseline on OpenBLAS): every number they
// produce, in order.
std::vector<double> whole_run(Capability level, GemmImpl impl = GemmImpl::openblas) {
  cpu::ForceCapability force(level);
  ForceGemm gemm(impl);
  Generator gen(7);
  std::vector<double> out;
  auto keep = [&](const Tensor& t) {
    const std::vector<double> v = t.to_vector();
    out.insert(out.end(), v.begin(), v.end());
  };
  Tensor q = randn({2, 3, 17, 16}, gen).requires_grad_(), k = randn({2, 3, 17, 16}, gen).requires_grad_(),
         v = randn({2, 3, 17, 16}, gen).requires_grad_();
  Tensor o = attention(rope(q), rope(k.transpose(2, 3).contiguous().transpose(2, 3)), v, {.causal = true});
  Tensor logits = add(mul(o, o), div(o, add(mul(o, o), 1.0))).reshape({-1, 16});
  Tensor targets = randint({logits.size(0)}, gen, 0, 16);
  Tensor loss = cross_entropy(sub(logits, mul(logits, 0.5)), targets);
  backward(loss);
  for (const Tensor& t : {o, logits, loss, q.grad(), k.grad(), v.grad()}) keep(t);

  Generator g2(3);
  nn::TinyCharLMConfig cfg;
  cfg.d = 32;
  cfg.heads = 2;
  nn::TinyCharLM model(cfg, g2);
  nn::AdamW opt(model.parameters(), {.lr = 1e-2});
  const Tensor tokens = randint({4, 13}, g2, 0, cfg.vocab);
  const Tensor in = tokens.slice(1, 0, 12).contiguous(), tgt = tokens.slice(1, 1, 13).contiguous();
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    Tensor l = cross_entropy(model.forward(in).reshape({-1, cfg.vocab}), tgt.reshape({-1}));
    backward(l);
    opt.step();
    keep(l);
  }
  for (const Tensor& p : model.parameters()) keep(p);
  return out;
}

void compare_whole_run_with_baseline(Capability level) {
  const std::vector<double> base = whole_run(Capability::baseline);
  REQUIRE(base.size() > 1000);
  CAPTURE(cpu::name(level));
  const std::vector<double> other = whole_run(level);
  REQUIRE(other.size() == base.size());
  CHECK(std::memcmp(other.data(), base.data(), base.size() * sizeof(double)) == 0);
}

}  // namespace

// One case per level, so that a level this CPU cannot run is a visible skip, not a silent pass.
TEST_CASE("the avx2 kernels give the baseline's bits, kernel by kernel") {
  if (skip_level(Capability::avx2)) return;
  compare_kernels_with_baseline(Capability::avx2);
}

TEST_CASE("the avx512 kernels give the baseline's bits, kernel by kernel") {
  if (skip_level(Capability::avx512)) return;
  compare_kernels_with_baseline(Capability::avx512);
}

TEST_CASE("whole ops and a TinyCharLM training run give the same bits with the avx2 kernels") {
  if (skip_level(Capability::avx2)) return;
  compare_whole_run_with_baseline(Capability::avx2);
}

TEST_CASE("whole ops and a TinyCharLM training run give the same bits with the avx512 kernels") {
  if (skip_level(Capability::avx512)) return;
  compare_whole_run_with_baseline(Capability::avx512);
}

TEST_CASE("whole ops and a TinyCharLM training run on handgrad's gemm give the same bits at avx2 and avx512") {
  if (skip_level(Capability::avx2) || skip_level(Capability::avx512)) return;
  const std::vector<double> a = whole_run(Capability::avx2, GemmImpl::handgrad);
  const std::vector<double> b = whole_run(Capability::avx512, GemmImpl::handgrad);
  REQUIRE(a.size() > 1000);
  REQUIRE(b.size() == a.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST_CASE("HANDGRAD_CPU_CAPABILITY chooses the level, and a wrong one is an error that says what to do") {
  const std::vector<Capability> levels = cpu::available();
  CHECK(cpu::choose(nullptr) == levels.back());
  CHECK(cpu::choose("") == levels.back());
  for (Capability c : levels) CHECK(cpu::choose(cpu::name(c)) == c);
  try {
    cpu::choose("sse9");
    FAIL("no error for an unknown level");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    CHECK(m.find("HANDGRAD_CPU_CAPABILITY") != std::string::npos);
    CHECK(m.find("'sse9' is not a level") != std::string::npos);
    CHECK(m.find("baseline, avx2 or avx512") != std::string::npos);
  }
  // The process's own choice: ctest runs this case once more with HANDGRAD_CPU_CAPABILITY=baseline
  // (tests/CMakeLists.txt), which must then be the level in use.
  const char* env = std::getenv("HANDGRAD_CPU_CAPABILITY");
  CHECK(cpu::kernels().level == cpu::choose(env));
  if (env && std::string(env) == "baseline") CHECK(cpu::kernels().level == Capability::baseline);
}

// The branches a CPU without AVX-512, or with neither wider level, takes: run on every machine by
// hiding levels (cpu::HideCapabilities), whatever this CPU has.
TEST_CASE("a CPU without AVX-512: asking for it is an error that lists what runs, and avx2 is the widest") {
  const bool avx2_here = cpu::kernels_for(Capability::avx2) != nullptr;
  const Capability chosen_before = cpu::kernels().level;
  {
    cpu::HideCapabilities hide({Capability::avx512});
    CHECK(cpu::kernels_for(Capability::avx512) == nullptr);
    CHECK(!cpu::unavailable_reason(Capability::avx512).empty());
    const std::vector<Capability> levels = cpu::available();
    CHECK(std::find(levels.begin(), levels.end(), Capability::avx512) == levels.end());
    CHECK(cpu::choose(nullptr) == (avx2_here ? Capability::avx2 : Capability::baseline));
    const std::string runs = avx2_here ? "this CPU and build run: baseline, avx2." : "this CPU and build run: baseline.";
    CHECK_THROWS_WITH_AS(cpu::choose("avx512"),
                         doctest::Contains("HANDGRAD_CPU_CAPABILITY: asks for the avx512 kernels, but this CPU does not "
                                           "support those instructions"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cpu::choose("avx512"), doctest::Contains(runs.c_str()), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cpu::choose("avx512"), doctest::Contains("Unset it, or choose one of those"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cpu::ForceCapability(Capability::avx512), doctest::Contains("avx512 kernels are not available"),
                         std::invalid_argument);
    CHECK(cpu::kernels().level == chosen_before);  // the process's choice is kept
  }
  // The mask is gone with its scope.
  CHECK(cpu::unavailable_reason(Capability::baseline).empty());
  if (cpu::unavailable_reason(Capability::avx512).empty()) CHECK(cpu::kernels_for(Capability::avx512) != nullptr);
}

TEST_CASE("a CPU that runs only the baseline: it is the only level, the widest, and the others are refused") {
  cpu::HideCapabilities hide({Capability::avx2, Capability::avx512});
  CHECK(cpu::available() == std::vector<Capability>{Capability::baseline});
  CHECK(cpu::choose(nullptr) == Capability::baseline);
  CHECK(cpu::choose("baseline") == Capability::baseline);
  for (const char* level : {"avx2", "avx512"}) {
    CAPTURE(level);
    CHECK_THROWS_WITH_AS(cpu::choose(level), doctest::Contains("this CPU and build run: baseline."),
                         std::invalid_argument);
  }
  CHECK_THROWS_AS(cpu::ForceCapability(Capability::avx2), std::invalid_argument);
  {
    cpu::ForceCapability force(Capability::baseline);  // still allowed, and in force while it lives
    CHECK(cpu::kernels().level == Capability::baseline);
  }
  {
    cpu::HideCapabilities nested({Capability::baseline});  // the baseline cannot be hidden
    CHECK(cpu::kernels_for(Capability::baseline) != nullptr);
  }
  CHECK(cpu::kernels_for(Capability::avx2) == nullptr);  // the outer mask still holds
}
