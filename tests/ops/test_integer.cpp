// ops/integer.h, ops/division.h, ops/power.h and ops/gather.h on values: integer arithmetic against
// Python's rules written out here, PyTorch's promotion, gather/scatter against loops, and every
// refusal in words. (Their gradients are gradcheck's: tests/cases/cases_rearrange.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "handgrad.h"

using namespace hg;

namespace {

std::string integer_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool integer_says(const std::function<void()>& f, const std::string& text) {
  const std::string m = integer_error_of(f);
  INFO(m);
  return m.find(text) != std::string::npos;
}

Tensor ints(std::vector<double> v) { return tensor(v, {static_cast<int64_t>(v.size())}, DType::i64); }

// Python's // and %: the quotient rounds towards −∞, the remainder takes the divisor's sign.
int64_t py_floordiv(int64_t a, int64_t b) { return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b))); }
int64_t py_mod(int64_t a, int64_t b) { return a - py_floordiv(a, b) * b; }

}  // namespace

TEST_CASE("integer arithmetic: exact, broadcasting, Python's floor division and remainder") {
  const std::vector<int64_t> as = {7, -7, 7, -7, 0, 13, -1}, bs = {2, 2, -2, -2, 3, -5, 4};
  std::vector<double> ad(as.begin(), as.end()), bd(bs.begin(), bs.end());
  const Tensor a = ints(ad), b = ints(bd);
  const auto q = floor_divide(a, b).to_int_vector(), r = remainder(a, b).to_int_vector();
  const auto s = add(a, b).to_int_vector(), d = sub(a, b).to_int_vector(), p = mul(a, b).to_int_vector();
  for (size_t i = 0; i < as.size(); ++i) {
    INFO(as[i], " and ", bs[i]);
    CHECK(q[i] == py_floordiv(as[i], bs[i]));
    CHECK(r[i] == py_mod(as[i], bs[i]));
    CHECK(s[i] == as[i] + bs[i]);
    CHECK(d[i] == as[i] - bs[i]);
    CHECK(p[i] == as[i] * bs[i]);
  }
  CHECK(add(a, b).dtype() == DType::i64);
  // broadcasting: (3, 1) with (4,)
  const Tensor col = ints({0, 10, 20}).reshape({3, 1}), row = ints({1, 2, 3, 4});
  const Tensor sum34 = add(col, row);
  CHECK(sum34.shape() == Shape{3, 4});
  CHECK(sum34.to_int_vector() == std::vector<int64_t>{1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  // past 2^53, where a double would round: 2^62 + 1 stays odd
  const Tensor big = mul(ints({1}), static_cast<double>(int64_t{1} << 31));
  const Tensor huge = add(mul(big, big), 1.0);  // 2^62 + 1
  CHECK(huge.to_int_vector()[0] == (int64_t{1} << 62) + 1);
  CHECK(pow(ints({3, -2, 5}), ints({4, 3, 0})).to_int_vector() == std::vector<int64_t>{81, -8, 1});
  // with numbers: a whole number keeps the tensor integer, a fraction makes it float32
  CHECK(add(a, 1.0).dtype() == DType::i64);
  CHECK(rsub(ints({3}), 10.0).to_int_vector()[0] == 7);
  CHECK(neg(ints({3, -4})).to_int_vector() == std::vector<int64_t>{-3, 4});
  const Tensor half = mul(ints({3}), 0.5);
  CHECK(half.dtype() == DType::f32);
  CHECK(half.item() == 1.5);
  CHECK((ints({3}) / 2.0).item() == 1.5);
  CHECK(div(ints({7}), ints({2})).dtype() == DType::f32);
  CHECK(div(ints({7}), ints({2})).item() == 3.5);
  CHECK(remainder(ints({-7}), 3.0).to_int_vector()[0] == 2);
  CHECK(remainder(5.0, ints({-3})).to_int_vector()[0] == -1);
}

TEST_CASE("bools: add is or, mul is and; sums count exactly; where and clamp keep integers") {
  const Tensor t = tensor({1, 1, 0, 0}, {4}, DType::b8), u = tensor({1, 0, 1, 0}, {4}, DType::b8);
  CHECK(add(t, u).dtype() == DType::b8);
  CHECK(add(t, u).to_int_vector() == std::vector<int64_t>{1, 1, 1, 0});
  CHECK(mul(t, u).to_int_vector() == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(add(t, 1.0).to_int_vector() == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(sum(t).dtype() == DType::i64);
  CHECK(sum(t).item() == 2.0);
  CHECK(sum(tensor({1, 0, 1, 1, 1, 0}, {2, 3}, DType::b8), {1}).to_int_vector() == std::vector<int64_t>{2, 2});
  // 2^62 + 1 twice: exact past 2^53, and the sum 2^63 + 2 wraps as int64 does
  const double two31 = static_cast<double>(int64_t{1} << 31);
  const Tensor big = add(mul(mul(ints({1, 1}), two31), two31), 1.0);
  CHECK(big.to_int_vector()[0] == (int64_t{1} << 62) + 1);
  CHECK(sum(big).to_int_vector()[0] == static_cast<int64_t>((uint64_t{1} << 63) + 2));
  const Tensor w = where(u, ints({1, 2, 3, 4}), ints({-1}));
  CHECK(w.dtype() == DType::i64);
  CHECK(w.to_int_vector() == std::vector<int64_t>{1, -1, 3, -1});
  const Tensor wf = where(u, ints({1, 2, 3, 4}), zeros({4}, DType::f64));
  CHECK(wf.dtype() == DType::f64);
  CHECK(clamp(ints({-5, 0, 3, 9}), 0.0, 4.0).to_int_vector() == std::vector<int64_t>{0, 0, 3, 4});
  CHECK(clamp(ints({-5, 0, 3, 9}), ints({-1}), Tensor()).to_int_vector() == std::vector<int64_t>{-1, 0, 3, 9});
  CHECK(clamp(ints({1, 3}), 0.5, std::nullopt).dtype() == DType::f32);
}

TEST_CASE("promotion: an int or bool operand meets a float one as that float, and the float keeps its gradient") {
  const Tensor x = tensor({1.5, -2.0, 0.5}, {3}, DType::f64).requires_grad_();
  const Tensor mask = tensor({1, 0, 1}, {3}, DType::b8);
  const Tensor y = mul(x, mask);
  CHECK(y.dtype() == DType::f64);
  CHECK(y.to_vector() == std::vector<double>{1.5, 0.0, 0.5});
  sum(div(y, sum(mask))).backward();  // / 2, an int64 count
  CHECK(x.grad().to_vector() == std::vector<double>{0.5, 0.0, 0.5});
  CHECK(add(ints({1, 2, 3}), zeros({3}, DType::f32)).dtype() == DType::f32);
  // two floats of different widths stay an error (the library's choice; docs/python.md)
  CHECK(integer_says([&] { add(x, zeros({3}, DType::f32)); }, "add: dtype mismatch"));
}

TEST_CASE("integer arithmetic refuses what has no integer answer, in words") {
  CHECK(integer_says([&] { floor_divide(ints({1, 2}), ints({1, 0})); }, "floor_divide: integer division by zero"));
  CHECK(integer_says([&] { remainder(ints({1}), 0.0); }, "remainder: integer division by zero"));
  CHECK(integer_says([&] { remainder(3.0, ints({0})); }, "remainder: integer division by zero"));
  CHECK(integer_says([&] { pow(ints({2}), ints({-1})); }, "negative integer powers"));
  const Tensor t = tensor({1, 0}, {2}, DType::b8);
  CHECK(integer_says([&] { sub(t, t); }, "sub: "));
  CHECK(integer_says([&] { neg(t); }, "neg: "));
  CHECK(integer_says([&] { add(ints({1, 2}), ints({1, 2, 3})); }, "add: "));
  CHECK(integer_says([&] { integer_binary("add", IntArith::add, ints({1}), zeros({1}, DType::f64)); }, "floating point"));
  // float remainder and floor division follow the same signs
  CHECK(remainder(tensor({-7.5}, {1}, DType::f64), tensor({2.0}, {1}, DType::f64)).item() == 0.5);
  CHECK(floor_divide(tensor({-7.5}, {1}, DType::f64), 2.0).item() == -4.0);
}

TEST_CASE("gather, scatter and scatter_add against loops; ints gather exactly") {
  Generator gen(3);
  const Tensor x = randn({3, 4}, gen, DType::f64);
  const Tensor index = tensor({3, 0, 0, 1, 2, 2, 1, 3}, {2, 4}, DType::i64);
  const Tensor g1 = gather(x, 1, index);  // out[i][j] = x[i][index[i][j]]
  const Tensor g0 = gather(x, 0, remainder(index, 3.0));  // out[i][j] = x[index[i][j]][j]
  const auto id = index.to_int_vector();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      CHECK(g1.at({i, j}) == x.at({i, id[i * 4 + j]}));
      CHECK(g0.at({i, j}) == x.at({id[i * 4 + j] % 3, j}));
    }
  // scatter_add: repeated places add up; scatter: the last write wins
  const Tensor src = randn({2, 4}, gen, DType::f64);
  const Tensor sa = scatter_add(zeros({2, 4}, DType::f64), 1, index, src), sc = scatter(x, 1, index, src);
  std::vector<double> want(8, 0.0), last = x.to_vector();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      want[i * 4 + id[i * 4 + j]] += src.at({i, j});
      last[i * 4 + id[i * 4 + j]] = src.at({i, j});
    }
  for (int64_t k = 0; k < 8; ++k) CHECK(sa.to_vector()[k] == doctest::Approx(want[k]).epsilon(1e-15));
  for (int64_t k = 0; k < 4; ++k) CHECK(sc.to_vector()[k] == last[k]);
  // the text's tiling: s (2, 8) read at pos % L
  const Tensor s = tensor({5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2}, {2, 8}, DType::i64);
  const Tensor L = ints({3, 5});
  const Tensor pos = arange(8, DType::i64);
  const Tensor tiled = gather(s, 1, remainder(pos.reshape({1, 8}), L.reshape({2, 1})));
  CHECK(tiled.dtype() == DType::i64);
  CHECK(tiled.to_int_vector() == std::vector<int64_t>{5, 6, 7, 5, 6, 7, 5, 6, 4, 5, 6, 7, 8, 4, 5, 6});
  CHECK(scatter_add(ints({0, 0, 0}), 0, ints({2, 2, 0}), ints({5, 6, 7})).to_int_vector() == std::vector<int64_t>{7, 0, 11});
}

TEST_CASE("gather and scatter refuse bad indices and shapes in words") {
  const Tensor x = zeros({2, 3}, DType::f64);
  CHECK(integer_says([&] { gather(x, 1, tensor({3}, {1, 1}, DType::i64)); }, "gather: index 3 at"));
  CHECK(integer_says([&] { gather(x, 1, tensor({-1}, {1, 1}, DType::i64)); }, "gather: index -1"));
  CHECK(integer_says([&] { gather(x, 1, tensor({0}, {1}, DType::i64)); }, "as many dimensions"));
  CHECK(integer_says([&] { gather(x, 1, tensor({0}, {1, 1}, DType::f64)); }, "int64"));
  CHECK(integer_says([&] { gather(x, 2, tensor({0}, {1, 1}, DType::i64)); }, "gather: dim 2 is out of range"));
  CHECK(integer_says([&] { gather(x, 1, zeros({3, 1}, DType::i64)); }, "larger than x"));
  CHECK(integer_says([&] { scatter(x, 1, zeros({2, 2}, DType::i64), zeros({2, 1}, DType::f64)); }, "larger than src"));
  CHECK(integer_says([&] { scatter_add(x, 1, zeros({1, 1}, DType::i64), zeros({1, 1}, DType::f32)); }, "one dtype"));
}

TEST_CASE("maximum and minimum of integers stay integers (clamp's tensor bounds are them); an empty broadcast divides nothing") {
  CHECK(maximum(ints({1, 5, -2}), ints({3, 2, -2})).dtype() == DType::i64);
  CHECK(maximum(ints({1, 5, -2}), ints({3, 2, -2})).to_int_vector() == std::vector<int64_t>{3, 5, -2});
  CHECK(minimum(ints({1, 5, -2}), ints({3})).to_int_vector() == std::vector<int64_t>{1, 3, -2});
  CHECK(clamp(ints({-5, 0, 3, 9}), ints({-1}), ints({4})).to_int_vector() == std::vector<int64_t>{-1, 0, 3, 4});
  // a number bound past what int64 holds is not a whole int64: the clamp computes in float32
  CHECK(clamp(ints({1, 2}), 1e19, std::nullopt).dtype() == DType::f32);
  CHECK(floor_divide(zeros({0, 3}, DType::i64), ints({0, 1, 2})).shape() == Shape{0, 3});
  CHECK_THROWS_WITH_AS(floor_divide(ints({1, 2, 3}), ints({0, 1, 2})), doctest::Contains("integer division by zero"), Error);
}
