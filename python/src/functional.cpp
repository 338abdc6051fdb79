// python/src/functional.cpp — hg.nn.functional's losses, attention (with its trace),
// normalization and activations over the library's ops.
#include "bind.h"

namespace hgpy {

namespace {

hg::AttentionOptions attention_options(std::optional<hg::Tensor> attn_mask, bool is_causal,
                                       std::optional<double> scale, const std::string& path) {
  hg::AttentionOptions opts;
  opts.scale = scale;
  opts.causal = is_causal;
  opts.mask = attn_mask.value_or(hg::Tensor());
  opts.path = hg::attention_path_named(path);
  return opts;
}

}  // namespace

void bind_functional(nb::module_& m) {
  nb::module_ f = m.def_submodule("functional", "The library's ops behind hg.nn.functional");
  f.def("cross_entropy", [](const hg::Tensor& logits, const hg::Tensor& targets, int64_t ignore_index) {
    return hg::cross_entropy(logits, targets, ignore_index);
  }, nb::arg("logits"), nb::arg("targets"), nb::arg("ignore_index") = -100);

  // attn_mask: None, boolean (True = may attend) or additive float; scale None = 1/sqrt(d_k).
  f.def("attention", [](const hg::Tensor& q, const hg::Tensor& k, const hg::Tensor& v,
                        std::optional<hg::Tensor> attn_mask, bool is_causal, std::optional<double> scale,
                        const std::string& path) {
    return hg::attention(q, k, v, attention_options(attn_mask, is_causal, scale, path));
  }, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("attn_mask").none(), nb::arg("is_causal"),
     nb::arg("scale").none(), nb::arg("path") = "automatic", nb::call_guard<ReleaseGil>());

  // qkv (B, T, 3d) cut into heads, RoPE on q and k when rotate, and attention over them, as one op.
  f.def("attention_qkv", [](const hg::Tensor& qkv, int64_t heads, bool rotate, std::optional<hg::Tensor> attn_mask,
                            bool is_causal, std::optional<double> scale, const std::string& path, double base) {
    return hg::attention_qkv(qkv, heads, rotate, attention_options(attn_mask, is_causal, scale, path), base);
  }, nb::arg("qkv"), nb::arg("num_heads"), nb::arg("rotate"), nb::arg("attn_mask").none(), nb::arg("is_causal"),
     nb::arg("scale").none(), nb::arg("path"), nb::arg("base"), nb::call_guard<ReleaseGil>());

  nb::class_<hg::AttentionTrace>(f, "AttentionTrace", "Every intermediate of attention's forward and hand-written backward")
      .def_ro("S", &hg::AttentionTrace::S, "scores after scale and mask (−inf where hidden)")
      .def_ro("P", &hg::AttentionTrace::P, "weights softmax(S)")
      .def_ro("O", &hg::AttentionTrace::O, "outputs P V")
      .def_ro("dO", &hg::AttentionTrace::dO, "the given output gradient")
      .def_ro("dP", &hg::AttentionTrace::dP, "dO Vᵀ")
      .def_ro("D", &hg::AttentionTrace::D, "rowsum(P ∘ dP)")
      .def_ro("dS", &hg::AttentionTrace::dS, "P ∘ (dP − D)")
      .def_ro("dQ", &hg::AttentionTrace::dQ, "dS K · scale")
      .def_ro("dK", &hg::AttentionTrace::dK, "dSᵀ Q · scale")
      .def_ro("dV", &hg::AttentionTrace::dV, "Pᵀ dO")
      .def_ro("scale", &hg::AttentionTrace::scale);
  f.def("attention_trace", [](const hg::Tensor& q, const hg::Tensor& k, const hg::Tensor& v, const hg::Tensor& dO,
                              std::optional<hg::Tensor> attn_mask, bool is_causal, std::optional<double> scale,
                              const std::string& path) {
    return hg::attention_trace(q, k, v, dO, attention_options(attn_mask, is_causal, scale, path));
  }, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("grad_output"), nb::arg("attn_mask").none(),
     nb::arg("is_causal"), nb::arg("scale").none(), nb::arg("path") = "automatic",
     nb::call_guard<ReleaseGil>());

  f.def("softmax_jacobian", [](const hg::Tensor& p) { return hg::softmax_jacobian(p); }, nb::arg("p"));
  f.def("embedding", [](const hg::Tensor& weight, const hg::Tensor& indices) { return hg::embedding(weight, indices); },
        nb::arg("weight"), nb::arg("indices"));
  f.def("rope", [](const hg::Tensor& x, int64_t start, double base) { return hg::rope_at(x, start, base); },
        nb::arg("x"), nb::arg("start") = 0, nb::arg("base") = 10000.0);
  f.def("gelu", [](const hg::Tensor& x) { return hg::gelu(x); }, nb::arg("x"));
  f.def("softplus", [](const hg::Tensor& x) { return hg::softplus(x); }, nb::arg("x"));

  // weight and bias None: γ = 1, β = 0; rms_norm's eps None: the dtype's machine epsilon.
  f.def("layer_norm", [](const hg::Tensor& x, const hg::Shape& normalized_shape, std::optional<hg::Tensor> weight,
                         std::optional<hg::Tensor> bias, double eps) {
    return hg::layer_norm(x, normalized_shape, weight.value_or(hg::Tensor()), bias.value_or(hg::Tensor()), eps);
  }, nb::arg("x"), nb::arg("normalized_shape"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"));
  f.def("rms_norm", [](const hg::Tensor& x, const hg::Shape& normalized_shape, std::optional<hg::Tensor> weight,
                       std::optional<double> eps) {
    return hg::rms_norm(x, normalized_shape, weight.value_or(hg::Tensor()), eps);
  }, nb::arg("x"), nb::arg("normalized_shape"), nb::arg("weight").none(), nb::arg("eps").none());
}

}  // namespace hgpy
