#include "engine/random.h"

#include <cmath>
#include <numbers>

#include "engine/dispatch.h"
#include "engine/error.h"

namespace hg {

double Generator::uniform() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }
double Generator::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1;
  do u1 = uniform(); while (u1 <= 0.0);
  double u2 = uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  double a = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return r * std::cos(a);
}

int64_t Generator::randint(int64_t lo, int64_t hi) {
  if (hi <= lo) fail("randint", "empty range [{}, {})", lo, hi);
  uint64_t span = static_cast<uint64_t>(hi - lo);
  uint64_t limit = UINT64_MAX - UINT64_MAX % span;  // reject to avoid modulo bias
  uint64_t x;
  do x = eng_(); while (x >= limit);
  return lo + static_cast<int64_t>(x % span);
}

Tensor randn(const Shape& shape, Generator& gen, DType t, double mean, double std) {
  Tensor out = empty(shape, t);
  dispatch_float(t, "randn", [&]<typename T>() {
    T* p = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(mean + std * gen.normal());
  });
  return out;
}

Tensor rand(const Shape& shape, Generator& gen, DType t, double lo, double hi) {
  Tensor out = empty(shape, t);
  dispatch_float(t, "rand", [&]<typename T>() {
    T* p = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(gen.uniform(lo, hi));
  });
  return out;
}

Tensor randint(const Shape& shape, Generator& gen, int64_t lo, int64_t hi) {
  Tensor out = empty(shape, DType::i64);
  int64_t* p = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = gen.randint(lo, hi);
  return out;
}

}  // namespace hg
