// python/src/nn.cpp — the C++ nn/ library as handgrad._C.nn: modules (Linear, Embedding,
// TinyCharLM), optimizers (SGD, AdamW), the repeated-sequence task and safetensors checkpoints.
//
// Parameters cross into Python as hg::Tensor handles to the module's own tensors, so the .grad an
// optimizer reads and the in-place updates it makes are the ones Python sees, and the reverse.
// Forward passes, optimizer steps and checkpoint I/O release the GIL: a training step driven from
// Python runs the same C++ as the labs' loop.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>

#include "bind.h"
#include "nn/checkpoint.h"
#include "nn/data.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/tinycharlm.h"

namespace hgpy {

namespace {

namespace hn = hg::nn;
using hg::Tensor;
using release_gil = nb::call_guard<ReleaseGil>;

hn::SplitLoss split_losses(const Tensor& logits, const Tensor& targets, const Tensor& lengths) {
  ReleaseGil release;
  return hn::split_losses(logits, targets, lengths);
}

// A module of given tensors: each registered under its name (no copy; it stays the same tensor).
class Parameters : public hn::Module {
 public:
  explicit Parameters(const hn::NamedTensors& named) {
    for (const auto& [name, t] : named) register_parameter(name, t);
  }
};

}  // namespace

void bind_nn(nb::module_& m) {
  nb::module_ n = m.def_submodule("nn", "The library's modules, optimizers, data and checkpoints behind hg.nn");

  nb::class_<hn::Module>(n, "Module", "Named parameters, depth first in registration order")
      .def("named_parameters", &hn::Module::named_parameters)
      .def("parameters", &hn::Module::parameters)
      .def("num_parameters", &hn::Module::num_parameters)
      .def("zero_grad", &hn::Module::zero_grad)
      .def("load_parameters", &hn::Module::load_parameters, nb::arg("values"))
      .def("to_device", [](hn::Module& mod, const std::string& d) { mod.to(device_named(d)); }, nb::arg("device"))
      .def("to_dtype", [](hn::Module& mod, hg::DType t) { mod.to(t); }, nb::arg("dtype"))
      .def_prop_ro("device", [](const hn::Module& mod) { return std::string(hg::device_name(mod.device())); });

  // Tensors a Python module made (hg.nn.LayerNorm's weight and bias), registered by name in a
  // library Module so that its to() moves them in place, as it moves Linear's.
  nb::class_<Parameters, hn::Module>(n, "Parameters", "Python modules' parameters, held for Module.to")
      .def(nb::init<const hn::NamedTensors&>(), nb::arg("named_tensors"));

  nb::class_<hn::Linear, hn::Module>(n, "Linear", "y = x Wᵀ + b, W (out, in)")
      .def(nb::init<int64_t, int64_t, bool, hg::Generator&, hg::DType>(), nb::arg("in_features"),
           nb::arg("out_features"), nb::arg("bias"), nb::arg("generator"), nb::arg("dtype"))
      .def("forward", &hn::Linear::forward, nb::arg("input"), release_gil())
      .def_prop_ro("weight", [](const hn::Linear& l) { return l.weight; })
      .def_prop_ro("bias", [](const hn::Linear& l) {
        return l.bias.defined() ? std::optional<Tensor>(l.bias) : std::nullopt;
      });

  nb::class_<hn::Embedding, hn::Module>(n, "Embedding", "Rows of a (num, dim) table")
      .def(nb::init<int64_t, int64_t, hg::Generator&, hg::DType>(), nb::arg("num_embeddings"),
           nb::arg("embedding_dim"), nb::arg("generator"), nb::arg("dtype"))
      .def("forward", &hn::Embedding::forward, nb::arg("input"), release_gil())
      .def_prop_ro("weight", [](const hn::Embedding& e) { return e.weight; });

  nb::class_<hn::Block, hn::Module>(n, "Block", "One attention-only block: qkv and proj")
      .def_ro("qkv", &hn::Block::qkv)
      .def_ro("proj", &hn::Block::proj);

  nb::class_<hn::TinyCharLMConfig>(n, "TinyCharLMConfig")
      .def(nb::init<>())
      .def_rw("vocab", &hn::TinyCharLMConfig::vocab)
      .def_rw("d", &hn::TinyCharLMConfig::d)
      .def_rw("heads", &hn::TinyCharLMConfig::heads)
      .def_rw("blocks", &hn::TinyCharLMConfig::blocks)
      .def_rw("pos", &hn::TinyCharLMConfig::pos)
      .def_rw("bias", &hn::TinyCharLMConfig::bias)
      .def_rw("max_len", &hn::TinyCharLMConfig::max_len)
      .def_rw("dtype", &hn::TinyCharLMConfig::dtype);

  nb::class_<hn::TinyCharLM, hn::Module>(n, "TinyCharLM", "The attention-only TinyCharLM")
      .def(nb::init<const hn::TinyCharLMConfig&, hg::Generator&>(), nb::arg("config"), nb::arg("generator"))
      .def_prop_ro("config", &hn::TinyCharLM::config)
      .def("forward", nb::overload_cast<const Tensor&>(&hn::TinyCharLM::forward, nb::const_), nb::arg("tokens"),
           release_gil())
      .def("forward_with", nb::overload_cast<const Tensor&, const std::vector<Tensor>&>(&hn::TinyCharLM::forward,
                                                                                      nb::const_),
           nb::arg("tokens"), nb::arg("params"), release_gil())
      .def("attention_weights", &hn::TinyCharLM::attention_weights, nb::arg("tokens"), release_gil())
      .def("ablate_head", &hn::TinyCharLM::ablate_head, nb::arg("block"), nb::arg("head"), nb::arg("on") = true)
      .def("clear_ablations", &hn::TinyCharLM::clear_ablations)
      .def("is_ablated", &hn::TinyCharLM::is_ablated, nb::arg("block"), nb::arg("head"))
      .def_ro("token_emb", &hn::TinyCharLM::token_emb)
      .def_ro("pos_emb", &hn::TinyCharLM::pos_emb)
      .def_ro("blks", &hn::TinyCharLM::blks);

  nb::class_<hn::Optimizer>(n, "Optimizer", "Updates parameters in place")
      .def("step", &hn::Optimizer::step, release_gil())
      .def("zero_grad", &hn::Optimizer::zero_grad)
      .def("params", &hn::Optimizer::params)
      .def("to_device", [](hn::Optimizer& o, const std::string& d) { o.to(device_named(d)); }, nb::arg("device"));

  nb::class_<hn::SGD, hn::Optimizer>(n, "SGD")
      .def(nb::init<std::vector<Tensor>, double, double, double>(), nb::arg("params"), nb::arg("lr"),
           nb::arg("momentum"), nb::arg("weight_decay"));

  nb::class_<hn::AdamW, hn::Optimizer>(n, "AdamW")
      .def("__init__", [](hn::AdamW* self, std::vector<Tensor> params, double lr, double beta1, double beta2,
                          double eps, double weight_decay) {
        new (self) hn::AdamW(std::move(params), {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps,
                                                 .weight_decay = weight_decay});
      }, nb::arg("params"), nb::arg("lr"), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"), nb::arg("weight_decay"))
      .def_prop_ro("steps", &hn::AdamW::steps)
      .def_prop_ro("exp_avg", &hn::AdamW::exp_avg)
      .def_prop_ro("exp_avg_sq", &hn::AdamW::exp_avg_sq);

  n.def("repeated_batch", [](int64_t batch, int64_t T, int64_t vocab, int64_t Lmin, int64_t Lmax, hg::Generator& gen,
                             const std::string& device) {
    hn::RepeatedBatch b = hn::repeated_batch(batch, T, vocab, Lmin, Lmax, gen, device_named(device));
    return std::make_pair(b.tokens, b.lengths);
  }, nb::arg("batch"), nb::arg("T"), nb::arg("vocab"), nb::arg("Lmin"), nb::arg("Lmax"), nb::arg("generator"),
     nb::arg("device"));

  nb::class_<hn::SplitLoss>(n, "SplitLoss")
      .def_ro("loss", &hn::SplitLoss::loss)
      .def_ro("first", &hn::SplitLoss::first)
      .def_ro("later", &hn::SplitLoss::later)
      .def_ro("later_acc", &hn::SplitLoss::later_acc)
      .def_ro("n_first", &hn::SplitLoss::n_first)
      .def_ro("n_later", &hn::SplitLoss::n_later);
  n.def("split_losses", &split_losses, nb::arg("logits"), nb::arg("targets"), nb::arg("lengths"));
  n.def("accuracy_per_position", &hn::accuracy_per_position, nb::arg("logits"), nb::arg("targets"), release_gil());

  n.def("save_safetensors", &hn::save_safetensors, nb::arg("path"), nb::arg("tensors"), nb::arg("metadata"),
        release_gil());
  n.def("load_safetensors", [](const std::string& path) {
    hn::SafetensorsFile f;
    {
      ReleaseGil release;
      f = hn::load_safetensors(path);
    }
    return std::make_pair(f.tensors, f.metadata);
  }, nb::arg("path"));
}

}  // namespace hgpy
