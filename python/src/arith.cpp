// python/src/arith.cpp — arithmetic with tensors and Python numbers on either side: + − × / // %
// and ** as operators, and the function forms hg.add ... hg.remainder (their keyword forms are in
// _arith.py). A Python number beside a tensor follows PyTorch: an int keeps an int64 or bool tensor
// integer, a float makes it float32, and beside a float tensor either takes that tensor's dtype.
#include "bind.h"

namespace hgpy {

namespace {

using hg::Tensor;

bool integral(const Tensor& a) { return a.defined() && !hg::is_floating(a.dtype()); }

// A Python float beside a: a itself when float, else a as float32.
Tensor floated(const Tensor& a) { return integral(a) ? a.to(hg::DType::f32) : a; }

// A Python number as a 0-d tensor beside a (for the reversed and the dividing forms).
Tensor number_beside(const Tensor& a, int64_t s) {
  return integral(a) ? hg::full({}, static_cast<double>(s), hg::DType::i64, a.device())
                     : hg::full({}, static_cast<double>(s), a.dtype(), a.device());
}
Tensor number_beside(const Tensor& a, double s) { return hg::full({}, s, floated(a).dtype(), a.device()); }

// a + s, a × s, s − a with s an int: exact on an integer tensor.
Tensor add_int(const Tensor& a, int64_t s) {
  return integral(a) ? hg::integer_scalar("add", hg::IntArith::add, a, s) : hg::add(a, static_cast<double>(s));
}
Tensor sub_int(const Tensor& a, int64_t s) {
  return integral(a) ? hg::integer_scalar("sub", hg::IntArith::sub, a, s) : hg::add(a, -static_cast<double>(s));
}
Tensor rsub_int(const Tensor& a, int64_t s) {
  return integral(a) ? hg::integer_scalar("sub", hg::IntArith::sub, a, s, true) : hg::rsub(a, static_cast<double>(s));
}
Tensor mul_int(const Tensor& a, int64_t s) {
  return integral(a) ? hg::integer_scalar("mul", hg::IntArith::mul, a, s) : hg::mul(a, static_cast<double>(s));
}

}  // namespace

void bind_arith(nb::module_& m) {
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));
  const auto op = nb::is_operator();
  // Overloads are tried in order: a tensor, then an int (so it is not read as a float), then a float.
  tensor
      .def("__add__", [](const Tensor& a, const Tensor& b) { return hg::add(a, b); }, op)
      .def("__add__", [](const Tensor& a, int64_t s) { return add_int(a, s); }, op)
      .def("__add__", [](const Tensor& a, double s) { return hg::add(floated(a), s); }, op)
      .def("__radd__", [](const Tensor& a, int64_t s) { return add_int(a, s); }, op)
      .def("__radd__", [](const Tensor& a, double s) { return hg::add(floated(a), s); }, op)
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return hg::sub(a, b); }, op)
      .def("__sub__", [](const Tensor& a, int64_t s) { return sub_int(a, s); }, op)
      .def("__sub__", [](const Tensor& a, double s) { return hg::add(floated(a), -s); }, op)
      .def("__rsub__", [](const Tensor& a, int64_t s) { return rsub_int(a, s); }, op)
      .def("__rsub__", [](const Tensor& a, double s) { return hg::rsub(floated(a), s); }, op)
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return hg::mul(a, b); }, op)
      .def("__mul__", [](const Tensor& a, int64_t s) { return mul_int(a, s); }, op)
      .def("__mul__", [](const Tensor& a, double s) { return hg::mul(floated(a), s); }, op)
      .def("__rmul__", [](const Tensor& a, int64_t s) { return mul_int(a, s); }, op)
      .def("__rmul__", [](const Tensor& a, double s) { return hg::mul(floated(a), s); }, op)
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return hg::div(a, b); }, op)
      .def("__truediv__", [](const Tensor& a, double s) { return floated(a) / s; }, op)
      .def("__rtruediv__", [](const Tensor& a, double s) { return hg::rdiv(floated(a), s); }, op)
      .def("__floordiv__", [](const Tensor& a, const Tensor& b) { return hg::floor_divide(a, b); }, op)
      .def("__floordiv__", [](const Tensor& a, int64_t s) { return hg::floor_divide(a, number_beside(a, s)); }, op)
      .def("__floordiv__", [](const Tensor& a, double s) { return hg::floor_divide(a, number_beside(a, s)); }, op)
      .def("__rfloordiv__", [](const Tensor& a, int64_t s) { return hg::floor_divide(number_beside(a, s), a); }, op)
      .def("__rfloordiv__", [](const Tensor& a, double s) { return hg::floor_divide(number_beside(a, s), a); }, op)
      .def("__mod__", [](const Tensor& a, const Tensor& b) { return hg::remainder(a, b); }, op)
      .def("__mod__", [](const Tensor& a, int64_t s) { return hg::remainder(a, number_beside(a, s)); }, op)
      .def("__mod__", [](const Tensor& a, double s) { return hg::remainder(a, number_beside(a, s)); }, op)
      .def("__rmod__", [](const Tensor& a, int64_t s) { return hg::remainder(number_beside(a, s), a); }, op)
      .def("__rmod__", [](const Tensor& a, double s) { return hg::remainder(number_beside(a, s), a); }, op)
      .def("__pow__", [](const Tensor& a, const Tensor& b) { return hg::pow(a, b); }, op)
      .def("__pow__", [](const Tensor& a, int64_t p) {
        return integral(a) ? hg::integer_scalar("pow", hg::IntArith::pow, a, p) : hg::pow(a, static_cast<double>(p));
      }, op)
      .def("__pow__", [](const Tensor& a, double p) { return hg::pow(floated(a), p); }, op)
      .def("__rpow__", [](const Tensor& a, int64_t s) {
        return integral(a) ? hg::integer_scalar("pow", hg::IntArith::pow, a, s, true) : hg::pow(number_beside(a, s), a);
      }, op)
      .def("__rpow__", [](const Tensor& a, double s) { return hg::pow(number_beside(a, s), a); }, op)
      .def("__neg__", [](const Tensor& a) { return hg::neg(a); });

  m.def("_add", [](const Tensor& a, const Tensor& b) { return hg::add(a, b); });
  m.def("_sub", [](const Tensor& a, const Tensor& b) { return hg::sub(a, b); });
  m.def("_mul", [](const Tensor& a, const Tensor& b) { return hg::mul(a, b); });
  m.def("_div", [](const Tensor& a, const Tensor& b) { return hg::div(a, b); });
  m.def("_floor_divide", [](const Tensor& a, const Tensor& b) { return hg::floor_divide(a, b); });
  m.def("_remainder", [](const Tensor& a, const Tensor& b) { return hg::remainder(a, b); });
  m.def("_pow", [](const Tensor& a, const Tensor& b) { return hg::pow(a, b); });
  m.def("_neg", [](const Tensor& a) { return hg::neg(a); });
}

}  // namespace hgpy
