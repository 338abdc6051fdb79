// The permutation lab (Module 6, Exercise 4): its numbers against computations that share none of
// its code — reordering by an explicit permutation matrix, the backward by attention_trace's
// formulas rather than the tape — and the text's numbers for the three tokens.
#ifdef HANDGRAD_WITH_LABKIT
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "labs/permutation_case.h"
#include "test_util.h"

using namespace hg;
using namespace hg::lab;
using hg::test::check_text;
using hg::test::max_abs_diff;

namespace {

// Π as a matrix: row i is e_order[i], so matmul(Π, X) = X[order].  (T, T)
Tensor permutation_matrix(const Order& order) {
  const int64_t T = static_cast<int64_t>(order.size());
  Tensor P = zeros({T, T}, DType::f64);
  for (int64_t i = 0; i < T; ++i) P.set_at({i, order[static_cast<size_t>(i)]}, 1.0);
  return P;
}

// The four differences for one order, by the formulas of attention_trace (dO = W) and Π as a matrix.
struct Independent {
  double O, dQ, dK, dV;
};
Independent independent(const AttentionInputs& in, const Order& order, bool causal) {
  NoGradGuard ng;
  const Tensor Pi = permutation_matrix(order);
  auto moved = [&Pi](const Tensor& x) { return matmul(Pi, x); };
  const AttentionOptions opts{.causal = causal};
  const AttentionTrace a = attention_trace(in.Q, in.K, in.V, in.W, opts);
  const AttentionTrace b = attention_trace(moved(in.Q), moved(in.K), moved(in.V), moved(in.W), opts);
  return {max_abs_diff(b.O, moved(a.O)), max_abs_diff(b.dQ, moved(a.dQ)), max_abs_diff(b.dK, moved(a.dK)),
          max_abs_diff(b.dV, moved(a.dV))};
}

// Rows sorted lexicographically: two tensors with the same set of rows compare equal.
std::vector<std::vector<double>> sorted_rows(const Tensor& t) {
  std::vector<std::vector<double>> rows;
  for (int64_t i = 0; i < t.size(0); ++i) rows.push_back(t.select(0, i).to_vector());
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

TEST_CASE("lab_permutation: orders — all 6 of three tokens, random ones never the identity, rows moved as Π X") {
  const std::vector<Order> six = all_orders(3);
  REQUIRE(six.size() == 6);
  CHECK(six.front() == Order{0, 1, 2});
  CHECK(std::set<Order>(six.begin(), six.end()).size() == 6);
  CHECK(order_str({2, 0, 1}) == "(3 1 2)");

  Generator gen(7);
  for (const Order& o : random_orders(5, 50, gen)) {
    CHECK(o != Order{0, 1, 2, 3, 4});
    Order sorted = o;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == Order{0, 1, 2, 3, 4});
  }
  CHECK_THROWS_WITH_AS(random_orders(1, 1, gen), doctest::Contains("T >= 2"), Error);

  Generator g2(3);
  const Tensor x = randn({5, 3}, g2, DType::f64);
  const Order o = {4, 0, 3, 1, 2};
  CHECK(max_abs_diff(reorder_rows(x, o), matmul(permutation_matrix(o), x)) == 0.0);
}

TEST_CASE("lab_permutation: three tokens, no mask — every order moves outputs and gradients to 1e-12, as the formulas do") {
  const AttentionInputs in = three_token_attention_inputs(0);
  const PermutationCheck c = permutation_check(in, all_orders(3));
  const SignalCheck& open = c.at(OrderSignal::none);
  REQUIRE(open.orders.size() == 6);
  CHECK(open.outputs() <= 1e-12);
  CHECK(open.gradients() <= 1e-12);
  for (const OrderDiff& d : open.orders) {
    CAPTURE(order_str(d.order));
    const Independent f = independent(in, d.order, false);
    CHECK(f.O <= 1e-12);
    CHECK(std::max({f.dQ, f.dK, f.dV}) <= 1e-12);
    // Token 3's output is the text's (1.759, 2.007) wherever it stands.
    const int64_t at = std::find(d.order.begin(), d.order.end(), 2) - d.order.begin();
    check_text(d.run.O.select(0, at).to_vector(), {1.759, 2.007});
  }
  // The tape's gradients of L = sum(W ⊙ O) are the formulas' with dO = W.
  const AttentionTrace t = attention_trace(in.Q, in.K, in.V, in.W);
  CHECK(max_abs_diff(open.first.dQ, t.dQ) <= 1e-12);
  CHECK(max_abs_diff(open.first.dK, t.dK) <= 1e-12);
  CHECK(max_abs_diff(open.first.dV, t.dV) <= 1e-12);
}

TEST_CASE("lab_permutation: three tokens, causal — the text's order gives the text's outputs, others move them") {
  const AttentionInputs in = three_token_attention_inputs(0);
  const PermutationCheck c = permutation_check(in, all_orders(3));
  const SignalCheck& causal = c.at(OrderSignal::causal_mask);
  check_text(causal.first.O.select(0, 0).to_vector(), {1.0, 0.0});  // token 1 copies v1
  check_text(causal.first.O.select(0, 2).to_vector(), {1.759, 2.007});
  for (const OrderDiff& d : causal.orders) {
    CAPTURE(order_str(d.order));
    const Independent f = independent(in, d.order, true);
    CHECK(d.O == doctest::Approx(f.O).epsilon(1e-9));
    if (d.order != Order{0, 1, 2}) CHECK(f.O > 1e-3);
  }
  // Token 3 first, under the mask, sees only itself: o = v3 = (3, 3), not the text's (1.759, 2.007).
  const OrderDiff& last_first = causal.orders[4];  // (3 1 2)
  REQUIRE(last_first.order == Order{2, 0, 1});
  CHECK(max_abs_diff(last_first.run.O.select(0, 0), tensor({3, 3}, {2}, DType::f64)) <= 1e-15);
  CHECK(causal.outputs() >= 1.2);  // max |(3, 3) − (1.759, 2.007)| alone is 1.241
}

TEST_CASE("lab_permutation: random Q, K, V — equivariant without mask or positions, broken by each of them") {
  const AttentionInputs in = random_attention_inputs(6, 8, 11);
  Generator gen(5);
  const std::vector<Order> orders = random_orders(6, 5, gen);
  const PermutationCheck c = permutation_check(in, orders);
  const SignalCheck& open = c.at(OrderSignal::none);
  CHECK(open.outputs() <= 1e-12);
  CHECK(open.gradients() <= 1e-12);
  for (const OrderDiff& d : c.at(OrderSignal::causal_mask).orders) {
    const Independent f = independent(in, d.order, true);
    CHECK(d.O == doctest::Approx(f.O).epsilon(1e-9));
    CHECK(d.dQ == doctest::Approx(f.dQ).epsilon(1e-9));
  }
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions}) {
    CAPTURE(order_signal_name(s));
    CHECK(c.at(s).outputs() > 1e-3);
    CHECK(c.at(s).gradients() > 1e-3);
  }
  // Learned positions: the difference is the table's doing — moving the table along restores it.
  AttentionInputs tables_moved = reorder_tokens(in, orders[0]);
  tables_moved.EQ = reorder_rows(in.EQ, orders[0]);
  tables_moved.EK = reorder_rows(in.EK, orders[0]);
  tables_moved.EV = reorder_rows(in.EV, orders[0]);
  const AttentionRun r = run_attention(tables_moved, OrderSignal::learned_positions);
  CHECK(max_abs_diff(r.O, reorder_rows(c.at(OrderSignal::learned_positions).first.O, orders[0])) <= 1e-12);
  CHECK_THROWS_WITH_AS(random_attention_inputs(4, 3, 0), doctest::Contains("even d"), Error);
}

TEST_CASE("lab_permutation: the pressure and the limit — the same set of outputs without positions, not with them") {
  const PressureLimit pl = pressure_limit(0);
  REQUIRE(pl.pairs.size() == 4);
  const SentencePair& plain = pl.at(OrderSignal::none);
  CHECK(plain.a.words == std::vector<std::string>{"the", "pressure", "exceeds", "the", "limit"});
  CHECK(plain.b.words == std::vector<std::string>{"the", "limit", "exceeds", "the", "pressure"});
  REQUIRE(plain.words.size() == 4);
  CHECK(plain.max_diff() <= 1e-12);
  // The same set of rows, matched without the words: sorted, the two output matrices agree.
  const auto ra = sorted_rows(plain.a.O), rb = sorted_rows(plain.b.O);
  REQUIRE(ra.size() == rb.size());
  for (size_t i = 0; i < ra.size(); ++i) CHECK(max_abs_diff(ra[i], rb[i]) <= 1e-12);
  // ... and the sentences are one reordering of the other: swap positions 2 and 5.
  CHECK(max_abs_diff(plain.b.O, reorder_rows(plain.a.O, {0, 4, 2, 3, 1})) <= 1e-12);
  // Not trivially: different words get different outputs.
  CHECK(max_abs_diff(plain.a.O.select(0, 1), plain.a.O.select(0, 4)) > 1e-3);
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions}) {
    CAPTURE(order_signal_name(s));
    CHECK(pl.at(s).max_diff() > 1e-3);
  }
  // "exceeds" stands at position 3 in both: with learned positions it still gets the same output
  // only if everything it attends to is the same — it is not (pressure and limit traded places).
  CHECK(pl.at(OrderSignal::learned_positions).words[2].word == "exceeds");
  CHECK(pl.at(OrderSignal::learned_positions).words[2].diff > 1e-6);
}

#endif  // HANDGRAD_WITH_LABKIT
