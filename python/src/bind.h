// python/src/bind.h — what the binding files share: one bind_* function per area (MLX's layout),
// and the conversions between Python's spellings and the library's (dims, devices).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "handgrad.h"

namespace nb = nanobind;

namespace hgpy {

void bind_dtypes(nb::module_& m);      // dtypes.cpp: hg.float32 ..., Generator, errors
void bind_tensor(nb::module_& m);      // tensor.cpp: the Tensor class, factories, NumPy
void bind_ops(nb::module_& m);         // ops.cpp: the unary maps, reductions, matmul, softmax
void bind_arith(nb::module_& m);       // arith.cpp: + − × / // % ** with tensors and numbers (forms: _arith.py)
void bind_autograd(nb::module_& m);    // autograd.cpp: backward, grad, gradcheck, grad mode, grad_fn
void bind_functional(nb::module_& m);  // functional.cpp: nn.functional's losses and attention
void bind_interop(nb::module_& m);      // interop.cpp: DLPack both ways
void bind_nn(nb::module_& m);           // nn.cpp: modules, optimizers, the repeated-sequence task, checkpoints
void bind_page(nb::module_& m);         // page.cpp: the step-through page (to_html) and the live page
void bind_compare(nb::module_& m);      // compare.cpp: eq ... ge, logic, isnan, any, all, clamp (forms: _compare.py)
void bind_rearrange(nb::module_& m);    // rearrange.cpp: var, std, flip, roll, tril, ... (their Python forms: _rearrange.py)
// messages.cpp: an hg::Error's text as a Python user reads it (Python's spellings of dtypes,
// devices, guards and flags; a tensor by its shape and dtype; no C++ line unless anomaly mode is on).
std::string python_message(std::string text);

// autograd.cpp: the learner's Python line that called into the library ("train.py:12"), which the
// engine keeps on each node it records (the step-through page and anomaly mode name it). Without
// the GIL it is the line a ReleaseGil on this thread kept when it let the GIL go.
std::string python_origin();
// Keeps this thread's Python line for nodes recorded while the GIL is released; restores the
// previous one when it ends.
class KeepOrigin {
 public:
  KeepOrigin();
  ~KeepOrigin();
  KeepOrigin(KeepOrigin&&) = delete;  // a guard of this thread's scope: neither moved nor copied
 private:
  std::string previous_;
};
// What a long call uses in place of nb::gil_scoped_release (nb::call_guard<ReleaseGil>, or as a
// local): the GIL released, the caller's line kept for the nodes the call records.
struct ReleaseGil {
  KeepOrigin keep;
  nb::gil_scoped_release release;
};

// Tensor's slots for Python's cycle collector (autograd.cpp): the Python hooks a tensor holds.
int tensor_traverse(PyObject* self, visitproc visit, void* arg);
int tensor_clear(PyObject* self);

// DLPack's dtype of a handgrad dtype, and back (interop.cpp); an array of another dtype is an
// hg::Error naming `op` and the dtypes handgrad holds.
nb::dlpack::dtype dlpack_dtype(hg::DType t);
hg::DType handgrad_dtype(nb::dlpack::dtype d, const char* op);

// Python's integers as a list of int64 (a dim list, a shape): an int, or a sequence of ints; or
// the varargs form f(2, 3) / f((2, 3)). Anything else (a float, a str, an int past int64) is a
// TypeError naming `op`, as in PyTorch, never a C++ cast error.
hg::Shape ints_of(const nb::handle& h, const char* op);
hg::Shape ints_of_args(const nb::args& args, const char* op);

// "cpu" / "cuda" (the strings PyTorch's devices print as).
hg::Device device_named(const std::string& name);

}  // namespace hgpy
