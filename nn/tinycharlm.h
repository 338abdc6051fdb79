// nn/tinycharlm.h — the attention-only TinyCharLM of "What Attention Computes".
//
// token embedding E (V, d) -> blocks -> logits H Eᵀ (tied head). Each block: a fused qkv
// Linear(d, 3d) and a proj Linear(d, d) (no bias unless asked), causal multi-head attention,
// output added to the residual stream. No feed-forward network, no normalisation.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "nn/module.h"

namespace hg::nn {

struct TinyCharLMConfig {
  int64_t vocab = 64;
  int64_t d = 128;
  int64_t heads = 4;
  int64_t blocks = 2;
  std::string pos = "rope";  // rope | alibi | learned | sinusoidal | none
  bool bias = false;
  int64_t max_len = 256;      // positions the learned / sinusoidal tables cover
  DType dtype = DType::f32;
};

class Block : public Module {
 public:
  Block(int64_t d, bool bias, Generator& gen, DType dtype);
  std::shared_ptr<Linear> qkv, proj;
};

class TinyCharLM : public Module {
 public:
  TinyCharLM(const TinyCharLMConfig& cfg, Generator& gen);
  const TinyCharLMConfig& config() const { return cfg_; }

  // tokens i64 (B, T) -> logits (B, T, V). The tokens must be on the model's device (to(Device)
  // moves the model); every constant the forward needs is made on that device.
  Tensor forward(const Tensor& tokens) const;
  // The same forward with `params` (aligned with named_parameters(), same shapes, on the tokens'
  // device) standing in for the model's own parameters: gradients flow to them. For gradchecks
  // and functional use.
  Tensor forward(const Tensor& tokens, const std::vector<Tensor>& params) const;
  // Every block's attention weights (B, H, T, T), computed without recording.
  std::vector<Tensor> attention_weights(const Tensor& tokens) const;
  // Zero a head's output (its columns of proj's input) in every later forward; on = false restores it.
  void ablate_head(int64_t block, int64_t head, bool on = true);
  void clear_ablations();
  bool is_ablated(int64_t block, int64_t head) const;

  std::shared_ptr<Embedding> token_emb;
  std::shared_ptr<Embedding> pos_emb;  // only with pos = "learned"
  std::vector<std::shared_ptr<Block>> blks;

 protected:
  void on_moved() override;  // after to(): the configuration's dtype follows the parameters

 private:
  struct Weights;
  Weights resolve(const std::vector<Tensor>& params) const;
  Tensor run(const Tensor& tokens, std::vector<Tensor>* maps) const;
  Tensor run_with(const Tensor& tokens, const Weights& w, std::vector<Tensor>* maps) const;
  // The sinusoidal table (T, d) or ALiBi's bias (H, T, T) in `dtype` on `device`, built on the
  // first forward that needs it and kept (a handful of (T, dtype, device) entries at most).
  enum class Constant { sinusoidal, alibi };
  Tensor constant(Constant kind, int64_t T, DType dtype, Device device) const;

  TinyCharLMConfig cfg_;
  std::vector<std::vector<bool>> ablated_;  // [block][head]
  mutable std::mutex constants_mu_;  // forward is const and may run on several threads
  mutable std::map<std::tuple<Constant, int64_t, DType, Device>, Tensor> constants_;
};

}  // namespace hg::nn
