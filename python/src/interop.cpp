// python/src/interop.cpp — DLPack both ways: Tensor.__dlpack__ / __dlpack_device__ hand the
// tensor's memory to PyTorch, NumPy (≥ 1.22) or any DLPack consumer, and hg.from_dlpack views
// theirs. Neither copies. A write through either side is seen by the other; it does not bump
// handgrad's version counter (engine/tensor.h, from_blob).
#include <nanobind/ndarray.h>

#include <Python.h>

#include "bind.h"

namespace hgpy {

namespace {

using hg::Tensor;

std::string dlpack_dtype_name(nb::dlpack::dtype d) {
  const char* kind = d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Int)      ? "int"
                     : d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt)   ? "uint"
                     : d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float)  ? "float"
                     : d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat) ? "bfloat"
                     : d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool)   ? "bool"
                     : d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Complex) ? "complex"
                                                                                        : "code ";
  std::string name = kind;
  if (std::string_view(kind) == "code ") name += std::to_string(d.code);
  name += std::to_string(d.bits);
  if (d.lanes != 1) name += "x" + std::to_string(d.lanes);
  return name;
}

// The tensor's memory as nanobind's DLPack-capable array, which keeps the tensor alive.
nb::object exported(const Tensor& t) {
  if (t.requires_grad())
    throw hg::Error("__dlpack__: can't export " + t.describe() +
                    ", which requires grad (the consumer would not see the graph); use tensor.detach() first");
  int32_t device_type = nb::device::cpu::value;
  if (t.device() == hg::Device::cuda) {
    hg::require_cuda("__dlpack__").synchronize();  // the consumer may read it on any stream
    device_type = nb::device::cuda::value;
  }
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  auto* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::array_api> a(t.raw_data(), shape.size(), shape.data(), owner, t.strides().data(),
                              dlpack_dtype(t.dtype()),
                  device_type, 0);
  return nb::cast(a);
}

// A Python object released with the GIL held, from whichever thread drops the last view.
std::shared_ptr<void> held_under_gil(nb::ndarray<> a) {
  return std::shared_ptr<void>(new nb::ndarray<>(std::move(a)), [](void* p) noexcept {
    auto* array = static_cast<nb::ndarray<>*>(p);
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;  // too late to release: leave it to the exit
    PyGILState_STATE s = PyGILState_Ensure();
    delete array;
    PyGILState_Release(s);
  });
}

Tensor imported(nb::ndarray<> a) {
  const hg::DType t = handgrad_dtype(a.dtype(), "from_dlpack");
  hg::Device device = hg::Device::cpu;
  if (a.device_type() == nb::device::cuda::value) {
    hg::require_cuda("from_dlpack");
    if (a.device_id() != 0)
      throw hg::Error("from_dlpack: the array is on cuda:" + std::to_string(a.device_id()) +
                      "; handgrad uses cuda:0 only: move it there first");
    device = hg::Device::cuda;
  } else if (a.device_type() != nb::device::cpu::value) {
    throw hg::Error("from_dlpack: the array is on DLPack device type " + std::to_string(a.device_type()) +
                    "; handgrad reads CPU (1) and CUDA (2) memory: copy it to the CPU first");
  }
  hg::Shape shape(a.ndim()), strides(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
  }
  void* data = a.data();
  return hg::from_blob(data, shape, strides, t, device, held_under_gil(std::move(a)));
}

}  // namespace

nb::dlpack::dtype dlpack_dtype(hg::DType t) {
  switch (t) {
    case hg::DType::f32: return nb::dtype<float>();
    case hg::DType::f64: return nb::dtype<double>();
    case hg::DType::i64: return nb::dtype<int64_t>();
    case hg::DType::b8: return nb::dtype<bool>();
  }
  return nb::dtype<float>();
}

hg::DType handgrad_dtype(nb::dlpack::dtype d, const char* op) {
  if (d == nb::dtype<float>()) return hg::DType::f32;
  if (d == nb::dtype<double>()) return hg::DType::f64;
  if (d == nb::dtype<int64_t>()) return hg::DType::i64;
  if (d == nb::dtype<bool>()) return hg::DType::b8;
  throw hg::Error(std::string(op) + ": the array's dtype is " + dlpack_dtype_name(d) +
                  "; handgrad holds float32, float64, int64 and bool: convert it first (e.g. x.astype('float64'), "
                  "x.double())");
}

void bind_interop(nb::module_& m) {
  auto tensor = nb::borrow<nb::class_<Tensor>>(m.attr("Tensor"));
  tensor
      .def("__dlpack__", [](const Tensor& t, nb::kwargs kw) { return exported(t).attr("__dlpack__")(**kw); },
           "The tensor's memory as a DLPack capsule (no copy); stream, max_version, dl_device and copy as the "
           "DLPack standard has them")
      .def("__dlpack_device__", [](const Tensor& t) {
        return nb::make_tuple(t.device() == hg::Device::cuda ? nb::device::cuda::value : nb::device::cpu::value, 0);
      })
      .def_prop_ro("_version", [](const Tensor& t) { return t.impl()->storage->version; },
                   "How many in-place writes the tensor's memory has had (the check a saved tensor makes)")
      .def("_bump_version", &Tensor::bump_version,
           "Marks a write made from outside handgrad (through NumPy or DLPack), so that a backward that saved "
           "this tensor refuses to run");
  m.def("_from_dlpack", &imported, nb::arg("array"),
        "A tensor over the memory of any object with __dlpack__ or the buffer protocol, without a copy");
  // Only a read-only array reaches this overload: handgrad's tensors are writable, so it is refused.
  m.def("_from_dlpack", [](nb::ndarray<nb::ro> a) -> Tensor {
    throw hg::Error("from_dlpack: the array (" + std::to_string(a.ndim()) + " dimensions, " +
                    dlpack_dtype_name(a.dtype()) + ") is read-only, and handgrad's tensors are writable: pass the "
                    "original writable object, or a copy (a.copy()); NumPy before 2.0 marks every array that "
                    "numpy.from_dlpack makes read-only");
  }, nb::arg("array"));
}

}  // namespace hgpy
