// nn/module.cpp — named parameters, Linear and Embedding.
//
// Names follow PyTorch's nn.Module: a module's own parameters first, in registration order,
// then each child's, depth first, prefixed with the child's name ("blks.0.qkv.weight"). A
// tensor registered twice (tied weights) is listed once, under its first name, as PyTorch's
// named_parameters() does, so an optimizer never updates it twice.
#include "nn/module.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/matmul.h"

namespace hg::nn {

// ---------------------------------------------------------------- parameters by name

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, t] : m.params_)
      if (seen.insert(t.impl()).second) out.emplace_back(prefix + name, t);
    for (const auto& [name, child] : m.children_) walk(*child, prefix + name + ".");
  };
  walk(*this, "");
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.zero_grad();
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  if (name.empty() || name.find('.') != std::string::npos)
    fail("register_parameter", "parameter name '{}' must be non-empty and contain no '.' (dots join module names)", name);
  if (!t.defined()) fail("register_parameter", "parameter '{}' is undefined", name);
  for (const auto& [existing, p] : params_)
    if (existing == name) fail("register_parameter", "a parameter named '{}' is already registered in this module", name);
  if (!t.is_leaf()) t = t.detach();  // a parameter is a leaf: gradients accumulate into it
  t.requires_grad_();
  t.set_name(name);
  params_.emplace_back(name, t);
  return t;
}

void Module::load_parameters(const NamedTensors& values) {
  const NamedTensors mine = named_parameters();
  // Validate everything before copying anything, so a failed load leaves the module untouched.
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : values)
    if (!given.emplace(name, &t).second) fail("load_parameters", "the name '{}' is given twice", name);
  std::vector<std::string> missing, mismatched;
  std::set<std::string> used;
  for (const auto& [name, p] : mine) {
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
      continue;
    }
    used.insert(name);
    const Tensor& v = *it->second;
    if (v.shape() != p.shape() || v.dtype() != p.dtype())
      mismatched.push_back(fmt::format("{}: given {} {}, the module has {} {}", name, shape_str(v.shape()),
                                       dtype_name(v.dtype()), shape_str(p.shape()), dtype_name(p.dtype())));
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : values)
    if (!used.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string msg;
    if (!missing.empty()) msg += fmt::format("\n  missing (the module has them, the values do not): {}", fmt::join(missing, ", "));
    if (!unexpected.empty()) msg += fmt::format("\n  unexpected (not parameters of this module): {}", fmt::join(unexpected, ", "));
    if (!mismatched.empty()) msg += fmt::format("\n  shape or dtype differs: {}", fmt::join(mismatched, "; "));
    fail("load_parameters", "the values do not match the module's {} parameters (build the module with the "
         "configuration and dtype the values were saved from):{}", mine.size(), msg);
  }
  NoGradGuard ng;
  for (auto& [name, p] : mine) {
    Tensor dst = p;
    dst.copy_(*given.at(name));
  }
}

// ---------------------------------------------------------------- moving between devices and dtypes

// In place, on the TensorImpl every handle to a parameter shares: its storage, strides, offset and
// dtype are replaced by those of a converted copy, so Linear::weight, params_ and an optimizer's
// list all see the moved tensor. All copies are made before anything is replaced (a failed copy,
// e.g. out of device memory, leaves the module as it was).
void Module::move_parameters(std::optional<Device> device, std::optional<DType> dtype) {
  const NamedTensors params = named_parameters();
  auto convert = [&](const Tensor& t) {  // a fresh contiguous tensor (to() always allocates)
    Tensor c = t.detach();
    if (dtype && c.dtype() != *dtype) c = c.to(*dtype);
    if (device && c.device() != *device) c = c.to(*device);
    return c;
  };
  struct Move {
    TensorImpl* param;
    Tensor value, grad;  // grad undefined when the parameter has none
  };
  std::vector<Move> moves;
  {
    NoGradGuard ng;
    for (const auto& [name, p] : params) {
      if ((!device || p.device() == *device) && (!dtype || p.dtype() == *dtype)) continue;
      const Tensor g = p.grad();
      moves.push_back({p.impl(), convert(p), g.defined() ? convert(g) : Tensor()});
    }
  }
  for (Move& m : moves) {
    TensorImpl& p = *m.param;
    const TensorImpl& v = *m.value.impl();
    // Both storages count as written: a graph that saved the parameter (or a view of its old
    // storage, like Wᵀ in matmul) refuses its backward instead of reading the old values.
    const uint64_t version = ++p.storage->version;
    p.storage = v.storage;
    p.storage->version = version;
    p.strides = v.strides;
    p.offset = v.offset;
    p.dtype = v.dtype;
    p.grad = m.grad.defined() ? m.grad.impl_ptr() : nullptr;
  }
  std::unordered_set<Module*> visited;
  std::function<void(Module&)> notify = [&](Module& m) {
    if (!visited.insert(&m).second) return;
    m.on_moved();
    for (auto& [name, child] : m.children_) notify(*child);
  };
  notify(*this);
}

Module& Module::to(Device device) {
  move_parameters(device, std::nullopt);
  return *this;
}

Module& Module::to(DType dtype) {
  if (!is_floating(dtype))
    fail("Module::to", "dtype {} cannot hold parameters; use float32 or float64", dtype_name(dtype));
  move_parameters(std::nullopt, dtype);
  return *this;
}

Device Module::device() const {
  const NamedTensors params = named_parameters();
  if (params.empty()) return Device::cpu;
  const auto& [first, p0] = params.front();
  std::vector<std::string> elsewhere;
  for (const auto& [name, p] : params)
    if (p.device() != p0.device()) elsewhere.push_back(fmt::format("{} on {}", name, device_name(p.device())));
  if (!elsewhere.empty())
    fail("Module::device", "the parameters are on more than one device: {} is on {}, but {}; move the whole module "
         "with to(Device)", first, device_name(p0.device()), fmt::join(elsewhere, ", "));
  return p0.device();
}

// ---------------------------------------------------------------- Linear

// PyTorch's reset_parameters(): kaiming_uniform_(W, a=√5) draws from U(−b, b) with
// b = gain·√(3 / fan_in), gain = √(2 / (1 + a²)) = √(1/3), so b = 1/√fan_in; the bias is drawn
// from U(−1/√fan_in, 1/√fan_in). Draws: W row-major first, then b.
Linear::Linear(int64_t in, int64_t out, bool has_bias, Generator& gen, DType dtype) {
  if (in <= 0 || out <= 0) fail("Linear", "in ({}) and out ({}) features must be positive", in, out);
  if (!is_floating(dtype)) fail("Linear", "dtype {} is not supported; use float32 or float64", dtype_name(dtype));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = register_parameter("weight", rand({out, in}, gen, dtype, -bound, bound));  // (out, in)
  if (has_bias) bias = register_parameter("bias", rand({out}, gen, dtype, -bound, bound));  // (out,)
}

// y = x Wᵀ + b: x (..., in) @ Wᵀ (in, out) -> (..., out), b broadcast over the leading
// dimensions. Backward comes from the ops: dx = dy W, dW = Σ dyᵀ x, db = Σ dy.
Tensor Linear::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != weight.size(1))
    fail("Linear", "input {} must end in {} features (the layer maps {} -> {})", x.describe(), weight.size(1),
         weight.size(1), weight.size(0));
  Tensor y = matmul(x, weight.transpose(0, 1));  // (..., out)
  return bias.defined() ? add(y, bias) : y;
}

// ---------------------------------------------------------------- Embedding

Embedding::Embedding(int64_t num, int64_t dim, Generator& gen, DType dtype) {
  if (num <= 0 || dim <= 0) fail("Embedding", "num ({}) and dim ({}) must be positive", num, dim);
  if (!is_floating(dtype)) fail("Embedding", "dtype {} is not supported; use float32 or float64", dtype_name(dtype));
  weight = register_parameter("weight", randn({num, dim}, gen, dtype, 0.0, 0.02));  // (num, dim)
}

// Row lookup: out[..., :] = W[indices[...], :]. Backward scatter-adds dout rows into dW.
Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices); }

}  // namespace hg::nn
