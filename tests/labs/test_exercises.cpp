// Exercises 3, 5 and 6 of "What Attention Computes" (labs/exercises_case.h): the split of the tied
// embedding's gradient into its two paths against E.grad and against the hand formulas of a
// 0-block model, the tallies of exercise 5 on a hand-made batch, the held-out token batches, and
// short training runs of exercises 3 and 6.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "exercises_case.h"
#include "handgrad.h"
#include "test_util.h"

using namespace hg;
using namespace hg::lab;
using namespace hg::lab::exercises;

namespace {

nn::TinyCharLM small_model(int64_t blocks, Generator& gen) {
  nn::TinyCharLMConfig cfg = induction::model_config(blocks);
  cfg.vocab = 7, cfg.d = 8, cfg.heads = 2, cfg.dtype = DType::f64;
  return nn::TinyCharLM(cfg, gen);
}

// Random f64 weights N(0, 0.4²) (not the tiny initial ones, nor so large that the softmax
// saturates), so every gradient is far from zero.
void randomise(nn::TinyCharLM& model, Generator& gen) {
  NoGradGuard ng;
  for (const Tensor& p : model.parameters()) p.detach().copy_(mul(randn(p.shape(), gen, DType::f64), 0.4));
}

// Tokens (B, T) from `values`, row-major.
Tensor tokens_of(const std::vector<int64_t>& values, int64_t B, int64_t T) {
  Tensor t = empty({B, T}, DType::i64);
  std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
  return t;
}

// One backward of the mean next-token cross-entropy of `x` with the path split attached.
void one_backward(const nn::TinyCharLM& model, const Tensor& x, EmbeddingPathSplit& split) {
  const int64_t T = x.size(1);
  const Tensor loss = cross_entropy(model.forward(x.slice(1, 0, T - 1)), x.slice(1, 1, T));
  hg::backward(loss, Tensor(), {.observer = &split.observer()});
}

}  // namespace

TEST_CASE("exercise 6: the lookup and head paths sum to E.grad; a row never looked up gets exactly 0 by lookup") {
  Generator gen(11);
  nn::TinyCharLM model = small_model(2, gen);
  randomise(model, gen);
  // Tokens 0-4 only: rows 5 and 6 are never looked up (but still scored by the tied head).
  const Tensor x = tokens_of({0, 3, 1, 4, 2, 0, 3, 1, /**/ 2, 2, 4, 1, 0, 2, 2, 4}, 2, 8);
  const Tensor& E = model.token_emb->weight;
  EmbeddingPathSplit split(E);
  one_backward(model, x, split);
  CHECK(split.passes() == 1);
  REQUIRE(split.last_lookup().defined());
  REQUIRE(split.last_head().defined());
  // E.grad is what the backward summed from the two paths: the same two addends, so equal bit for bit.
  CHECK(hg::test::max_abs_diff(add(split.last_lookup(), split.last_head()), E.grad()) == 0.0);
  for (int64_t v : {5, 6}) {
    CHECK(hg::test::all_zero(split.last_lookup().select(0, v)));
    CHECK(sum(mul(split.last_head().select(0, v), split.last_head().select(0, v))).item() > 1e-6);
  }
  for (int64_t v = 0; v < 5; ++v) CHECK(sum(mul(split.last_lookup().select(0, v), split.last_lookup().select(0, v))).item() > 1e-6);
  // The accumulators hold each row's squared norm, summed over passes: twice after a second backward.
  const std::vector<double> look1 = split.lookup_squared(), head1 = split.head_squared();
  for (int64_t v = 0; v < 7; ++v) {
    const Tensor g = split.last_head().select(0, v);
    CHECK(head1[static_cast<size_t>(v)] == doctest::Approx(sum(mul(g, g)).item()).epsilon(1e-14));
  }
  model.zero_grad();
  one_backward(model, x, split);
  CHECK(split.passes() == 2);
  for (size_t v = 0; v < 7; ++v) {
    CHECK(split.lookup_squared()[v] == doctest::Approx(2 * look1[v]).epsilon(1e-14));
    CHECK(split.head_squared()[v] == doctest::Approx(2 * head1[v]).epsilon(1e-14));
  }
  CHECK(split.lookup_squared()[5] == 0.0);
  CHECK(split.lookup_squared()[6] == 0.0);
}

TEST_CASE("exercise 6: with no blocks the two paths are the hand formulas dZ_p E (lookup) and dZᵀ E[x] (head)") {
  // Zero blocks: z_p = E e_{x_p}, so z_p[b] = e_bᵀ e_{x_p}. With L = mean_p CE(z_p, y_p) and
  // dZ_p = (softmax(z_p) − onehot(y_p)) / N: the lookup path sends dZ_p E to row x_p, the head path
  // sends Σ_p dZ_p[b] e_{x_p} to row b. Computed here in plain loops from E's values.
  Generator gen(5);
  nn::TinyCharLM model = small_model(0, gen);
  randomise(model, gen);
  const int64_t V = 7, d = 8;
  const std::vector<int64_t> seq = {1, 4, 4, 0, 2, 1, 3};  // inputs 1 4 4 0 2 1, targets 4 4 0 2 1 3
  const Tensor x = tokens_of(seq, 1, 7);
  EmbeddingPathSplit split(model.token_emb->weight);
  one_backward(model, x, split);

  const std::vector<double> e = model.token_emb->weight.detach().to_vector();  // (V, d)
  const int64_t N = 6;
  std::vector<double> lookup(static_cast<size_t>(V * d), 0.0), head(static_cast<size_t>(V * d), 0.0);
  for (int64_t p = 0; p < N; ++p) {
    const int64_t a = seq[static_cast<size_t>(p)], y = seq[static_cast<size_t>(p + 1)];
    std::vector<double> z(static_cast<size_t>(V));
    double m = -1e300;
    for (int64_t b = 0; b < V; ++b) {
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += e[static_cast<size_t>(b * d + j)] * e[static_cast<size_t>(a * d + j)];
      z[static_cast<size_t>(b)] = s;
      m = std::max(m, s);
    }
    double total = 0;
    for (double v : z) total += std::exp(v - m);
    for (int64_t b = 0; b < V; ++b) {
      const double dz = (std::exp(z[static_cast<size_t>(b)] - m) / total - (b == y ? 1.0 : 0.0)) / static_cast<double>(N);
      for (int64_t j = 0; j < d; ++j) {
        lookup[static_cast<size_t>(a * d + j)] += dz * e[static_cast<size_t>(b * d + j)];
        head[static_cast<size_t>(b * d + j)] += dz * e[static_cast<size_t>(a * d + j)];
      }
    }
  }
  CHECK(hg::test::max_abs_diff(split.last_lookup().to_vector(), lookup) < 1e-13);
  CHECK(hg::test::max_abs_diff(split.last_head().to_vector(), head) < 1e-13);
  for (int64_t j = 0; j < d; ++j) CHECK(split.last_lookup().at({5, j}) == 0.0);  // token 5 is never an input
}

TEST_CASE("exercise 5: the tallies of a hand-made batch, copy by copy") {
  // L = 4, T = 13 (three copies and the first token of a fourth). Row 0: pattern 5 7 5 9 (5 twice,
  // at places 0 and 2), hits on odd targets. Row 1: pattern 1 2 3 4, every target hit.
  const std::vector<int64_t> x = {5, 7, 5, 9, 5, 7, 5, 9, 5, 7, 5, 9, 5, /**/ 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1};
  std::vector<uint8_t> hits;
  for (int64_t t = 1; t <= 12; ++t) hits.push_back(t % 2);
  for (int64_t t = 1; t <= 12; ++t) hits.push_back(1);
  const std::vector<CopyTally> c = tally_copies(x, hits, 2, 13, 4);
  REQUIRE(c.size() == 4);
  auto is = [](const Tally& t, int64_t hit, int64_t n) {
    CHECK(t.n == n);
    CHECK(t.hits == hit);
  };
  // Copy 0, t = 1..3: row 0 t = 1 (5, earlier), 2 (7), 3 (5, later): hits 1, 0, 1; row 1: 3 of 3.
  is(c[0].all, 5, 6);
  is(c[0].first, 0, 0);
  is(c[0].rest, 5, 6);
  is(c[0].once, 3, 4);
  is(c[0].twice, 2, 2);
  is(c[0].twice_earlier, 1, 1);
  is(c[0].twice_later, 1, 1);
  // Copy 1, t = 4..7: row 0: t = 4 the restart (miss), 5 (5, earlier, hit), 6 (7, miss), 7 (5, later, hit).
  is(c[1].all, 6, 8);
  is(c[1].first, 1, 2);
  is(c[1].rest, 5, 6);
  is(c[1].once, 3, 4);
  is(c[1].twice, 2, 2);
  is(c[1].more, 0, 0);
  is(c[2].all, 6, 8);  // the same pattern of hits, t = 8..11
  // Copy 3: t = 12 alone, the first target (row 0 misses, row 1 hits).
  is(c[3].all, 1, 2);
  is(c[3].first, 1, 2);
  CHECK(c[1].first.acc() == doctest::Approx(0.5));
  CHECK(std::isnan(c[0].first.acc()));
  // A row that is not its pattern tiled is refused.
  std::vector<int64_t> bad = x;
  bad[6] = 8;
  CHECK_THROWS_AS(tally_copies(bad, hits, 2, 13, 4), Error);
}

TEST_CASE("exercises: patterns of a token range, the OV check on a row range, mean cosine, the strongest head") {
  Generator gen(3);
  const nn::RepeatedBatch b = batch_of_tokens(16, 64, 48, 64, 16, 32, gen, Device::cpu);
  const std::vector<int64_t> x = b.tokens.to_int_vector(), L = b.lengths.to_int_vector();
  for (int64_t v : x) {
    CHECK(v >= 48);
    CHECK(v < 64);
  }
  for (size_t r = 0; r < 16; ++r) {
    CHECK(L[r] >= 16);
    CHECK(L[r] <= 32);
    for (int64_t t = L[r]; t < 64; ++t) CHECK(x[r * 64 + static_cast<size_t>(t)] == x[r * 64 + static_cast<size_t>(t % L[r])]);
  }
  const Tensor C = tensor({3, 1, 0, /**/ 0, 1, 2, /**/ 0, 0, 5}, {3, 3}, DType::f64);  // rows 0 and 2 peak on the diagonal
  CHECK(diagonal_fraction_rows(C, 0, 1) == 1.0);
  CHECK(diagonal_fraction_rows(C, 1, 3) == 0.5);
  CHECK_THROWS_AS(diagonal_fraction_rows(C, 2, 2), Error);
  const Tensor E = tensor({1, 0, /**/ 2, 0, /**/ 0, 3}, {3, 2}, DType::f64);  // rows 0 and 1 parallel, 2 orthogonal
  CHECK(mean_cosine(E, 0, 2) == doctest::Approx(1.0));
  CHECK(mean_cosine(E, 0, 3) == doctest::Approx(1.0 / 3.0));
  CHECK_THROWS_AS(mean_cosine(E, 2, 3), Error);
  CHECK(strongest({0.1, 0.7, 0.7, 0.2}) == std::make_pair<int64_t, double>(1, 0.7));
  CHECK(strongest({}).first == -1);
}

TEST_CASE("exercise 6: a short run keeps rows 48-63 at exactly zero lookup gradient and moves them by the head") {
  const HeldOut r = held_out_tokens({.steps = 3, .Lmin = 16, .Lmax = 32, .batch = 8}, 1, 48, 8, Device::cpu);
  REQUIRE(r.lookup_squared.size() == 64);
  REQUIRE(r.history.later.size() == 3);
  for (size_t v = 0; v < 64; ++v) {
    if (v >= 48) {
      CHECK(r.lookup_squared[v] == 0.0);
    } else {
      CHECK(r.lookup_squared[v] >= 0.0);
    }
    CHECK(r.head_squared[v] > 0.0);
    CHECK(r.moved[v] > 0.0);  // AdamW moves every row with a gradient, the held-out ones through the head
  }
  CHECK(r.split_sum_diff == 0.0);
  // Rows 0-47 are looked up in every batch of 8 x 64 tokens (with overwhelming probability).
  double looked = 0;
  for (size_t v = 0; v < 48; ++v) looked += r.lookup_squared[v] > 0 ? 1 : 0;
  CHECK(looked == 48);
}

TEST_CASE("exercise 3: a short run of each scheme trains and measures a 2-block model") {
  for (const std::string& pos : kSchemes) {
    const SchemeRun r = train_scheme(pos, {.steps = 2, .Lmin = 16, .Lmax = 32, .batch = 8}, 1, 8, Device::cpu);
    CHECK(r.pos == pos);
    CHECK(r.history.later.size() == 2);
    REQUIRE(r.scores.prev.size() == 2);
    CHECK(r.prev_head >= 0);
    CHECK(r.induction_head >= 0);
    CHECK(r.prev_score == doctest::Approx(*std::max_element(r.scores.prev[0].begin(), r.scores.prev[0].end())));
    CHECK(r.eval.first == doctest::Approx(std::log(64.0)).epsilon(0.05));  // untrained: chance
  }
}

#endif  // HANDGRAD_WITH_LABKIT
