// python/src/functional.cpp — hg.nn.functional's losses and attention over the library's ops.
#include "bind.h"

namespace hgpy {

void bind_functional(nb::module_& m) {
  nb::module_ f = m.def_submodule("functional", "The library's ops behind hg.nn.functional");
  f.def("cross_entropy", [](const hg::Tensor& logits, const hg::Tensor& targets, int64_t ignore_index) {
    return hg::cross_entropy(logits, targets, ignore_index);
  }, nb::arg("logits"), nb::arg("targets"), nb::arg("ignore_index") = -100);

  // attn_mask: None, boolean (True = may attend) or additive float; scale None = 1/sqrt(d_k).
  f.def("attention", [](const hg::Tensor& q, const hg::Tensor& k, const hg::Tensor& v,
                        std::optional<hg::Tensor> attn_mask, bool is_causal, std::optional<double> scale,
                        const std::string& path) {
    hg::AttentionOptions opts;
    opts.scale = scale;
    opts.causal = is_causal;
    opts.mask = attn_mask.value_or(hg::Tensor());
    opts.path = hg::attention_path_named(path);
    return hg::attention(q, k, v, opts);
  }, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("attn_mask").none(), nb::arg("is_causal"),
     nb::arg("scale").none(), nb::arg("path") = "automatic", nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace hgpy
