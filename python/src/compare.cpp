// python/src/compare.cpp — comparisons, logic and clamp (ops/compare.h) as plain calls;
// python/handgrad/_compare.py gives them PyTorch's forms (operators, methods, numbers or tensors).
#include "bind.h"

namespace hgpy {

void bind_compare(nb::module_& m) {
  using hg::Shape;
  using hg::Tensor;
  using Cmp = Tensor (*)(const Tensor&, const Tensor&);
  using CmpNumber = Tensor (*)(const Tensor&, double);
  const std::pair<const char*, std::pair<Cmp, CmpNumber>> comparisons[] = {
      {"eq", {&hg::eq, &hg::eq}}, {"ne", {&hg::ne, &hg::ne}}, {"lt", {&hg::lt, &hg::lt}},
      {"le", {&hg::le, &hg::le}}, {"gt", {&hg::gt, &hg::gt}}, {"ge", {&hg::ge, &hg::ge}}};
  for (const auto& [name, fns] : comparisons) {
    const auto [tensor_fn, number_fn] = fns;
    m.def((std::string("_") + name).c_str(), [tensor_fn](const Tensor& a, const Tensor& b) { return tensor_fn(a, b); });
    m.def((std::string("_") + name + "_number").c_str(), [number_fn](const Tensor& a, double s) { return number_fn(a, s); });
  }
  m.def("_logical_and", [](const Tensor& a, const Tensor& b) { return hg::logical_and(a, b); });
  m.def("_logical_or", [](const Tensor& a, const Tensor& b) { return hg::logical_or(a, b); });
  m.def("_logical_xor", [](const Tensor& a, const Tensor& b) { return hg::logical_xor(a, b); });
  m.def("_logical_not", [](const Tensor& a) { return hg::logical_not(a); });
  m.def("_isnan", [](const Tensor& x) { return hg::isnan(x); });
  m.def("_isinf", [](const Tensor& x) { return hg::isinf(x); });
  m.def("_isfinite", [](const Tensor& x) { return hg::isfinite(x); });
  m.def("_any", [](const Tensor& x, const Shape& dims, bool keepdim) { return hg::any(x, dims, keepdim); });
  m.def("_all", [](const Tensor& x, const Shape& dims, bool keepdim) { return hg::all(x, dims, keepdim); });
  m.def("_clamp", [](const Tensor& x, std::optional<double> lo, std::optional<double> hi) { return hg::clamp(x, lo, hi); });
  m.def("_clamp_tensors", [](const Tensor& x, std::optional<Tensor> lo, std::optional<Tensor> hi) {
    return hg::clamp(x, lo ? *lo : Tensor(), hi ? *hi : Tensor());
  });
}

}  // namespace hgpy
