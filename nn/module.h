// nn/module.h — modules with named parameters, named like their PyTorch counterparts
// ("token_emb.weight", "blks.0.qkv.weight") so that checkpoints interoperate.
#pragma once
#include <memory>
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
  // Copies values into the parameters by name (shapes must match); names missing on either
  // side are an error listing them. Used by checkpoint loading.
  void load_parameters(const NamedTensors& values);

 protected:
  // Registers t as a parameter (it becomes a leaf that requires grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

 private:
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
