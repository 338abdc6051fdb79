// nn/data_parallel.h's refusals, on a stand-in communicator of two ranks whose collectives act as
// if the other rank held the same values (broadcast: unchanged; sum: doubled; mean: unchanged).
#include <doctest/doctest.h>

#include "handgrad.h"

using namespace hg;

namespace {

class TwoRanks final : public nn::Communicator {
 public:
  const char* backend() const override { return "test"; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void broadcast(const Tensor&, int) override {}
  void all_reduce(const Tensor& t, nn::Reduce how) override {
    if (how == nn::Reduce::sum) {
      NoGradGuard ng;
      Tensor(t).mul_(2.0);
    }
  }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

}  // namespace

TEST_CASE("data parallel: a batch the ranks do not divide is refused, naming both; shards tile the batch") {
  TwoRanks comm;
  nn::DataParallel dp(comm, {zeros({2}, DType::f64).requires_grad_()});
  CHECK_THROWS_WITH_AS(dp.shard(7), doctest::Contains("a batch of 7 does not split evenly across 2 ranks"), Error);
  const nn::DataParallel::Shard s = dp.shard(8);
  CHECK(s.begin == 0);
  CHECK(s.end == 4);
}

TEST_CASE("data parallel: a parameter with a gradient on some ranks only is refused on every rank") {
  // Here the stand-in's sum says "1 of 2 ranks" for a parameter only this rank has no gradient for.
  class OneHasIt final : public nn::Communicator {
   public:
    const char* backend() const override { return "test"; }
    int rank() const override { return 0; }
    int size() const override { return 2; }
    void broadcast(const Tensor&, int) override {}
    void all_reduce(const Tensor& t, nn::Reduce) override {
      NoGradGuard ng;
      Tensor(t).fill_(1.0);  // every parameter: reached on one of the two ranks
    }
    void barrier() override {}
    [[noreturn]] void abort(int code) override { std::_Exit(code); }
  } comm;
  Tensor p = zeros({3}, DType::f64).requires_grad_();
  nn::DataParallel dp(comm, {p});
  CHECK_THROWS_WITH_AS(dp.average_gradients(), doctest::Contains("has a gradient on 1 of the 2 ranks only"), Error);
}

TEST_CASE("data parallel: gradients go through one flat buffer and come back in place") {
  TwoRanks comm;  // the mean of two equal ranks is each rank's own gradient
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, DType::f64).requires_grad_();
  Tensor b = tensor({5, 6}, {2}, DType::f64).requires_grad_();
  add(sum(mul(a, a)), sum(mul(b, b))).backward();
  nn::DataParallel dp(comm, {a, b});
  dp.average_gradients();
  CHECK(a.grad().to_vector() == std::vector<double>{2, 4, 6, 8});
  CHECK(b.grad().to_vector() == std::vector<double>{10, 12});
  CHECK(dp.average({1.5, 2.5}) == std::vector<double>{1.5, 2.5});
}
