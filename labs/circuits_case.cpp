// labs/circuits_case.cpp — the circuits lab's computations: each formula of circuits_case.h,
// written with handgrad's ops on host copies of the weights.
#include "circuits_case.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/optim.h"

namespace hg::lab::circuits {

using nn::TinyCharLM;

namespace {

Tensor T_(const Tensor& m) { return m.transpose(0, 1); }

const nn::Block& block_of(const TinyCharLM& model, int64_t block, const char* op) {
  if (block < 0 || block >= static_cast<int64_t>(model.blks.size()))
    fail(op, "block {} does not exist: the model has {} blocks (0-based)", block, model.blks.size());
  return *model.blks[static_cast<size_t>(block)];
}

}  // namespace

HeadWeights head_weights(const TinyCharLM& model, int64_t block, int64_t head, DType dtype) {
  const auto& cfg = model.config();
  const nn::Block& b = block_of(model, block, "head_weights");
  if (head < 0 || head >= cfg.heads) fail("head_weights", "head {} does not exist: the model has {} heads", head, cfg.heads);
  const int64_t D = cfg.d, dh = cfg.d / cfg.heads, lo = head * dh, hi = (head + 1) * dh;
  const Tensor qkv = b.qkv->weight.detach().to(Device::cpu).to(dtype);   // (3D, D): rows W_q, W_k, W_v
  const Tensor proj = b.proj->weight.detach().to(Device::cpu).to(dtype);  // (D, D): columns split by head
  return {qkv.slice(0, lo, hi).contiguous(), qkv.slice(0, D + lo, D + hi).contiguous(),
          qkv.slice(0, 2 * D + lo, 2 * D + hi).contiguous(), proj.slice(1, lo, hi).contiguous()};
}

Tensor qk_circuit(const HeadWeights& w) { return matmul(T_(w.q), w.k); }

Tensor qk_circuit(const HeadWeights& w, int64_t delta) {
  return matmul(matmul(T_(w.q), rope_relative(w.q.size(0), delta, w.q.dtype())), w.k);
}

Tensor ov_circuit(const HeadWeights& w) { return matmul(w.o, w.v); }

// rope rotates pair p of position t by θ = t ω_p: rope(q, i) · rope(k, j) = Σ_p (R(iω_p) q_p) · (R(jω_p) k_p)
// = Σ_p q_pᵀ R(−iω_p) R(jω_p) k_p = qᵀ R(j − i) k, with R(φ) = [cos φ  −sin φ; sin φ  cos φ] per pair.
Tensor rope_relative(int64_t d_h, int64_t delta, DType dtype, double base) {
  if (d_h < 2 || d_h % 2 != 0) fail("rope_relative", "d_h = {} must be even and positive", d_h);
  std::vector<double> r(static_cast<size_t>(d_h * d_h), 0.0);
  for (int64_t p = 0; p < d_h / 2; ++p) {
    const double phi = static_cast<double>(delta) * std::pow(base, -2.0 * static_cast<double>(p) / static_cast<double>(d_h));
    const int64_t a = 2 * p, b = 2 * p + 1;
    r[static_cast<size_t>(a * d_h + a)] = std::cos(phi);
    r[static_cast<size_t>(a * d_h + b)] = -std::sin(phi);
    r[static_cast<size_t>(b * d_h + a)] = std::sin(phi);
    r[static_cast<size_t>(b * d_h + b)] = std::cos(phi);
  }
  return tensor(r, {d_h, d_h}, dtype);
}

std::vector<HeadRanks> circuit_ranks(const TinyCharLM& model) {
  std::vector<HeadRanks> out;
  const DType dt = model.config().dtype;  // the products in the weights' own dtype, as the text forms them
  for (int64_t l = 0; l < static_cast<int64_t>(model.blks.size()); ++l)
    for (int64_t h = 0; h < model.config().heads; ++h) {
      const HeadWeights w = head_weights(model, l, h, dt);
      const Tensor qk = qk_circuit(w), ov = ov_circuit(w);
      out.push_back({l, h, qk.shape(), ov.shape(), lab::matrix_rank(qk), lab::matrix_rank(ov)});
    }
  return out;
}

// ------------------------------------------------------------------ zero blocks

Tensor zero_block_logits(const TinyCharLM& model) {
  NoGradGuard ng;
  const int64_t V = model.config().vocab;
  const Tensor tokens = arange(V, DType::i64).view({1, V}).to(model.device());
  return model.forward(tokens).select(0, 0).to(Device::cpu);  // (V, V): row a = E e_a
}

GramCheck gram_check(const Tensor& A) {
  if (A.dim() != 2 || A.size(0) != A.size(1)) fail("gram_check", "A {} must be square", A.describe());
  GramCheck g;
  const int64_t V = A.size(0);
  const std::vector<double> a = A.detach().to(Device::cpu).contiguous().to_vector();
  auto at = [&](int64_t i, int64_t j) { return a[static_cast<size_t>(i * V + j)]; };
  double top = -HUGE_VAL;
  bool top_diag = false;
  g.min_pair_gap = HUGE_VAL;
  for (int64_t i = 0; i < V; ++i)
    for (int64_t j = 0; j < V; ++j) {
      g.asymmetry = std::max(g.asymmetry, std::abs(at(i, j) - at(j, i)));
      g.max_abs = std::max(g.max_abs, std::abs(at(i, j)));
      if (at(i, j) > top) top = at(i, j), top_diag = i == j;
      if (i < j) g.min_pair_gap = std::min(g.min_pair_gap, at(i, i) + at(j, j) - at(i, j) - at(j, i));
    }
  g.max_on_diagonal = top_diag;
  g.rank = lab::matrix_rank(A);
  g.eigenvalues = symmetric_eigenvalues(A);
  const double eps = A.dtype() == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  g.eig_tol = std::abs(g.eigenvalues.back()) * static_cast<double>(V) * eps;
  g.diagonal_argmax = induction::diagonal_fraction(A.to(DType::f64));
  return g;
}

PartnerTask train_partner_task(TinyCharLM& model, int64_t steps, Generator& gen, int64_t batch, int64_t seq, double lr) {
  if (model.config().blocks != 0)
    fail("train_partner_task", "the partner task is for the zero-block model, not {} blocks", model.config().blocks);
  const int64_t V = model.config().vocab;
  if (V % 2 != 0) fail("train_partner_task", "the vocabulary ({}) must pair up: V even", V);
  nn::AdamW opt(model.parameters(), {.lr = lr, .weight_decay = 0.0});
  PartnerTask r;
  for (int64_t step = 0; step < steps; ++step) {
    const Tensor x = randint({batch, seq}, gen, 0, V);
    std::vector<double> y;
    for (int64_t t : x.to_int_vector()) y.push_back(static_cast<double>(partner(t)));
    const Tensor loss = cross_entropy(model.forward(x.to(model.device())), tensor(y, {batch, seq}, DType::i64).to(model.device()));
    opt.zero_grad();
    loss.backward();
    opt.step();
    r.loss.push_back(loss.item());
  }
  r.A = zero_block_logits(model);
  const std::vector<double> a = r.A.to(DType::f64).contiguous().to_vector();
  auto row = [&](int64_t i) { return a.data() + i * V; };
  std::vector<bool> right(static_cast<size_t>(V));
  double best_margin = -HUGE_VAL;
  for (int64_t i = 0; i < V; ++i) {
    const double* z = row(i);
    const double m = *std::max_element(z, z + V);
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(z[j] - m);
    r.population_loss += (m + std::log(s) - z[partner(i)]) / static_cast<double>(V);
    right[static_cast<size_t>(i)] = std::max_element(z, z + V) - z == partner(i);
    r.accuracy += right[static_cast<size_t>(i)] ? 1.0 / static_cast<double>(V) : 0.0;
    if (z[partner(i)] - z[i] > best_margin) best_margin = z[partner(i)] - z[i], r.shown = i;
  }
  for (int64_t i = 0; i < V; i += 2) {
    ++r.pairs;
    const int n = right[static_cast<size_t>(i)] + right[static_cast<size_t>(i + 1)];
    r.one_way += n == 1;
    r.both_ways += n == 2;
  }
  return r;
}

// ------------------------------------------------------------------ composition

Circuits read_circuits(const TinyCharLM& model) {
  Circuits c;
  c.E = model.token_emb->weight.detach().to(Device::cpu).to(DType::f64);
  for (int64_t l = 0; l < static_cast<int64_t>(model.blks.size()); ++l) {
    c.heads.emplace_back();
    for (int64_t h = 0; h < model.config().heads; ++h) c.heads.back().push_back(head_weights(model, l, h));
  }
  return c;
}

DiagonalConcentration diagonal_concentration(const Tensor& M) {
  if (M.dim() != 2 || M.size(0) != M.size(1) || M.size(0) < 2)
    fail("diagonal_concentration", "M {} must be square, at least 2 x 2", M.describe());
  const int64_t V = M.size(0);
  const std::vector<double> m = M.detach().to(Device::cpu).to(DType::f64).contiguous().to_vector();
  double diag = 0, off = 0, off2 = 0;
  int64_t hits = 0;
  for (int64_t i = 0; i < V; ++i) {
    const double* r = m.data() + i * V;
    hits += std::max_element(r, r + V) - r == i;  // the first maximum, as argmax
    for (int64_t j = 0; j < V; ++j) (i == j ? diag : off) += r[j];
  }
  const double n_off = static_cast<double>(V * (V - 1));
  diag /= static_cast<double>(V);
  off /= n_off;
  for (int64_t i = 0; i < V; ++i)
    for (int64_t j = 0; j < V; ++j)
      if (i != j) off2 += (m[static_cast<size_t>(i * V + j)] - off) * (m[static_cast<size_t>(i * V + j)] - off);
  const double sd = std::sqrt(off2 / n_off);
  return {static_cast<double>(hits) / static_cast<double>(V), sd > 0 ? (diag - off) / sd : 0.0};
}

Tensor k_composition(const Circuits& c, int64_t h2, int64_t h1, int64_t delta, const Tensor& query) {
  if (c.heads.size() < 2) fail("k_composition", "needs two blocks, the model has {}", c.heads.size());
  const int64_t H = static_cast<int64_t>(c.heads[1].size());
  if (h2 < 0 || h2 >= H || h1 < -1 || h1 >= H) fail("k_composition", "heads ({}, {}) out of range for {} heads", h2, h1, H);
  const HeadWeights& w = c.heads[1][static_cast<size_t>(h2)];
  const Tensor Q = query.defined() ? query : c.E;  // (V, D)
  const Tensor left = matmul(matmul(matmul(Q, T_(w.q)), rope_relative(w.q.size(0), delta)), w.k);  // (V, D)
  const Tensor keys = h1 < 0 ? T_(c.E) : matmul(ov_circuit(c.heads[0][static_cast<size_t>(h1)]), T_(c.E));  // (D, V)
  return matmul(left, keys);
}

Tensor query_through_block1(const Circuits& c, const std::vector<double>& self_attention) {
  const auto& b1 = c.heads.at(0);
  if (self_attention.size() != b1.size())
    fail("query_through_block1", "{} self-attention weights for {} block-1 heads", self_attention.size(), b1.size());
  Tensor Q = c.E;
  for (size_t h = 0; h < b1.size(); ++h) Q = add(Q, mul(matmul(c.E, T_(ov_circuit(b1[h]))), self_attention[h]));
  return Q;
}

std::vector<int64_t> induction_offsets(int64_t Lmin, int64_t Lmax) {
  std::vector<int64_t> d;
  for (int64_t L = Lmin; L <= Lmax; ++L) d.push_back(1 - L);
  return d;
}

DiagonalConcentration mean_over_offsets(const Circuits& c, int64_t h2, int64_t h1, const std::vector<int64_t>& offsets,
                                        const Tensor& query) {
  if (offsets.empty()) fail("mean_over_offsets", "no offsets given");
  DiagonalConcentration m;
  for (int64_t d : offsets) {
    const DiagonalConcentration x = diagonal_concentration(k_composition(c, h2, h1, d, query));
    m.argmax_fraction += x.argmax_fraction / static_cast<double>(offsets.size());
    m.z += x.z / static_cast<double>(offsets.size());
  }
  return m;
}

KCompositionTable k_composition_table(const Circuits& c, const std::vector<int64_t>& offsets, const Tensor& query_block1) {
  KCompositionTable t;
  t.offsets = offsets;
  const int64_t H = static_cast<int64_t>(c.heads.at(1).size());
  for (int64_t h2 = 0; h2 < H; ++h2) {
    t.text.emplace_back();
    t.rope.emplace_back();
    t.block1_text.emplace_back();
    t.block1_rope.emplace_back();
    for (int64_t h1 = 0; h1 <= H; ++h1) {
      const int64_t src = h1 == H ? -1 : h1;
      t.text.back().push_back(diagonal_concentration(k_composition(c, h2, src, 0)));
      t.rope.back().push_back(mean_over_offsets(c, h2, src, offsets));
      t.block1_text.back().push_back(diagonal_concentration(k_composition(c, h2, src, 0, query_block1)));
      t.block1_rope.back().push_back(mean_over_offsets(c, h2, src, offsets, query_block1));
    }
  }
  return t;
}

std::vector<double> query_head_match(const Circuits& c, int64_t key_head, const std::vector<int64_t>& offsets) {
  const auto& b1 = c.heads.at(0);
  const int64_t H2 = static_cast<int64_t>(c.heads.at(1).size());
  std::vector<double> out;
  for (const HeadWeights& wq : b1) {
    const Tensor Q = matmul(c.E, T_(ov_circuit(wq)));
    double s = 0;
    for (int64_t h2 = 0; h2 < H2; ++h2) s += mean_over_offsets(c, h2, key_head, offsets, Q).argmax_fraction;
    out.push_back(s / static_cast<double>(H2));
  }
  return out;
}

double composition_score(const Tensor& X, const Tensor& Y) {
  return frobenius_norm(matmul(X, Y)) / (frobenius_norm(X) * frobenius_norm(Y));
}

CompositionScores composition_scores(const Circuits& c) {
  CompositionScores s;
  const auto& b1 = c.heads.at(0);
  const auto& b2 = c.heads.at(1);
  for (const HeadWeights& w2 : b2) {
    const Tensor QK = qk_circuit(w2), OV2 = ov_circuit(w2);
    s.q.emplace_back();
    s.k.emplace_back();
    s.v.emplace_back();
    for (const HeadWeights& w1 : b1) {
      const Tensor OV1 = ov_circuit(w1);
      s.q.back().push_back(composition_score(T_(QK), OV1));
      s.k.back().push_back(composition_score(QK, OV1));
      s.v.back().push_back(composition_score(OV2, OV1));
    }
  }
  return s;
}

CompositionBaseline random_composition_baseline(int64_t d, int64_t d_h, int64_t draws, uint64_t seed) {
  Generator g(seed);
  CompositionBaseline b;
  b.draws = draws;
  for (int64_t i = 0; i < draws; ++i) {
    auto factor = [&](int64_t r, int64_t cols) { return randn({r, cols}, g, DType::f64); };
    const Tensor QK = matmul(T_(factor(d_h, d)), factor(d_h, d));  // W_qᵀ W_k
    const Tensor OV1 = matmul(factor(d, d_h), factor(d_h, d));     // W_o W_v
    const Tensor OV2 = matmul(factor(d, d_h), factor(d_h, d));
    b.q += composition_score(T_(QK), OV1) / static_cast<double>(draws);
    b.k += composition_score(QK, OV1) / static_cast<double>(draws);
    b.v += composition_score(OV2, OV1) / static_cast<double>(draws);
  }
  return b;
}

// ------------------------------------------------------------------ the copying head by hand

std::unique_ptr<TinyCharLM> copying_head_model(double scale, uint64_t seed) {
  Generator g(seed);
  auto m = std::make_unique<TinyCharLM>(
      nn::TinyCharLMConfig{.vocab = 64, .d = 128, .heads = 4, .blocks = 1, .pos = "none"}, g);
  const int64_t D = 128, dh = 32;
  const Tensor P = randn({dh, D}, g);   // the shared query/key map
  const Tensor Wv = randn({dh, D}, g);  // the value map
  NoGradGuard ng;
  Tensor qkv = m->blks[0]->qkv->weight.detach(), proj = m->blks[0]->proj->weight.detach();
  qkv.slice(0, 0, dh).copy_(mul(P, scale));           // W_q of head 0
  qkv.slice(0, D, D + dh).copy_(mul(P, scale));       // W_k of head 0: the same map
  qkv.slice(0, 2 * D, 2 * D + dh).copy_(Wv);          // W_v of head 0
  proj.zero_();                                       // every other head's output columns: 0
  proj.slice(1, 0, dh).copy_(T_(Wv));                 // head 0's output columns: W_vᵀ
  return m;
}

ContextRates context_rates(TinyCharLM& model, const Tensor& tokens) {
  if (tokens.dim() != 2) fail("context_rates", "tokens {} must be (B, T)", tokens.describe());
  NoGradGuard ng;
  model.clear_ablations();
  const Tensor full = model.forward(tokens);
  model.ablate_head(0, 0);
  const Tensor without = model.forward(tokens);
  model.ablate_head(0, 0, false);
  const std::vector<double> z = sub(full, without).to(Device::cpu).contiguous().to_vector();  // (B, T, V)
  const std::vector<int64_t> x = tokens.to(Device::cpu).contiguous().to_int_vector();
  const int64_t B = tokens.size(0), T = tokens.size(1), V = model.config().vocab;
  ContextRates r;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<bool> seen(static_cast<size_t>(V), false);
    int64_t distinct = 0;
    for (int64_t i = 0; i < T; ++i) {
      const int64_t cur = x[static_cast<size_t>(b * T + i)];
      // `seen` and `distinct` describe x_0..x_{i-1} here
      if (i >= 1) {
        const double* c = z.data() + (b * T + i) * V;
        const int64_t top = std::max_element(c, c + V) - c;
        int64_t top_other = cur == 0 ? 1 : 0;
        for (int64_t v = 0; v < V; ++v)
          if (v != cur && c[v] > c[top_other]) top_other = v;
        const bool cur_seen = seen[static_cast<size_t>(cur)];
        r.with_self += (top == cur || seen[static_cast<size_t>(top)]) ? 1 : 0;
        r.top1_current += top == cur ? 1 : 0;
        r.without_self += seen[static_cast<size_t>(top_other)] ? 1 : 0;
        r.chance_with_self += static_cast<double>(distinct + (cur_seen ? 0 : 1)) / static_cast<double>(V);
        r.chance_without_self += static_cast<double>(distinct - (cur_seen ? 1 : 0)) / static_cast<double>(V - 1);
        ++r.positions;
      }
      if (!seen[static_cast<size_t>(cur)]) seen[static_cast<size_t>(cur)] = true, ++distinct;
    }
  }
  const double n = static_cast<double>(std::max<int64_t>(1, r.positions));
  r.with_self /= n, r.without_self /= n, r.top1_current /= n, r.chance_with_self /= n, r.chance_without_self /= n;
  return r;
}

}  // namespace hg::lab::circuits
