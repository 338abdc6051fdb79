// engine/print.cpp — a tensor as text: shape, dtype and the values.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/tensor.h"

namespace hg {

std::string Tensor::str(int precision) const {
  check_defined("str");
  std::string head = fmt::format("tensor {} {}", shape_str(shape()), dtype_name(dtype()));
  if (device() != Device::cpu) head += fmt::format(" {}", device_name(device()));
  if (requires_grad()) head += " requires_grad";
  std::vector<double> v = to_vector();
  const bool integral = !is_floating(dtype());
  auto num = [&](double x) {
    return integral ? fmt::format("{}", static_cast<int64_t>(x)) : fmt::format("{: .{}f}", x, precision);
  };
  if (dim() == 0) return head + "\n" + num(v[0]);
  std::string body;
  const Shape& s = shape();
  const int64_t limit = 6;  // per dimension beyond this, show the first and last three
  std::function<void(size_t, int64_t)> rec = [&](size_t d, int64_t base) {
    int64_t stride = 1;
    for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
    body += "[";
    for (int64_t i = 0; i < s[d]; ++i) {
      if (s[d] > limit && i == 3) {
        body += d + 1 == s.size() ? "..., " : "...,\n" + std::string(d + 1, ' ');
        i = s[d] - 3;
      }
      if (d + 1 == s.size()) body += num(v[static_cast<size_t>(base + i)]);
      else rec(d + 1, base + i * stride);
      if (i + 1 < s[d]) body += d + 1 == s.size() ? ", " : ",\n" + std::string(d + 1, ' ');
    }
    body += "]";
  };
  rec(0, 0);
  return head + "\n" + body;
}

}  // namespace hg
