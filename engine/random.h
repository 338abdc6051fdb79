// engine/random.h — a seeded generator that gives the same numbers on every run and platform.
// The normal draws use our own Box–Muller transform (std::normal_distribution is
// implementation-defined), so a seed means the same tensor everywhere.
#pragma once
#include <cstdint>
#include <random>

#include "engine/tensor.h"

namespace hg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : eng_(seed) {}
  uint64_t next_u64() { return eng_(); }
  double uniform();                     // [0, 1), 53 random bits
  double uniform(double lo, double hi);
  double normal();                      // N(0, 1)
  int64_t randint(int64_t lo, int64_t hi);  // [lo, hi)
 private:
  std::mt19937_64 eng_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

Tensor randn(const Shape& shape, Generator& gen, DType t = DType::f32, double mean = 0.0, double std = 1.0);
Tensor rand(const Shape& shape, Generator& gen, DType t = DType::f32, double lo = 0.0, double hi = 1.0);
Tensor randint(const Shape& shape, Generator& gen, int64_t lo, int64_t hi);  // i64

}  // namespace hg
