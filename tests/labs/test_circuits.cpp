// The circuits lab's library (labs/circuits_case.h), each number against a source that does not
// share its code: RoPE's relative rotation against the rope op, the QK and OV circuits against the
// model's own attention weights and logits, the zero-block table against E Eᵀ, composition scores
// of pairs built to compose (or not), and the hand-built copying head.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "handgrad.h"
#include "labs/circuits_case.h"
#include "labs/linalg.h"
#include "test_util.h"

using namespace hg;
using namespace hg::lab;
using namespace hg::lab::circuits;

namespace {

// A small model in float64 with every parameter redrawn N(0, 1), so that no slice is near zero.
std::unique_ptr<nn::TinyCharLM> small_model(int64_t blocks, const std::string& pos, Generator& gen) {
  auto m = std::make_unique<nn::TinyCharLM>(
      nn::TinyCharLMConfig{.vocab = 7, .d = 8, .heads = 2, .blocks = blocks, .pos = pos, .dtype = DType::f64}, gen);
  NoGradGuard ng;
  for (const Tensor& p : m->parameters()) p.detach().copy_(randn(p.shape(), gen, DType::f64));
  return m;
}

Tensor unit(int64_t d, int64_t i) {
  Tensor e = zeros({d}, DType::f64);
  e.set_at({i}, 1.0);
  return e;
}

}  // namespace

TEST_CASE("rope_relative: rope(q at i) · rope(k at j) = qᵀ R(j − i) k, the rope op's own rotation") {
  Generator gen(5);
  const int64_t T = 40, dh = 8;
  const Tensor q = randn({1, 1, T, dh}, gen, DType::f64), k = randn({1, 1, T, dh}, gen, DType::f64);
  const Tensor qr = rope(q).select(0, 0).select(0, 0), kr = rope(k).select(0, 0).select(0, 0);  // (T, dh)
  for (auto [i, j] : {std::pair<int64_t, int64_t>{3, 3}, {20, 19}, {39, 8}, {31, 0}, {5, 12}}) {
    CAPTURE(i);
    CAPTURE(j);
    const double via_op = sum(mul(qr.select(0, i), kr.select(0, j))).item();
    const Tensor qi = q.select(0, 0).select(0, 0).select(0, i).view({1, dh});
    const Tensor kj = k.select(0, 0).select(0, 0).select(0, j).view({dh, 1});
    const double via_R = matmul(matmul(qi, rope_relative(dh, j - i)), kj).item();
    CHECK(via_R == doctest::Approx(via_op).epsilon(1e-12));
  }
  CHECK(hg::test::max_abs_diff(rope_relative(dh, 0), tensor(std::vector<double>{1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
                                                                                  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
                                                                                  0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
                                                                                  0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                                {dh, dh}, DType::f64)) == 0);
  CHECK(induction_offsets(16, 18) == std::vector<int64_t>{-15, -16, -17});
}

TEST_CASE("W_QK with RoPE gives the model's attention weights; W_OV gives what the block adds to the logits") {
  Generator gen(11);
  const std::unique_ptr<nn::TinyCharLM> mp = small_model(1, "rope", gen);
  nn::TinyCharLM& m = *mp;
  const int64_t T = 6, V = 7, dh = 4;
  const Tensor x = tensor({3, 0, 6, 3, 1, 5}, {1, T}, DType::i64);
  const std::vector<int64_t> xs = x.to_int_vector();
  const Tensor P = m.attention_weights(x)[0].select(0, 0);  // (H, T, T)
  const Tensor E = m.token_emb->weight.detach();
  Tensor added = zeros({T, V}, DType::f64);  // Σ_h Σ_j α_ij (E W_OV e_{x_j})
  for (int64_t h = 0; h < 2; ++h) {
    const HeadWeights w = head_weights(m, 0, h);
    for (int64_t i = 0; i < T; ++i) {
      // s_ij = e_iᵀ W_qᵀ R(j − i) W_k e_j / √d_h over j ≤ i, then softmax: the map's row i.
      std::vector<double> s;
      for (int64_t j = 0; j <= i; ++j) {
        const Tensor ei = E.select(0, xs[static_cast<size_t>(i)]).view({1, 8});
        const Tensor ej = E.select(0, xs[static_cast<size_t>(j)]).view({8, 1});
        s.push_back(matmul(matmul(ei, qk_circuit(w, j - i)), ej).item() / std::sqrt(static_cast<double>(dh)));
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double v : s) z += std::exp(v - mx);
      for (int64_t j = 0; j <= i; ++j) {
        CAPTURE(h);
        CAPTURE(i);
        CAPTURE(j);
        CHECK(P.at({h, i, j}) == doctest::Approx(std::exp(s[static_cast<size_t>(j)] - mx) / z).epsilon(1e-10));
      }
    }
    // The block's addition at each position: Σ_j α_ij W_OV e_{x_j}, read by the tied head.
    const Tensor X = embedding(E, x.view({T}));                                        // (T, d)
    const Tensor mixed = matmul(P.select(0, h), matmul(X, ov_circuit(w).transpose(0, 1)));  // (T, d)
    added = add(added, matmul(mixed, E.transpose(0, 1)));
  }
  NoGradGuard ng;
  const Tensor logits = m.forward(x).select(0, 0);                                      // (T, V)
  const Tensor direct = matmul(embedding(E, x.view({T})), E.transpose(0, 1));           // the zero-block path
  CHECK(hg::test::max_abs_diff(logits, add(direct, added)) < 1e-10);
  CHECK(qk_circuit(head_weights(m, 0, 1)).shape() == Shape{8, 8});
  CHECK(hg::test::max_abs_diff(qk_circuit(head_weights(m, 0, 1)), qk_circuit(head_weights(m, 0, 1), 0)) < 1e-14);
  CHECK_THROWS_AS(head_weights(m, 1, 0), Error);
  CHECK_THROWS_AS(head_weights(m, 0, 2), Error);
}

TEST_CASE("circuit_ranks: every head's W_QK and W_OV has rank d_h at initialisation, as the text prints") {
  Generator gen(0);
  const nn::TinyCharLM m(induction::model_config(2), gen);
  const std::vector<HeadRanks> r = circuit_ranks(m);
  REQUIRE(r.size() == 8);
  for (const HeadRanks& h : r) {
    CHECK(h.qk_shape == Shape{128, 128});
    CHECK(h.ov_shape == Shape{128, 128});
    CHECK(h.qk.rank == 32);
    CHECK(h.ov.rank == 32);
  }
}

TEST_CASE("zero blocks: the forward's logit table is E Eᵀ, symmetric and PSD; the partner task stays on its bound") {
  Generator gen(2);
  nn::TinyCharLM zero({.vocab = 64, .d = 128, .heads = 4, .blocks = 0}, gen);
  const Tensor A = zero_block_logits(zero);
  const Tensor E = zero.token_emb->weight.detach();
  CHECK(hg::test::max_abs_diff(A, matmul(E, E.transpose(0, 1))) < 1e-7);
  const GramCheck g = gram_check(A);
  CHECK(g.asymmetry <= 1e-6 * g.max_abs);
  CHECK(g.rank.rank == 64);  // V = 64 < d: full rank, the text's bound rank ≤ d says nothing
  CHECK(g.eigenvalues.front() >= -g.eig_tol);
  CHECK(g.eigenvalues.front() > 0);  // 64 random vectors in 128 dimensions are independent
  CHECK(g.max_on_diagonal);
  CHECK(g.min_pair_gap > 0);
  // A symmetric matrix that is not a Gram matrix: eigenvalues −1 and 3; its pair gap is negative.
  const GramCheck bad = gram_check(tensor({1, 2, 2, 1}, {2, 2}, DType::f64));
  CHECK(bad.eigenvalues.front() == doctest::Approx(-1));
  CHECK(bad.min_pair_gap == doctest::Approx(-2));
  CHECK_FALSE(bad.max_on_diagonal);

  Generator gp(4);
  nn::TinyCharLM zp({.vocab = 64, .d = 128, .heads = 4, .blocks = 0}, gp);
  const PartnerTask pt = train_partner_task(zp, 60, gp);
  REQUIRE(pt.loss.size() == 60);
  CHECK(pt.loss.back() < pt.loss.front());
  CHECK(pt.accuracy <= 0.5);
  CHECK(pt.both_ways == 0);
  CHECK(pt.pairs == 32);
  CHECK(pt.population_loss >= std::log(2.0));
  CHECK(partner(6) == 7);
  CHECK(partner(7) == 6);
}

TEST_CASE("diagonal concentration on hand-made matrices") {
  const DiagonalConcentration id = diagonal_concentration(tensor({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}, DType::f64));
  CHECK(id.argmax_fraction == 1.0);
  CHECK(id.z == 0.0);  // the off-diagonal entries do not vary: no spread to measure against
  // Diagonal 2; off-diagonal 3, −1, 1, −1, 1, −1 (mean 1/3, mean square 14/6); rows 1 and 2 peak on
  // the diagonal, row 0 on column 1.
  const DiagonalConcentration d = diagonal_concentration(tensor({2, 3, -1, /**/ 1, 2, -1, /**/ 1, -1, 2}, {3, 3}, DType::f64));
  CHECK(d.argmax_fraction == doctest::Approx(2.0 / 3.0));
  CHECK(d.z == doctest::Approx((2.0 - 1.0 / 3.0) / std::sqrt(14.0 / 6.0 - 1.0 / 9.0)));
}

TEST_CASE("composition scores: pairs built to compose through the key, the query or the value, and random ones") {
  // d = 8, 2 heads of d_h = 4. Block-2 head 0: W_QK = e1 e2ᵀ (W_q's first row e1, W_k's e2) and
  // W_OV = e4 e2ᵀ; block-1 head 0: W_OV = e2 e3ᵀ. Then W_QK W_OV⁽¹⁾ = e1 e3ᵀ (K-composition 1),
  // W_QKᵀ W_OV⁽¹⁾ = e2 e1ᵀ e2 e3ᵀ = 0 (no Q-composition), W_OV⁽²⁾ W_OV⁽¹⁾ = e4 e3ᵀ (V-composition 1).
  Generator gen(1);
  const std::unique_ptr<nn::TinyCharLM> mp = small_model(2, "none", gen);
  nn::TinyCharLM& m = *mp;
  {
    NoGradGuard ng;
    for (const auto& b : m.blks) {
      b->qkv->weight.detach().zero_();
      b->proj->weight.detach().zero_();
    }
    auto set = [](const Tensor& w, int64_t r, int64_t c) { w.detach().set_at({r, c}, 1.0); };
    set(m.blks[1]->qkv->weight, 0, 1);      // W_q row 0 = e1 (0-based: coordinate 1)
    set(m.blks[1]->qkv->weight, 8, 2);      // W_k row 0 = e2
    set(m.blks[1]->qkv->weight, 16, 2);     // W_v row 0 = e2
    set(m.blks[1]->proj->weight, 4, 0);     // W_o column 0 = e4
    set(m.blks[0]->qkv->weight, 16, 3);     // block 1: W_v row 0 = e3
    set(m.blks[0]->proj->weight, 2, 0);     //          W_o column 0 = e2
    set(m.blks[0]->qkv->weight, 20, 5);     // block 1 head 1: W_v = e5, W_o = e6 (composes with nothing)
    set(m.blks[0]->proj->weight, 6, 4);
  }
  const Circuits c = read_circuits(m);
  CHECK(hg::test::max_abs_diff(qk_circuit(c.heads[1][0]), matmul(unit(8, 1).view({8, 1}), unit(8, 2).view({1, 8}))) == 0);
  const CompositionScores s = composition_scores(c);
  CHECK(s.k[0][0] == doctest::Approx(1));
  CHECK(s.q[0][0] == doctest::Approx(0));
  CHECK(s.v[0][0] == doctest::Approx(1));
  CHECK(s.k[0][1] == doctest::Approx(0));
  CHECK(s.v[0][1] == doctest::Approx(0));
  // The identity composed with itself: ‖I‖_F / ‖I‖_F² = 1/√d.
  const Tensor I = tensor({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}, {4, 4}, DType::f64);
  CHECK(composition_score(I, I) == doctest::Approx(0.5));
  // Random rank-32 products in 128 dimensions compose weakly, all three alike.
  const CompositionBaseline b = random_composition_baseline(128, 32, 3, 7);
  CHECK(b.draws == 3);
  for (double v : {b.q, b.k, b.v}) {
    CHECK(v > 0.02);
    CHECK(v < 0.2);
  }
}

TEST_CASE("K-composition: the exercise's matrix, its RoPE and block-1-query variants, are their formulas") {
  Generator gen(8);
  const std::unique_ptr<nn::TinyCharLM> mp = small_model(2, "rope", gen);
  const Circuits c = read_circuits(*mp);
  // One pair and the direct path, at a RoPE offset.
  const HeadWeights& w = c.heads[1][1];
  const Tensor ET = c.E.transpose(0, 1);
  const Tensor expect = matmul(matmul(matmul(c.E, qk_circuit(w, -3)), ov_circuit(c.heads[0][0])), ET);
  CHECK(hg::test::max_abs_diff(k_composition(c, 1, 0, -3), expect) < 1e-12);
  CHECK(hg::test::max_abs_diff(k_composition(c, 1, -1, -3), matmul(matmul(c.E, qk_circuit(w, -3)), ET)) < 1e-12);
  CHECK_THROWS_AS(k_composition(c, 2, 0, 0), Error);

  // The query read through block 1: E plus each block-1 head's W_OV e_a weighted by its own-position attention.
  CHECK(hg::test::max_abs_diff(query_through_block1(c, {0, 0}), c.E) == 0);
  const Tensor through0 = add(c.E, mul(matmul(c.E, ov_circuit(c.heads[0][0]).transpose(0, 1)), 0.5));
  CHECK(hg::test::max_abs_diff(query_through_block1(c, {0.5, 0}), through0) < 1e-12);
  CHECK_THROWS_AS(query_through_block1(c, {1}), Error);
  const DiagonalConcentration one = mean_over_offsets(c, 1, 0, {-3});
  const DiagonalConcentration direct = diagonal_concentration(k_composition(c, 1, 0, -3));
  CHECK(one.argmax_fraction == direct.argmax_fraction);
  CHECK(one.z == doctest::Approx(direct.z));
  const KCompositionTable t = k_composition_table(c, {-1, -2}, through0);
  REQUIRE(t.block1_rope.size() == 2);
  CHECK(t.block1_rope[0].size() == 3);  // two block-1 heads and the direct path
  const double z2 = (diagonal_concentration(k_composition(c, 1, -1, -1, through0)).z +
                     diagonal_concentration(k_composition(c, 1, -1, -2, through0)).z) / 2;
  CHECK(t.block1_rope[1][2].z == doctest::Approx(z2));
  CHECK(t.text[1][0].z == doctest::Approx(diagonal_concentration(k_composition(c, 1, 0, 0)).z));
  CHECK(query_head_match(c, 0, {-1}).size() == 2);
}

TEST_CASE("exercise 1: the hand-built copying head matches equal tokens and boosts tokens in the context") {
  const std::unique_ptr<nn::TinyCharLM> m = copying_head_model(16, 0);
  const HeadWeights w = head_weights(*m, 0, 0);
  const Tensor QK = qk_circuit(w);
  CHECK(hg::test::max_abs_diff(QK, QK.transpose(0, 1)) < 1e-9 * frobenius_norm(QK));  // W_q = W_k: symmetric
  CHECK(hg::test::max_abs_diff(ov_circuit(w), matmul(w.v.transpose(0, 1), w.v)) < 1e-9);
  for (int64_t h = 1; h < 4; ++h) CHECK(frobenius_norm(ov_circuit(head_weights(*m, 0, h))) == 0);
  CHECK(lab::matrix_rank(qk_circuit(head_weights(*m, 0, 0, DType::f32))).rank == 32);
  Generator gen(9);
  const Tensor x = randint({32, 64}, gen, 0, 64);
  const ContextRates r = context_rates(*m, x);
  CHECK(r.positions == 32 * 63);
  CHECK(r.with_self >= 0.95);
  CHECK(r.chance_with_self > 0.2);
  CHECK(r.chance_with_self < 0.6);
  CHECK(r.top1_current >= 0.99);  // a sharp match: each position attends to its own token, boosts only it
  CHECK_FALSE(m->is_ablated(0, 0));  // restored
  // With c = 1 the match is weak: the head averages the context and boosts its tokens, the current
  // one left out too (chance: the distinct earlier tokens over 63, under 0.6 here).
  const std::unique_ptr<nn::TinyCharLM> soft = copying_head_model(1, 0);
  const ContextRates s = context_rates(*soft, x);
  CHECK(s.without_self > 0.8);
  CHECK(s.chance_without_self < 0.6);
  CHECK(s.top1_current < 0.5);
}

#endif  // HANDGRAD_WITH_LABKIT
