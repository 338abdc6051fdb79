// The elementwise device kernels against the CPU: the engine's copy, fill, axpy, scale
// (engine/backend.h) and the ops' unary, binary, masked_fill, where (cuda/ops.h) — contiguous, strided (transposed,
// sliced with a step) and broadcast operands, float64 and float32, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "cuda/ops.h"
#include "handgrad.h"

using namespace hg;
using namespace hg::gpu_test;

namespace {

Tensor random_mask(const Shape& s, Generator& gen) {
  std::vector<bool> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = gen.uniform() < 0.5;
  if (v.size() >= 2) v[0] = true, v[1] = false;  // both kinds present
  return bool_tensor(v, s);
}

// A CPU tensor of dtype t whose values every conversion handles without rounding surprises:
// floats in [0.25, 3), integers in [0, 5), booleans.
Tensor source_of(DType t, const Shape& s, Generator& gen) {
  switch (t) {
    case DType::f32:
    case DType::f64: return uniform(s, gen, t, 0.25, 3.0);
    case DType::i64: return randint(s, gen, 0, 5);
    case DType::b8: return randint(s, gen, 0, 2).to(DType::b8);
  }
  return Tensor();
}

constexpr DType kAllTypes[] = {DType::f32, DType::f64, DType::i64, DType::b8};

}  // namespace

TEST_CASE("the table is filled: every entry the engine uses is there") {
  const CudaBackend& b = cu();
  CHECK((b.synchronize != nullptr));
  CHECK((b.host_waits != nullptr));
  CHECK((b.copy != nullptr));
  CHECK((b.fill != nullptr));
  CHECK((b.axpy != nullptr));
  CHECK((b.scale != nullptr));
}

TEST_CASE("poisoning: a block the cache hands out again reads NaN") {
  { Tensor warm = full({300}, 1.5, DType::f64, Device::cuda); }
  poison_cache();
  Tensor reused = empty({300}, DType::f64, Device::cuda);
  bool all_nan = true;
  for (double v : reused.to_vector()) all_nan = all_nan && std::isnan(v);
  CHECK(all_nan);
}

TEST_CASE("copy converts every dtype pair as the CPU copy_ does") {
  Generator gen(101);
  for (DType dt : kAllTypes)
    for (DType st : kAllTypes) {
      const std::string to = dtype_name(dt), from = dtype_name(st);
      CAPTURE(to);
      CAPTURE(from);
      const Tensor src = source_of(st, {3, 37}, gen);
      Tensor want = empty({3, 37}, dt);
      want.copy_(src);
      Tensor out = full({3, 37}, 7.0, dt, Device::cuda);
      cu().copy(out, gpu(src));
      expect_equal(std::string("copy from ") + dtype_name(st), out, want);
    }
}

TEST_CASE("copy: strided source, strided destination, broadcast source") {
  Generator gen(102);
  for (DType t : kFloatTypes) {
    // A transposed source (3, 37) of a (37, 3) tensor, into a destination sliced with steps.
    const Tensor src_base = normal({37, 3}, gen, t);
    const Tensor base = normal({6, 75}, gen, t);
    Tensor want = base.clone().detach();
    want.slice(0, 0, 6, 2).slice(1, 1, 75, 2).copy_(src_base.transpose(0, 1));
    Tensor out = gpu(base);
    cu().copy(out.slice(0, 0, 6, 2).slice(1, 1, 75, 2), gpu(src_base).transpose(0, 1));
    expect_equal("copy strided -> strided (untouched entries kept)", out, want);

    // (37,) and (1, 37) broadcast to (2, 3, 37), from float64 into t.
    const Tensor row = normal({37}, gen, DType::f64);
    Tensor want_b = empty({2, 3, 37}, t);
    want_b.copy_(row);
    Tensor out_b = empty({2, 3, 37}, t, Device::cuda);
    cu().copy(out_b, gpu(row));
    expect_equal("copy broadcast (37,) -> (2, 3, 37)", out_b, want_b);
    Tensor out_c = empty({2, 3, 37}, t, Device::cuda);
    cu().copy(out_c, gpu(row).unsqueeze(0));
    expect_equal("copy broadcast (1, 37) -> (2, 3, 37)", out_c, want_b);
  }
}

TEST_CASE("fill writes every element of a strided view and nothing else") {
  Generator gen(103);
  for (DType t : kAllTypes) {
    const Tensor base = source_of(t, {5, 9}, gen);
    const double v = t == DType::b8 ? 1.0 : (t == DType::i64 ? -7.0 : 2.5);
    Tensor want = base.clone().detach();
    want.slice(1, 2, 9, 3).fill_(v);
    Tensor out = gpu(base);
    cu().fill(out.slice(1, 2, 9, 3), v);
    expect_equal("fill (5, 9)[:, 2::3]", out, want);
  }
}

TEST_CASE("axpy and scale on a transposed destination, and axpy with a broadcast source") {
  Generator gen(104);
  for (DType t : kFloatTypes) {
    const Tensor base = normal({6, 5}, gen, t), src = normal({5, 6}, gen, t), row = normal({1, 6}, gen, t);
    Tensor want = ref(base).clone().detach();
    want.transpose(0, 1).add_(ref(src), -0.75);
    Tensor out = gpu(base);
    cu().axpy(out.transpose(0, 1), gpu(src), -0.75);
    expect_close("axpy dst^T += -0.75 src", out, want, t);

    Tensor want_b = ref(base).clone().detach();
    want_b.transpose(0, 1).add_(expand(ref(row), {5, 6}), 1.25);
    Tensor out_b = gpu(base);
    cu().axpy(out_b.transpose(0, 1), gpu(row), 1.25);
    expect_close("axpy dst^T += 1.25 row (1, 6) broadcast", out_b, want_b, t);

    Tensor want_s = ref(base).clone().detach();
    want_s.transpose(0, 1).mul_(1.3);
    Tensor out_s = gpu(base);
    cu().scale(out_s.transpose(0, 1), 1.3);
    expect_close("scale dst^T *= 1.3", out_s, want_s, t);
  }
}

TEST_CASE("unary: every kind on a transposed input matches the CPU op") {
  struct Case {
    cuda::UnaryCode op;
    double s;
    bool positive;  // inputs in [0.5, 2): log, sqrt, a fractional power, a division
    Tensor (*cpu)(const Tensor&, double);
    double scale = 1, shift = 0;  // the inputs times scale plus shift: (−1, 1) for asin, above 1 for acosh
  };
  const Case cases[] = {
      {cuda::kNeg, 0, false, [](const Tensor& x, double) { return hg::neg(x); }},
      {cuda::kExp, 0, false, [](const Tensor& x, double) { return hg::exp(x); }},
      {cuda::kLog, 0, true, [](const Tensor& x, double) { return hg::log(x); }},
      {cuda::kSqrt, 0, true, [](const Tensor& x, double) { return hg::sqrt(x); }},
      {cuda::kRelu, 0, false, [](const Tensor& x, double) { return hg::relu(x); }},
      {cuda::kTanh, 0, false, [](const Tensor& x, double) { return hg::tanh(x); }},
      {cuda::kGelu, 0, false, [](const Tensor& x, double) { return hg::gelu(x); }},
      {cuda::kPow, 2.5, true, [](const Tensor& x, double s) { return hg::pow(x, s); }},
      {cuda::kPow, 3.0, false, [](const Tensor& x, double s) { return hg::pow(x, s); }},
      {cuda::kAddScalar, 1.75, false, [](const Tensor& x, double s) { return hg::add(x, s); }},
      {cuda::kMulScalar, -0.6, false, [](const Tensor& x, double s) { return hg::mul(x, s); }},
      {cuda::kRsubScalar, 2.5, false, [](const Tensor& x, double s) { return hg::rsub(x, s); }},
      {cuda::kRdivScalar, 1.5, true, [](const Tensor& x, double s) { return hg::rdiv(x, s); }},
      {cuda::kSin, 0, false, [](const Tensor& x, double) { return hg::sin(x); }},
      {cuda::kCos, 0, false, [](const Tensor& x, double) { return hg::cos(x); }},
      {cuda::kTan, 0, true, [](const Tensor& x, double) { return hg::tan(x); }, 0.6},
      {cuda::kAsin, 0, true, [](const Tensor& x, double) { return hg::asin(x); }, 0.45},
      {cuda::kAcos, 0, true, [](const Tensor& x, double) { return hg::acos(x); }, 0.45},
      {cuda::kAtan, 0, false, [](const Tensor& x, double) { return hg::atan(x); }},
      {cuda::kSinh, 0, false, [](const Tensor& x, double) { return hg::sinh(x); }},
      {cuda::kCosh, 0, false, [](const Tensor& x, double) { return hg::cosh(x); }},
      {cuda::kAsinh, 0, false, [](const Tensor& x, double) { return hg::asinh(x); }},
      {cuda::kAcosh, 0, true, [](const Tensor& x, double) { return hg::acosh(x); }, 1, 1.5},
      {cuda::kAtanh, 0, true, [](const Tensor& x, double) { return hg::atanh(x); }, 0.45},
      {cuda::kSigmoid, 0, false, [](const Tensor& x, double) { return hg::sigmoid(x); }},
      {cuda::kSilu, 0, false, [](const Tensor& x, double) { return hg::silu(x); }},
      {cuda::kLog1p, 0, true, [](const Tensor& x, double) { return hg::log1p(x); }},
      {cuda::kExpm1, 0, false, [](const Tensor& x, double) { return hg::expm1(x); }},
      {cuda::kLog2, 0, true, [](const Tensor& x, double) { return hg::log2(x); }},
      {cuda::kExp2, 0, false, [](const Tensor& x, double) { return hg::exp2(x); }},
      {cuda::kReciprocal, 0, true, [](const Tensor& x, double) { return hg::reciprocal(x); }},
      {cuda::kRsqrt, 0, true, [](const Tensor& x, double) { return hg::rsqrt(x); }},
      {cuda::kSquare, 0, false, [](const Tensor& x, double) { return hg::square(x); }},
      {cuda::kAbs, 0, false, [](const Tensor& x, double) { return hg::abs(x); }},
      {cuda::kSign, 0, false, [](const Tensor& x, double) { return hg::sign(x); }},
      {cuda::kFloor, 0, false, [](const Tensor& x, double) { return hg::floor(x); }},
      {cuda::kCeil, 0, false, [](const Tensor& x, double) { return hg::ceil(x); }},
      {cuda::kRound, 0, false, [](const Tensor& x, double) { return hg::round(x); }},
      {cuda::kTrunc, 0, false, [](const Tensor& x, double) { return hg::trunc(x); }},
  };
  Generator gen(105);
  for (const Case& c : cases)
    for (DType t : kFloatTypes) {
      const std::string kind = cuda::kUnaryNames[c.op];
      CAPTURE(kind);
      Tensor base = c.positive ? uniform({5, 7}, gen, t, 0.5, 2.0) : normal({5, 7}, gen, t, 1.5);
      if (c.scale != 1 || c.shift != 0) base = add(mul(base, c.scale), c.shift);
      const Tensor x = gpu(base).transpose(0, 1);  // (7, 5), strides (1, 7)
      const Tensor out = poisoned([&] { return cuda::unary(c.op, x, c.s); });
      expect_close(std::string("unary ") + cuda::kUnaryNames[c.op], out, c.cpu(ref(base).transpose(0, 1), c.s), t);
    }
}

TEST_CASE("binary: add, sub, mul, div with broadcasting and a transposed operand") {
  struct Case {
    cuda::BinaryCode op;
    Tensor (*cpu)(const Tensor&, const Tensor&);
  };
  const Case cases[] = {
      {cuda::kAdd, [](const Tensor& a, const Tensor& b) { return hg::add(a, b); }},
      {cuda::kSub, [](const Tensor& a, const Tensor& b) { return hg::sub(a, b); }},
      {cuda::kMul, [](const Tensor& a, const Tensor& b) { return hg::mul(a, b); }},
      {cuda::kDiv, [](const Tensor& a, const Tensor& b) { return hg::div(a, b); }},
  };
  Generator gen(106);
  for (const Case& c : cases)
    for (DType t : kFloatTypes) {
      const std::string kind = cuda::kBinaryNames[c.op];
      CAPTURE(kind);
      const Tensor a = normal({3, 1, 5}, gen, t);
      const Tensor b_base = c.op == cuda::kDiv ? uniform({5, 4}, gen, t, 0.5, 2.0) : normal({5, 4}, gen, t);
      const Tensor ga = gpu(a), gb = gpu(b_base).transpose(0, 1);              // (4, 5), non-contiguous
      const Tensor out = poisoned([&] { return cuda::binary(c.op, ga, gb); });  // (3, 4, 5)
      expect_close(std::string("binary ") + cuda::kBinaryNames[c.op] + " (3,1,5) with (4,5)^T", out,
                   c.cpu(ref(a), ref(b_base).transpose(0, 1)), t);
      const Tensor out_r = cuda::binary(c.op, gb, ga);  // the other way round
      expect_close(std::string("binary ") + cuda::kBinaryNames[c.op] + " (4,5)^T with (3,1,5)", out_r,
                   c.cpu(ref(b_base).transpose(0, 1), ref(a)), t);
    }
}

TEST_CASE("binary: relu, tanh and gelu backward match the CPU ops' backward") {
  Generator gen(107);
  for (DType t : kFloatTypes) {
    const Tensor g_base = normal({6, 4}, gen, t), x = normal({4, 6}, gen, t, 1.5);
    const Tensor g = gpu(g_base).transpose(0, 1);  // (4, 6), non-contiguous
    const Tensor g64 = ref(g_base).transpose(0, 1);

    auto cpu_grad = [&](Tensor (*f)(const Tensor&)) {  // dL/dx of L = <f(x), g> through the CPU tape
      Tensor xr = ref(x).requires_grad_();
      f(xr).backward(g64);
      return xr.grad();
    };
    expect_close("relu_backward(g, x)", poisoned([&] { return cuda::binary(cuda::kReluBackward, g, gpu(x)); }),
                 cpu_grad([](const Tensor& v) { return hg::relu(v); }), t);
    expect_close("gelu_backward(g, x)", poisoned([&] { return cuda::binary(cuda::kGeluBackward, g, gpu(x)); }),
                 cpu_grad([](const Tensor& v) { return hg::gelu(v); }), t);

    const Tensor y = hg::tanh(x);                                              // in t, as the CPU op saves it
    const Tensor want = hg::mul(g64, hg::rsub(hg::mul(ref(y), ref(y)), 1.0));  // g (1 - y^2) from CPU ops
    expect_close("tanh_backward(g, y)", poisoned([&] { return cuda::binary(cuda::kTanhBackward, g, gpu(y)); }), want,
                 t);
  }
}

TEST_CASE("masked_fill and where with broadcast masks select exactly what the CPU selects") {
  Generator gen(108);
  for (DType t : kFloatTypes) {
    const Tensor x = normal({2, 3, 5}, gen, t);
    const Tensor m1 = random_mask({3, 1}, gen), m2 = random_mask({5}, gen);
    expect_equal("masked_fill mask (3, 1), -inf", poisoned([&] { return cuda::masked_fill(gpu(x), gpu(m1), -kInf); }),
                 hg::masked_fill(x, m1, -kInf));
    expect_equal("masked_fill mask (5,), 2.5 on x.transpose(0, 1)",
                 cuda::masked_fill(gpu(x).transpose(0, 1), gpu(m2), 2.5), hg::masked_fill(x.transpose(0, 1), m2, 2.5));

    const Tensor cond = random_mask({4, 1}, gen), a = normal({4, 5}, gen, t), b = normal({5}, gen, t);
    expect_equal("where cond (4, 1), a (4, 5), b (5,)", poisoned([&] { return cuda::where(gpu(cond), gpu(a), gpu(b)); }),
                 hg::where(cond, a, b));
    expect_equal("where cond (4, 1), a (5,), b (4, 5) strided",
                 cuda::where(gpu(cond), gpu(b), gpu(a.transpose(0, 1)).transpose(0, 1)), hg::where(cond, b, a));
  }
}

TEST_CASE("errors: mixed dtypes, a CPU operand, wrong dtypes and shapes are hg::Error, not a crash") {
  const Tensor a32 = full({2, 3}, 1.0, DType::f32, Device::cuda), a64 = full({2, 3}, 1.0, DType::f64, Device::cuda);
  const Tensor cpu64 = full({2, 3}, 1.0, DType::f64);
  CHECK_THROWS_WITH_AS(cuda::binary(cuda::kAdd, a32, a64), doctest::Contains("dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(cuda::binary(cuda::kMul, a64, cpu64), doctest::Contains("is on cpu"), Error);
  CHECK_THROWS_WITH_AS(cuda::binary(cuda::kAdd, a64, full({4}, 1.0, DType::f64, Device::cuda)),
                       doctest::Contains("cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(cuda::unary(cuda::kExp, full({3}, 1.0, DType::i64, Device::cuda), 0.0),
                       doctest::Contains("exp (cuda)"), Error);
  CHECK_THROWS_WITH_AS(cuda::masked_fill(a64, a64, 0.0), doctest::Contains("b8"), Error);
  CHECK_THROWS_WITH_AS(cuda::where(full({2, 3}, 1.0, DType::b8, Device::cuda), a32, a64),
                       doctest::Contains("dtype mismatch"), Error);
  CHECK_THROWS_WITH_AS(cu().copy(a64, full({3, 2}, 1.0, DType::f64, Device::cuda)), doctest::Contains("broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(cu().axpy(a64, a32, 1.0), doctest::Contains("dtype mismatch"), Error);
  // The device still works after the errors.
  expect_equal("add after errors", cuda::binary(cuda::kAdd, a64, a64), full({2, 3}, 2.0, DType::f64));
}
