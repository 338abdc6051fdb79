// ops/sampling.h: randperm is a permutation fixed by the seed; multinomial's frequencies match the
// weights (within a few standard errors), without replacement never repeats, and bad weights are
// refused in words.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "handgrad.h"

using namespace hg;

TEST_CASE("randperm: every number once, the same order for the same seed") {
  Generator g1(5), g2(5);
  const std::vector<int64_t> p = randperm(100, g1).to_int_vector(), q = randperm(100, g2).to_int_vector();
  std::vector<int64_t> sorted = p, want(100);
  std::sort(sorted.begin(), sorted.end());
  std::iota(want.begin(), want.end(), 0);
  CHECK(sorted == want);
  CHECK(p == q);
  CHECK(p != want);
  CHECK(randperm(0, g1).numel() == 0);
  CHECK_THROWS_AS(randperm(-1, g1), Error);
}

TEST_CASE("multinomial: frequencies follow the weights; without replacement, distinct categories") {
  Generator gen(11);
  const Tensor w = tensor({1, 2, 3, 4}, {4}, DType::f64);
  const std::vector<int64_t> draws = multinomial(w, 20000, true, gen).to_int_vector();
  std::vector<double> freq(4, 0.0);
  for (int64_t d : draws) freq[static_cast<size_t>(d)] += 1.0 / 20000;
  for (int i = 0; i < 4; ++i) CHECK(freq[static_cast<size_t>(i)] == doctest::Approx((i + 1) / 10.0).epsilon(0.1));
  const Tensor rows = multinomial(tensor({0, 5, 1, 0, 1, 1, 1, 1}, {2, 4}, DType::f64), 2, false, gen);
  CHECK(rows.shape() == Shape{2, 2});
  const std::vector<int64_t> r = rows.to_int_vector();
  CHECK(std::set<int64_t>{r[0], r[1]} == std::set<int64_t>{1, 2});  // the only two with weight
  CHECK(r[2] != r[3]);
  CHECK_THROWS_WITH_AS(multinomial(w, 5, false, gen), doctest::Contains("without replacement"), Error);
  CHECK_THROWS_WITH_AS(multinomial(tensor({1, -1}, {2}, DType::f64), 1, true, gen), doctest::Contains("≥ 0"), Error);
  CHECK_THROWS_WITH_AS(multinomial(zeros({3}, DType::f64), 1, true, gen), doctest::Contains("no weight left"), Error);
  CHECK_THROWS_AS(multinomial(zeros({2, 2, 2}, DType::f64), 1, true, gen), Error);
}
