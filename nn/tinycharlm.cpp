// nn/tinycharlm.cpp — the attention-only TinyCharLM of "What Attention Computes".
//
// The forward, for tokens x (B, T) and E = token_emb.weight (V, d), H heads of d_h = d / H:
//   h⁰ = E[x] (+ P[0..T) for learned / sinusoidal positions)                    (B, T, d)
//   block ℓ:  [q k v] = h W_qkvᵀ (+ b_qkv)    rows [0, d) of W_qkv are W_q, [d, 2d) W_k, [2d, 3d) W_v
//             q, k, v → view (B, T, H, d_h) → transpose (B, H, T, d_h);  rope: q, k ← R q, R k
//             o = softmax(q kᵀ / √d_h + causal mask (+ ALiBi bias)) v            (B, H, T, d_h)
//             o → transpose (B, T, H, d_h) → reshape (B, T, d)   (head h in columns h·d_h..)
//             hˡ = hˡ⁻¹ + o W_projᵀ (+ b_proj)                                  (B, T, d)
//   z = h^L Eᵀ                                                                  (B, T, V)
// Every step is an op with its own recorded backward (matmul, attention, rope, embedding, the
// views); no new derivative is needed here. Ablating a head multiplies its slice of o by 0 before
// proj, which is the same as zeroing its d_h columns of W_proj (o W_projᵀ = Σ_h o_h W_proj[:, h]ᵀ).
// The learned positions P[0..T) are the first T rows of pos_emb.weight, taken as a slice: the
// rows embedding(P, arange(T)) would gather, with the same gradient, and no index tensor to make
// (and, on a GPU, to upload) every forward.
//
// Devices: the forward runs on the tokens' device, which must be the parameters'. Constants (the
// sinusoidal table, ALiBi's bias) are built on that device once per (T, dtype, device) and kept;
// the causal mask is attention's own rule (no mask tensor), and RoPE's angles are rope's business.
// So a training step on a GPU makes no host-to-device copy of its own.
#include "nn/tinycharlm.h"

#include <cmath>

#include "engine/error.h"
#include "engine/tape.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/matmul.h"
#include "ops/positional.h"

namespace hg::nn {

Block::Block(int64_t d, bool bias, Generator& gen, DType dtype) {
  qkv = register_module("qkv", std::make_shared<Linear>(d, 3 * d, bias, gen, dtype));
  proj = register_module("proj", std::make_shared<Linear>(d, d, bias, gen, dtype));
}

namespace {

const char* kOp = "TinyCharLM";

void check_config(const TinyCharLMConfig& c) {
  if (c.vocab < 1 || c.d < 1 || c.heads < 1 || c.blocks < 0)
    fail(kOp, "vocab {}, d {}, heads {} must be at least 1 and blocks {} at least 0", c.vocab, c.d, c.heads, c.blocks);
  if (c.d % c.heads != 0)
    fail(kOp, "d = {} is not divisible by heads = {}; each head needs d_h = d / H dimensions", c.d, c.heads);
  if (c.pos != "rope" && c.pos != "alibi" && c.pos != "learned" && c.pos != "sinusoidal" && c.pos != "none")
    fail(kOp, "unknown positional scheme '{}'; use rope, alibi, learned, sinusoidal or none", c.pos);
  if (c.pos == "rope" && (c.d / c.heads) % 2 != 0)
    fail(kOp, "rope rotates pairs of coordinates, so d_h = d / H = {} / {} must be even", c.d, c.heads);
  if (c.pos == "sinusoidal" && c.d % 2 != 0) fail(kOp, "sinusoidal positions need an even d, got {}", c.d);
  if ((c.pos == "learned" || c.pos == "sinusoidal") && c.max_len < 1)
    fail(kOp, "max_len must be at least 1 for pos = {}, got {}", c.pos, c.max_len);
  if (!is_floating(c.dtype)) fail(kOp, "dtype {} must be f32 or f64", dtype_name(c.dtype));
}

// y = x Wᵀ (+ b), as Linear::forward computes it, on tensors that may be stand-ins for the
// module's parameters (the functional forward used by gradchecks).
Tensor linear(const Tensor& x, const Tensor& W, const Tensor& b) {
  Tensor y = matmul(x, W.transpose(0, 1));
  return b.defined() ? add(y, b) : y;
}

}  // namespace

TinyCharLM::TinyCharLM(const TinyCharLMConfig& cfg, Generator& gen) : cfg_(cfg) {
  check_config(cfg_);
  // Registration order = PyTorch's attribute order, so named_parameters() lists the names of
  // d2l's module in its order: token_emb, pos_emb (learned only), blks.<i>.{qkv,proj}.
  token_emb = register_module("token_emb", std::make_shared<Embedding>(cfg_.vocab, cfg_.d, gen, cfg_.dtype));
  if (cfg_.pos == "learned")
    pos_emb = register_module("pos_emb", std::make_shared<Embedding>(cfg_.max_len, cfg_.d, gen, cfg_.dtype));
  for (int64_t i = 0; i < cfg_.blocks; ++i)
    blks.push_back(register_module("blks." + std::to_string(i), std::make_shared<Block>(cfg_.d, cfg_.bias, gen, cfg_.dtype)));
  ablated_.assign(static_cast<size_t>(cfg_.blocks), std::vector<bool>(static_cast<size_t>(cfg_.heads), false));
}

void TinyCharLM::on_moved() {
  cfg_.dtype = token_emb->weight.dtype();
  std::lock_guard<std::mutex> lock(constants_mu_);
  constants_.clear();  // frees the old device's copies; the next forward builds what it needs
}

Tensor TinyCharLM::constant(Constant kind, int64_t T, DType dtype, Device device) const {
  constexpr size_t kMaxKept = 16;  // a few sequence lengths x dtypes x devices; beyond, start over
  std::lock_guard<std::mutex> lock(constants_mu_);
  const auto key = std::make_tuple(kind, T, dtype, device);
  if (auto it = constants_.find(key); it != constants_.end()) return it->second;
  if (constants_.size() >= kMaxKept) constants_.clear();
  const Tensor c = kind == Constant::alibi ? alibi_bias(cfg_.heads, T, dtype, device)
                                           : sinusoidal_positions(T, cfg_.d, dtype, device);
  constants_.emplace(key, c);
  return c;
}

// The parameters run() reads, resolved by name from a list aligned with named_parameters().
struct TinyCharLM::Weights {
  Tensor tok, pos;
  struct Blk {
    Tensor qkv_w, qkv_b, proj_w, proj_b;
  };
  std::vector<Blk> blks;
};

TinyCharLM::Weights TinyCharLM::resolve(const std::vector<Tensor>& params) const {
  const NamedTensors named = named_parameters();
  if (params.size() != named.size())
    fail(kOp, "forward was given {} parameter tensors but the model has {} (in named_parameters() order)",
         params.size(), named.size());
  auto get = [&](const std::string& name) -> Tensor {
    for (size_t i = 0; i < named.size(); ++i)
      if (named[i].first == name) {
        if (params[i].shape() != named[i].second.shape())
          fail(kOp, "parameter {} was given with shape {} but has shape {}", name, shape_str(params[i].shape()),
               shape_str(named[i].second.shape()));
        return params[i];
      }
    return Tensor();
  };
  Weights w;
  w.tok = get("token_emb.weight");
  w.pos = get("pos_emb.weight");
  for (size_t i = 0; i < blks.size(); ++i) {
    const std::string p = "blks." + std::to_string(i) + ".";
    w.blks.push_back({get(p + "qkv.weight"), get(p + "qkv.bias"), get(p + "proj.weight"), get(p + "proj.bias")});
  }
  return w;
}

Tensor TinyCharLM::forward(const Tensor& tokens) const { return run(tokens, nullptr); }

Tensor TinyCharLM::forward(const Tensor& tokens, const std::vector<Tensor>& params) const {
  return run_with(tokens, resolve(params), nullptr);
}

std::vector<Tensor> TinyCharLM::attention_weights(const Tensor& tokens) const {
  NoGradGuard ng;
  std::vector<Tensor> maps;
  run(tokens, &maps);
  return maps;
}

void TinyCharLM::ablate_head(int64_t block, int64_t head, bool on) {
  if (block < 0 || block >= cfg_.blocks || head < 0 || head >= cfg_.heads)
    fail("ablate_head", "block {} head {} does not exist: the model has {} blocks of {} heads (0-based)", block, head,
         cfg_.blocks, cfg_.heads);
  ablated_[static_cast<size_t>(block)][static_cast<size_t>(head)] = on;
}

void TinyCharLM::clear_ablations() {
  for (auto& b : ablated_) b.assign(b.size(), false);
}

bool TinyCharLM::is_ablated(int64_t block, int64_t head) const {
  if (block < 0 || block >= cfg_.blocks || head < 0 || head >= cfg_.heads)
    fail("is_ablated", "block {} head {} does not exist: the model has {} blocks of {} heads (0-based)", block, head,
         cfg_.blocks, cfg_.heads);
  return ablated_[static_cast<size_t>(block)][static_cast<size_t>(head)];
}

Tensor TinyCharLM::run(const Tensor& tokens, std::vector<Tensor>* maps) const {
  return run_with(tokens, resolve(parameters()), maps);
}

Tensor TinyCharLM::run_with(const Tensor& tokens, const Weights& w, std::vector<Tensor>* maps) const {
  if (!tokens.defined() || tokens.dtype() != DType::i64 || tokens.dim() != 2)
    fail(kOp, "tokens {} must be i64 (B, T) token ids", tokens.defined() ? tokens.describe() : "(undefined)");
  const int64_t B = tokens.size(0), T = tokens.size(1), d = cfg_.d, H = cfg_.heads, d_h = d / H;
  if (T < 1) fail(kOp, "tokens {} hold no positions (T = 0)", tokens.describe());
  const Device dev = w.tok.device();
  const DType dt = w.tok.dtype();
  if (tokens.device() != dev)
    fail(kOp, "tokens {} are on {} but the model's parameters are on {}; move the tokens with .to(Device::{}) "
         "(or the model with model.to(Device::{}))", tokens.describe(), device_name(tokens.device()),
         device_name(dev), device_name(dev), device_name(tokens.device()));
  if (cfg_.pos == "learned" && T > cfg_.max_len)
    fail(kOp, "tokens {} have T = {} positions but the learned table covers max_len = {}; build the model with "
         "max_len >= {}", tokens.describe(), T, cfg_.max_len, T);

  Tensor h = embedding(w.tok, tokens);  // (B, T, d)
  if (cfg_.pos == "learned") {
    h = add(h, w.pos.slice(0, 0, T));  // + P[0..T) (T, d), broadcast over B
  } else if (cfg_.pos == "sinusoidal") {
    h = add(h, constant(Constant::sinusoidal, T, dt, dev));  // + (T, d), a constant
  }
  // merged_output: o comes laid out (B, T, H, d_h), so the heads' merge below is a view, not a copy.
  AttentionOptions opts{.causal = true, .merged_output = true};
  if (cfg_.pos == "alibi") opts.mask = constant(Constant::alibi, T, dt, dev);  // (H, T, T), −inf above the diagonal

  for (size_t l = 0; l < w.blks.size(); ++l) {
    const Weights::Blk& b = w.blks[l];
    Tensor qkv = linear(h, b.qkv_w, b.qkv_b);  // (B, T, 3d)
    const bool rope = cfg_.pos == "rope";
    Tensor o;  // (B, H, T, d_h)
    if (maps) {
      // The heads (B, H, T, d_h) of q, k, v, with RoPE on q and k: split of qkv's (B, T, 3, H, d_h)
      // view, transposes and rope, in one pass (ops/positional.h).
      const auto [q, k, v] = qkv_heads(qkv, H, rope);
      // attention_trace runs the forward's very own kernel and returns its weights P (the zero dO
      // only feeds the backward half of the trace, which is discarded).
      AttentionTrace t = attention_trace(q, k, v, zeros({B, H, T, d_h}, q.dtype(), q.device()), opts);
      maps->push_back(t.P);  // (B, H, T, T)
      o = t.O;
    } else {
      // The same heads and attention over them as one op (ops/attention.h): the fused kernels
      // rotate each head's q and k as they read it, and the backward writes qkv's gradient.
      o = attention_qkv(qkv, H, rope, opts);
    }
    const std::vector<bool>& off = ablated_[l];
    bool any = false;
    for (bool a : off) any = any || a;
    if (any) {
      std::vector<double> keep(static_cast<size_t>(H));
      for (int64_t i = 0; i < H; ++i) keep[static_cast<size_t>(i)] = off[static_cast<size_t>(i)] ? 0.0 : 1.0;
      o = mul(o, tensor(keep, {1, H, 1, 1}, o.dtype()).to(o.device()));  // zero the ablated heads' outputs
    }
    Tensor merged = o.transpose(1, 2).reshape({B, T, d});  // (B, T, d), head h in columns [h·d_h, (h+1)·d_h)
    h = add(h, linear(merged, b.proj_w, b.proj_b));         // the residual stream
  }
  return matmul(h, w.tok.transpose(0, 1));  // (B, T, V) = h Eᵀ, the tied head
}

}  // namespace hg::nn
