// engine/tensor.cpp — metadata, factories, element access (one element read or written): the
// tensor layer, which knows no graph. What reaches the graph is above it: the autograd accessors
// engine/tensor_autograd.cpp, whole-tensor writes and copies across dtypes and devices
// engine/copy.cpp, the differentiable views engine/views.cpp; printing is engine/print.cpp,
// storage engine/storage.cpp.
#include "engine/tensor.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "engine/convert.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/strided.h"
#include "engine/tensor_internal.h"

namespace hg {

namespace {
std::atomic<uint64_t> g_next_id{1};

// v, a double written into a tensor of element type T, converted by engine/convert.h's rule; a
// value with no int64 value is an Error naming op and `where` the value goes.
template <typename T>
T element_from_double(const char* op, double v, const char* where) {
  if (!convertible<T>(v)) fail(op, "{}", no_i64_value(DType::f64, v, where));
  return convert_element<T>(v);
}
}  // namespace

uint64_t next_tensor_id() { return g_next_id++; }

// ---------------------------------------------------------------- metadata

void Tensor::check_defined(const char* what) const {
  if (!impl_) throw Error(fmt::format("{}: the tensor is undefined (default-constructed or an absent gradient)", what));
}

const Shape& Tensor::shape() const { check_defined("shape"); return impl_->shape; }
const Shape& Tensor::strides() const { check_defined("strides"); return impl_->strides; }
int64_t Tensor::offset() const { check_defined("offset"); return impl_->offset; }
int64_t Tensor::dim() const { return static_cast<int64_t>(shape().size()); }
int64_t Tensor::size(int64_t d) const { return shape()[wrap_existing_dim("size", d, shape())]; }
int64_t Tensor::numel() const { return shape_numel(shape()); }
DType Tensor::dtype() const { check_defined("dtype"); return impl_->dtype; }
Device Tensor::device() const { check_defined("device"); return impl_->storage->device; }
uint64_t Tensor::id() const { check_defined("id"); return impl_->id; }
const std::string& Tensor::name() const { check_defined("name"); return impl_->name; }
Tensor& Tensor::set_name(std::string n) { check_defined("set_name"); impl_->name = std::move(n); return *this; }
std::string Tensor::label() const {
  check_defined("label");
  return impl_->name.empty() ? fmt::format("t{}", impl_->id) : impl_->name;
}
std::string Tensor::describe() const {
  std::string s = fmt::format("{} {} {}", label(), shape_str(shape()), dtype_name(dtype()));
  if (device() != Device::cpu) s += fmt::format(" {}", device_name(device()));
  return s;
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expect) return false;
    expect *= impl_->shape[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  check_defined("data");
  return static_cast<char*>(impl_->storage->data) + impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}

Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->requires_grad = false;
  impl->grad.reset();
  impl->node.reset();
  impl->output_nr = 0;
  impl->hooks.clear();
  impl->tangent.reset();
  impl->tangent_level = 0;
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

// ---------------------------------------------------------------- factories

Tensor empty(const Shape& shape, DType t, Device d) {
  check_shape("empty", shape, t);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(t), d);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = t;
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType t, Device d,
                 std::shared_ptr<void> owner) {
  check_shape("from_blob", shape, t);
  if (strides.size() != shape.size())
    fail("from_blob", "{} strides for the shape {}; give one stride per dimension", strides.size(), shape_str(shape));
  // The last element's offset, overflow-checked: Σ (s_d − 1) · stride_d over non-empty shapes.
  int64_t last = 0;
  const bool empty_view = shape_numel(shape) == 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0)
      fail("from_blob", "stride {} of dimension {} (shape {}) is negative; handgrad's views have strides ≥ 0: "
           "copy the array first (e.g. numpy.ascontiguousarray)", strides[i], i, shape_str(shape));
    int64_t step = 0;
    if (!empty_view && (__builtin_mul_overflow(shape[i] - 1, strides[i], &step) ||
                        __builtin_add_overflow(last, step, &last)))
      fail("from_blob", "shape {} with strides {} reaches past the largest offset handgrad can address",
           shape_str(shape), shape_str(strides));
  }
  int64_t nbytes = 0;
  if (!empty_view && __builtin_mul_overflow(last + 1, static_cast<int64_t>(dtype_size(t)), &nbytes))
    fail("from_blob", "shape {} with strides {} spans more bytes than handgrad can address", shape_str(shape),
         shape_str(strides));
  if (!data && !empty_view) fail("from_blob", "a null address for {} elements of shape {}", shape_numel(shape),
                                 shape_str(shape));
  if (!owner) fail("from_blob", "no owner given: the memory's owner must be kept alive with the tensor");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, static_cast<size_t>(nbytes), d, std::move(owner));
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = t;
  impl->id = next_tensor_id();
  return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, double v, DType t, Device d) {
  Tensor out = empty(shape, t, d);  // a fresh tensor: no grad, no tangent, so fill_ takes it
  out.fill_(v);
  return out;
}
Tensor zeros(const Shape& shape, DType t, Device d) { return full(shape, 0.0, t, d); }
Tensor ones(const Shape& shape, DType t, Device d) { return full(shape, 1.0, t, d); }
Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype(), x.device()); }
Tensor scalar(double v, DType t) { return full({}, v, t); }

Tensor tensor(const std::vector<double>& values, const Shape& shape, DType t) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail("tensor", "{} values do not fill shape {} ({} elements)", values.size(), shape_str(shape),
         shape_numel(shape));
  Tensor out = empty(shape, t);
  dispatch_any(t, [&]<typename T>() {
    T* p = out.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!convertible<T>(values[i]))
        fail("tensor", "{}",
             no_i64_value(DType::f64, values[i],
                          fmt::format("at position {} of {}", index_str(shape, static_cast<int64_t>(i)), shape_str(shape))));
      p[i] = convert_element<T>(values[i]);
    }
  });
  return out;
}

Tensor index_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail("index_tensor", "{} values do not fill shape {}", values.size(), shape_str(shape));
  Tensor out = empty(shape, DType::i64);
  std::copy(values.begin(), values.end(), out.data_ptr<int64_t>());
  return out;
}

Tensor bool_tensor(const std::vector<bool>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    fail("bool_tensor", "{} values do not fill shape {}", values.size(), shape_str(shape));
  Tensor out = empty(shape, DType::b8);
  for (size_t i = 0; i < values.size(); ++i) out.data_ptr<uint8_t>()[i] = values[i] ? 1 : 0;
  return out;
}

Tensor arange(int64_t n, DType t) {
  Tensor out = empty({n}, t);
  dispatch_any(t, [&]<typename T>() {
    for (int64_t i = 0; i < n; ++i) out.data_ptr<T>()[i] = static_cast<T>(i);
  });
  return out;
}

// ---------------------------------------------------------------- element access

namespace {

int64_t flat_to_offset(const Tensor& t, int64_t i) {
  int64_t off = t.offset();
  for (size_t d = t.shape().size(); d-- > 0;) {
    int64_t s = t.shape()[d];
    off += (i % s) * t.strides()[d];
    i /= s;
  }
  return off;
}

double read_at(const Tensor& t, int64_t elem_offset) {
  return dispatch_any(t.dtype(), [&]<typename T>() {
    return static_cast<double>(static_cast<const T*>(t.impl()->storage->data)[elem_offset]);
  });
}

void check_cpu(const Tensor& t, const char* op) {
  if (t.device() != Device::cpu)
    fail(op, "{} is on {}; element access needs a cpu tensor (use .to(Device::cpu))", t.describe(),
         device_name(t.device()));
}

int64_t index_offset(const Tensor& t, std::initializer_list<int64_t> idx, const char* op) {
  if (static_cast<int64_t>(idx.size()) != t.dim())
    fail(op, "{} indices for a tensor of shape {}; give one index per dimension", idx.size(), shape_str(t.shape()));
  int64_t off = t.offset();
  size_t d = 0;
  for (int64_t i : idx) {
    off += wrap_index(op, i, static_cast<int64_t>(d), t.shape()) * t.strides()[d];
    ++d;
  }
  return off;
}

}  // namespace

double Tensor::item() const {
  check_defined("item");
  if (numel() != 1) fail("item", "{} has {} elements; item() needs exactly one", describe(), numel());
  return get_flat(0);
}

double Tensor::get_flat(int64_t i) const {
  check_defined("get_flat");
  if (device() != Device::cpu) return to(Device::cpu).get_flat(i);
  if (i < 0 || i >= numel()) fail("get_flat", "index {} out of range for {} elements", i, numel());
  return read_at(*this, flat_to_offset(*this, i));
}

double Tensor::at(std::initializer_list<int64_t> idx) const {
  check_defined("at");
  if (device() != Device::cpu) return to(Device::cpu).at(idx);
  return read_at(*this, index_offset(*this, idx, "at"));
}

std::vector<double> Tensor::to_vector() const {
  check_defined("to_vector");
  if (device() != Device::cpu) return to(Device::cpu).to_vector();
  Tensor c = detach().contiguous();
  std::vector<double> out(static_cast<size_t>(c.numel()));
  dispatch_any(c.dtype(), [&]<typename T>() {
    const T* p = c.data_ptr<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  check_defined("to_int_vector");
  // Through to(i64), not through double: i64 values beyond 2^53 stay exact, and a float that has
  // no int64 value is the conversion's Error, not an undefined cast.
  Tensor c = to(DType::i64).to(Device::cpu).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// ---------------------------------------------------------------- in-place writes

void Tensor::bump_version() { ++impl_->storage->version; }

void Tensor::set_at(std::initializer_list<int64_t> idx, double v) {
  check_defined("set_at");
  check_cpu(*this, "set_at");
  check_inplace(*this, "set_at");
  int64_t off = index_offset(*this, idx, "set_at");
  dispatch_any(dtype(), [&]<typename T>() {
    static_cast<T*>(impl_->storage->data)[off] = element_from_double<T>("set_at", v, "(the value written)");
  });
  bump_version();
}

void Tensor::set_flat(int64_t i, double v) {
  check_defined("set_flat");
  check_cpu(*this, "set_flat");
  check_inplace(*this, "set_flat");
  if (i < 0 || i >= numel()) fail("set_flat", "index {} out of range for {} elements", i, numel());
  int64_t off = flat_to_offset(*this, i);
  dispatch_any(dtype(), [&]<typename T>() {
    static_cast<T*>(impl_->storage->data)[off] = element_from_double<T>("set_flat", v, "(the value written)");
  });
  bump_version();
}

}  // namespace hg
