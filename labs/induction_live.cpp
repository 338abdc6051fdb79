// labs/induction_live.cpp — see induction_live.h.
#include "induction_live.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "induction_lab.h"
#include "induction_why.h"
#include "kit.h"
#include "nn/checkpoint.h"
#include "nn/data.h"

namespace hg::lab::induction {

namespace {

using nlohmann::json;

// The whole number from lo to hi at `key` of the request's object `o`.
int64_t whole(const json& o, const char* key, int64_t lo, int64_t hi) {
  return whole_number_field(o.value(key, json()), "induction_live", fmt::format("'{}'", key), lo, hi);
}

// The request's part `key` (its "sequence", "study" or "batch"), which must be an object.
const json& part(const json& q, const char* key) {
  if (!q[key].is_object()) fail("induction_live", "'{}' must be an object, got {}", key, q[key].dump());
  return q[key];
}

// The request's "tokens": 2 to 257 whole numbers below the vocabulary size.
std::vector<int64_t> tokens_of(const json& s, int64_t vocab) {
  if (!s.contains("tokens") || !s["tokens"].is_array() || s["tokens"].size() < 2 || s["tokens"].size() > 257)
    fail("induction_live", "'tokens' must be a list of 2 to 257 tokens");
  std::vector<int64_t> tokens;
  for (const json& t : s["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab)
      fail("induction_live", "each token must be a whole number from 0 to {}, got {}", vocab - 1, t.dump());
    tokens.push_back(t.get<int64_t>());
  }
  return tokens;
}

// Rows of a (R, C) tensor as nested lists of doubles.
json rows_of(const Tensor& t) {
  const std::vector<double> v = t.to(DType::f64).contiguous().to_vector();
  const int64_t R = t.size(0), C = t.size(1);
  json rows = json::array();
  for (int64_t r = 0; r < R; ++r)
    rows.push_back(std::vector<double>(v.begin() + r * C, v.begin() + (r + 1) * C));
  return rows;
}

// Every head's QK circuit E W_qᵀ W_k Eᵀ / √d_h (the score a query token gives a key token at offset
// 0, where RoPE's rotation R(j − i) is the identity) and every block's OV copying matrix
// (ov_copy_matrix), each with the fraction of rows whose largest entry is on the diagonal.
json circuits(const nn::TinyCharLM& model) {
  const nn::TinyCharLMConfig& cfg = model.config();
  const int64_t d = cfg.d, H = cfg.heads, d_h = d / H;
  const Tensor E = model.token_emb->weight.detach().to(DType::f64);
  json qk = json::array(), qk_diag = json::array(), ov = json::array(), ov_diag = json::array();
  for (int64_t b = 0; b < cfg.blocks; ++b) {
    const Tensor W = model.blks[static_cast<size_t>(b)]->qkv->weight.detach().to(DType::f64);  // (3d, d)
    json heads = json::array(), diags = json::array();
    for (int64_t h = 0; h < H; ++h) {
      const Tensor q = matmul(E, W.slice(0, h * d_h, (h + 1) * d_h).transpose(0, 1));          // (V, d_h)
      const Tensor k = matmul(E, W.slice(0, d + h * d_h, d + (h + 1) * d_h).transpose(0, 1));  // (V, d_h)
      const Tensor C = mul(matmul(q, k.transpose(0, 1)), 1.0 / std::sqrt(static_cast<double>(d_h)));
      heads.push_back(rows_of(C));
      diags.push_back(diagonal_fraction(C));
    }
    qk.push_back(std::move(heads));
    qk_diag.push_back(std::move(diags));
    const Tensor C = ov_copy_matrix(model, b);
    ov.push_back(rows_of(C));
    ov_diag.push_back(diagonal_fraction(C));
  }
  return {{"qk", std::move(qk)}, {"qk_diagonal", std::move(qk_diag)}, {"ov", std::move(ov)},
          {"ov_diagonal", std::move(ov_diag)},
          {"rope", "RoPE rotates queries and keys by their positions before the inner product, so the score of query "
                   "position i on key position j holds the relative rotation R(j − i): e_aᵀ W_qᵀ R(j − i) W_k e_b / √d_h. "
                   "These maps are that score at offset 0, where R(0) is the identity. Values are not rotated: the OV "
                   "circuit is the same at every offset."}};
}

}  // namespace

InductionLive::InductionLive(std::span<const std::byte> safetensors) {
  Generator unused(0);  // the initial weights, all replaced by the file's
  model_ = std::make_unique<nn::TinyCharLM>(model_config(2), unused);
  model_->load_parameters(nn::load_safetensors(safetensors, "the page's model").tensors);
}

std::string InductionLive::answer(const std::string& request) {
  json out;
  try {
    const json q = json::parse(request);
    if (!q.is_object()) fail("induction_live", "the request must be a JSON object, got {}", q.dump());
    const nn::TinyCharLMConfig& cfg = model_->config();
    model_->clear_ablations();
    if (q.contains("ablate")) {
      if (!q["ablate"].is_array()) fail("induction_live", "'ablate' must be a list of [block, head] pairs");
      for (const json& bh : q["ablate"]) {
        if (!bh.is_array() || bh.size() != 2 || !bh[0].is_number_integer() || !bh[1].is_number_integer())
          fail("induction_live", "each of 'ablate' must be [block, head], got {}", bh.dump());
        const int64_t b = bh[0].get<int64_t>(), h = bh[1].get<int64_t>();
        if (b < 0 || b >= cfg.blocks || h < 0 || h >= cfg.heads)
          fail("induction_live", "no head [{}, {}]: the model has blocks 0 to {} and heads 0 to {}", b, h, cfg.blocks - 1,
               cfg.heads - 1);
        model_->ablate_head(b, h);
      }
    }
    NoGradGuard ng;
    if (q.contains("sequence")) {
      const json& s = part(q, "sequence");
      const int64_t lmax = whole(s, "Lmax", 1, 63), lmin = whole(s, "Lmin", 1, lmax);
      Generator gen(static_cast<uint64_t>(whole(s, "seed", 0, std::numeric_limits<int64_t>::max())));
      const nn::RepeatedBatch d = nn::repeated_batch(1, 64, cfg.vocab, lmin, lmax, gen);
      out = {{"tokens", d.tokens.select(0, 0).to_int_vector()}, {"L", d.lengths.to_int_vector()[0]}};
    } else if (q.contains("study")) {
      const json& s = part(q, "study");
      const std::vector<int64_t> tokens = tokens_of(s, cfg.vocab);
      const int64_t n = static_cast<int64_t>(tokens.size());
      const int64_t L = whole(s, "L", 1, n);
      const nn::RepeatedBatch d{index_tensor(tokens, {1, n}), index_tensor({L}, {1})};
      const Tensor x = d.tokens.slice(1, 0, n - 1), y = d.tokens.slice(1, 1, n);
      const Tensor logp = log_softmax(model_->forward(x).to(DType::f64), -1).select(0, 0);  // (T, V)
      const std::vector<int64_t> target = y.select(0, 0).to_int_vector();
      const std::vector<double> lp = logp.contiguous().to_vector();
      json loss = json::array(), predicted = json::array(), correct = json::array();
      for (int64_t t = 0; t < n - 1; ++t) {
        const auto row = lp.begin() + t * cfg.vocab;
        const int64_t best = std::max_element(row, row + cfg.vocab) - row;
        loss.push_back(-row[target[static_cast<size_t>(t)]]);
        predicted.push_back(best);
        correct.push_back(best == target[static_cast<size_t>(t)] ? 1 : 0);
      }
      json patterns = json::array();
      for (const Tensor& m : model_->attention_weights(x)) {  // (1, H, T, T) per block
        json heads = json::array();
        for (int64_t h = 0; h < m.size(1); ++h) heads.push_back(rows_of(m.select(0, 0).select(0, h)));
        patterns.push_back(std::move(heads));
      }
      const HeadScores hs = head_scores(*model_, d);
      out = {{"patterns", std::move(patterns)}, {"loss", std::move(loss)}, {"predicted", std::move(predicted)},
             {"correct", std::move(correct)}, {"prev", hs.prev}, {"induction", hs.induction}};
    } else if (q.contains("batch")) {
      const json& s = part(q, "batch");
      const int64_t lmax = whole(s, "Lmax", 1, 63), lmin = whole(s, "Lmin", 1, lmax);
      const int64_t n = whole(s, "n", 1, 4096);
      const int64_t from = s.contains("from") ? whole(s, "from", 0, n - 1) : 0;
      const int64_t count = s.contains("count") ? whole(s, "count", 1, n - from) : n - from;
      Generator gen(static_cast<uint64_t>(whole(s, "seed", 0, std::numeric_limits<int64_t>::max())));
      // The whole batch is drawn (as the lab draws it), then sequences [from, from + count) evaluated:
      // a page asks for it in pieces and weighs each mean by its count.
      const nn::RepeatedBatch all = nn::repeated_batch(n, 64, cfg.vocab, lmin, lmax, gen);
      const nn::RepeatedBatch d{all.tokens.slice(0, from, from + count).contiguous(),
                                all.lengths.slice(0, from, from + count).contiguous()};
      const HeadScores hs = head_scores(*model_, d);
      const BatchFigures f = batch_figures(*model_, d);
      const CopyEval& e = f.copy;
      out = {{"prev", hs.prev}, {"induction", hs.induction}, {"n_prev", hs.n_prev}, {"n_induction", hs.n_induction},
             {"first", e.first}, {"later", e.later}, {"acc", e.acc}, {"n_first", e.n_first}, {"n_later", e.n_later},
             {"acc_per_position", f.acc_per_position}, {"n", count}};
    } else if (q.contains("why")) {
      const json& s = part(q, "why");
      const std::vector<int64_t> tokens = tokens_of(s, cfg.vocab);
      const int64_t T = static_cast<int64_t>(tokens.size()) - 1;
      const int64_t t = whole(s, "position", 0, T - 1);
      WhyCheck check;
      if (s.contains("check")) {
        const json& c = s["check"];
        if (c.is_object() && c.contains("embedding")) {
          check.kind = WhyCheck::Kind::embedding;
          check.key = whole(c, "embedding", 0, T - 1);
        } else if (c.is_object() && c.contains("weight") && c["weight"].is_array() && c["weight"].size() == 4) {
          check.kind = WhyCheck::Kind::weight;
          const json& e = c["weight"];
          for (const json& v : e)
            if (!v.is_number_integer()) fail("induction_live", "'weight' must be [block, head, query, key], got {}", e.dump());
          check.block = e[0].get<int64_t>(), check.head = e[1].get<int64_t>();
          check.query = e[2].get<int64_t>(), check.key = e[3].get<int64_t>();
        } else {
          fail("induction_live", "'check' must be {{\"embedding\": position}} or {{\"weight\": [block, head, query, key]}}, "
               "got {}", c.dump());
        }
      }
      const Why why = why_prediction(*model_, tokens, t, check);
      json weights = json::array();
      for (const auto& block : why.weights) {
        json heads = json::array();
        for (const Tensor& g : block) heads.push_back(rows_of(g));
        weights.push_back(std::move(heads));
      }
      out = {{"loss", why.loss}, {"target", tokens[static_cast<size_t>(t + 1)]}, {"embedding", why.embedding},
             {"weights", std::move(weights)}};
      if (why.checked)
        out["check"] = {{"what", why.what}, {"analytic", why.analytic}, {"numeric", why.numeric}, {"eps", why.eps}};
    } else if (q.contains("circuits")) {
      out = circuits(*model_);
    } else {
      fail("induction_live", "a request holds 'sequence', 'study', 'batch', 'why' or 'circuits'");
    }
    out["ok"] = true;
  } catch (const std::exception& e) {
    out = {{"ok", false}, {"error", e.what()}};
  }
  model_->clear_ablations();
  return out.dump();
}

}  // namespace hg::lab::induction
