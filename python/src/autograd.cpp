// python/src/autograd.cpp — backward, grad, the gradient checks, grad mode, anomaly mode, hooks,
// Ctrl-C in long calls, and the graph's nodes (grad_fn, next_functions, DOT).
#include <Python.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bind.h"

namespace hgpy {

namespace {

using hg::Tensor;

// The handgrad package's folder (".../handgrad/"), once the package is imported; "" before.
const std::string& package_folder() {
  static std::string folder;
  if (!folder.empty()) return folder;
  PyObject* name = PyUnicode_FromString("handgrad");
  PyObject* package = name ? PyImport_GetModule(name) : nullptr;  // a new reference, or null
  Py_XDECREF(name);
  PyObject* file = package ? PyObject_GetAttrString(package, "__file__") : nullptr;
  Py_XDECREF(package);
  const char* path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : nullptr;
  if (path && std::strrchr(path, '/')) folder.assign(path, std::strrchr(path, '/') + 1);
  Py_XDECREF(file);
  PyErr_Clear();
  return folder;
}

thread_local std::string t_kept_origin;  // KeepOrigin's: the line while the GIL is released

}  // namespace

KeepOrigin::KeepOrigin() : previous_(t_kept_origin) {
  // Only where a node may be recorded: in no_grad (inference, an optimizer's step) nothing is kept.
  t_kept_origin = hg::grad_enabled() ? python_origin() : std::string();
}
KeepOrigin::~KeepOrigin() { t_kept_origin = std::move(previous_); }

// Where a recorded op was called from in the learner's Python: the innermost frame whose file is
// not in the handgrad package, as "train.py:12". The engine keeps it on the node
// (hg::set_origin_source), so the step-through page and anomaly mode name the learner's line.
// Without the GIL, the line a KeepOrigin kept on this thread ("" on the library's own threads);
// "" while a Python error is pending.
std::string python_origin() {
  if (!PyGILState_Check()) return t_kept_origin;
  if (PyErr_Occurred()) return "";
  const std::string& package = package_folder();
  std::string where;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame && where.empty()) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // a new reference
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file && (package.empty() || std::strncmp(file, package.c_str(), package.size()) != 0)) {
      const char* base = std::strrchr(file, '/');
      where = std::string(base ? base + 1 : file) + ":" + std::to_string(PyFrame_GetLineNumber(frame));
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // a new reference, or null at the outermost
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  PyErr_Clear();
  return where;
}

namespace {

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

// hg.autograd.forward_ad.dual_level(): the library's DualLevel, held from __enter__ to __exit__.
struct DualLevelGuard {
  std::optional<hg::DualLevel> level;
};

// hg.autograd.detect_anomaly(): the library's anomaly guard, held from __enter__ to __exit__.
struct AnomalyGuard {
  explicit AnomalyGuard(bool enabled) : on(enabled) {}
  bool on;
  std::optional<hg::AnomalyMode> guard;
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
    ReleaseGil release;
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

// ---------------------------------------------------------------- hooks

// Drops a Python object with the GIL held, from whichever thread drops the last copy (backward
// runs with the GIL released, and frees graphs there).
struct GilDrop {
  void operator()(nb::object* o) const noexcept {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // too late to release: leave it to the exit
    PyGILState_STATE st = PyGILState_Ensure();
    delete o;
    PyGILState_Release(st);
  }
};

// A Python function as a gradient hook (engine/tensor.h's GradHook). Backward calls it with the
// GIL released, so the call takes the GIL. Tensor's tp_traverse finds it by this type.
struct PyHook {
  std::shared_ptr<nb::object> fn;  // shared: std::function copies its target

  Tensor operator()(const Tensor& g) const {
    nb::gil_scoped_acquire gil;
    nb::object r = (*fn)(g);
    if (r.is_none()) return Tensor();
    if (!nb::isinstance<Tensor>(r))
      throw hg::Error("register_hook: the hook must return None or a Tensor of the gradient's shape " +
                      hg::shape_str(g.shape()) + ", got " + nb::cast<std::string>(nb::str(r.type())));
    Tensor out = nb::cast<Tensor>(r);
    if (out.shape() != g.shape())
      throw hg::Error("register_hook: the hook returned " + out.describe() + " for the gradient " + g.describe() +
                      "; return a tensor of the same shape, or None to keep the gradient");
    return out;
  }
};

// The hooks a tensor carries: a leaf's own, or those of the node that made it.
template <typename Visit>
void each_hook(hg::TensorImpl& impl, Visit visit) {
  for (hg::GradHook& h : impl.hooks) visit(h);
  if (impl.node)
    for (auto& [k, h] : impl.node->hooks)
      if (k == impl.output_nr) visit(h);
}

// Python's cycle collector may look into the hooks only where this Python object is the one owner
// of the tensor (and of its node): then nothing outside Python reaches them, and a hook whose
// closure holds its own tensor is a cycle the collector can see and break. Elsewhere the tensor
// is also held from C++, and the hooks live as long as that holder.
bool sole_owner(const Tensor& t) {
  const auto& impl = t.impl_ptr();
  return impl && impl.use_count() == 1 && (!impl->node || impl->node.use_count() == 1);
}

void register_hook(Tensor& t, nb::callable fn) {
  if (!t.requires_grad())
    throw hg::Error("register_hook: " + t.describe() + " does not require grad, so no gradient will reach it; "
                    "call requires_grad_() on it (or on what it is computed from) first");
  t.register_hook(PyHook{std::shared_ptr<nb::object>(new nb::object(std::move(fn)), GilDrop{})});
}

// PyTorch's retain_grad: a non-leaf keeps its gradient in .grad, added up over backward calls.
void retain_grad(Tensor& t) {
  if (!t.requires_grad())
    throw hg::Error("retain_grad: " + t.describe() + " does not require grad, so it has no gradient to keep");
  if (t.is_leaf()) return;  // a leaf keeps its gradient anyway
  std::weak_ptr<hg::TensorImpl> self = t.impl_ptr();  // weak: the hook lives on the tensor's own node
  t.register_hook([self](const Tensor& g) {
    if (auto impl = self.lock()) {
      hg::NoGradGuard ng;
      const Tensor kept = g.contiguous().clone();
      impl->grad = impl->grad ? hg::add(Tensor(impl->grad), kept).impl_ptr() : kept.impl_ptr();
    }
    return Tensor();
  });
}

// ---------------------------------------------------------------- Ctrl-C

std::thread::id g_main_thread;  // the interpreter's main thread (signals are handled there only)

// Between the nodes of a backward and the elements of a gradcheck, at most every 50 ms: on the
// main thread, the signal handlers run, and a KeyboardInterrupt (or whatever a handler raises)
// ends the call as a Python exception.
void poll_python_signals() {
  if (std::this_thread::get_id() != g_main_thread) return;
  static std::chrono::steady_clock::time_point next{};
  const auto now = std::chrono::steady_clock::now();
  if (now < next) return;
  next = now + std::chrono::milliseconds(50);
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
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

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const Tensor& t = *nb::inst_ptr<Tensor>(self);
  if (!sole_owner(t)) return 0;
  int r = 0;
  each_hook(*t.impl(), [&](hg::GradHook& h) {
    if (const PyHook* p = h.target<PyHook>(); p && r == 0 && p->fn) r = visit(p->fn->ptr(), arg);
  });
  return r;
}

int tensor_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  Tensor& t = *nb::inst_ptr<Tensor>(self);
  if (!sole_owner(t)) return 0;
  auto is_python = [](const hg::GradHook& h) { return h.target<PyHook>() != nullptr; };
  hg::TensorImpl& impl = *t.impl();
  std::erase_if(impl.hooks, is_python);
  if (impl.node) std::erase_if(impl.node->hooks, [&](const auto& kh) { return is_python(kh.second); });
  return 0;
}

void bind_autograd(nb::module_& m) {
  hg::set_origin_source(&python_origin);
  // On by default; off only to time what naming the learner's line costs (bench/python_calls.py).
  m.def("_record_origins", [](bool on) { hg::set_origin_source(on ? &python_origin : nullptr); }, nb::arg("on"));
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));
  tensor
      .def_prop_rw("requires_grad", &Tensor::requires_grad,
                   [](Tensor& t, bool on) { t.requires_grad_(on); })
      .def("requires_grad_", [](nb::handle self, bool on) {
        nb::cast<Tensor&>(self).requires_grad_(on);
        return nb::borrow(self);
      }, nb::arg("requires_grad") = true,
           "requires_grad_(requires_grad=True): starts (or stops) recording ops on this leaf, in place")
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
           nb::arg("create_graph") = false, nb::call_guard<ReleaseGil>(),
           "backward(gradient=None, retain_graph=None, create_graph=False): the gradients of this tensor with respect "
           "to the leaves that require grad, accumulated into their .grad (gradient: dL/dself, needed unless self has "
           "one element)")
      .def("register_hook", [](nb::handle self, nb::callable fn) {
        register_hook(nb::cast<Tensor&>(self), std::move(fn));
        return nb::borrow(self);
      }, nb::arg("hook"), "Calls hook(grad) each time a backward computes this tensor's gradient; a returned tensor replaces it")
      .def("retain_grad", &retain_grad, "Keeps a non-leaf's gradient in .grad");

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

  nb::class_<hg::FwdcheckReport, hg::GradcheckReport>(m, "FwdcheckReport")
      .def_ro("transpose_rel_err", &hg::FwdcheckReport::transpose_rel_err)
      .def_ro("transpose_passed", &hg::FwdcheckReport::transpose_passed)
      .def("message", &hg::FwdcheckReport::message)
      .def("__repr__", &hg::FwdcheckReport::message);
  m.def("_fwdcheck", [](nb::callable fn, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                        bool noncontiguous) {
    return hg::fwdcheck(tensor_fn(fn), inputs, check_options(eps, atol, rtol, noncontiguous));
  });
  // Forward mode (engine/forward.h).
  nb::class_<DualLevelGuard>(m, "_DualLevel")
      .def(nb::init<>())
      .def("__enter__", [](DualLevelGuard& g) {
        g.level.emplace();
        return g.level->id();
      })
      .def("__exit__", [](DualLevelGuard& g, nb::args) { g.level.reset(); });
  m.def("_make_dual", [](const Tensor& primal, const Tensor& tangent) { return hg::make_dual(primal, tangent); },
        nb::arg("tensor"), nb::arg("tangent"));
  m.def("_unpack_dual", [](const Tensor& t) {
    const hg::Dual d = hg::unpack_dual(t);
    return nb::make_tuple(d.primal, d.tangent.defined() ? nb::cast(d.tangent) : nb::none());
  }, nb::arg("tensor"));

  nb::class_<GradMode>(m, "_GradMode")
      .def(nb::init<bool>())
      .def("__enter__", [](GradMode& g) { g.guard.emplace(g.on); })
      .def("__exit__", [](GradMode& g, nb::args) { g.guard.reset(); });
  m.def("is_grad_enabled", &hg::grad_enabled,
        "is_grad_enabled(): whether ops are recorded now (False inside hg.no_grad())");

  nb::class_<AnomalyGuard>(m, "_AnomalyMode")
      .def(nb::init<bool>())
      .def("__enter__", [](AnomalyGuard& g) { g.guard.emplace(g.on); })
      .def("__exit__", [](AnomalyGuard& g, nb::args) { g.guard.reset(); });
  m.def("is_anomaly_enabled", &hg::anomaly_enabled, "is_anomaly_enabled(): whether hg.autograd.detect_anomaly is on");
  m.def("_to_dot", &hg::to_dot, nb::arg("root"));

  g_main_thread = std::this_thread::get_id();  // the module is imported on the main thread
  hg::set_interrupt_poll(&poll_python_signals);
  // For leak tests: nodes alive in the process, and bytes held by live tensors' storage.
  m.def("_live_nodes", &hg::Node::live_count);
  m.def("_live_bytes", &hg::Storage::live_bytes);
}

}  // namespace hgpy
