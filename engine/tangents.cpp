// engine/tangents.cpp — dual levels, the tangent a tensor carries, the push of tangents through a
// recorded op (engine/tangents.h).
//
// A tangent is a tensor held by the tensor it describes (TensorImpl::tangent) together with the
// level it was given at. It counts while that level is open on this thread and tangents are not
// suspended; suspension covers the run of a tangent rule, whose own ops must compute values (and
// record for reverse mode) without pushing tangents of their own: ȧ b inside the rule of a product
// a b is a plain product of two tensors, even though b itself carries ḃ.
#include "engine/tangents.h"

#include <atomic>
#include <memory>
#include <vector>

#include "engine/error.h"

namespace hg {

namespace {
std::atomic<uint64_t> g_next_level{1};
thread_local uint64_t t_level = 0;      // the open level on this thread; 0: none
thread_local bool t_suspended = false;  // inside a tangent rule
// The tensors given a tangent at the open level, dropped when it closes (weakly held: a tensor
// that dies first is simply gone).
thread_local std::vector<std::weak_ptr<TensorImpl>> t_carriers;

class SuspendTangents {
 public:
  SuspendTangents() : prev_(t_suspended) { t_suspended = true; }
  ~SuspendTangents() { t_suspended = prev_; }
  SuspendTangents(const SuspendTangents&) = delete;
  SuspendTangents& operator=(const SuspendTangents&) = delete;
 private:
  bool prev_;
};
}  // namespace

DualLevel::DualLevel() {
  if (t_level != 0)
    fail("dual_level", "a dual level is already open on this thread (level {}); forward mode takes one level at a "
         "time: close it first, or compute inside it", t_level);
  id_ = g_next_level++;
  t_level = id_;
}

DualLevel::~DualLevel() {
  for (const std::weak_ptr<TensorImpl>& w : t_carriers)
    if (std::shared_ptr<TensorImpl> t = w.lock(); t && t->tangent_level == id_) {
      t->tangent.reset();
      t->tangent_level = 0;
    }
  t_carriers.clear();
  t_level = 0;
}

bool forward_ad_enabled() { return t_level != 0 && !t_suspended; }

bool has_tangent(const Tensor& t) {
  return forward_ad_enabled() && t.defined() && t.impl()->tangent && t.impl()->tangent_level == t_level;
}

Tensor tangent_of(const Tensor& t) { return has_tangent(t) ? Tensor(t.impl()->tangent) : Tensor(); }

namespace detail {

uint64_t open_level() { return t_level; }

bool any_tangent(const std::vector<Tensor>& inputs) {
  if (!forward_ad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (has_tangent(t)) return true;
  return false;
}

void set_tangent(const Tensor& t, const Tensor& dot) {
  TensorImpl* impl = t.impl();
  if (!dot.defined()) {
    impl->tangent.reset();
    impl->tangent_level = 0;
    return;
  }
  impl->tangent = dot.impl_ptr();
  impl->tangent_level = t_level;
  t_carriers.push_back(t.impl_ptr());
}

void push_tangents(const OpDef& def, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                   const TangentFn& rule) {
  std::vector<Tensor> dots;
  for (const Tensor& in : inputs) dots.push_back(tangent_of(in));
  std::vector<Tensor> out_dots;
  {
    SuspendTangents suspend;
    out_dots = rule(dots);
  }
  if (out_dots.size() != outputs.size())
    fail(def.name, "its tangent rule returned {} tangents for {} outputs (a bug in the op)", out_dots.size(),
         outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& d = out_dots[k];
    if (d.defined() && (d.shape() != outputs[k].shape() || d.dtype() != outputs[k].dtype() ||
                        d.device() != outputs[k].device()))
      fail(def.name, "its tangent rule returned {} for output {}, which is {} (a bug in the op)", d.describe(), k,
           outputs[k].describe());
    set_tangent(outputs[k], d);
  }
}

}  // namespace detail

}  // namespace hg
