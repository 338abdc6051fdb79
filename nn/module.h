// nn/module.h — modules with named parameters, named like their PyTorch counterparts
// ("token_emb.weight", "blks.0.qkv.weight") so that checkpoints interoperate.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/random.h"
#include "engine/tensor.h"

namespace hg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter, depth first in registration order, with its dotted name.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t num_parameters() const;
  void zero_grad();  // drops every parameter's gradient
  // Copies values into the parameters by name (shapes and dtypes must match; the values may be
  // on any device: they are copied into each parameter's own device); names missing on either
  // side are an error listing them. Used by checkpoint loading.
  void load_parameters(const NamedTensors& values);

  // Moves every parameter (and its gradient, if any) to `device`, or converts it to `dtype`, in
  // place: each parameter keeps its identity — the same tensor object, so the handles an
  // optimizer, named_parameters() or a member like Linear::weight hold see the new storage — its
  // name, and stays a leaf that requires grad. Each moved parameter gets fresh contiguous storage;
  // both its old and new storage count as modified, so a backward through a graph recorded before
  // the move fails loudly instead of mixing devices. Nothing is changed if a copy fails.
  // Optimizer state is not the module's: move it with the optimizer.
  Module& to(Device device);
  Module& to(DType dtype);
  // The device every parameter is on (cpu for a module without parameters); an error naming
  // them if they are spread over several devices.
  Device device() const;

 protected:
  // Registers t as a parameter (it becomes a leaf that requires grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }
  // Called on this module and every descendant after to() has moved the parameters: a module
  // holding anything derived from them (constants, caches, its configuration's dtype) updates it.
  virtual void on_moved() {}

 private:
  void move_parameters(std::optional<Device> device, std::optional<DType> dtype);
  NamedTensors params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// y = x Wᵀ + b, W (out, in), b (out). PyTorch's default initialisation: W and b uniform in
// ±1/sqrt(in).
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Generator& gen, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;  // bias undefined when built without it
};

// Rows of a (num, dim) table, initialised N(0, 0.02²).
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Generator& gen, DType dtype = DType::f32);
  Tensor forward(const Tensor& indices) const;  // i64 (...) -> (..., dim)
  Tensor weight;
};

}  // namespace hg::nn
