// engine/tensor.h — the Tensor: a strided view (shape, strides, offset) of a Storage.
//
// A Tensor is a cheap handle (shared_ptr to TensorImpl); copies alias the same tensor.
// Storage carries a version counter that every in-place write bumps; the tape uses it to
// refuse a backward through a tensor that was modified after it was saved.
#pragma once
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "cpu/portable.h"
#include "engine/dims.h"
#include "engine/dtype.h"

namespace hg {

struct Node;
class Tensor;

// Where an op was called from. Each public op takes `Site where = Site::current()` as its last
// parameter, which the compiler fills in with the caller's file and line; the graph keeps it so
// that anomaly mode can name the line that made a NaN.
using Site = source_location;  // std::source_location, or its stand-in (cpu/portable.h)

// A gradient hook: sees a tensor's gradient as backward passes it; returns a replacement, or an
// undefined Tensor to keep the gradient as it is.
using GradHook = std::function<Tensor(const Tensor&)>;

// Device memory plus the version counter shared by every view of it.
struct Storage {
  Storage(size_t nbytes, Device device);
  // Memory another library owns (from_blob): `owner` keeps it alive and is released with this.
  Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device = Device::cpu;
  uint64_t version = 0;
  std::shared_ptr<void> owner;  // set when the memory is another library's (not counted, not freed)

  static size_t live_bytes();  // total bytes held by live storages (leak tests)
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape, strides;  // strides in elements
  int64_t offset = 0;    // in elements
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated by backward() on leaves
  std::shared_ptr<Node> node;        // set on results of recorded ops: the node that produced it
  uint32_t output_nr = 0;            // ... and which of that node's outputs it is
  std::vector<GradHook> hooks;       // a leaf's hooks (a non-leaf's live on its node)
  // Forward mode (engine/forward.h): the tangent this tensor carries, and the dual level it was
  // given at (a tangent counts only while that level is open). detach() drops it.
  std::shared_ptr<TensorImpl> tangent;
  uint64_t tangent_level = 0;
  uint64_t id = 0;                   // unique for the life of the process
  std::string name;                  // optional, shown by tape printing and labs
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Metadata.
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t offset() const;
  int64_t dim() const;
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  uint64_t id() const;
  const std::string& name() const;
  Tensor& set_name(std::string n);
  std::string label() const;      // name if set, else "t<id>"
  std::string describe() const;   // "Q (3, 2) f64"

  // Autograd.
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // only on leaves
  bool is_leaf() const;                    // not produced by a recorded op
  Tensor grad() const;                     // undefined until a backward reaches this leaf
  void zero_grad();                        // drops the accumulated gradient
  std::shared_ptr<Node> grad_fn() const;   // the node that produced it (null for leaves)
  uint32_t output_nr() const;              // which output of grad_fn() it is
  // Reverse-mode pass from this tensor. A non-scalar needs `seed` (dL/dthis).
  void backward(const Tensor& seed = Tensor(), bool retain_graph = false) const;
  // Call `hook` with this tensor's gradient each time a backward computes it (the whole gradient,
  // after every contribution is summed); if it returns a defined tensor, that replaces the gradient.
  Tensor& register_hook(GradHook hook);

  // Views (differentiable; share storage with this tensor).
  Tensor transpose(int64_t d0, int64_t d1, Site where = Site::current()) const;
  Tensor permute(const Shape& order, Site where = Site::current()) const;
  Tensor slice(int64_t d, int64_t start, int64_t end, int64_t step = 1, Site where = Site::current()) const;
  Tensor select(int64_t d, int64_t index, Site where = Site::current()) const;  // removes dimension d
  Tensor index(std::initializer_list<int64_t> idx, Site where = Site::current()) const;  // select along leading dims
  Tensor unsqueeze(int64_t d, Site where = Site::current()) const;
  Tensor squeeze(int64_t d, Site where = Site::current()) const;
  // view: same elements, new shape, no copy; refuses to merge dimensions whose memory is not
  // laid out contiguously (e.g. after transpose) — use reshape() there.
  Tensor view(const Shape& shape, Site where = Site::current()) const;
  // reshape: a view when view() can, otherwise a contiguous copy.
  Tensor reshape(const Shape& shape, Site where = Site::current()) const;
  Tensor contiguous(Site where = Site::current()) const;  // this if already contiguous, else a copy
  Tensor clone(Site where = Site::current()) const;  // always a copy (differentiable)
  Tensor detach() const;      // shares storage and version counter; not on the tape, no tangent

  // Conversions (differentiable for float->float dtype changes and device moves). Elements
  // convert by one rule on both devices (engine/convert.h), as do copy_, fill_ and the factories:
  //   to b8: v != 0 (PyTorch's rule; NaN is true). b8 to a number: 0 or 1.
  //   float to i64: truncation toward zero. NaN, ±inf and values outside [-2^63, 2^63) have no
  //     int64 value: an hg::Error naming the value and its position — at once on the CPU; on CUDA
  //     at the next copy to the host or synchronize(), as the device's index checks are
  //     (engine/backend.h), the bad elements written as 0 until then.
  //   everything else: as static_cast (rounded to nearest; f64 -> f32 overflows to ±inf).
  Tensor to(DType t, Site where = Site::current()) const;
  Tensor to(Device d, Site where = Site::current()) const;

  // Element access (copies to the host when needed).
  double item() const;  // one-element tensors
  double at(std::initializer_list<int64_t> idx) const;
  std::vector<double> to_vector() const;     // row-major order
  std::vector<int64_t> to_int_vector() const;
  // The raw address of element 0 (storage + offset). A write through it is invisible to the
  // graph: it does not bump the version counter, so a backward that saved this tensor would use
  // the new values without a word. Call bump_version() after such a write (as the optimizers do),
  // and a saved alias then refuses the backward, as after copy_ or add_.
  template <typename T> T* data_ptr() const { return static_cast<T*>(raw_data()); }
  void* raw_data() const;

  // In-place writes. Not recorded on the tape; they bump the version counter. Refused on a
  // tensor that requires grad while grad mode is on (use NoGradGuard, or detach()), and on one
  // that carries a tangent (engine/forward.h).
  Tensor& fill_(double v);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& copy_(const Tensor& src);  // same shape; any dtype/device
  Tensor& add_(const Tensor& other, double alpha = 1.0);  // this += alpha * other (same shape)
  Tensor& mul_(double s);
  void set_at(std::initializer_list<int64_t> idx, double v);
  void set_flat(int64_t i, double v);  // i-th element in row-major order
  double get_flat(int64_t i) const;
  void bump_version();  // marks a write made through data_ptr() (above)

  std::string str(int precision = 4) const;  // shape, dtype and the values

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
  void check_defined(const char* what) const;
};

// Factories. All allocate fresh, contiguous storage.
Tensor empty(const Shape& shape, DType t = DType::f32, Device d = Device::cpu);
// A tensor over memory another library owns (DLPack, NumPy), without a copy: element i of the
// view is at data + Σ i_d · strides_d elements. `owner` keeps that memory alive while any view of
// the tensor lives. Strides must be ≥ 0 (copy a reversed array first); shape and strides are
// checked so that every byte offset fits. Writes through the other library do not bump the version
// counter: a backward that saved this tensor would read them without a word (bump_version()).
Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType t, Device d,
                 std::shared_ptr<void> owner);
Tensor zeros(const Shape& shape, DType t = DType::f32, Device d = Device::cpu);
Tensor ones(const Shape& shape, DType t = DType::f32, Device d = Device::cpu);
Tensor full(const Shape& shape, double v, DType t = DType::f32, Device d = Device::cpu);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor tensor(const std::vector<double>& values, const Shape& shape, DType t = DType::f32);
Tensor index_tensor(const std::vector<int64_t>& values, const Shape& shape);  // i64
Tensor bool_tensor(const std::vector<bool>& values, const Shape& shape);     // b8
Tensor scalar(double v, DType t = DType::f32);
Tensor arange(int64_t n, DType t = DType::f32);

// Internal: a tensor viewing `base`'s storage with a new geometry (no tape entry).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
uint64_t next_tensor_id();

}  // namespace hg
