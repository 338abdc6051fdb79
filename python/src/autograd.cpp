// python/src/autograd.cpp — backward, grad, the gradient checks, grad mode and the graph's nodes
// (grad_fn and next_functions).
#include "bind.h"

namespace hgpy {

namespace {

using hg::Tensor;

// next_functions' entry for a leaf that requires grad (PyTorch's AccumulateGrad).
struct AccumulateGrad {
  Tensor variable;
};

// hg.no_grad() / hg.enable_grad(): the library's guard, held from __enter__ to __exit__.
struct GradMode {
  explicit GradMode(bool enabled) : on(enabled) {}
  bool on;
  std::optional<hg::GradModeGuard> guard;
};

nb::tuple next_functions(const hg::Node& node) {
  nb::list out;
  for (const hg::InputSlot& in : node.inputs) {
    if (in.node)
      out.append(nb::make_tuple(in.node, in.output_nr));
    else if (in.leaf)
      out.append(nb::make_tuple(AccumulateGrad{Tensor(in.leaf)}, 0));
    else
      out.append(nb::make_tuple(nb::none(), 0));
  }
  return nb::tuple(out);
}

void backward(const Tensor& root, std::optional<Tensor> gradient, std::optional<bool> retain_graph,
              bool create_graph) {
  hg::BackwardOptions opts;
  opts.create_graph = create_graph;
  opts.retain_graph = retain_graph.value_or(create_graph);
  hg::backward(root, gradient.value_or(Tensor()), opts);
}

std::vector<std::optional<Tensor>> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                        const std::vector<std::optional<Tensor>>& grad_outputs,
                                        std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  std::vector<Tensor> seeds;
  for (const auto& g : grad_outputs) seeds.push_back(g.value_or(Tensor()));
  std::vector<Tensor> grads;
  {
    nb::gil_scoped_release release;
    grads = hg::grad(outputs, inputs, seeds, {.retain_graph = retain_graph, .create_graph = create_graph,
                                              .allow_unused = allow_unused});
  }
  std::vector<std::optional<Tensor>> out;
  for (const Tensor& g : grads) out.push_back(g.defined() ? std::optional<Tensor>(g) : std::nullopt);
  return out;
}

// The Python function fn(*inputs) as the library's TensorFn (called with the GIL held).
hg::TensorFn tensor_fn(nb::callable fn) {
  return [fn](const std::vector<Tensor>& xs) {
    nb::list args;
    for (const Tensor& x : xs) args.append(nb::cast(x));
    nb::object out = fn(*nb::tuple(args));
    if (!nb::isinstance<Tensor>(out))
      throw hg::Error("gradcheck: the function must return one Tensor, got " +
                      nb::cast<std::string>(nb::str(out.type())));
    return nb::cast<Tensor>(out);
  };
}

hg::GradcheckOptions check_options(double eps, double atol, double rtol, bool noncontiguous) {
  hg::GradcheckOptions o;
  o.eps = eps;
  o.atol = atol;
  o.rtol = rtol;
  o.noncontiguous = noncontiguous;
  return o;
}

}  // namespace

void bind_autograd(nb::module_& m) {
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));
  tensor
      .def_prop_rw("requires_grad", &Tensor::requires_grad,
                   [](Tensor& t, bool on) { t.requires_grad_(on); })
      .def("requires_grad_", [](nb::handle self, bool on) {
        nb::cast<Tensor&>(self).requires_grad_(on);
        return nb::borrow(self);
      }, nb::arg("requires_grad") = true)
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def_prop_rw("grad",
          [](const Tensor& t) { Tensor g = t.grad(); return g.defined() ? std::optional<Tensor>(g) : std::nullopt; },
          [](Tensor& t, std::optional<Tensor> g) {
            if (!g) return t.zero_grad();
            if (g->shape() != t.shape() || g->dtype() != t.dtype())
              throw hg::Error("grad: assigned gradient " + g->describe() + " does not match the tensor " + t.describe());
            t.impl()->grad = g->impl_ptr();
          })
      .def_prop_ro("grad_fn", &Tensor::grad_fn)
      .def("backward", &backward, nb::arg("gradient") = nb::none(), nb::arg("retain_graph") = nb::none(),
           nb::arg("create_graph") = false, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<hg::Node>(m, "Node", "One recorded op of the graph (a tensor's grad_fn)")
      .def("name", [](const hg::Node& n) { return n.op; })
      .def_prop_ro("next_functions", &next_functions)
      .def("__str__", &hg::Node::str)
      .def("__repr__", [](const hg::Node& n) { return "<" + n.op + " node>"; });

  nb::class_<AccumulateGrad>(m, "AccumulateGrad", "Where a leaf's gradient accumulates")
      .def("name", [](const AccumulateGrad&) { return std::string("AccumulateGrad"); })
      .def_prop_ro("variable", [](const AccumulateGrad& a) { return a.variable; })
      .def_prop_ro("next_functions", [](const AccumulateGrad&) { return nb::tuple(); })
      .def("__repr__", [](const AccumulateGrad&) { return std::string("<AccumulateGrad>"); });

  m.def("_grad", &grad, nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs"), nb::arg("retain_graph").none(),
        nb::arg("create_graph"), nb::arg("allow_unused"));

  nb::class_<hg::GradcheckReport>(m, "GradcheckReport")
      .def_ro("passed", &hg::GradcheckReport::passed)
      .def_ro("max_abs_err", &hg::GradcheckReport::max_abs_err)
      .def_ro("max_rel_err", &hg::GradcheckReport::max_rel_err)
      .def_ro("checked", &hg::GradcheckReport::checked)
      .def_ro("worst", &hg::GradcheckReport::worst)
      .def("message", &hg::GradcheckReport::message)
      .def("__repr__", &hg::GradcheckReport::message);
  m.def("_gradcheck", [](nb::callable fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                         bool noncontiguous) {
    return hg::gradcheck(tensor_fn(fn), inputs, check_options(eps, atol, rtol, noncontiguous));
  });
  m.def("_gradgradcheck", [](nb::callable fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                             bool noncontiguous) {
    return hg::gradgradcheck(tensor_fn(fn), inputs, check_options(eps, atol, rtol, noncontiguous));
  });

  nb::class_<GradMode>(m, "_GradMode")
      .def(nb::init<bool>())
      .def("__enter__", [](GradMode& g) { g.guard.emplace(g.on); })
      .def("__exit__", [](GradMode& g, nb::args) { g.guard.reset(); });
  m.def("is_grad_enabled", &hg::grad_enabled);
  // For leak tests: nodes alive in the process, and bytes held by live tensors' storage.
  m.def("_live_nodes", &hg::Node::live_count);
  m.def("_live_bytes", &hg::Storage::live_bytes);
}

}  // namespace hgpy
