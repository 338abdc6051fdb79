// nn/optim.h — optimizers that update parameters in place (under NoGradGuard).
#pragma once
#include <vector>

#include "engine/tensor.h"

namespace hg::nn {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;
  virtual void step() = 0;   // parameters without a gradient are skipped
  void zero_grad();          // drops every parameter's gradient
  const std::vector<Tensor>& params() const { return params_; }
  // Moves the optimizer's state (moments, velocities) to device d; call it after moving the
  // model's parameters there (Module::to). step() refuses state and parameters on two devices.
  void to(Device d);

 protected:
  std::vector<Tensor> params_;
  virtual std::vector<std::vector<Tensor>*> state() { return {}; }  // per-parameter state tensors
};

// p -= lr * (g + weight_decay * p), with optional momentum as torch.optim.SGD.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0.0, double weight_decay = 0.0);
  void step() override;
 private:
  double lr_, momentum_, weight_decay_;
  std::vector<Tensor> velocity_;
  std::vector<std::vector<Tensor>*> state() override { return {&velocity_}; }
};

// AdamW exactly as torch.optim.AdamW computes it: decoupled weight decay
// p *= 1 - lr * wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g²;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  // PyTorch's default for AdamW
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions opts = {});
  void step() override;
  int64_t steps() const { return t_; }
  const std::vector<Tensor>& exp_avg() const { return m_; }
  const std::vector<Tensor>& exp_avg_sq() const { return v_; }

 private:
  AdamWOptions o_;
  int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
  std::vector<std::vector<Tensor>*> state() override { return {&m_, &v_}; }
  std::vector<int64_t> param_steps_;  // per parameter, as PyTorch's state['step']: skipped steps do not count
};

}  // namespace hg::nn
