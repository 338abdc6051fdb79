// Gradcheck cases for ops/attention.h: the "attention" node with each kind of mask, scale and
// shape, on the materialized and the tiled path. Gradients flow to Q, K and V; a mask is passed as
// a fourth input — a constant that does not require grad (gradcheck holds it fixed and moves it to
// the device checked), or a learnable additive bias that does, whose gradient is checked too.
#include <limits>
#include <string>

#include "cases/gradcheck_cases.h"

namespace hg::cases {

namespace {

// Key padding (B, 1, 1, T), true = a real token. Left padding puts the pads first.
Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t T, bool left) {
  std::vector<bool> m;
  for (int64_t len : lengths)
    for (int64_t j = 0; j < T; ++j) m.push_back(left ? j >= T - len : j < len);
  return bool_tensor(m, {static_cast<int64_t>(lengths.size()), 1, 1, T});
}

// causal & padding as one boolean (B, 1, T, T) mask.
Tensor combined_mask(const std::vector<int64_t>& lengths, int64_t T, bool left) {
  std::vector<bool> m;
  for (int64_t len : lengths)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) m.push_back(j <= i && (left ? j >= T - len : j < len));
  return bool_tensor(m, {static_cast<int64_t>(lengths.size()), 1, T, T});
}

// The cases of one path: materialized (named as before) or tiled (", tiled").
void add_path_cases(std::vector<GradcheckCase>& out, Generator& gen, AttentionPath path) {
  using V = std::vector<Tensor>;
  const std::string tag = path == AttentionPath::tiled ? ", tiled" : "";
  auto qkv = [&](const Shape& q, const Shape& k, const Shape& v) { return V{leaf(q, gen), leaf(k, gen), leaf(v, gen)}; };
  auto qkv_mask = [&](const Shape& q, const Shape& k, const Shape& v, const Tensor& mask) {
    V x = qkv(q, k, v);
    x.push_back(mask);
    return x;
  };
  auto with = [path](AttentionOptions o) {
    o.path = path;
    return o;
  };
  out.push_back({"attention", "no mask (2, 4, 3)" + tag, [=](const V& x) { return attention(x[0], x[1], x[2], with({})); },
                 qkv({2, 4, 3}, {2, 4, 3}, {2, 4, 3})});
  out.push_back({"attention", "causal (4, 3)" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.causal = true})); },
                 qkv({4, 3}, {4, 3}, {4, 2})});
  out.push_back({"attention", "causal, no scale (scale 1)" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.scale = 1.0, .causal = true})); },
                 qkv({4, 3}, {4, 3}, {4, 3})});
  auto masked = [=](const V& x) { return attention(x[0], x[1], x[2], with({.mask = x[3]})); };
  Tensor pad = padding_mask({4, 2}, 4, /*left=*/false);
  out.push_back({"attention", "bool padding (B, 1, 1, T), 2 heads" + tag, masked,
                 qkv_mask({2, 2, 4, 2}, {2, 2, 4, 2}, {2, 2, 4, 2}, pad)});
  out.push_back({"attention", "causal + padding (B, 1, 1, T)" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.causal = true, .mask = x[3]})); },
                 qkv_mask({2, 2, 4, 2}, {2, 2, 4, 2}, {2, 2, 4, 2}, pad)});
  Tensor combined = combined_mask({4, 2}, 4, /*left=*/true);  // left padding: fully masked early rows
  out.push_back({"attention", "combined (B, 1, T, T), left-padded" + tag, masked,
                 qkv_mask({2, 2, 4, 2}, {2, 2, 4, 2}, {2, 2, 4, 2}, combined)});
  const double h = -std::numeric_limits<double>::infinity();
  Tensor additive = tensor({0, h, -1.5, h, 0.5, 0, h, 0.25, 0, 0, 0, 0, 1, h, -2, 0}, {4, 4}, DType::f64);
  out.push_back({"attention", "additive float mask (T, T)" + tag, masked,
                 qkv_mask({2, 4, 3}, {2, 4, 3}, {2, 4, 2}, additive)});
  // A learnable additive bias: the mask requires grad and gets dS summed to its shape.
  out.push_back({"attention", "learnable additive bias (T, T), −inf entries" + tag, masked,
                 qkv_mask({2, 4, 3}, {2, 4, 3}, {2, 4, 2}, additive.clone().requires_grad_())});
  out.push_back({"attention", "learnable bias (H, 1, T) + causal" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.causal = true, .mask = x[3]})); },
                 qkv_mask({2, 2, 4, 2}, {2, 2, 4, 2}, {2, 2, 4, 2}, leaf({2, 1, 4}, gen))});
  out.push_back({"attention", "Tq 3 != Tk 5, causal" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.causal = true})); },
                 qkv({2, 3, 4}, {2, 5, 4}, {2, 5, 2})});
  out.push_back({"attention", "broadcast K, V over heads (2, 1, T, d)" + tag,
                 [=](const V& x) { return attention(x[0], x[1], x[2], with({.scale = 0.7})); },
                 qkv({2, 2, 3, 2}, {2, 1, 3, 2}, {1, 3, 2})});
}

// attention_qkv: qkv_heads and attention as one node. The fused CPU kernels (RoPE on the way in,
// dqkv written from the backward) with and without the rotation, over several row blocks, on a
// transposed view; and the cases it hands to the composition (a mask, the tiled path).
void add_attention_qkv_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  out.push_back({"attention_qkv", "(2, 5, 3·8) into 2 heads, RoPE, causal",
                 [](const V& x) { return attention_qkv(x[0], 2, true, {.causal = true}, 10.0); }, {leaf({2, 5, 24}, gen)}});
  out.push_back({"attention_qkv", "(1, 4, 3·4) one head, no rotation, no mask",
                 [](const V& x) { return attention_qkv(x[0], 1, false); }, {leaf({1, 4, 12}, gen)}});
  out.push_back({"attention_qkv", "a (T, B, 3d) tensor's transposed view, 3 heads, merged_output",
                 [](const V& x) {
                   return attention_qkv(x[0].transpose(0, 1), 3, true, {.causal = true, .merged_output = true}, 10.0)
                       .transpose(1, 2)
                       .reshape({2, 4, 6});
                 },
                 {leaf({4, 2, 18}, gen)}});
  out.push_back({"attention_qkv", "T 70, RoPE, causal: three row blocks",
                 [](const V& x) { return attention_qkv(x[0], 1, true, {.causal = true}, 100.0); }, {leaf({1, 70, 12}, gen)}});
  out.push_back({"attention_qkv", "a padding mask: the composition",
                 [](const V& x) { return attention_qkv(x[0], 2, true, {.causal = true, .mask = x[1]}, 10.0); },
                 {leaf({2, 4, 12}, gen), padding_mask({4, 2}, 4, /*left=*/false)}});
  out.push_back({"attention_qkv", "the tiled path: the composition",
                 [](const V& x) { return attention_qkv(x[0], 2, true, {.causal = true, .path = AttentionPath::tiled}, 10.0); },
                 {leaf({2, 5, 12}, gen)}});
}

}  // namespace

void add_attention_cases(std::vector<GradcheckCase>& out, Generator& gen) {
  using V = std::vector<Tensor>;
  add_path_cases(out, gen, AttentionPath::materialized);
  add_path_cases(out, gen, AttentionPath::tiled);
  // Across tile boundaries (128 rows and 128 keys a tile): 130 queries and keys, causal, a learnable
  // bias per key (1, T), whose gradient sums dS over the rows of both query tiles.
  out.push_back({"attention", "T 130 across two tiles, causal + learnable bias (1, T), tiled",
                 [](const V& x) { return attention(x[0], x[1], x[2], {.causal = true, .mask = x[3], .path = AttentionPath::tiled}); },
                 {leaf({1, 130, 2}, gen), leaf({1, 130, 2}, gen), leaf({1, 130, 2}, gen), leaf({1, 130}, gen)}});
  // The fused CPU kernels' causal row blocks (32 queries): three blocks, the last short, and Tq < Tk
  // (keys no query sees get zero gradient); and merged_output, O laid out (B, T, H, d_v).
  out.push_back({"attention", "T 70, causal: three row blocks",
                 [](const V& x) { return attention(x[0], x[1], x[2], {.causal = true, .path = AttentionPath::materialized}); },
                 {leaf({1, 70, 2}, gen), leaf({1, 70, 2}, gen), leaf({1, 70, 2}, gen)}});
  out.push_back({"attention", "Tq 40 < Tk 45, causal: two row blocks",
                 [](const V& x) { return attention(x[0], x[1], x[2], {.causal = true, .path = AttentionPath::materialized}); },
                 {leaf({1, 40, 2}, gen), leaf({1, 45, 2}, gen), leaf({1, 45, 3}, gen)}});
  out.push_back({"attention", "merged_output (2, 2, 5, 3), causal",
                 [](const V& x) {
                   return attention(x[0], x[1], x[2], {.causal = true, .merged_output = true}).transpose(1, 2).reshape({2, 5, 6});
                 },
                 {leaf({2, 2, 5, 3}, gen), leaf({2, 2, 5, 3}, gen), leaf({2, 2, 5, 3}, gen)}});
  add_attention_qkv_cases(out, gen);
}

}  // namespace hg::cases
