// engine/tensor_autograd.cpp — Tensor's members that reach the graph (engine/tape.h): requires_grad,
// grad, grad_fn, hooks and backward(); and the refusal of an in-place write that the graph or a
// tangent would not see.
#include <memory>
#include <utility>

#include "engine/error.h"
#include "engine/tangents.h"
#include "engine/tape.h"
#include "engine/tensor.h"
#include "engine/tensor_internal.h"

namespace hg {

bool Tensor::requires_grad() const { check_defined("requires_grad"); return impl_->requires_grad; }
bool Tensor::is_leaf() const { check_defined("is_leaf"); return impl_->node == nullptr; }

Tensor& Tensor::requires_grad_(bool on) {
  check_defined("requires_grad_");
  if (!is_leaf())
    fail("requires_grad_", "{} was produced by an op on the tape; only leaves can change requires_grad "
         "(use .detach().requires_grad_() for a new leaf)", describe());
  if (on && !is_floating(impl_->dtype))
    fail("requires_grad_", "{} has dtype {}; only float32/float64 tensors can require grad", describe(),
         dtype_name(impl_->dtype));
  impl_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { check_defined("grad"); return Tensor(impl_->grad); }
void Tensor::zero_grad() { check_defined("zero_grad"); impl_->grad.reset(); }
std::shared_ptr<Node> Tensor::grad_fn() const { check_defined("grad_fn"); return impl_->node; }
uint32_t Tensor::output_nr() const { check_defined("output_nr"); return impl_->output_nr; }

Tensor& Tensor::register_hook(GradHook hook) {
  check_defined("register_hook");
  if (!requires_grad())
    fail("register_hook", "{} does not require grad, so no gradient will ever pass it; call requires_grad_() "
         "on the leaf first", describe());
  if (impl_->node) impl_->node->hooks.emplace_back(impl_->output_nr, std::move(hook));
  else impl_->hooks.push_back(std::move(hook));
  return *this;
}

void Tensor::backward(const Tensor& seed, bool retain_graph) const {
  BackwardOptions o;
  o.retain_graph = retain_graph;
  hg::backward(*this, seed, o);
}

void check_inplace(const Tensor& t, const char* op) {
  if (t.requires_grad() && grad_enabled())
    fail(op, "in-place write to {}, which requires grad; the tape would not see it. Wrap the write in "
         "hg::NoGradGuard (as an optimizer step does) or write to .detach()", t.describe());
  if (has_tangent(t))
    fail(op, "in-place write to {}, which carries a tangent (forward mode); the tangent would no longer "
         "describe its values. Write to a copy (clone()), or to unpack_dual(t).primal.detach() outside the "
         "computation being differentiated", t.describe());
}

}  // namespace hg
