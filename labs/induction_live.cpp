// labs/induction_live.cpp — see induction_live.h.
#include "induction_live.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "induction_lab.h"
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

// Rows of a (R, C) tensor as nested lists of doubles.
json rows_of(const Tensor& t) {
  const std::vector<double> v = t.to(DType::f64).contiguous().to_vector();
  const int64_t R = t.size(0), C = t.size(1);
  json rows = json::array();
  for (int64_t r = 0; r < R; ++r)
    rows.push_back(std::vector<double>(v.begin() + r * C, v.begin() + (r + 1) * C));
  return rows;
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
      if (!s.contains("tokens") || !s["tokens"].is_array() || s["tokens"].size() < 2 || s["tokens"].size() > 257)
        fail("induction_live", "'tokens' must be a list of 2 to 257 tokens");
      std::vector<int64_t> tokens;
      for (const json& t : s["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= cfg.vocab)
          fail("induction_live", "each token must be a whole number from 0 to {}, got {}", cfg.vocab - 1, t.dump());
        tokens.push_back(t.get<int64_t>());
      }
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
      Generator gen(static_cast<uint64_t>(whole(s, "seed", 0, std::numeric_limits<int64_t>::max())));
      const nn::RepeatedBatch d = nn::repeated_batch(n, 64, cfg.vocab, lmin, lmax, gen);
      const HeadScores hs = head_scores(*model_, d);
      const CopyEval e = eval_copy_on(*model_, d);
      out = {{"prev", hs.prev}, {"induction", hs.induction}, {"first", e.first}, {"later", e.later}, {"acc", e.acc},
             {"acc_per_position", accuracy_per_position(*model_, d)}};
    } else {
      fail("induction_live", "a request holds 'sequence', 'study' or 'batch'");
    }
    out["ok"] = true;
  } catch (const std::exception& e) {
    out = {{"ok", false}, {"error", e.what()}};
  }
  model_->clear_ablations();
  return out.dump();
}

}  // namespace hg::lab::induction
