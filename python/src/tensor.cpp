// python/src/tensor.cpp — the Tensor class: metadata, views, conversions, factories and NumPy.
//
// A Python Tensor holds an hg::Tensor, itself a handle (shared_ptr) to the library's tensor, so
// two Python objects may name one tensor, as the library's copies do. NumPy arrays made by
// numpy() view the tensor's memory and keep it alive through a capsule that owns a handle.
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstring>

#include "bind.h"

namespace hgpy {

namespace {

// The tensor's memory as a NumPy array with its shape and strides; the array keeps it alive.
// A CUDA tensor is copied to the host first (its copy is what the array views).
nb::ndarray<nb::numpy> to_numpy(const hg::Tensor& t) {
  if (t.requires_grad())
    throw hg::Error("numpy: can't call numpy() on a tensor that requires grad; use tensor.detach().numpy() instead");
  hg::Tensor host = t.device() == hg::Device::cpu ? t : t.to(hg::Device::cpu);
  std::vector<size_t> shape(host.shape().begin(), host.shape().end());
  auto* keep = new hg::Tensor(host);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<hg::Tensor*>(p); });
  return nb::ndarray<nb::numpy>(host.raw_data(), shape.size(), shape.data(), owner, host.strides().data(),
                                dlpack_dtype(host.dtype()));
}

// A copy of a C-contiguous host array (torch.tensor copies too).
hg::Tensor from_numpy(nb::ndarray<nb::c_contig, nb::device::cpu> a) {
  hg::Shape shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  hg::Tensor out = hg::empty(shape, handgrad_dtype(a.dtype(), "tensor"));
  if (a.nbytes() > 0) std::memcpy(out.raw_data(), a.data(), a.nbytes());
  return out;
}


nb::object item_of(const hg::Tensor& t) {
  if (t.dtype() == hg::DType::i64 && t.numel() == 1) return nb::int_(t.to_int_vector()[0]);
  double v = t.item();  // the library's error for more than one element
  if (t.dtype() == hg::DType::b8) return nb::bool_(v != 0.0);
  return nb::float_(v);
}

}  // namespace

void bind_tensor(nb::module_& m) {
  static PyType_Slot slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(&tensor_traverse)},
                                {Py_tp_clear, reinterpret_cast<void*>(&tensor_clear)},
                                {0, nullptr}};
  nb::class_<hg::Tensor> tensor(m, "Tensor", "A strided view of memory that records the ops it goes through",
                                nb::type_slots(slots));
  tensor
      .def_prop_ro("shape", [](const hg::Tensor& t) {
        nb::list dims;
        for (int64_t s : t.shape()) dims.append(s);
        return nb::tuple(dims);
      })
      .def("size", [](const hg::Tensor& t, std::optional<int64_t> d) -> nb::object {
        if (d) return nb::int_(t.size(*d));
        nb::list dims;
        for (int64_t s : t.shape()) dims.append(s);
        return nb::tuple(dims);
      }, nb::arg("dim") = nb::none(), "size(dim=None): the shape (an hg.Size), or the size of one dim")
      .def("stride", [](const hg::Tensor& t, std::optional<int64_t> d) -> nb::object {
        if (d) return nb::int_(t.strides()[hg::wrap_existing_dim("stride", *d, t.shape())]);
        return nb::tuple(nb::cast(t.strides()));
      }, nb::arg("dim") = nb::none(),
           "stride(dim=None): the steps in elements between neighbours along each dim, or along one")
      .def("dim", &hg::Tensor::dim, "dim(): the number of dims (the rank)")
      .def_prop_ro("ndim", &hg::Tensor::dim)
      .def("numel", &hg::Tensor::numel, "numel(): the number of elements")
      .def("__len__", [](const hg::Tensor& t) {
        if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
        return t.shape()[0];
      })
      .def("is_contiguous", &hg::Tensor::is_contiguous,
           "is_contiguous(): whether the elements lie in row-major order with no gaps")
      .def("data_ptr", [](const hg::Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); },
           "data_ptr(): the address of the first element, as an int")
      .def_prop_ro("dtype", &hg::Tensor::dtype)
      .def_prop_ro("device", [](const hg::Tensor& t) { return std::string(hg::device_name(t.device())); })
      .def_prop_ro("is_cuda", [](const hg::Tensor& t) { return t.device() == hg::Device::cuda; })
      .def_prop_rw("name", [](const hg::Tensor& t) { return t.name(); },
                   [](hg::Tensor& t, std::string n) { t.set_name(std::move(n)); })
      // views (differentiable; they share memory with the tensor)
      // view(2, 3) and view((2, 3)) both mean the shape (2, 3), as in PyTorch
      .def("view", [](const hg::Tensor& t, nb::args shape) { return t.view(ints_of_args(shape, "view")); },
           "view(*shape): the same memory in a new shape (one size may be -1); refused where the strides do not allow "
           "it (reshape copies then)")
      .def("reshape", [](const hg::Tensor& t, nb::args shape) { return t.reshape(ints_of_args(shape, "reshape")); },
           "reshape(*shape): the elements in a new shape: a view where the strides allow, else a copy")
      .def("permute", [](const hg::Tensor& t, nb::args dims) { return t.permute(ints_of_args(dims, "permute")); },
           "permute(*dims): the dims in the order dims names (a view)")
      .def("transpose", [](const hg::Tensor& t, int64_t d0, int64_t d1) { return t.transpose(d0, d1); }, nb::arg("dim0"), nb::arg("dim1"),
           "transpose(dim0, dim1): the two dims swapped (a view)")
      .def("unsqueeze", [](const hg::Tensor& t, int64_t d) { return t.unsqueeze(d); }, nb::arg("dim"),
           "unsqueeze(dim): a size-1 dim inserted at dim (a view)")
      .def("squeeze", [](const hg::Tensor& t, const nb::object& dim) {
        // squeeze(): every dimension of size 1; squeeze(d) or squeeze((d0, d1)): those, where their
        // size is 1 (another size stays, as in PyTorch), each dim by the dim rule
        hg::Shape dims;
        if (dim.is_none()) {
          for (int64_t i = 0; i < t.dim(); ++i) dims.push_back(i);
        } else {
          dims = hg::wrap_dims("squeeze", ints_of(dim, "squeeze"), t.shape());
        }
        std::sort(dims.begin(), dims.end());
        hg::Tensor out = t;
        for (auto i = dims.rbegin(); i != dims.rend(); ++i) out = out.squeeze(*i);  // from the last
        return out;
      }, nb::arg("dim") = nb::none(),
           "squeeze(dim=None): without its size-1 dims, or without those of dim (an int or a tuple) that have size 1 (a "
           "view)")
      .def("select", [](const hg::Tensor& t, int64_t d, int64_t i) { return t.select(d, i); }, nb::arg("dim"), nb::arg("index"),
           "select(dim, index): the slice at index along dim, without that dim (a view)")
      .def("_slice", [](const hg::Tensor& t, int64_t d, int64_t a, int64_t b, int64_t s) { return t.slice(d, a, b, s); },
           nb::arg("dim"), nb::arg("start"), nb::arg("end"), nb::arg("step"))
      .def("contiguous", [](const hg::Tensor& t) { return t.contiguous(); },
           "contiguous(): the tensor itself when contiguous, else a row-major copy")
      .def("clone", [](const hg::Tensor& t) { return t.clone(); },
           "clone(): a copy in new memory, in the graph (its gradient passes through)")
      .def("detach", &hg::Tensor::detach, "detach(): the same memory outside the graph (requires_grad False)")
      // conversions
      .def("to", [](const hg::Tensor& t, hg::DType d) { return t.to(d); }, nb::arg("dtype"),
           "to(dtype) or to(device, dtype=None): a copy in another dtype or on another device (the tensor itself when "
           "nothing changes)")
      .def("to", [](const hg::Tensor& t, const std::string& device, std::optional<hg::DType> d) {
        hg::Tensor out = t.to(device_named(device));
        return d ? out.to(*d) : out;
      }, nb::arg("device"), nb::arg("dtype") = nb::none())
      .def("cpu", [](const hg::Tensor& t) { return t.to(hg::Device::cpu); },
           "cpu(): the tensor on the CPU (itself when it is there)")
      .def("cuda", [](const hg::Tensor& t) { return t.to(hg::Device::cuda); },
           "cuda(): the tensor on the GPU (needs a CUDA build and device)")
      .def("float", [](const hg::Tensor& t) { return t.to(hg::DType::f32); })
      .def("double", [](const hg::Tensor& t) { return t.to(hg::DType::f64); })
      .def("long", [](const hg::Tensor& t) { return t.to(hg::DType::i64); })
      .def("bool", [](const hg::Tensor& t) { return t.to(hg::DType::b8); })
      .def("item", &item_of, "item(): the one element as a Python number (int for int64, bool for bool, else float)")
      .def("__float__", [](const hg::Tensor& t) { return t.item(); })
      .def("__int__", [](const hg::Tensor& t) { return static_cast<int64_t>(t.item()); })
      .def("__bool__", [](const hg::Tensor& t) { return t.item() != 0.0; })
      .def("numpy", &to_numpy, "The tensor's memory as a NumPy array (no copy on the CPU)")
      // in-place writes (not recorded; refused on tensors that require grad while grad mode is on)
      .def("fill_", [](nb::handle self, double v) { nb::cast<hg::Tensor&>(self).fill_(v); return nb::borrow(self); },
           "fill_(value): every element set to value, in place")
      .def("zero_", [](nb::handle self) { nb::cast<hg::Tensor&>(self).zero_(); return nb::borrow(self); },
           "zero_(): every element set to 0, in place")
      .def("copy_", [](nb::handle self, const hg::Tensor& src) {
        nb::cast<hg::Tensor&>(self).copy_(src);
        return nb::borrow(self);
      }, nb::arg("src"), "copy_(src): src's elements (broadcast, converted) written into this tensor, in place")
      .def("_str", &hg::Tensor::str, nb::arg("precision") = 4);

  m.def("_from_numpy", &from_numpy, nb::arg("array"));
  m.def("_zeros", [](const hg::Shape& s, hg::DType t, const std::string& d) { return hg::zeros(s, t, device_named(d)); });
  m.def("_ones", [](const hg::Shape& s, hg::DType t, const std::string& d) { return hg::ones(s, t, device_named(d)); });
  m.def("_full", [](const hg::Shape& s, double v, hg::DType t, const std::string& d) {
    return hg::full(s, v, t, device_named(d));
  });
  m.def("_arange", [](int64_t n, hg::DType t) { return hg::arange(n, t); });
  m.def("_randn", [](const hg::Shape& s, hg::Generator& g, hg::DType t) { return hg::randn(s, g, t); });
  m.def("_rand", [](const hg::Shape& s, hg::Generator& g, hg::DType t) { return hg::rand(s, g, t); });
  m.def("_randperm", [](int64_t n, hg::Generator& g) { return hg::randperm(n, g); });
  m.def("_multinomial", [](const hg::Tensor& w, int64_t n, bool replacement, hg::Generator& g) {
    return hg::multinomial(w, n, replacement, g);
  });
  m.def("_randint", [](const hg::Shape& s, hg::Generator& g, int64_t lo, int64_t hi) { return hg::randint(s, g, lo, hi); });
}

}  // namespace hgpy
