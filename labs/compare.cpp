#include "compare.h"

#include <algorithm>
#include <cmath>

namespace hg::lab {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    fail("max_abs_diff", "shapes differ: {} vs {}", shape_str(a.shape()), shape_str(b.shape()));
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;  // also equal infinities
    const double d = std::abs(x[i] - y[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace hg::lab
