// labs/exercises_case.cpp — exercises 3, 5 and 6 of "What Attention Computes", over the induction
// lab's train_repeat, eval_copy, head_scores and ov_copy_matrix.
#include "exercises_case.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace hg::lab::exercises {

using induction::CopyEval;
using induction::TrainSetup;
using nn::RepeatedBatch;
using nn::TinyCharLM;

std::pair<int64_t, double> strongest(const std::vector<double>& row) {
  if (row.empty()) return {-1, 0.0};
  const auto it = std::max_element(row.begin(), row.end());
  return {it - row.begin(), *it};
}

// ---------------------------------------------------------------- exercise 3

SchemeRun train_scheme(const std::string& pos, const TrainSetup& setup, uint64_t seed, int64_t eval_batch,
                       Device device, const induction::Progress& progress) {
  SchemeRun r;
  r.pos = pos;
  Generator gen(seed);  // torch.manual_seed(seed): the initialisation, then the batches
  TinyCharLM model(induction::model_config(2, false, pos), gen);
  model.to(device);
  r.history = induction::train_repeat(model, setup, gen, progress);
  Generator ev(seed + 5);
  r.eval = induction::eval_copy(model, setup.Lmin, setup.Lmax, ev, eval_batch);
  Generator hs(seed + 3);
  r.scores = induction::head_scores(model, nn::repeated_batch(eval_batch, setup.seq, setup.vocab, setup.Lmin,
                                                              setup.Lmax, hs, device));
  std::tie(r.prev_head, r.prev_score) = strongest(r.scores.prev.front());
  std::tie(r.induction_head, r.induction_score) = strongest(r.scores.induction.back());
  return r;
}

// ---------------------------------------------------------------- exercise 5

double Tally::acc() const {
  return n > 0 ? static_cast<double>(hits) / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

std::vector<CopyTally> tally_copies(const std::vector<int64_t>& tokens, const std::vector<uint8_t>& hits, int64_t B,
                                    int64_t T, int64_t L) {
  const char* op = "tally_copies";
  if (B < 1 || T < 2 || L < 1) fail(op, "need B >= 1, T >= 2 and L >= 1, got B = {}, T = {}, L = {}", B, T, L);
  if (tokens.size() != static_cast<size_t>(B * T) || hits.size() != static_cast<size_t>(B * (T - 1)))
    fail(op, "tokens hold {} values and hits {}; (B, T) = ({}, {}) needs {} and {}", tokens.size(), hits.size(), B, T,
         B * T, B * (T - 1));
  std::vector<CopyTally> copies(static_cast<size_t>((T - 1) / L + 1));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t* x = tokens.data() + b * T;
    for (int64_t t = L; t < T; ++t)
      if (x[t] != x[t % L])
        fail(op, "row {} is not a pattern of length {} tiled: x[{}] = {} but x[{}] = {}", b, L, t, x[t], t % L, x[t % L]);
    for (int64_t t = 1; t < T; ++t) {
      const bool hit = hits[static_cast<size_t>(b * (T - 1) + t - 1)] != 0;
      CopyTally& c = copies[static_cast<size_t>(t / L)];
      c.all.add(hit);
      if (t / L >= 1 && t % L == 0) {
        c.first.add(hit);
        continue;
      }
      c.rest.add(hit);
      // The query token x[t-1] sits at pattern position q; how often does it occur in the
      // pattern, and how many of those occurrences come before q?
      const int64_t q = (t - 1) % L;
      int64_t count = 0, before = 0;
      for (int64_t p = 0; p < L; ++p)
        if (x[p] == x[q]) {
          ++count;
          before += p < q ? 1 : 0;
        }
      if (count == 1) {
        c.once.add(hit);
      } else if (count == 2) {
        c.twice.add(hit);
        (before == 0 ? c.twice_earlier : c.twice_later).add(hit);
      } else {
        c.more.add(hit);
      }
    }
  }
  return copies;
}

std::vector<uint8_t> argmax_hits(const TinyCharLM& model, const Tensor& tokens) {
  NoGradGuard ng;
  const int64_t B = tokens.size(0), T = tokens.size(1);
  const Tensor logits = model.forward(tokens.slice(1, 0, T - 1)).to(Device::cpu).to(DType::f64).contiguous();
  const std::vector<double> z = logits.to_vector();  // (B, T - 1, V)
  const std::vector<int64_t> x = tokens.to(Device::cpu).contiguous().to_int_vector();
  const int64_t V = logits.size(2);
  std::vector<uint8_t> hits(static_cast<size_t>(B * (T - 1)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T - 1; ++i) {
      const double* row = z.data() + (b * (T - 1) + i) * V;
      const int64_t best = std::max_element(row, row + V) - row;  // the first maximum
      hits[static_cast<size_t>(b * (T - 1) + i)] = best == x[static_cast<size_t>(b * T + i + 1)];
    }
  return hits;
}

ThreeCopies three_copies(const TinyCharLM& model, int64_t L, int64_t batch, Generator& gen) {
  ThreeCopies r;
  r.L = L;
  r.sequences = batch;
  const int64_t T = 3 * L + 1;  // three copies and the first token of a fourth: 3L targets
  const RepeatedBatch data = nn::repeated_batch(batch, T, model.config().vocab, L, L, gen, model.device());
  const std::vector<uint8_t> hits = argmax_hits(model, data.tokens);
  r.copies = tally_copies(data.tokens.to(Device::cpu).contiguous().to_int_vector(), hits, batch, T, L);
  r.per_position.assign(static_cast<size_t>(T - 1), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < T - 1; ++i) r.per_position[static_cast<size_t>(i)] += hits[static_cast<size_t>(b * (T - 1) + i)];
  for (double& a : r.per_position) a /= static_cast<double>(batch);
  return r;
}

// ---------------------------------------------------------------- exercise 6

EmbeddingPathSplit::EmbeddingPathSplit(const Tensor& embedding_weight) : weight_(embedding_weight.impl()) {
  if (!embedding_weight.defined() || embedding_weight.dim() != 2)
    fail("EmbeddingPathSplit", "the embedding weight must be a (V, d) tensor");
  const int64_t V = embedding_weight.size(0);
  lookup_sq_ = zeros({V}, DType::f64, embedding_weight.device());
  head_sq_ = zeros({V}, DType::f64, embedding_weight.device());
  observer_.after = [this](size_t, const Node& node, const std::vector<Tensor>&, const std::vector<Tensor>& grad_inputs) {
    seen(node, grad_inputs);
  };
}

void EmbeddingPathSplit::seen(const Node& node, const std::vector<Tensor>& grad_inputs) {
  for (size_t k = 0; k < node.inputs.size() && k < grad_inputs.size(); ++k) {
    if (node.inputs[k].leaf.get() != weight_ || !grad_inputs[k].defined()) continue;
    NoGradGuard ng;
    const Tensor g = grad_inputs[k].detach();                         // (V, d), this path's gradient for E
    const Tensor sq = sum(mul(g.to(DType::f64), g.to(DType::f64)), {1});  // (V,): ‖g_v‖² per row
    if (node.op == "embedding") {  // the lookup h⁰ = E[x]
      lookup_sq_ = add(lookup_sq_, sq);
      last_lookup_ = g.clone();
      ++passes_;
    } else {  // the tied head z = h Eᵀ (through the transpose view)
      head_sq_ = add(head_sq_, sq);
      last_head_ = g.clone();
    }
  }
}

std::vector<double> EmbeddingPathSplit::lookup_squared() const { return lookup_sq_.to_vector(); }
std::vector<double> EmbeddingPathSplit::head_squared() const { return head_sq_.to_vector(); }

RepeatedBatch batch_of_tokens(int64_t batch, int64_t T, int64_t lo, int64_t hi, int64_t Lmin, int64_t Lmax,
                              Generator& gen, Device device) {
  if (lo < 0 || hi <= lo) fail("batch_of_tokens", "the token range [{}, {}) must be non-empty and start at 0 or later", lo, hi);
  RepeatedBatch b = nn::repeated_batch(batch, T, hi - lo, Lmin, Lmax, gen);  // tokens in [0, hi - lo), on the host
  int64_t* x = b.tokens.data_ptr<int64_t>();
  for (int64_t i = 0; i < batch * T; ++i) x[i] += lo;
  return {b.tokens.to(device), b.lengths.to(device)};
}

namespace {

std::vector<double> row_norms(const Tensor& E) {  // ‖E[v, :]‖ per row
  NoGradGuard ng;
  const Tensor e = E.detach().to(DType::f64);
  std::vector<double> n = sum(mul(e, e), {1}).to_vector();
  for (double& v : n) v = std::sqrt(v);
  return n;
}

}  // namespace

HeldOut held_out_tokens(const TrainSetup& setup, uint64_t seed, int64_t train_tokens, int64_t eval_batch, Device device,
                        const induction::Progress& progress) {
  HeldOut r;
  r.train_tokens = train_tokens;
  Generator gen(seed);
  TinyCharLM model(induction::model_config(2), gen);
  model.to(device);
  const int64_t V = model.config().vocab;
  if (train_tokens < 1 || train_tokens >= V)
    fail("held_out_tokens", "the training tokens [0, {}) must leave some of the {} tokens out", train_tokens, V);
  const Tensor E = model.token_emb->weight;
  const Tensor E0 = E.detach().clone();
  r.norm_start = row_norms(E0);
  r.cos_seen_start = mean_cosine(E0, 0, train_tokens);
  r.cos_held_start = mean_cosine(E0, train_tokens, V);

  EmbeddingPathSplit split(E);
  TrainSetup s = setup;
  s.vocab = train_tokens;  // repeated_batch draws tokens from [0, train_tokens); the model still scores all V
  s.observer = &split.observer();
  r.history = induction::train_repeat(model, s, gen, progress);
  r.lookup_squared = split.lookup_squared();
  r.head_squared = split.head_squared();
  if (split.passes() > 0 && E.grad().defined()) {  // the last step's E.grad is still there (zero_grad comes first)
    NoGradGuard ng;
    const std::vector<double> parts = add(split.last_lookup(), split.last_head()).to_vector(), full = E.grad().to_vector();
    r.split_sum_diff = 0;
    for (size_t i = 0; i < full.size(); ++i) r.split_sum_diff = std::max(r.split_sum_diff, std::abs(parts[i] - full[i]));
  }
  r.norm_end = row_norms(E);
  r.cos_seen_end = mean_cosine(E, 0, train_tokens);
  r.cos_held_end = mean_cosine(E, train_tokens, V);
  {
    NoGradGuard ng;
    r.moved = row_norms(sub(E.detach(), E0));
  }

  Generator e1(seed + 5), e2(seed + 6), e3(seed + 7);
  r.seen = induction::eval_copy_on(model, batch_of_tokens(eval_batch, setup.seq, 0, train_tokens, setup.Lmin, setup.Lmax, e1, device));
  const int64_t width = V - train_tokens;  // the held-out tokens' count; the control uses as many seen ones
  r.seen16 = induction::eval_copy_on(
      model, batch_of_tokens(eval_batch, setup.seq, std::max<int64_t>(0, train_tokens - width), train_tokens, setup.Lmin,
                             setup.Lmax, e2, device));
  r.held_out = induction::eval_copy_on(model, batch_of_tokens(eval_batch, setup.seq, train_tokens, V, setup.Lmin, setup.Lmax, e3, device));
  const Tensor C = induction::ov_copy_matrix(model, model.config().blocks - 1).to(Device::cpu);
  r.ov_diag_seen = diagonal_fraction_rows(C, 0, train_tokens);
  r.ov_diag_held = diagonal_fraction_rows(C, train_tokens, V);
  return r;
}

double mean_cosine(const Tensor& E, int64_t lo, int64_t hi) {
  if (E.dim() != 2 || lo < 0 || hi > E.size(0) || hi - lo < 2)
    fail("mean_cosine", "rows [{}, {}) of E {} must be at least two rows of a matrix", lo, hi, E.describe());
  const int64_t d = E.size(1);
  const std::vector<double> e = E.detach().to(DType::f64).contiguous().to_vector();
  const std::vector<double> n = row_norms(E);
  double s = 0;
  int64_t pairs = 0;
  for (int64_t u = lo; u < hi; ++u)
    for (int64_t v = u + 1; v < hi; ++v) {
      double dot = 0;
      for (int64_t j = 0; j < d; ++j) dot += e[static_cast<size_t>(u * d + j)] * e[static_cast<size_t>(v * d + j)];
      s += dot / (n[static_cast<size_t>(u)] * n[static_cast<size_t>(v)]);
      ++pairs;
    }
  return s / static_cast<double>(pairs);
}

double diagonal_fraction_rows(const Tensor& C, int64_t lo, int64_t hi) {
  if (C.dim() != 2 || C.size(0) != C.size(1)) fail("diagonal_fraction_rows", "C {} must be square", C.describe());
  const int64_t V = C.size(0);
  if (lo < 0 || hi > V || hi <= lo) fail("diagonal_fraction_rows", "rows [{}, {}) must be a non-empty range of [0, {})", lo, hi, V);
  const std::vector<double> v = C.detach().to(DType::f64).contiguous().to_vector();
  int64_t hits = 0;
  for (int64_t a = lo; a < hi; ++a) {
    const double* row = v.data() + a * V;
    hits += std::max_element(row, row + V) - row == a;
  }
  return static_cast<double>(hits) / static_cast<double>(hi - lo);
}

}  // namespace hg::lab::exercises
