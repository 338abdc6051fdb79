// TinyCharLM (nn/tinycharlm.h) and the repeated-sequence data (nn/data.h): PyTorch's parameter
// names, a float64 gradcheck of the whole model for every positional scheme, causality, the
// attention maps, head ablation, and the QK / OV slicing of the text's first code cell.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "handgrad.h"
#include "nn/data.h"
#include "nn/tinycharlm.h"
#include "test_util.h"

using namespace hg;
using namespace hg::nn;
using hg::test::max_abs_diff;

namespace {

TinyCharLMConfig tiny(const std::string& pos, bool bias = false) {
  return {.vocab = 7, .d = 8, .heads = 2, .blocks = 2, .pos = pos, .bias = bias, .max_len = 5, .dtype = DType::f64};
}

// Rank by Gaussian elimination with partial pivoting; pivots below tol · (largest |entry|) are 0.
int64_t rank_by_elimination(const Tensor& m, double tol = 1e-10) {
  const int64_t r = m.size(0), c = m.size(1);
  std::vector<double> a = m.to_vector();
  double scale = 0;
  for (double v : a) scale = std::max(scale, std::abs(v));
  int64_t rank = 0;
  for (int64_t col = 0; col < c && rank < r; ++col) {
    int64_t piv = rank;
    for (int64_t i = rank; i < r; ++i)
      if (std::abs(a[i * c + col]) > std::abs(a[piv * c + col])) piv = i;
    if (std::abs(a[piv * c + col]) <= tol * scale) continue;
    for (int64_t j = 0; j < c; ++j) std::swap(a[rank * c + j], a[piv * c + j]);
    for (int64_t i = rank + 1; i < r; ++i) {
      const double f = a[i * c + col] / a[rank * c + col];
      for (int64_t j = col; j < c; ++j) a[i * c + j] -= f * a[rank * c + j];
    }
    ++rank;
  }
  return rank;
}

Tensor random_tokens(int64_t B, int64_t T, int64_t V, Generator& gen) { return randint({B, T}, gen, 0, V); }

}  // namespace

TEST_CASE("TinyCharLM's parameters carry the names and shapes of d2l's PyTorch module") {
  Generator gen(0);
  TinyCharLM model({}, gen);  // vocab 64, d 128, 4 heads, 2 blocks, rope, no bias
  const NamedTensors p = model.named_parameters();
  const std::vector<std::pair<std::string, Shape>> expect = {
      {"token_emb.weight", {64, 128}},  {"blks.0.qkv.weight", {384, 128}}, {"blks.0.proj.weight", {128, 128}},
      {"blks.1.qkv.weight", {384, 128}}, {"blks.1.proj.weight", {128, 128}}};
  REQUIRE(p.size() == expect.size());
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].first == expect[i].first);
    CHECK(p[i].second.shape() == expect[i].second);
    CHECK(p[i].second.dtype() == DType::f32);
  }
  CHECK(model.num_parameters() == 64 * 128 + 2 * (384 * 128 + 128 * 128));

  TinyCharLM biased({.blocks = 1, .bias = true}, gen);
  std::vector<std::string> names;
  for (const auto& [n, t] : biased.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"token_emb.weight", "blks.0.qkv.weight", "blks.0.qkv.bias",
                                          "blks.0.proj.weight", "blks.0.proj.bias"});

  TinyCharLM learned({.blocks = 1, .pos = "learned", .max_len = 63}, gen);
  const NamedTensors pl = learned.named_parameters();
  REQUIRE(pl.size() == 4);
  CHECK(pl[1].first == "pos_emb.weight");
  CHECK(pl[1].second.shape() == Shape{63, 128});

  CHECK_THROWS_WITH_AS(TinyCharLM({.d = 10, .heads = 4}, gen), doctest::Contains("not divisible"), Error);
  CHECK_THROWS_WITH_AS(TinyCharLM({.pos = "xpos"}, gen), doctest::Contains("unknown positional scheme"), Error);
  CHECK_THROWS_WITH_AS(model.forward(random_tokens(1, 4, 65, gen).to(DType::f32)), doctest::Contains("i64"), Error);
}

TEST_CASE("float64 gradcheck of the whole model's loss w.r.t. every parameter, for each positional scheme") {
  struct Variant {
    std::string pos;
    bool bias = false;
    bool ablate = false;
  };
  for (const Variant& var : {Variant{"rope"}, Variant{"alibi"}, Variant{"learned"}, Variant{"sinusoidal"},
                             Variant{"none"}, Variant{"rope", true}, Variant{"rope", false, true}}) {
    CAPTURE(var.pos);
    CAPTURE(var.bias);
    CAPTURE(var.ablate);
    Generator gen(11);
    TinyCharLM model(tiny(var.pos, var.bias), gen);
    if (var.ablate) model.ablate_head(1, 0);
    // Parameters of a larger spread than the initialisation (whose N(0, 0.02²) embeddings make
    // every attention map nearly uniform), so the check sees sharp, position-dependent weights.
    std::vector<Tensor> inputs;
    for (const Tensor& p : model.parameters()) inputs.push_back(randn(p.shape(), gen, DType::f64, 0.0, 0.7).requires_grad_());
    RepeatedBatch data = repeated_batch(2, 6, 7, 2, 4, gen);
    Tensor x = data.tokens.slice(1, 0, 5), y = data.tokens.slice(1, 1, 6);  // T = 5
    auto f = [&](const std::vector<Tensor>& ps) { return split_losses(model.forward(x, ps), y, data.lengths).loss; };
    GradcheckReport r = gradcheck(f, inputs);
    INFO(r.message());
    CHECK(r.passed);
    CHECK(r.checked == 2 * model.num_parameters());  // both layouts, every element
  }
}

TEST_CASE("forward mode through the whole model: the loss's tangent against central differences and reverse mode to 1e-10") {
  for (const std::string pos : {"rope", "alibi", "learned", "sinusoidal", "none"}) {
    CAPTURE(pos);
    Generator gen(12);
    TinyCharLM model(tiny(pos, pos == "rope"), gen);
    std::vector<Tensor> inputs;
    for (const Tensor& p : model.parameters()) inputs.push_back(randn(p.shape(), gen, DType::f64, 0.0, 0.7).requires_grad_());
    RepeatedBatch data = repeated_batch(2, 6, 7, 2, 4, gen);
    Tensor x = data.tokens.slice(1, 0, 5), y = data.tokens.slice(1, 1, 6);
    auto split = [&](const std::vector<Tensor>& ps) { return split_losses(model.forward(x, ps), y, data.lengths).loss; };
    auto ce = [&](const std::vector<Tensor>& ps) { return cross_entropy(model.forward(x, ps), y); };
    for (const auto& f : {TensorFn(split), TensorFn(ce)}) {
      FwdcheckReport r = fwdcheck(f, inputs, {}, 1e-10);
      INFO(r.message());
      CHECK(r.passed);
      CHECK(r.transpose_rel_err <= 1e-10);
    }
  }
}

TEST_CASE("TinyCharLM is causal: changing a later token leaves every earlier logit unchanged") {
  for (const std::string pos : {"rope", "alibi", "learned", "sinusoidal", "none"}) {
    CAPTURE(pos);
    Generator gen(3);
    TinyCharLM model(tiny(pos, true), gen);
    for (const Tensor& p : model.parameters()) {
      NoGradGuard ng;
      p.detach().copy_(randn(p.shape(), gen, DType::f64));
    }
    NoGradGuard ng;
    Tensor x = random_tokens(2, 5, 7, gen);
    Tensor x2 = x.clone();
    x2.set_at({0, 3}, (x.at({0, 3}) + 1) == 7 ? 0 : x.at({0, 3}) + 1);
    Tensor z = model.forward(x), z2 = model.forward(x2);
    CHECK(max_abs_diff(z.slice(1, 0, 3), z2.slice(1, 0, 3)) == 0.0);  // positions before 3: untouched
    CHECK(max_abs_diff(z.slice(1, 3, 5).select(0, 0), z2.slice(1, 3, 5).select(0, 0)) > 1e-3);
    CHECK(max_abs_diff(z.select(0, 1), z2.select(0, 1)) == 0.0);  // the other sequence
  }
}

TEST_CASE("attention_weights: every block's (B, H, T, T) map, causal rows summing to 1, exactly the forward's") {
  Generator gen(5);
  TinyCharLMConfig cfg = tiny("rope");
  TinyCharLM model(cfg, gen);
  for (const Tensor& p : model.parameters()) {
    NoGradGuard ng;
    p.detach().copy_(randn(p.shape(), gen, DType::f64));
  }
  Tensor x = random_tokens(3, 5, 7, gen);
  const std::vector<Tensor> maps = model.attention_weights(x);
  REQUIRE(maps.size() == 2);
  for (const Tensor& m : maps) {
    CHECK(m.shape() == Shape{3, 2, 5, 5});
    CHECK_FALSE(m.requires_grad());
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < 5; ++i) {
          double s = 0;
          for (int64_t j = 0; j < 5; ++j) {
            s += m.at({b, h, i, j});
            if (j > i) CHECK(m.at({b, h, i, j}) == 0.0);
          }
          CHECK(s == doctest::Approx(1.0).epsilon(1e-12));
        }
  }
  // Rebuild the logits from the maps: h += proj(merge(P v)) with v sliced from qkv's rows
  // [2d, 3d) (RoPE rotates q and k only, and P already holds their effect).
  NoGradGuard ng;
  const int64_t d = 8, H = 2, dh = 4, T = 5, B = 3;
  const Tensor E = model.token_emb->weight;
  Tensor h = embedding(E, x);  // (B, T, d)
  for (size_t l = 0; l < 2; ++l) {
    const Tensor W = model.blks[l]->qkv->weight, Wo = model.blks[l]->proj->weight;
    Tensor v = matmul(h, W.slice(0, 2 * d, 3 * d).transpose(0, 1)).reshape({B, T, H, dh}).transpose(1, 2);
    Tensor o = matmul(maps[l], v).transpose(1, 2).reshape({B, T, d});
    h = h + matmul(o, Wo.transpose(0, 1));
  }
  CHECK(max_abs_diff(matmul(h, E.transpose(0, 1)), model.forward(x)) < 1e-12);
}

TEST_CASE("ablating a head zeroes its columns of proj's input; restoring it gives identical logits") {
  Generator gen(9);
  TinyCharLM model(tiny("rope", true), gen);
  for (const Tensor& p : model.parameters()) {
    NoGradGuard ng;
    p.detach().copy_(randn(p.shape(), gen, DType::f64));
  }
  NoGradGuard ng;
  Tensor x = random_tokens(2, 5, 7, gen);
  const Tensor z0 = model.forward(x);
  model.ablate_head(1, 0);
  CHECK(model.is_ablated(1, 0));
  const Tensor z1 = model.forward(x);
  CHECK(max_abs_diff(z0, z1) > 1e-3);
  // The same model with block 2's proj columns [0, d_h) zeroed, through the functional forward.
  std::vector<Tensor> ps;
  for (const auto& [name, p] : model.named_parameters()) {
    Tensor c = p.detach().clone();
    if (name == "blks.1.proj.weight") c.slice(1, 0, 4).zero_();
    ps.push_back(c);
  }
  model.clear_ablations();
  CHECK(max_abs_diff(model.forward(x, ps), z1) < 1e-12);
  CHECK(max_abs_diff(model.forward(x), z0) == 0.0);
  model.ablate_head(1, 0);
  model.ablate_head(1, 0, false);
  CHECK(max_abs_diff(model.forward(x), z0) == 0.0);
  for (const Tensor& p : model.parameters()) CHECK(p.dtype() == DType::f64);  // weights untouched by design
  CHECK_THROWS_WITH_AS(model.ablate_head(2, 0), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(model.ablate_head(0, 2), doctest::Contains("does not exist"), Error);
}

TEST_CASE("QK and OV circuits sliced from qkv and proj as the text does: rank d_h, and they are the model's head") {
  // The text's first code cell: d = 128, four heads, rank 32 each.
  Generator gen(0);
  TinyCharLM model({.vocab = 64, .pos = "rope", .dtype = DType::f64}, gen);
  const int64_t D = 128, dh = 32;
  const Tensor W = model.blks[0]->qkv->weight.detach(), Wo = model.blks[0]->proj->weight.detach();
  const Tensor Wq = W.slice(0, 0, D), Wk = W.slice(0, D, 2 * D), Wv = W.slice(0, 2 * D, 3 * D);
  NoGradGuard ng;
  for (int64_t h : {0, 3}) {
    Tensor W_QK = matmul(Wq.slice(0, h * dh, (h + 1) * dh).transpose(0, 1), Wk.slice(0, h * dh, (h + 1) * dh));
    Tensor W_OV = matmul(Wo.slice(1, h * dh, (h + 1) * dh), Wv.slice(0, h * dh, (h + 1) * dh));
    CHECK(W_QK.shape() == Shape{128, 128});
    CHECK(rank_by_elimination(W_QK) == 32);
    CHECK(hg::matrix_rank(W_QK).item() == 32);  // the library's (Jacobi singular values) agrees
    CHECK(W_OV.shape() == Shape{128, 128});
    CHECK(rank_by_elimination(W_OV) == 32);
  }

  // The circuits are the head: with pos = 'none' and one block, head h's scores are
  // e_iᵀ W_QK e_j / √d_h, and with every other head ablated the logits are
  // z_i = E (e_i + Σ_j α_ij W_OV e_j)  (Eq. 10.6.3 with one head).
  Generator g2(1);
  const int64_t d = 8, H = 2, T = 5, V = 7, hd = 4;
  TinyCharLMConfig cfg = tiny("none");
  cfg.blocks = 1;
  TinyCharLM one(cfg, g2);
  for (const Tensor& p : one.parameters()) p.detach().copy_(randn(p.shape(), g2, DType::f64));
  Tensor x = random_tokens(1, T, V, g2);
  const Tensor E = one.token_emb->weight.detach(), Wqkv = one.blks[0]->qkv->weight.detach(),
               Wp = one.blks[0]->proj->weight.detach();
  for (int64_t h = 0; h < H; ++h) {
    CAPTURE(h);
    Tensor Wq_h = Wqkv.slice(0, h * hd, (h + 1) * hd), Wk_h = Wqkv.slice(0, d + h * hd, d + (h + 1) * hd),
           Wv_h = Wqkv.slice(0, 2 * d + h * hd, 2 * d + (h + 1) * hd);
    Tensor W_QK = matmul(Wq_h.transpose(0, 1), Wk_h), W_OV = matmul(Wp.slice(1, h * hd, (h + 1) * hd), Wv_h);
    Tensor e = embedding(E, x.select(0, 0));  // (T, d) rows e_i
    Tensor S = matmul(matmul(e, W_QK), e.transpose(0, 1)) / std::sqrt(static_cast<double>(hd));
    std::vector<double> alpha(static_cast<size_t>(T * T), 0.0);
    for (int64_t i = 0; i < T; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j <= i; ++j) m = std::max(m, S.at({i, j}));
      for (int64_t j = 0; j <= i; ++j) s += std::exp(S.at({i, j}) - m);
      for (int64_t j = 0; j <= i; ++j) alpha[static_cast<size_t>(i * T + j)] = std::exp(S.at({i, j}) - m) / s;
    }
    const Tensor maps = one.attention_weights(x)[0].select(0, 0).select(0, h);  // (T, T)
    CHECK(max_abs_diff(maps, tensor(alpha, {T, T}, DType::f64)) < 1e-12);
    one.clear_ablations();
    one.ablate_head(0, 1 - h);
    Tensor resid = e + matmul(matmul(tensor(alpha, {T, T}, DType::f64), e), W_OV.transpose(0, 1));  // rows: e_i + Σ α W_OV e_j
    CHECK(max_abs_diff(matmul(resid, E.transpose(0, 1)), one.forward(x).select(0, 0)) < 1e-12);
  }
}

TEST_CASE("repeated_batch tiles a random pattern of length L ~ U{Lmin..Lmax}, the same for the same seed") {
  Generator gen(0);
  RepeatedBatch r = repeated_batch(64, 40, 10, 5, 8, gen);
  CHECK(r.tokens.shape() == Shape{64, 40});
  CHECK(r.lengths.shape() == Shape{64});
  std::vector<int> seen_L(9, 0);
  for (int64_t b = 0; b < 64; ++b) {
    const int64_t L = static_cast<int64_t>(r.lengths.at({b}));
    REQUIRE(L >= 5);
    REQUIRE(L <= 8);
    ++seen_L[static_cast<size_t>(L)];
    for (int64_t t = 0; t < 40; ++t) {
      const double tok = r.tokens.at({b, t});
      CHECK((tok >= 0 && tok < 10));
      if (t >= L) CHECK(tok == r.tokens.at({b, t - L}));
    }
  }
  for (int L = 5; L <= 8; ++L) CHECK(seen_L[static_cast<size_t>(L)] > 0);  // every length occurs
  Generator a(42), b(42);
  RepeatedBatch ra = repeated_batch(4, 16, 64, 16, 32, a), rb = repeated_batch(4, 16, 64, 16, 32, b);
  CHECK(ra.tokens.to_int_vector() == rb.tokens.to_int_vector());
  CHECK(ra.lengths.to_int_vector() == rb.lengths.to_int_vector());
  CHECK_THROWS_WITH_AS(repeated_batch(2, 8, 10, 0, 4, gen), doctest::Contains("Lmin"), Error);
  CHECK_THROWS_WITH_AS(repeated_batch(2, 8, 10, 5, 4, gen), doctest::Contains("Lmin"), Error);
}

TEST_CASE("split_losses: first copy t < L, later copies t >= L (1-based t), against log_softmax per target") {
  Generator gen(2);
  const int64_t B = 2, T = 4, V = 3;
  Tensor logits = randn({B, T, V}, gen, DType::f64).requires_grad_();
  Tensor y = index_tensor({0, 2, 1, 1, 2, 2, 0, 1}, {B, T});
  Tensor L = index_tensor({2, 3}, {B});
  SplitLoss s = split_losses(logits, y, L);
  Tensor lp;
  {
    NoGradGuard ng;
    lp = log_softmax(logits, -1);
  }
  auto ce = [&](int64_t b, int64_t t) { return -lp.at({b, t, static_cast<int64_t>(y.at({b, t}))}); };
  // sequence 0 (L = 2): targets t = 1 first, t = 2, 3, 4 later; sequence 1 (L = 3): t = 1, 2 first.
  const double first = (ce(0, 0) + ce(1, 0) + ce(1, 1)) / 3;
  const double later = (ce(0, 1) + ce(0, 2) + ce(0, 3) + ce(1, 2) + ce(1, 3)) / 5;
  double all = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) all += ce(b, t) / (B * T);
  CHECK(s.n_first == 3);
  CHECK(s.n_later == 5);
  CHECK(s.first == doctest::Approx(first).epsilon(1e-12));
  CHECK(s.later == doctest::Approx(later).epsilon(1e-12));
  CHECK(s.loss.item() == doctest::Approx(all).epsilon(1e-12));
  CHECK(s.loss.requires_grad());
  int hits = 0;
  for (auto [b, t] : {std::pair{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}}) {
    int64_t best = 0;
    for (int64_t c = 1; c < V; ++c)
      if (logits.at({b, t, c}) > logits.at({b, t, best})) best = c;
    hits += best == static_cast<int64_t>(y.at({b, t}));
  }
  CHECK(s.later_acc == doctest::Approx(hits / 5.0));
  s.loss.backward();
  CHECK(logits.grad().defined());

  // accuracy per position: logits that put their maximum on the target at positions 0 and 2 only.
  Tensor z = zeros({B, T, V}, DType::f64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t tgt = static_cast<int64_t>(y.at({b, t}));
      z.set_at({b, t, t % 2 == 0 ? tgt : (tgt + 1) % V}, 5.0);
    }
  z.set_at({1, 2, (static_cast<int64_t>(y.at({1, 2})) + 1) % V}, 9.0);  // one miss at position 2
  CHECK(accuracy_per_position(z, y) == std::vector<double>{1.0, 0.0, 0.5, 0.0});
  CHECK_THROWS_WITH_AS(split_losses(logits, y, index_tensor({2}, {1})), doctest::Contains("lengths"), Error);
}
