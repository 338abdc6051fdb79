// Dtype conversions on the CPU: the one rule of engine/convert.h, through to(DType), copy_, fill_,
// set_at / set_flat, tensor() and to_int_vector(). tests/gpu/test_dispatch.cpp checks the CUDA
// copy against these on the same edge values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/convert.h"
#include "handgrad.h"

using namespace hg;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");
constexpr double kTwo63 = 9223372036854775808.0;  // 2^63, exact

// Values with a defined i64 value and their truncations toward zero.
const std::vector<double> kTruncated = {-2.7, -0.5, -0.0, 0.5, 2.7, -1.42, 1e18, -kTwo63};
const std::vector<int64_t> kTruncations = {-2, 0, 0, 0, 2, -1, 1000000000000000000, INT64_MIN};

}  // namespace

TEST_CASE("conversions: to(b8) is v != 0 (PyTorch's rule): negatives, NaN and ±inf are true, ±0 false") {
  const std::vector<double> v = {-1.42, -1.0, -0.0, 0.0, 0.3, 255.0, 256.0, -256.0, kNaN, kInf, -kInf, 1e-300};
  const std::vector<double> want = {1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    std::vector<double> expect = want;
    if (t == DType::f32) expect.back() = 0.0;  // 1e-300 rounds to 0 in float32
    CHECK(tensor(v, {12}, t).to(DType::b8).to_vector() == expect);
  }
  CHECK(index_tensor({-1, 0, 2, 256, INT64_MIN}, {5}).to(DType::b8).to_vector() ==
        std::vector<double>{1, 0, 1, 1, 1});
  // b8 read as a number is 0 or 1, in every dtype
  const Tensor m = bool_tensor({true, false, true}, {3});
  for (DType t : {DType::f32, DType::f64, DType::i64}) CHECK(m.to(t).to_vector() == std::vector<double>{1, 0, 1});
}

TEST_CASE("conversions: float to i64 truncates toward zero, down to -2^63 and up to the last float below 2^63") {
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    const Tensor x = tensor(kTruncated, {static_cast<int64_t>(kTruncated.size())}, t);
    std::vector<int64_t> want = kTruncations;
    if (t == DType::f32) want[6] = 999999984306749440;  // 1e18 rounded to float32
    CHECK(x.to(DType::i64).to_int_vector() == want);
  }
  // The largest values below 2^63: 2^63 - 1024 (float64) and 2^63 - 2^39 (float32).
  CHECK(scalar(std::nextafter(kTwo63, 0.0), DType::f64).to(DType::i64).to_int_vector()[0] == INT64_MAX - 1023);
  CHECK(scalar(static_cast<double>(std::nextafter(static_cast<float>(kTwo63), 0.0f)), DType::f32)
            .to(DType::i64)
            .to_int_vector()[0] == (int64_t{1} << 62) + ((int64_t{1} << 62) - (int64_t{1} << 39)));
  // The rule as the kernels see it (engine/convert.h).
  CHECK(fits_i64(-kTwo63));
  CHECK_FALSE(fits_i64(kTwo63));
  CHECK_FALSE(fits_i64(kNaN));
  CHECK_FALSE(fits_i64(static_cast<float>(kInf)));
  CHECK(convert_element<int64_t>(kNaN) == 0);
  CHECK(convert_element<uint8_t>(kNaN) == 1);
  CHECK(convert_element<uint8_t>(-1.42f) == 1);
}

TEST_CASE("conversions: float to i64 of NaN, ±inf or out of range is an Error naming the op, the value, where, the fix") {
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(t));
    const std::string from = dtype_name(t);
    for (double bad : {kNaN, kInf, -kInf, kTwo63, -2 * kTwo63, 1e30}) {
      CAPTURE(bad);
      const Tensor x = tensor({1.5, bad, kNaN}, {3}, t);  // the first bad one is at [1]
      CHECK_THROWS_WITH_AS(x.to(DType::i64), doctest::Contains(("to(i64): " + from + " value").c_str()), Error);
      CHECK_THROWS_WITH_AS(x.to(DType::i64), doctest::Contains("at position [1] of the source (3,) has no int64 value"),
                           Error);
      CHECK_THROWS_WITH_AS(x.to(DType::i64), doctest::Contains("replace them first (through a boolean mask and a fill value)"), Error);
    }
  }
  CHECK_THROWS_WITH_AS(scalar(kNaN, DType::f64).to(DType::i64), doctest::Contains("float64 value nan at position []"), Error);
  CHECK_THROWS_WITH_AS(scalar(-kInf, DType::f64).to(DType::i64), doctest::Contains("float64 value -inf"), Error);
  CHECK_THROWS_WITH_AS(scalar(1e19, DType::f64).to(DType::i64), doctest::Contains("float64 value 1e+19"), Error);
}

TEST_CASE("conversions: a failed float to i64 copy_ names the source's position and leaves the destination as it was") {
  // A transposed source: the first bad element in the source's own row-major order is [0, 2].
  Tensor base = tensor({0, 1, 2, 3, 4, 5}, {3, 2}, DType::f64);
  base.set_at({2, 0}, kNaN);
  base.set_at({1, 1}, kInf);
  const Tensor src = base.transpose(0, 1);  // (2, 3): [0, 2] is nan, [1, 1] is inf
  Tensor dst = full({2, 3}, 7.0, DType::i64);
  CHECK_THROWS_WITH_AS(dst.copy_(src), doctest::Contains("value nan at position [0, 2] of the source (2, 3)"), Error);
  CHECK(dst.to_int_vector() == std::vector<int64_t>{7, 7, 7, 7, 7, 7});
  // A broadcast source: positions are the source's, not the destination's.
  Tensor row = tensor({1.0, 2.0, -kInf}, {3}, DType::f32);
  Tensor wide = zeros({4, 3}, DType::i64);
  CHECK_THROWS_WITH_AS(wide.copy_(row), doctest::Contains("float32 value -inf at position [2] of the source (3,)"),
                       Error);
  CHECK(wide.to_int_vector() == std::vector<int64_t>(12, 0));
  // Broadcast and strided conversions that are defined.
  Tensor m = zeros({2, 3}, DType::b8);
  m.copy_(tensor({-1.5, 0.0, kNaN}, {3}, DType::f64));
  CHECK(m.to_vector() == std::vector<double>{1, 0, 1, 1, 0, 1});
  Tensor ids = zeros({3, 2}, DType::i64);
  ids.transpose(0, 1).copy_(tensor({-2.5, 0.9, 7.99}, {3}, DType::f32));
  CHECK(ids.to_int_vector() == std::vector<int64_t>{-2, -2, 0, 0, 7, 7});
}

TEST_CASE("conversions: fill_, full, set_at, set_flat and tensor() convert a double by the same rule") {
  CHECK(full({3}, -1.0, DType::b8).to_vector() == std::vector<double>{1, 1, 1});
  CHECK(full({2}, kNaN, DType::b8).to_vector() == std::vector<double>{1, 1});
  CHECK(full({2}, -0.0, DType::b8).to_vector() == std::vector<double>{0, 0});
  CHECK(full({2}, -3.9, DType::i64).to_int_vector() == std::vector<int64_t>{-3, -3});
  CHECK(tensor({-1.42, 0.0, 300.0}, {3}, DType::b8).to_vector() == std::vector<double>{1, 0, 1});
  CHECK(tensor({-1.42, 0.0, 300.0}, {3}, DType::i64).to_int_vector() == std::vector<int64_t>{-1, 0, 300});
  Tensor b = zeros({2}, DType::b8);
  b.set_at({0}, -2.0);
  b.set_flat(1, kNaN);
  CHECK(b.to_vector() == std::vector<double>{1, 1});

  Tensor i = zeros({2}, DType::i64);
  CHECK_THROWS_WITH_AS(i.fill_(kNaN), doctest::Contains("fill_: float64 value nan (the fill value) has no int64 value"),
                       Error);
  CHECK_THROWS_WITH_AS(full({2}, kInf, DType::i64), doctest::Contains("fill_: float64 value inf"), Error);
  CHECK_THROWS_WITH_AS(i.set_at({1}, -kInf), doctest::Contains("set_at: float64 value -inf"), Error);
  CHECK_THROWS_WITH_AS(i.set_flat(0, 1e20), doctest::Contains("set_flat: float64 value 1e+20"), Error);
  CHECK(i.to_int_vector() == std::vector<int64_t>{0, 0});
  CHECK_THROWS_WITH_AS(tensor({1.0, 2.0, kNaN, 4.0}, {2, 2}, DType::i64),
                       doctest::Contains("tensor: float64 value nan at position [1, 0] of (2, 2) has no int64 value"),
                       Error);
}

TEST_CASE("conversions: to_int_vector goes through to(i64): exact beyond 2^53, and NaN is the conversion's Error") {
  const int64_t big = (int64_t{1} << 53) + 1;  // not a double
  CHECK(index_tensor({big, -big, INT64_MAX}, {3}).to_int_vector() == std::vector<int64_t>{big, -big, INT64_MAX});
  CHECK(tensor({2.9, -2.9}, {2}, DType::f32).to_int_vector() == std::vector<int64_t>{2, -2});
  CHECK(bool_tensor({true, false}, {2}).to_int_vector() == std::vector<int64_t>{1, 0});
  CHECK_THROWS_WITH_AS(tensor({0.0, kNaN}, {2}, DType::f64).to_int_vector(), doctest::Contains("to(i64)"), Error);
}
