// rope, alibi_bias and sinusoidal_positions against their formulas computed another way, the
// properties RoPE is used for (norm-preserving, identity at position 0, scores that depend only
// on the offset), and the errors a user can hit.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "handgrad.h"
#include "ops/positional.h"
#include "test_util.h"

using namespace hg;
using namespace hg::test;

namespace {

// RoPE written out from Eq. 10.4.4 element by element, in long double, with the frequency as
// exp(−(2i/d_h) ln base) rather than the kernel's pow table: y = R_θ x per interleaved pair.
Tensor rope_reference(const Tensor& x, int64_t start = 0, double base = 10000.0) {
  const int64_t T = x.size(-2), d_h = x.size(-1), rows = x.numel() / (T * d_h);
  std::vector<double> v = x.to_vector(), y(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d_h / 2; ++i) {
        const size_t a = static_cast<size_t>((r * T + t) * d_h + 2 * i), b = a + 1;
        const long double theta = static_cast<long double>(start + t) *
                                  std::exp(-(2.0L * i / d_h) * std::log(static_cast<long double>(base)));
        const long double c = std::cos(theta), s = std::sin(theta);
        y[a] = static_cast<double>(v[a] * c - v[b] * s);
        y[b] = static_cast<double>(v[a] * s + v[b] * c);
      }
  return tensor(y, x.shape(), DType::f64);
}

// Scores S[t, s] = ⟨q_t, k_s⟩ for q (T, d), k (T, d).
Tensor scores(const Tensor& q, const Tensor& k) { return matmul(q, k.transpose(0, 1)); }

}  // namespace

TEST_CASE("rope: a hand case: (1, 0) at position 1 with d_h = 2 becomes (cos 1, sin 1)") {
  // d_h = 2 has one pair, i = 0, so ω = base^0 = 1 and θ = t.
  Tensor x = tensor({1, 0, 1, 0, 0, 1}, {3, 2}, DType::f64);
  std::vector<double> y = rope(x).to_vector();
  CHECK(y[0] == 1.0);  // t = 0: untouched
  CHECK(y[1] == 0.0);
  CHECK(y[2] == doctest::Approx(std::cos(1.0)).epsilon(1e-15));
  CHECK(y[3] == doctest::Approx(std::sin(1.0)).epsilon(1e-15));
  CHECK(y[4] == doctest::Approx(-std::sin(2.0)).epsilon(1e-15));  // (0, 1) turned by θ = 2
  CHECK(y[5] == doctest::Approx(std::cos(2.0)).epsilon(1e-15));
}

TEST_CASE("rope: values equal Eq. 10.4.4 written out element by element, any base and start") {
  Generator gen(31);
  Tensor x = randn({2, 3, 7, 6}, gen, DType::f64);
  CHECK(max_abs_diff(rope(x), rope_reference(x)) < 1e-13);
  CHECK(max_abs_diff(rope(x, 10.0), rope_reference(x, 0, 10.0)) < 1e-13);
  CHECK(max_abs_diff(rope_at(x, 40), rope_reference(x, 40)) < 1e-12);
  // and it is not the identity: the positions t > 0 really are turned
  CHECK(max_abs_diff(rope(x), x) > 0.1);
  // every head size the kernel unrolls (d_h = 16, 32, 64, 128) and two it does not (2, 10),
  // contiguous and with a stride-2 last dimension
  for (int64_t d_h : {2, 10, 16, 32, 64, 128}) {
    CAPTURE(d_h);
    Tensor xd = randn({2, 3, d_h}, gen, DType::f64);
    CHECK(max_abs_diff(rope(xd), rope_reference(xd)) < 1e-13);
    CHECK(max_abs_diff(rope(noncontiguous_copy(xd)), rope_reference(xd)) < 1e-13);
  }
  // a size that parallel_for splits across threads, read through a permuted head view
  Tensor heads = randn({8, 63, 4, 32}, gen, DType::f64).permute({0, 2, 1, 3});  // (B, H, T, d_h)
  CHECK(max_abs_diff(rope(heads), rope_reference(heads.contiguous())) < 1e-12);
}

TEST_CASE("rope: position 0 is the identity, and every pair keeps its norm") {
  Generator gen(32);
  Tensor x = randn({3, 9, 8}, gen, DType::f64);
  Tensor y = rope(x);
  CHECK(max_abs_diff(y.slice(1, 0, 1), x.slice(1, 0, 1)) == 0.0);
  std::vector<double> a = x.to_vector(), b = y.to_vector();
  double worst = 0;
  for (size_t p = 0; p < a.size(); p += 2) {
    const double na = std::hypot(a[p], a[p + 1]), nb = std::hypot(b[p], b[p + 1]);
    worst = std::max(worst, std::abs(na - nb));
  }
  CHECK(worst < 1e-14);
}

TEST_CASE("rope: scores ⟨rope(q)_t, rope(k)_s⟩ depend only on t − s (the same vectors at shifted positions)") {
  Generator gen(33);
  const int64_t T = 6, d_h = 8, shift = 11;
  Tensor q = randn({T, d_h}, gen, DType::f64), k = randn({T, d_h}, gen, DType::f64);
  Tensor S = scores(rope(q), rope(k));  // positions 0..T-1
  // Place q and k at positions shift..shift+T-1 of a longer sequence whose first rows are other
  // vectors; rope the whole sequence and keep the last T rows.
  Tensor pad = randn({shift, d_h}, gen, DType::f64);
  auto placed = [&](const Tensor& v) {
    Tensor longer = concat({pad, v}, 0);
    return rope(longer).slice(0, shift, shift + T);
  };
  Tensor S_shifted = scores(placed(q), placed(k));
  CHECK(max_abs_diff(S, S_shifted) < 1e-12);
  // rope_at places them directly and agrees
  CHECK(max_abs_diff(placed(q), rope_at(q, shift)) < 1e-13);
  // the scores do carry position: they differ from the unrotated ones and from a shift of q alone
  CHECK(max_abs_diff(S, scores(q, k)) > 1e-2);
  CHECK(max_abs_diff(S, scores(rope_at(q, shift), rope(k))) > 1e-2);
}

TEST_CASE("rope: float32 equals float64 to 1e-6, and strided head views equal their contiguous copies") {
  Generator gen(34);
  Tensor x64 = randn({4, 3, 63, 32}, gen, DType::f64);
  Tensor y32 = rope(x64.to(DType::f32));
  CHECK(y32.dtype() == DType::f32);
  CHECK(max_abs_diff(y32.to(DType::f64), rope(x64)) < 1e-6);
  // (B, T, H, d_h) permuted to (B, H, T, d_h) as the model's heads are, and a stride-2 last dim
  Tensor bthd = randn({2, 5, 3, 4}, gen, DType::f32);
  Tensor heads = bthd.permute({0, 2, 1, 3});
  CHECK_FALSE(heads.is_contiguous());
  Tensor y = rope(heads);
  CHECK(y.is_contiguous());
  CHECK(max_abs_diff(y, rope(heads.contiguous())) == 0.0);
  Tensor strided = noncontiguous_copy(x64.slice(0, 0, 1));
  CHECK(max_abs_diff(rope(strided), rope(x64.slice(0, 0, 1).contiguous())) == 0.0);
}

TEST_CASE("rope: the backward rotates the gradient by −θ; it saves nothing and is one tape entry") {
  Generator gen(35);
  Tensor x = randn({2, 5, 4}, gen, DType::f64).requires_grad_();
  Tensor g = randn({2, 5, 4}, gen, DType::f64);
  Tensor y = rope(x);
  const Node& e = *y.grad_fn();
  CHECK(e.op == "rope");
  CHECK(e.saved.empty());
  y.backward(g);
  // R_θᵀ g computed from the forward's transpose: dx_2i = g_2i cos θ + g_2i+1 sin θ, ...
  std::vector<double> gv = g.to_vector(), dx(gv.size());
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t i = 0; i < 2; ++i) {
        const size_t a = static_cast<size_t>((r * 5 + t) * 4 + 2 * i);
        const double th = t * std::pow(10000.0, -2.0 * i / 4.0);
        dx[a] = gv[a] * std::cos(th) + gv[a + 1] * std::sin(th);
        dx[a + 1] = -gv[a] * std::sin(th) + gv[a + 1] * std::cos(th);
      }
  CHECK(max_abs_diff(x.grad().to_vector(), dx) < 1e-14);
  // rotating back undoes the rotation
  Tensor z = randn({3, 6}, gen, DType::f64).requires_grad_();
  Tensor rz = rope(z);
  rz.backward(rz.detach());
  CHECK(max_abs_diff(z.grad(), z.detach()) < 1e-14);
}

TEST_CASE("alibi_bias: slopes 2^(−8h/H) (1/4, 1/16, 1/64, 1/256 for H = 4), slope · (j − i), −inf above the diagonal") {
  const int64_t H = 4, T = 5;
  Tensor b = alibi_bias(H, T, DType::f64);
  CHECK(b.shape() == Shape{H, T, T});
  CHECK_FALSE(b.requires_grad());
  const double slopes[H] = {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256};
  for (int64_t h = 0; h < H; ++h) {
    CAPTURE(h);
    CHECK(b.at({h, 1, 0}) == -slopes[h]);  // one step back
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        if (j > i)
          CHECK(b.at({h, i, j}) == -kInf);
        else
          CHECK(b.at({h, i, j}) == slopes[h] * static_cast<double>(j - i));
      }
  }
  // H = 8 gives the ALiBi paper's geometric sequence 1/2, 1/4, ..., 1/256 (float32 default)
  Tensor b8 = alibi_bias(8, 2);
  CHECK(b8.dtype() == DType::f32);
  for (int64_t h = 0; h < 8; ++h) CHECK(b8.at({h, 1, 0}) == -std::ldexp(1.0, -static_cast<int>(h + 1)));
  CHECK(alibi_bias(3, 0).shape() == Shape{3, 0, 0});
}

TEST_CASE("sinusoidal_positions: PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...)") {
  const int64_t T = 7, d = 6;
  Tensor pe = sinusoidal_positions(T, d, DType::f64);
  CHECK(pe.shape() == Shape{T, d});
  CHECK_FALSE(pe.requires_grad());
  // hand values: row 0 alternates 0, 1; column pair 0 has frequency 1; d = 6, i = 1: 10000^(1/3)
  for (int64_t c = 0; c < d; ++c) CHECK(pe.at({0, c}) == (c % 2 == 0 ? 0.0 : 1.0));
  CHECK(pe.at({1, 0}) == doctest::Approx(std::sin(1.0)).epsilon(1e-15));
  CHECK(pe.at({1, 1}) == doctest::Approx(std::cos(1.0)).epsilon(1e-15));
  CHECK(pe.at({2, 2}) == doctest::Approx(std::sin(2.0 / std::cbrt(10000.0))).epsilon(1e-14));
  // every entry, with the divisor written as exp(2i ln(10000) / d)
  double worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d / 2; ++i) {
      const double div = std::exp(2.0 * i * std::log(10000.0) / d);
      worst = std::max(worst, std::abs(pe.at({t, 2 * i}) - std::sin(t / div)));
      worst = std::max(worst, std::abs(pe.at({t, 2 * i + 1}) - std::cos(t / div)));
    }
  CHECK(worst < 1e-14);
  CHECK(max_abs_diff(sinusoidal_positions(T, d).to(DType::f64), pe) < 1e-7);
}

TEST_CASE("positional ops: errors name the op, the shape and the fix") {
  Tensor odd = zeros({2, 3, 5}, DType::f32);
  CHECK_THROWS_WITH_AS(rope(odd), doctest::Contains("rope: the head dimension d_h = 5 of x"), Error);
  CHECK_THROWS_WITH_AS(rope(odd), doctest::Contains("(2, 3, 5) float32 is odd"), Error);
  CHECK_THROWS_WITH_AS(rope(odd), doctest::Contains("d_h must be even"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({4}, DType::f64)), doctest::Contains("(..., T, d_h)"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({3, 4}, DType::i64)), doctest::Contains("float32 or float64"), Error);
  CHECK_THROWS_WITH_AS(rope(zeros({3, 4}), 0.0), doctest::Contains("base must be a positive"), Error);
  CHECK_THROWS_WITH_AS(rope_at(zeros({3, 4}), -1), doctest::Contains("rope_at: the first position must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(alibi_bias(0, 4), doctest::Contains("alibi_bias: the number of heads"), Error);
  CHECK_THROWS_WITH_AS(alibi_bias(2, 4, DType::i64), doctest::Contains("alibi_bias: dtype int64"), Error);
  CHECK_THROWS_WITH_AS(sinusoidal_positions(4, 0), doctest::Contains("sinusoidal_positions"), Error);
}

// qkv_heads against the written-out path it replaces: split of the (B, T, 3, H, d_h) view,
// squeeze and transpose to (B, H, T, d_h), rope on q and k. Same arithmetic, so the same bits —
// outputs and the gradient of qkv — in float32 and float64, contiguous or not, rotating or not.
TEST_CASE("qkv_heads gives the written-out split + rope path's outputs and gradient, bit for bit") {
  Generator gen(5);
  for (DType dt : {DType::f32, DType::f64})
    for (bool rot : {true, false})
      for (bool transposed : {false, true}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(rot);
        CAPTURE(transposed);
        const int64_t B = 3, T = 7, H = 2, d_h = 16, d = H * d_h;
        Tensor src = randn(transposed ? Shape{T, B, 3 * d} : Shape{B, T, 3 * d}, gen, dt);
        const Tensor wq = randn({B, H, T, d_h}, gen, dt), wk = randn({B, H, T, d_h}, gen, dt),
                     wv = randn({B, H, T, d_h}, gen, dt);
        auto run = [&](bool fused) {
          Tensor leaf_ = src.detach().clone().requires_grad_();
          const Tensor qkv = transposed ? leaf_.transpose(0, 1) : leaf_;  // (B, T, 3d)
          QkvHeads h;
          if (fused) {
            h = qkv_heads(qkv, H, rot);
          } else {
            std::vector<Tensor> p = split(qkv.view({B, T, 3, H, d_h}), {1, 1, 1}, 2);
            auto as_heads = [](const Tensor& x) { return x.squeeze(2).transpose(1, 2); };
            h = {as_heads(p[0]), as_heads(p[1]), as_heads(p[2])};
            if (rot) h.q = rope(h.q), h.k = rope(h.k);
          }
          backward(sum(add(add(mul(h.q, wq), mul(h.k, wk)), mul(h.v, wv))));
          return std::vector<Tensor>{h.q.contiguous(), h.k.contiguous(), h.v.contiguous(), leaf_.grad()};
        };
        check_same_bits(run(true), run(false));
      }
}

TEST_CASE("qkv_heads: errors name the op, the shape and the fix") {
  CHECK_THROWS_WITH_AS(qkv_heads(zeros({2, 3, 10}), 2), doctest::Contains("qkv_heads: expects qkv (B, T, 3d)"), Error);
  CHECK_THROWS_WITH_AS(qkv_heads(zeros({2, 3}), 1), doctest::Contains("(2, 3) float32"), Error);
  CHECK_THROWS_WITH_AS(qkv_heads(zeros({2, 3, 24}), 3), doctest::Contains("cannot cut d = 8"), Error);
  CHECK_THROWS_WITH_AS(qkv_heads(zeros({2, 3, 24}), 8), doctest::Contains("d_h = d / H = 8 / 8 = 1 is odd"), Error);
  CHECK(qkv_heads(zeros({2, 3, 24}), 8, false).q.shape() == Shape{2, 8, 3, 1});  // no rotation: any d_h
  CHECK_THROWS_WITH_AS(qkv_heads(zeros({2, 3, 24}), 2, true, -1.0), doctest::Contains("base must be a positive"), Error);
  CHECK_THROWS_WITH_AS(qkv_heads(Tensor(), 2), doctest::Contains("qkv is undefined"), Error);
}
