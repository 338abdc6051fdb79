// ops/attention_options.h — how attention() is asked to compute: the options a call passes
// (ops/attention.h) and its paths, apart so that the attention family's shared header
// (ops/attention_paths.h) reads them without the public op's header.
#pragma once
#include <optional>
#include <string_view>

#include "engine/tensor.h"

namespace hg {

// Written with designated initializers: attention(q, k, v, {.causal = true, .mask = pad}). Every
// member has a default initializer, so leaving some out does not trip -Wmissing-field-initializers.
// How the op computes (the numbers agree to rounding; tests hold every path to the others):
//   materialized  S and P in full, (..., Tq, Tk): P is kept for the backward. Fastest at short T.
//   tiled         FlashAttention-2's algorithm: an online softmax over key tiles, keeping only O
//                 and the row log-sum-exp L; the backward recomputes each tile's P. Memory linear
//                 in T, and key tiles wholly above the causal diagonal are never visited.
//   automatic     the faster of the two for the shape, and tiled whenever the (Tq, Tk) blocks of
//                 all heads would not fit the memory threshold (ops/attention_problem.cpp).
enum class AttentionPath { automatic, materialized, tiled };
const char* attention_path_name(AttentionPath p);  // "automatic", "materialized", "tiled"
// The path of that name, or an Error listing the three.
AttentionPath attention_path_named(std::string_view name);

struct AttentionOptions {
  std::optional<double> scale{};  // default 1/sqrt(d_k); set to 1.0 for "no scale"
  bool causal = false;
  Tensor mask{};                  // optional: b8 (true = may attend) or float additive
  AttentionPath path = AttentionPath::automatic;
  // A layout hint for O (batch[0], batch[1], ..., Tq, dv) — the values are the same either way: lay
  // it out as (batch[0], Tq, batch[1], ..., dv), so that with q (B, H, T, d_h) the heads' merge
  // o.transpose(1, 2).reshape({B, T, H·d_h}) is a view instead of a copy (FlashAttention stores
  // its output so too). Honoured by the CPU's materialized path with two or more batch dimensions;
  // elsewhere O is contiguous as usual.
  bool merged_output = false;
};

}  // namespace hg
