// labs/induction_lab.cpp — the induction lab's computations, each the text's code transcribed.
#include "induction_lab.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <string_view>

#include "nn/data_parallel.h"
#include "nn/optim.h"

namespace hg::lab::induction {

using nn::RepeatedBatch;
using nn::TinyCharLM;

nn::TinyCharLMConfig model_config(int64_t blocks, bool bias, const std::string& pos) {
  return {.vocab = 64, .d = 128, .heads = 4, .blocks = blocks, .pos = pos, .bias = bias};
}

namespace {

// Inputs x[:, :-1] and targets x[:, 1:] of a (B, T) batch.
Tensor inputs_of(const RepeatedBatch& b) { return b.tokens.slice(1, 0, b.tokens.size(1) - 1); }
Tensor targets_of(const RepeatedBatch& b) { return b.tokens.slice(1, 1, b.tokens.size(1)); }

// A training batch on the model's device: the inputs and targets, and the targets again with the
// later copies (first_targets) or the first copy (later_targets) set to ignore_index, so that
// cross_entropy gives each split's mean where the logits are; and, on the host, how many
// first-copy targets each row has (the rest of its T - 1 are later copies).
struct DeviceBatch {
  Tensor inputs, targets, first_targets, later_targets;  // (B, T - 1) i64 each, on the device
  std::vector<int64_t> n_first;                          // (B,) on the host
};
constexpr int64_t kIgnore = -100;

// The batches of several steps, drawn on the host from `gen` in step order (the same draws as one
// batch per step), packed into one host buffer and uploaded in one copy: an upload waits for a
// GPU, so a training run there makes one per chunk of steps, not one per step.
std::vector<DeviceBatch> upload_batches(int64_t count, const TrainSetup& s, Generator& gen, Device device) {
  const int64_t B = s.batch, T = s.seq, n = B * (T - 1), per = B * T + 2 * n;
  Tensor packed = empty({count * per}, DType::i64);  // per batch: tokens (B·T), first targets (n), later targets (n)
  std::vector<std::vector<int64_t>> n_first(static_cast<size_t>(count), std::vector<int64_t>(static_cast<size_t>(B)));
  for (int64_t k = 0; k < count; ++k) {
    const RepeatedBatch host = nn::repeated_batch(B, T, s.vocab, s.Lmin, s.Lmax, gen);
    const int64_t* x = host.tokens.data_ptr<const int64_t>();  // (B, T), contiguous
    const std::vector<int64_t> L = host.lengths.to_int_vector();
    int64_t* p = packed.data_ptr<int64_t>() + k * per;
    std::copy_n(x, B * T, p);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t Lb = L[static_cast<size_t>(b)];
      n_first[static_cast<size_t>(k)][static_cast<size_t>(b)] = std::max<int64_t>(0, std::min(Lb, T) - 1);
      for (int64_t t = 1; t < T; ++t) {  // target position t (1-based): a later copy when t >= L
        const int64_t y = x[b * T + t], i = b * (T - 1) + t - 1;
        const bool later = t >= Lb;
        p[B * T + i] = later ? kIgnore : y;
        p[B * T + n + i] = later ? y : kIgnore;
      }
    }
  }
  const Tensor d = packed.to(device);
  std::vector<DeviceBatch> out;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t o = k * per;
    const Tensor tokens = d.slice(0, o, o + B * T).view({B, T});
    out.push_back({tokens.slice(1, 0, T - 1), tokens.slice(1, 1, T), d.slice(0, o + B * T, o + B * T + n).view({B, T - 1}),
                   d.slice(0, o + B * T + n, o + per).view({B, T - 1}), std::move(n_first[static_cast<size_t>(k)])});
  }
  return out;
}

// With several ranks, the factor that turns this rank's split mean into its share of the global
// batch's: R · n_rank / n_global, so that the mean over ranks of the scaled means is the global
// mean weighted by how many targets each rank had. One rank: 1, the mean itself.
struct SplitWeights {
  double first = 1, later = 1;
};
SplitWeights split_weights(const DeviceBatch& b, const TrainSetup& s, const nn::DataParallel* dp) {
  if (!dp) return {};
  const nn::DataParallel::Shard r = dp->shard(s.batch);
  const int64_t per_row = s.seq - 1;
  int64_t first_all = 0, first_mine = 0;
  for (int64_t i = 0; i < s.batch; ++i) {
    const int64_t f = b.n_first[static_cast<size_t>(i)];
    first_all += f;
    if (i >= r.begin && i < r.end) first_mine += f;
  }
  const int64_t later_all = s.batch * per_row - first_all, later_mine = (r.end - r.begin) * per_row - first_mine;
  const auto R = static_cast<double>(s.batch / (r.end - r.begin));
  auto w = [R](int64_t mine, int64_t all) { return all > 0 ? R * static_cast<double>(mine) / static_cast<double>(all) : 0.0; };
  return {w(first_mine, first_all), w(later_mine, later_all)};
}

// Rows [begin, end) of a batch (this rank's shard).
DeviceBatch rows(DeviceBatch b, nn::DataParallel::Shard r) {
  for (Tensor* t : {&b.inputs, &b.targets, &b.first_targets, &b.later_targets}) *t = t->slice(0, r.begin, r.end);
  return b;
}

// The training loop, on either device, in chunks: one upload of the chunk's batches, the steps
// (none of which waits for the device), then one read-back of the chunk's losses. Each step's
// loss, first-copy and later-copy loss go into row `step` of a (steps, 3) buffer on the model's
// device: cross_entropy of the logits over all targets (the training loss), and over each split's
// targets alone (the others set to ignore_index). On a GPU a chunk is s.read_every steps; on the
// CPU there is no wait to save, and a chunk is one step, so the progress line moves every step.
void train_loop(TinyCharLM& model, nn::AdamW& opt, const TrainSetup& s, Generator& gen, const Progress& progress,
                History& h, nn::DataParallel* dp) {
  const Device device = model.device();
  const int64_t every = device == Device::cpu ? 1 : std::max<int64_t>(1, s.read_every);
  const Tensor losses = empty({s.steps, 3}, model.parameters().front().dtype(), device);  // loss, first, later
  for (int64_t start = 0; start < s.steps; start += every) {
    const int64_t count = std::min(every, s.steps - start);
    const std::vector<DeviceBatch> batches = upload_batches(count, s, gen, device);
    for (int64_t k = 0; k < count; ++k) {
      const DeviceBatch& all = batches[static_cast<size_t>(k)];
      const DeviceBatch b = dp ? rows(all, dp->shard(s.batch)) : all;
      const Tensor logits = model.forward(b.inputs);  // (B, T - 1, V)
      const Tensor loss = cross_entropy(logits, b.targets);
      {
        NoGradGuard ng;
        const Tensor z = logits.detach();
        const SplitWeights w = split_weights(all, s, dp);
        Tensor first = cross_entropy(z, b.first_targets, kIgnore), later = cross_entropy(z, b.later_targets, kIgnore);
        if (dp) {
          first = first * w.first;
          later = later * w.later;
        }
        losses.index({start + k, 0}).copy_(loss.detach());
        losses.index({start + k, 1}).copy_(first);
        losses.index({start + k, 2}).copy_(later);
      }
      opt.zero_grad();
      hg::backward(loss, Tensor(), {.observer = s.observer});
      if (dp) dp->average_gradients();
      opt.step();
    }
    const Tensor chunk = losses.slice(0, start, start + count);
    if (dp) dp->comm().all_reduce(chunk, nn::Reduce::average);  // the global batch's means
    const std::vector<double> v = chunk.to_vector();  // (count, 3)
    for (int64_t k = 0; k < count; ++k) {
      const size_t r = static_cast<size_t>(3 * k);
      h.loss.push_back(v[r]);
      h.first.push_back(v[r + 1]);
      h.later.push_back(v[r + 2]);
      if (progress) progress(start + k + 1, s.steps, v[r + 1], v[r + 2]);
    }
  }
}

}  // namespace

// for step in range(num_steps):
//     x, L = repeated_batch(batch_size, 64, vocab, Lmin, Lmax)
//     first, rep, loss = split_losses(model(x[:, :-1]), x[:, 1:], L)
//     optimizer.zero_grad(); loss.backward(); optimizer.step()
History train_repeat(TinyCharLM& model, const TrainSetup& s, Generator& gen, const Progress& progress) {
  nn::AdamW opt(model.parameters(), {.lr = s.lr, .weight_decay = 0.0});
  History h;
  h.first.reserve(static_cast<size_t>(s.steps));
  h.later.reserve(static_cast<size_t>(s.steps));
  h.loss.reserve(static_cast<size_t>(s.steps));
  nn::Communicator& comm = s.comm ? *s.comm : nn::world();
  std::optional<nn::DataParallel> dp;
  if (std::string_view(comm.backend()) != "single") {  // a one-rank MPI or NCCL job too: the same path
    dp.emplace(comm, model.parameters());
    dp->broadcast_parameters();
  }
  nn::DataParallel* ranks = dp ? &*dp : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  train_loop(model, opt, s, gen, progress, h, ranks);
  h.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return h;
}

namespace {
CopyEval copy_eval_of(const Tensor& logits, const RepeatedBatch& data) {
  nn::SplitLoss l = nn::split_losses(logits, targets_of(data), data.lengths);
  return {l.first, l.later, l.later_acc, l.n_first, l.n_later};
}
}  // namespace

CopyEval eval_copy_on(const TinyCharLM& model, const RepeatedBatch& data) {
  NoGradGuard ng;
  return copy_eval_of(model.forward(inputs_of(data)), data);
}

BatchFigures batch_figures(const TinyCharLM& model, const RepeatedBatch& data) {
  NoGradGuard ng;
  const Tensor logits = model.forward(inputs_of(data));
  return {copy_eval_of(logits, data), nn::accuracy_per_position(logits, targets_of(data))};
}

CopyEval eval_copy(const TinyCharLM& model, int64_t Lmin, int64_t Lmax, Generator& gen, int64_t batch) {
  return eval_copy_on(model, nn::repeated_batch(batch, 64, model.config().vocab, Lmin, Lmax, gen, model.device()));
}

double offset_mass(const Tensor& maps, int64_t offset) {
  if (maps.dim() != 4 || maps.size(2) != maps.size(3))
    fail("offset_mass", "maps {} must be (B, H, T, T)", maps.describe());
  const int64_t B = maps.size(0), H = maps.size(1), T = maps.size(2);
  if (offset < 0 || offset >= T) fail("offset_mass", "offset {} must lie in [0, T) = [0, {})", offset, T);
  const Tensor m = maps.contiguous();
  const std::vector<double> v = m.to_vector();
  double s = 0;
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = offset; i < T; ++i) s += v[static_cast<size_t>((bh * T + i) * T + i - offset)];
  return s / static_cast<double>(B * H * (T - offset));
}

// maps, T = model.attention_weights(x[:, :-1]), x.shape[1] - 1
// tgt = arange(T)[None, :] + 1 - L[:, None];  valid = tgt >= 0
// prev = m.diagonal(-1, dim1=2, dim2=3).mean((0, 2))
// ind = (m.gather(3, tgt.clamp(min=0)) * valid).sum((0, 2)) / valid.sum()
HeadScores head_scores(const TinyCharLM& model, const RepeatedBatch& data) {
  const std::vector<Tensor> maps = model.attention_weights(inputs_of(data));
  const std::vector<int64_t> L = data.lengths.to_int_vector();
  HeadScores hs;
  for (const Tensor& m : maps) {
    const int64_t B = m.size(0), H = m.size(1), T = m.size(2);
    const std::vector<double> v = m.contiguous().to_vector();
    auto at = [&](int64_t b, int64_t h, int64_t i, int64_t j) { return v[static_cast<size_t>(((b * H + h) * T + i) * T + j)]; };
    std::vector<double> prev(static_cast<size_t>(H), 0.0), ind(static_cast<size_t>(H), 0.0);
    int64_t n_valid = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < T; ++i) n_valid += i + 1 - L[static_cast<size_t>(b)] >= 0;
    for (int64_t h = 0; h < H; ++h) {
      double p = 0, s = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i) {
          if (i >= 1) p += at(b, h, i, i - 1);
          const int64_t j = i + 1 - L[static_cast<size_t>(b)];
          if (j >= 0) s += at(b, h, i, j);
        }
      prev[static_cast<size_t>(h)] = p / static_cast<double>(B * (T - 1));
      ind[static_cast<size_t>(h)] = n_valid ? s / static_cast<double>(n_valid) : 0.0;
    }
    hs.prev.push_back(prev);
    hs.induction.push_back(ind);
    hs.n_prev = B * (T - 1);
    hs.n_induction = n_valid;
  }
  return hs;
}

std::vector<double> accuracy_per_position(const TinyCharLM& model, const RepeatedBatch& data) {
  NoGradGuard ng;
  return nn::accuracy_per_position(model.forward(inputs_of(data)), targets_of(data));
}

// OV = sum(proj.weight[:, h*d_h:(h+1)*d_h] @ qkv.weight[2D + h*d_h:2D + (h+1)*d_h] for h in range(H))
// C = E @ OV.T @ E.T
Tensor ov_copy_matrix(const TinyCharLM& model, int64_t block) {
  const auto& cfg = model.config();
  if (block < 0 || block >= cfg.blocks)
    fail("ov_copy_matrix", "block {} does not exist: the model has {} blocks (0-based)", block, cfg.blocks);
  NoGradGuard ng;
  const int64_t D = cfg.d, dh = cfg.d / cfg.heads;
  const Tensor E = model.token_emb->weight.detach().to(DType::f64);  // (V, D)
  const Tensor Wqkv = model.blks[static_cast<size_t>(block)]->qkv->weight.detach().to(DType::f64);   // (3D, D)
  const Tensor Wproj = model.blks[static_cast<size_t>(block)]->proj->weight.detach().to(DType::f64);  // (D, D)
  Tensor OV = zeros({D, D}, DType::f64, E.device());
  for (int64_t h = 0; h < cfg.heads; ++h)
    OV = add(OV, matmul(Wproj.slice(1, h * dh, (h + 1) * dh), Wqkv.slice(0, 2 * D + h * dh, 2 * D + (h + 1) * dh)));
  return matmul(matmul(E, OV.transpose(0, 1)), E.transpose(0, 1));  // (V, V)
}

double diagonal_fraction(const Tensor& C) {
  if (C.dim() != 2 || C.size(0) != C.size(1)) fail("diagonal_fraction", "C {} must be square", C.describe());
  const int64_t V = C.size(0);
  const std::vector<double> v = C.contiguous().to_vector();
  int64_t hits = 0;
  for (int64_t a = 0; a < V; ++a) {
    const double* row = v.data() + a * V;
    hits += std::max_element(row, row + V) - row == a;  // the first maximum, as argmax
  }
  return static_cast<double>(hits) / static_cast<double>(V);
}

std::vector<int64_t> strongest_induction_heads(const HeadScores& scores, size_t k) {
  if (scores.induction.empty()) return {};
  const std::vector<double>& ind = scores.induction.back();
  std::vector<int64_t> order(ind.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return ind[static_cast<size_t>(x)] > ind[static_cast<size_t>(y)]; });
  order.resize(std::min(k, order.size()));
  return order;
}

Ablations ablate_heads(TinyCharLM& model, const RepeatedBatch& data, const HeadScores& scores) {
  const auto& cfg = model.config();
  Ablations a;
  model.clear_ablations();
  a.baseline = eval_copy_on(model, data).later;
  for (int64_t l = 0; l < cfg.blocks; ++l) {
    std::vector<double> row;
    for (int64_t h = 0; h < cfg.heads; ++h) {
      model.ablate_head(l, h);
      row.push_back(eval_copy_on(model, data).later);
      model.ablate_head(l, h, false);
    }
    a.single.push_back(row);
  }
  a.strongest = strongest_induction_heads(scores, 2);
  if (a.strongest.size() == 2) {
    for (int64_t h : a.strongest) model.ablate_head(cfg.blocks - 1, h);
    a.strongest_pair = eval_copy_on(model, data).later;
  }
  model.clear_ablations();
  return a;
}

std::vector<double> moving_average(const std::vector<double>& v, int64_t k) {
  std::vector<double> out;
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    s += v[i];
    if (i >= static_cast<size_t>(k)) s -= v[i - static_cast<size_t>(k)];
    if (i + 1 >= static_cast<size_t>(k)) out.push_back(s / static_cast<double>(k));
  }
  return out;
}

std::vector<double> chunk_means(const std::vector<double>& v, int64_t k) {
  std::vector<double> out;
  for (size_t i = 0; i + static_cast<size_t>(k) <= v.size(); i += static_cast<size_t>(k))
    out.push_back(std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(i), v.begin() + static_cast<std::ptrdiff_t>(i) + k, 0.0) /
                  static_cast<double>(k));
  return out;
}

Transition transition_step(const std::vector<double>& later_two, const std::vector<double>& later_one) {
  Transition t;
  constexpr size_t kTail = 100;
  constexpr int64_t kWindow = 25, kSpan = 200;
  const std::vector<double> s = moving_average(later_two, kWindow);
  for (size_t a = 0; a + kSpan < s.size(); ++a)
    if (s[a] - s[a + kSpan] > t.steepest_fall) {
      t.steepest_fall = s[a] - s[a + kSpan];
      t.steepest_from = static_cast<int64_t>(a) + kWindow;
    }
  if (later_two.size() < kTail || later_one.size() < kTail) return t;
  auto tail_mean = [](const std::vector<double>& v) {
    return std::accumulate(v.end() - kTail, v.end(), 0.0) / static_cast<double>(kTail);
  };
  t.plateau = tail_mean(later_one);
  t.final_level = tail_mean(later_two);
  const double drop = t.plateau - t.final_level;
  if (drop <= 0) return t;  // the 2-block model ends no lower than the 1-block: no transition
  auto first_below = [&](double level) -> int64_t {
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < level) return static_cast<int64_t>(i) + kWindow;  // s[i] ends at step i + k (1-based)
    return -1;
  };
  t.onset = first_below(t.plateau - 0.1 * drop);
  t.midpoint = first_below(t.plateau - 0.5 * drop);
  t.end = first_below(t.plateau - 0.9 * drop);
  return t;
}

}  // namespace hg::lab::induction
