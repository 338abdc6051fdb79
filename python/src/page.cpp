// python/src/page.cpp — the step-through page of any scalar's backward (hg.to_html) and the live
// three-token page (hg.live_page); python/handgrad/page.py wraps both for notebooks.
#include <nanobind/stl/function.h>

#include "bind.h"

#ifndef HANDGRAD_LIVE_MODULE
#define HANDGRAD_LIVE_MODULE ""
#endif

namespace hgpy {

void bind_page(nb::module_& m) {
  // recompute(name, value) -> Tensor or None: the root recomputed with the tensor of that name
  // replaced by `value` (float64), for the finite-difference column; None where it cannot.
  m.def(
      "_to_html",
      [](const hg::Tensor& root, const std::string& title, nb::object recompute) {
        hg::HtmlOptions o;
        o.title = title;
        if (!recompute.is_none()) {
          if (!PyCallable_Check(recompute.ptr()))
            throw nb::type_error("to_html: recompute must be a function (name, value) -> Tensor or None");
          o.recompute = [recompute](const std::string& name, const hg::Tensor& value) {
            nb::object out = recompute(name, value);
            if (out.is_none()) return hg::Tensor();
            if (!nb::isinstance<hg::Tensor>(out))
              throw nb::type_error("to_html: recompute must return a handgrad Tensor (the root) or None");
            return nb::cast<hg::Tensor>(out);
          };
        }
        return hg::to_html(root, o);
      },
      nb::arg("root"), nb::arg("title"), nb::arg("recompute").none());
  m.def("_live_page", [] { return hg::live_page_html(hg::read_live_module(HANDGRAD_LIVE_MODULE)); });
  m.attr("_live_module_path") = HANDGRAD_LIVE_MODULE;
}

}  // namespace hgpy
