// python/src/dtypes.cpp — dtypes, devices, the seeded generator and hg.Error.
#include "bind.h"

namespace hgpy {

namespace {
// PyTorch's names for the library's dtypes.
const char* dtype_repr(hg::DType t) {
  switch (t) {
    case hg::DType::f32: return "float32";
    case hg::DType::f64: return "float64";
    case hg::DType::i64: return "int64";
    case hg::DType::b8: return "bool";
  }
  return "?";
}
}  // namespace

hg::Shape ints_of(const nb::handle& h, const char* op) {
  auto one = [&](const nb::handle& v) -> int64_t {
    int64_t out = 0;
    if (PyBool_Check(v.ptr()) || !nb::try_cast<int64_t>(v, out))
      throw nb::type_error((std::string(op) + ": expected integers (dims or sizes), got " +
                            nb::cast<std::string>(nb::repr(v))).c_str());
    return out;
  };
  if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) return {one(h)};
  if (!PySequence_Check(h.ptr()) || PyUnicode_Check(h.ptr()))
    throw nb::type_error((std::string(op) + ": expected an integer or a sequence of integers, got " +
                          nb::cast<std::string>(nb::repr(h))).c_str());
  hg::Shape out;
  for (nb::handle v : nb::borrow<nb::sequence>(h)) out.push_back(one(v));
  return out;
}

hg::Shape ints_of_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr()) && !PyIndex_Check(args[0].ptr())) return ints_of(args[0], op);
  return ints_of(args, op);
}

hg::Device device_named(const std::string& name) {
  if (name == "cpu") return hg::Device::cpu;
  if (name == "cuda" || name == "cuda:0") return hg::Device::cuda;
  throw hg::Error("device: unknown device '" + name + "'; expected 'cpu' or 'cuda'");
}

void bind_dtypes(nb::module_& m) {
  // Every hg::Error a call throws reaches Python as hg.Error, a RuntimeError, its text rewritten
  // in Python's spellings (messages.cpp).
  nb::exception<hg::Error> error(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") = "What the library refuses (a shape, a dtype, a freed graph...): a RuntimeError whose text "
                          "names the op, the shapes and what to do";
  // A dim or an index out of range (hg::IndexError) is hg.IndexError: an hg.Error and also
  // Python's IndexError, the class PyTorch raises there, so `except IndexError` works on both.
  nb::dict members;
  members["__module__"] = "handgrad";
  members["__doc__"] = "A dim or an index out of range: an hg.Error, and Python's IndexError as in PyTorch";
  nb::object index_error = nb::module_::import_("builtins").attr("type")(
      "IndexError", nb::make_tuple(error, nb::handle(PyExc_IndexError)), members);
  m.attr("IndexError") = index_error;
  static PyObject* index_error_type = index_error.release().ptr();  // lives as long as the module
  static PyObject* error_type = error.ptr();                         // as does hg.Error
  // Every message in the language the learner typed (python_message, the one translation point).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const hg::IndexError& e) {
      PyErr_SetString(index_error_type, python_message(e.what()).c_str());
    } catch (const hg::Error& e) {
      PyErr_SetString(error_type, python_message(e.what()).c_str());
    }
  });

  nb::enum_<hg::DType>(m, "dtype", "A tensor's element type: hg.float32, hg.float64, hg.int64 or hg.bool")
      .value("float32", hg::DType::f32)
      .value("float64", hg::DType::f64)
      .value("int64", hg::DType::i64)
      .value("bool", hg::DType::b8)
      .def_prop_ro("itemsize", [](hg::DType t) { return hg::dtype_size(t); })
      .def_prop_ro("is_floating_point", [](hg::DType t) { return hg::is_floating(t); })
      .def("__repr__", [](hg::DType t) { return std::string("handgrad.") + dtype_repr(t); })
      .def("__str__", [](hg::DType t) { return std::string("handgrad.") + dtype_repr(t); });

  nb::class_<hg::Generator>(m, "Generator",
                            "A seeded generator: the same numbers for a seed on every run and platform")
      .def(nb::init<uint64_t>(), nb::arg("seed") = 0)
      .def("manual_seed", [](hg::Generator& g, uint64_t seed) -> hg::Generator& {
             g = hg::Generator(seed);
             return g;
           }, nb::arg("seed"), nb::rv_policy::reference,
           "manual_seed(seed): restarts the generator's sequence from seed; returns the generator")
      .def("normal", [](hg::Generator& g) { return g.normal(); },
           "normal(): the next draw from the standard normal distribution")
      .def("uniform", [](hg::Generator& g) { return g.uniform(); },
           "uniform(): the next draw from the uniform distribution on [0, 1)");

  m.def("cuda_is_available", [] {
    const hg::CudaBackend* cuda = hg::cuda_backend();
    return cuda != nullptr && cuda->device_available();
  }, "cuda_is_available(): whether this build has the CUDA backend and a GPU it can use");
}

}  // namespace hgpy
