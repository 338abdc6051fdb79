// python/src/ops.cpp — the unary maps, reductions, matmul and softmax, as Tensor methods and
// module functions (the arithmetic operators are python/src/arith.cpp's).
#include "bind.h"

namespace hgpy {

namespace {

using hg::Tensor;
using release_gil = nb::call_guard<ReleaseGil>;

// dim=None (every element), an int, or a sequence of ints.
// dim=None (every element: the library's empty list), an int, or a sequence of ints.
hg::Shape dims_of(const nb::object& dim, const char* op) { return dim.is_none() ? hg::Shape{} : ints_of(dim, op); }

Tensor sum_of(const Tensor& x, const nb::object& dim, bool keepdim) { return hg::sum(x, dims_of(dim, "sum"), keepdim); }

Tensor mean_of(const Tensor& x, const nb::object& dim, bool keepdim) { return hg::mean(x, dims_of(dim, "mean"), keepdim); }

// max() is the largest element (0-d); max(dim) is (values, indices), as in PyTorch.
nb::object max_of(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return nb::cast(hg::max(x.reshape({-1}), 0));
  return nb::make_tuple(hg::max(x, *dim, keepdim), hg::argmax(x, *dim, keepdim));
}

// expand(2, -1, 3) or expand((2, -1, 3)): -1 keeps that dimension's size, as in PyTorch.
Tensor expand_of(const Tensor& x, const nb::args& sizes) {
  hg::Shape to = ints_of_args(sizes, "expand");
  const int64_t lead = static_cast<int64_t>(to.size()) - x.dim();
  for (int64_t i = 0; i < static_cast<int64_t>(to.size()); ++i)
    if (to[i] == -1) {
      if (i < lead)
        throw hg::Error("expand: -1 for new leading dimension " + std::to_string(i) + " of " + hg::shape_str(to) +
                        " (tensor " + x.describe() + "); give that dimension's size");
      to[i] = x.size(i - lead);
    }
  return hg::expand(x, to);
}

// split(x, 2) cuts pieces of 2 (the last may be shorter); split(x, [1, 3]) pieces of those sizes.
std::vector<Tensor> split_of(const Tensor& x, const nb::object& size, int64_t dim) {
  if (!PyLong_Check(size.ptr())) return hg::split(x, ints_of(size, "split"), dim);
  const int64_t step = ints_of(size, "split")[0];
  const int64_t n = x.shape()[hg::wrap_existing_dim("split", dim, x.shape())];
  if (n == 0 && step >= 0) return hg::split(x, {0}, dim);  // an empty dimension is one empty piece, as in PyTorch
  if (step <= 0)
    throw hg::Error("split: split_size must be positive, got " + std::to_string(step) + " for dimension " +
                    std::to_string(dim) + " of " + x.describe());
  hg::Shape sizes;
  for (int64_t at = 0; at < n; at += step) sizes.push_back(std::min(step, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return hg::split(x, sizes, dim);
}

}  // namespace

void bind_ops(nb::module_& m) {
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));
  const auto op = nb::is_operator();
  tensor
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return hg::matmul(a, b); }, op, release_gil())
      .def("matmul", [](const Tensor& a, const Tensor& b) { return hg::matmul(a, b); }, release_gil(),
           "matmul(other): the matrix product, with PyTorch's rules for 1-d operands and batch dims (broadcast)")
      .def("pow", [](const Tensor& a, double p) { return hg::pow(a, p); }, nb::arg("exponent"))
      .def("exp", [](const Tensor& x) { return hg::exp(x); }, "exp(): e^x, elementwise")
      .def("log", [](const Tensor& x) { return hg::log(x); }, "log(): the natural logarithm, elementwise")
      .def("sqrt", [](const Tensor& x) { return hg::sqrt(x); }, "sqrt(): the square root, elementwise")
      .def("tanh", [](const Tensor& x) { return hg::tanh(x); }, "tanh(): the hyperbolic tangent, elementwise")
      .def("relu", [](const Tensor& x) { return hg::relu(x); },
           "relu(): max(x, 0), elementwise (gradient 0 at 0, as PyTorch's)")
      .def("sum", &sum_of, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("mean", &mean_of, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("_max", &max_of, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      // argmax() is the flat position of the largest element, as in PyTorch
      .def("argmax", [](const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
        if (dim) return hg::argmax(x, *dim, keepdim);
        Tensor flat = hg::argmax(x.reshape({-1}), 0);
        return keepdim ? flat.reshape(hg::Shape(static_cast<size_t>(x.dim()), 1)) : flat;
      }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
           "argmax(dim=None, keepdim=False): the flat position of the largest element, or its position along dim")
      .def("softmax", [](const Tensor& x, int64_t dim) { return hg::softmax(x, dim); }, nb::arg("dim"))
      .def("log_softmax", [](const Tensor& x, int64_t dim) { return hg::log_softmax(x, dim); }, nb::arg("dim"))
      .def("masked_fill", [](const Tensor& x, const Tensor& mask, double v) { return hg::masked_fill(x, mask, v); },
           nb::arg("mask"), nb::arg("value"))
      .def("expand", [](const Tensor& x, nb::args sizes) { return expand_of(x, sizes); },
           "expand(*sizes): size-1 dims repeated to sizes without copying (-1 keeps a size; a view)")
      .def("chunk", [](const Tensor& x, int64_t chunks, int64_t dim) { return hg::chunk(x, chunks, dim); },
           nb::arg("chunks"), nb::arg("dim") = 0,
           "chunk(chunks, dim=0): chunks pieces of one size along dim (the last smaller), as views")
      .def("split", [](const Tensor& x, const nb::object& size, int64_t dim) { return split_of(x, size, dim); },
           nb::arg("split_size_or_sections"), nb::arg("dim") = 0,
           "split(split_size_or_sections, dim=0): pieces of that size (or of those sizes) along dim, as views");

  // The elementwise functions of ops/elementwise_math.cpp, each a method and a function, as in PyTorch,
  // with what each computes (their docstrings: "sin(input): the sine, elementwise").
  struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&, hg::Site);
    const char* what;
  };
  const Unary math[] = {
      {"sin", &hg::sin, "the sine"},
      {"cos", &hg::cos, "the cosine"},
      {"tan", &hg::tan, "the tangent"},
      {"asin", &hg::asin, "the inverse sine"},
      {"acos", &hg::acos, "the inverse cosine"},
      {"atan", &hg::atan, "the inverse tangent"},
      {"sinh", &hg::sinh, "the hyperbolic sine"},
      {"cosh", &hg::cosh, "the hyperbolic cosine"},
      {"asinh", &hg::asinh, "the inverse hyperbolic sine"},
      {"acosh", &hg::acosh, "the inverse hyperbolic cosine"},
      {"atanh", &hg::atanh, "the inverse hyperbolic tangent"},
      {"sigmoid", &hg::sigmoid, "1 / (1 + e^-x)"},
      {"silu", &hg::silu, "x · sigmoid(x)"},
      {"log1p", &hg::log1p, "ln(1 + x), exact near 0"},
      {"expm1", &hg::expm1, "e^x - 1, exact near 0"},
      {"log2", &hg::log2, "the base-2 logarithm"},
      {"exp2", &hg::exp2, "2^x"},
      {"reciprocal", &hg::reciprocal, "1 / x"},
      {"rsqrt", &hg::rsqrt, "1 / sqrt(x)"},
      {"square", &hg::square, "x · x"},
      {"abs", &hg::abs, "|x|"},
      {"sign", &hg::sign, "-1, 0 or 1 by the sign of x (0 for NaN)"},
      {"floor", &hg::floor, "the largest integer ≤ x"},
      {"ceil", &hg::ceil, "the smallest integer ≥ x"},
      {"round", &hg::round, "the nearest integer, halves to even"},
      {"trunc", &hg::trunc, "x rounded towards 0"},
      {"log10", &hg::log10, "the base-10 logarithm"},
      {"erf", &hg::erf, "the error function"},
      {"erfc", &hg::erfc, "1 - erf(x), exact where erf(x) is near 1"},
      {"erfinv", &hg::erfinv, "the inverse of erf"}};
  for (const auto& [name, fn, what] : math) {
    auto call = [fn = fn](const Tensor& x) { return fn(x, hg::Site::current()); };
    const std::string method_doc = std::string(name) + "(): " + what + ", elementwise";
    const std::string function_doc = std::string(name) + "(input): " + what + ", elementwise";
    tensor.def(name, call, method_doc.c_str());
    m.def(name, call, nb::arg("input"), function_doc.c_str());
  }
  tensor.def("__abs__", [](const Tensor& x) { return hg::abs(x); });

  // The pointwise functions of two tensors (ops/pointwise.cpp); python/handgrad/_pointwise.py gives
  // them PyTorch's forms (a number on either side where PyTorch takes one, and the methods).
  using Binary = Tensor (*)(const Tensor&, const Tensor&, hg::Site);
  const std::pair<const char*, Binary> pointwise[] = {
      {"_atan2", &hg::atan2}, {"_fmod", &hg::fmod}, {"_xlogy", &hg::xlogy}, {"_copysign", &hg::copysign},
      {"_fmax", &hg::fmax},   {"_fmin", &hg::fmin}, {"_logaddexp", &hg::logaddexp}, {"_logaddexp2", &hg::logaddexp2},
      {"_hypot", &hg::hypot}};
  for (const auto& [name, fn] : pointwise)
    m.def(name, [fn = fn](const Tensor& a, const Tensor& b) { return fn(a, b, hg::Site::current()); }, nb::arg("input"),
          nb::arg("other"));

  m.def("matmul", [](const Tensor& a, const Tensor& b) { return hg::matmul(a, b); }, release_gil(),
        "matmul(input, other): the matrix product, with PyTorch's rules for 1-d operands and batch dims (broadcast)");
  m.def("where", [](const Tensor& cond, const Tensor& a, const Tensor& b) { return hg::where(cond, a, b); },
        nb::arg("condition"), nb::arg("input"), nb::arg("other"));
  m.def("cat", [](const std::vector<Tensor>& xs, int64_t dim) { return hg::concat(xs, dim); }, nb::arg("tensors"),
        nb::arg("dim") = 0);
  m.def("exp", [](const Tensor& x) { return hg::exp(x); }, "exp(input): e^x, elementwise");
  m.def("log", [](const Tensor& x) { return hg::log(x); }, "log(input): the natural logarithm, elementwise");
  m.def("tanh", [](const Tensor& x) { return hg::tanh(x); }, "tanh(input): the hyperbolic tangent, elementwise");
  m.def("relu", [](const Tensor& x) { return hg::relu(x); },
        "relu(input): max(x, 0), elementwise (gradient 0 at 0, as PyTorch's)");
  m.def("sum", &sum_of, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  m.def("mean", &mean_of, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  m.def("softmax", [](const Tensor& x, int64_t dim) { return hg::softmax(x, dim); }, nb::arg("input"), nb::arg("dim"));
  m.def("log_softmax", [](const Tensor& x, int64_t dim) { return hg::log_softmax(x, dim); }, nb::arg("input"), nb::arg("dim"));
}

}  // namespace hgpy
