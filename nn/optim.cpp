// nn/optim.cpp — SGD and AdamW, each one fused loop per parameter.
//
// The updates reproduce torch.optim's single-tensor path (the one PyTorch takes on the CPU)
// operation by operation, in the parameter's dtype: every scalar is rounded to that dtype where
// PyTorch's tensor-scalar kernels round it, and the expressions keep PyTorch's evaluation order,
// so a float32 step is the same float32 arithmetic PyTorch does, not a float64 one rounded at
// the end. Where PyTorch's kernels fuse a multiply-add (its `a + alpha * b` of add_ and
// `self + value * t1 * t2` of addcmul_ compile to FMA instructions in its AVX2 kernels) the loops
// call std::fma, and nowhere else: this file is compiled with contraction off so the compiler
// cannot fuse any other product into a sum. With that, a step agrees bit for bit with Debian's
// PyTorch 1.13 on this machine's CPU (tests/nn/test_optim.cpp has its numbers).
//
// The loops write the parameters through raw pointers (the tape never sees an optimizer step)
// and bump each parameter's version, so a backward through a graph saved before the step fails
// loudly instead of using the new weights.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "nn/optim.h"

#include <cmath>
#include <unordered_set>

#include "cuda/optim.h"
#include "cpu/kernels.h"
#include "engine/dispatch.h"
#include "engine/error.h"
#include "engine/tape.h"
#include "ops/device.h"
#include "ops/elementwise.h"

namespace hg::nn {

namespace {

// Parameters an optimizer can update in place with one flat loop: defined, float, contiguous,
// each listed once, all on one device.
void check_params(const char* op, const std::vector<Tensor>& params) {
  std::unordered_set<const TensorImpl*> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined()) fail(op, "parameter {} is undefined", i);
    if (!is_floating(p.dtype()))
      fail(op, "parameter {} ({}) has dtype {}; only float32/float64 parameters can be optimized", i, p.describe(),
           dtype_name(p.dtype()));
    if (p.device() != params[0].device())
      fail(op, "parameter {} ({}) is on {} but parameter 0 is on {}; move the whole model with .to(Device::...)", i,
           p.describe(), device_name(p.device()), device_name(params[0].device()));
    if (!p.is_contiguous())
      fail(op, "parameter {} ({}) is a non-contiguous view; pass the contiguous tensor it views", i, p.describe());
    if (!p.is_leaf())
      fail(op, "parameter {} ({}) was produced by an op on the tape; parameters must be leaves", i, p.describe());
    if (!seen.insert(p.impl()).second)
      fail(op, "parameter {} ({}) is listed twice; it would be updated twice per step", i, p.describe());
  }
}

// The parameter's gradient as a contiguous tensor of its shape and dtype, or undefined if none.
Tensor grad_of(const char* op, const Tensor& p) {
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (g.shape() != p.shape() || g.dtype() != p.dtype() || g.device() != p.device())
    fail(op, "the gradient {} of parameter {} differs in shape, dtype or device", g.describe(), p.describe());
  return g.is_contiguous() ? g : g.contiguous();
}

// The optimizer's state for parameter p must be where p is (Optimizer::to moves it).
void check_state_device(const char* op, const Tensor& p, const Tensor& state) {
  if (state.defined() && state.device() != p.device())
    fail(op, "parameter {} is on {} but its optimizer state is on {}; after moving the model, move the optimizer "
         "too: optimizer.to(Device::{})", p.describe(), device_name(p.device()), device_name(state.device()),
         device_name(p.device()));
}

void check_hyper(const char* op, const char* what, double v, double lo, double hi, bool hi_open) {
  if (!(v >= lo && (hi_open ? v < hi : v <= hi)) || !std::isfinite(v))
    fail(op, "{} = {} is out of range; it must be in [{}, {}{}", what, v, lo, hi, hi_open ? ")" : "]");
}

}  // namespace

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

void Optimizer::to(Device d) {
  for (std::vector<Tensor>* state : this->state())
    for (Tensor& t : *state)
      if (t.defined()) t = t.to(d);
}

// ---------------------------------------------------------------- SGD

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : Optimizer(std::move(params)), lr_(lr), momentum_(momentum), weight_decay_(weight_decay) {
  check_params("SGD", params_);
  check_hyper("SGD", "lr", lr, 0.0, HUGE_VAL, true);
  check_hyper("SGD", "momentum", momentum, 0.0, 1.0, false);
  check_hyper("SGD", "weight_decay", weight_decay, 0.0, HUGE_VAL, true);
  velocity_.resize(params_.size());
}

// torch.optim.SGD (dampening 0, no nesterov), per element:
//   d = g + wd·p                      (only when wd ≠ 0)
//   buf = d on the first step, else buf = momentum·buf + d   (only when momentum ≠ 0; d = buf)
//   p = p − lr·d
void SGD::step() {
  for (size_t i = 0; i < params_.size(); ++i) check_state_device("SGD", params_[i], velocity_[i]);
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = grad_of("SGD", p);
    if (!g.defined()) continue;
    const bool first = momentum_ != 0.0 && !velocity_[i].defined();
    if (p.device() == Device::cuda) {  // the same steps as device ops (products rounded apart, not fused)
      NoGradGuard ng;
      Tensor d = weight_decay_ != 0.0 ? add(g, mul(p.detach(), weight_decay_)) : g;
      if (momentum_ != 0.0) {
        if (first) velocity_[i] = d.clone();
        else velocity_[i].mul_(momentum_).add_(d);
        d = velocity_[i];
      }
      p.add_(d, -lr_);
      continue;
    }
    if (first) velocity_[i] = zeros(p.shape(), p.dtype());
    dispatch_float(p.dtype(), "SGD", [&]<typename T>() {
      T* __restrict w = p.data_ptr<T>();
      const T* __restrict dw = g.data_ptr<const T>();
      T* __restrict buf = momentum_ != 0.0 ? velocity_[i].data_ptr<T>() : nullptr;
      const T wd = static_cast<T>(weight_decay_), mom = static_cast<T>(momentum_), neg_lr = static_cast<T>(-lr_);
      const bool decay = weight_decay_ != 0.0;
      const int64_t n = p.numel();
      for (int64_t k = 0; k < n; ++k) {
        T d = decay ? std::fma(wd, w[k], dw[k]) : dw[k];  // grad.add(param, alpha=wd)
        if (buf) {
          buf[k] = first ? d : buf[k] * mom + d;  // buf.mul_(momentum).add_(d, alpha=1): 1·d is exact
          d = buf[k];
        }
        w[k] = std::fma(neg_lr, d, w[k]);  // param.add_(d, alpha=-lr)
      }
    });
    p.bump_version();
  }
}

// ---------------------------------------------------------------- AdamW

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions opts) : Optimizer(std::move(params)), o_(opts) {
  check_params("AdamW", params_);
  check_hyper("AdamW", "lr", o_.lr, 0.0, HUGE_VAL, true);
  check_hyper("AdamW", "beta1", o_.beta1, 0.0, 1.0, true);
  check_hyper("AdamW", "beta2", o_.beta2, 0.0, 1.0, true);
  check_hyper("AdamW", "eps", o_.eps, 0.0, HUGE_VAL, true);
  check_hyper("AdamW", "weight_decay", o_.weight_decay, 0.0, HUGE_VAL, true);
  for (const Tensor& p : params_) {
    m_.push_back(zeros(p.shape(), p.dtype(), p.device()));  // exp_avg, m
    v_.push_back(zeros(p.shape(), p.dtype(), p.device()));  // exp_avg_sq, v
  }
  param_steps_.assign(params_.size(), 0);
}

// torch.optim.AdamW, _single_tensor_adamw, per element, with t this parameter's step count:
//   p = p · (1 − lr·wd)                                 param.mul_(1 - lr * weight_decay)
//   m = m · β1 + (1 − β1) · g                           exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
//   v = v · β2 + (1 − β2) · g · g                       exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
//   denom = √v / √(1 − β2^t) + eps                      (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
//   p = p + (−lr / (1 − β1^t)) · m / denom              param.addcdiv_(exp_avg, denom, value=-step_size)
// The bias corrections and step size are Python floats (double) in PyTorch and here; each is
// rounded to the parameter's dtype where it meets a tensor. The loop itself is the kernel
// table's (cpu/kernels.h: adamw), the same bits at every instruction-set level.

void AdamW::step() {
  for (size_t i = 0; i < params_.size(); ++i) check_state_device("AdamW", params_[i], m_[i]);
  ++t_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = grad_of("AdamW", p);
    if (!g.defined()) continue;
    const double t = static_cast<double>(++param_steps_[i]);
    const double bias_correction1 = 1.0 - std::pow(o_.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o_.beta2, t);
    const double step_size = o_.lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    // The same update on either device; on the GPU in one kernel (cuda/optim.cu), no host round trip.
    const cuda::AdamWStep step{1.0 - o_.lr * o_.weight_decay, o_.beta1, 1.0 - o_.beta1, o_.beta2, 1.0 - o_.beta2,
                               bias_correction2_sqrt, o_.eps, -step_size};
    on_device("AdamW", {p, g, m_[i], v_[i]}, [&] {
      dispatch_float(p.dtype(), "AdamW", [&]<typename T>() {
        const cpu::AdamWConstants<T> c{static_cast<T>(step.decay),    static_cast<T>(step.b1),
                                       static_cast<T>(step.one_minus_b1), static_cast<T>(step.b2),
                                       static_cast<T>(step.one_minus_b2), static_cast<T>(step.bc2_sqrt),
                                       static_cast<T>(step.eps),      static_cast<T>(step.neg_step)};
        // The update, one fused loop at the CPU's vector width (cpu/kernels.h).
        const cpu::Kernels& K = cpu::kernels();
        auto update = [&](auto kernel) {
          kernel(c, p.data_ptr<T>(), g.data_ptr<const T>(), m_[i].data_ptr<T>(), v_[i].data_ptr<T>(), p.numel());
        };
        if constexpr (std::is_same_v<T, float>) update(K.adamw_f32);
        else update(K.adamw_f64);
      });
    }, HG_CUDA(cuda::adamw(p, g, m_[i], v_[i], step)));
    p.bump_version();
    m_[i].bump_version();
    v_[i].bump_version();
  }
}

}  // namespace hg::nn
