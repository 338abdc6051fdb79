#include "permutation_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compare.h"
#include "three_token_case.h"

namespace hg::lab {

std::string order_signal_name(OrderSignal s) {
  switch (s) {
    case OrderSignal::none: return "no mask, no positions";
    case OrderSignal::causal_mask: return "causal mask";
    case OrderSignal::rope: return "RoPE";
    case OrderSignal::learned_positions: return "learned positions";
  }
  return "?";
}

std::string order_str(const Order& order) {
  std::vector<int64_t> one_based;
  for (int64_t i : order) one_based.push_back(i + 1);
  return fmt::format("({})", fmt::join(one_based, " "));
}

std::vector<Order> all_orders(int64_t T) {
  if (T < 1 || T > 8) fail("all_orders", "T = {} tokens: give 1 to 8 (T! orders)", T);
  Order o(static_cast<size_t>(T));
  std::iota(o.begin(), o.end(), int64_t{0});
  std::vector<Order> all;
  do {
    all.push_back(o);
  } while (std::next_permutation(o.begin(), o.end()));
  return all;
}

std::vector<Order> random_orders(int64_t T, int64_t count, Generator& gen) {
  if (T < 2) fail("random_orders", "T = {} tokens has no order but the identity; give T >= 2", T);
  Order identity(static_cast<size_t>(T));
  std::iota(identity.begin(), identity.end(), int64_t{0});
  std::vector<Order> orders;
  while (static_cast<int64_t>(orders.size()) < count) {
    Order o = identity;
    for (int64_t i = T - 1; i > 0; --i) std::swap(o[static_cast<size_t>(i)], o[static_cast<size_t>(gen.randint(0, i + 1))]);
    if (o != identity) orders.push_back(o);
  }
  return orders;
}

Tensor reorder_rows(const Tensor& x, const Order& order) {
  if (x.dim() < 1 || x.size(0) != static_cast<int64_t>(order.size()))
    fail("reorder_rows", "an order of {} tokens for a tensor of shape {}", order.size(), shape_str(x.shape()));
  NoGradGuard ng;
  // embedding gathers rows: row i of the result is row order[i] of x.
  Tensor rows = x.reshape({x.size(0), -1});
  Shape shape = x.shape();
  return embedding(rows, index_tensor(order, {static_cast<int64_t>(order.size())}).to(x.device())).reshape(shape);
}

namespace {

// float64, N(0, std²), drawn on the CPU and moved.
Tensor normal(const Shape& shape, Generator& gen, Device device, double std = 1.0) {
  return randn(shape, gen, DType::f64, 0.0, std).to(device);
}

// A fresh leaf with x's values, for the tape to differentiate with respect to.
Tensor leaf(const Tensor& x) {
  Tensor t = x.detach().clone();
  t.requires_grad_();
  return t;
}

}  // namespace

AttentionInputs random_attention_inputs(int64_t T, int64_t d, uint64_t seed, Device device) {
  if (T < 2) fail("random_attention_inputs", "T = {} tokens: give at least 2, or there is no other order", T);
  if (d < 2 || d % 2 != 0) fail("random_attention_inputs", "width d = {}: RoPE rotates pairs, give an even d >= 2", d);
  Generator gen(seed);
  AttentionInputs in;
  in.Q = normal({T, d}, gen, device);
  in.K = normal({T, d}, gen, device);
  in.V = normal({T, d}, gen, device);
  in.W = normal({T, d}, gen, device);
  in.EQ = normal({T, d}, gen, device);
  in.EK = normal({T, d}, gen, device);
  in.EV = normal({T, d}, gen, device);
  return in;
}

AttentionInputs three_token_attention_inputs(uint64_t seed, Device device) {
  const ThreeTokenInputs text = three_token_inputs(device);
  Generator gen(seed);
  AttentionInputs in;
  in.Q = text.Q.detach();
  in.K = text.K.detach();
  in.V = text.V.detach();
  in.W = normal({3, 2}, gen, device);
  in.EQ = normal({3, 2}, gen, device);
  in.EK = normal({3, 2}, gen, device);
  in.EV = normal({3, 2}, gen, device);
  return in;
}

AttentionInputs reorder_tokens(const AttentionInputs& in, const Order& order) {
  AttentionInputs out = in;  // the position tables stay where they are
  out.Q = reorder_rows(in.Q, order);
  out.K = reorder_rows(in.K, order);
  out.V = reorder_rows(in.V, order);
  out.W = reorder_rows(in.W, order);
  return out;
}

AttentionRun run_attention(const AttentionInputs& in, OrderSignal s) {
  Tensor Q = leaf(in.Q), K = leaf(in.K), V = leaf(in.V);
  Tensor q = Q, k = K, v = V;
  AttentionOptions opts;
  switch (s) {
    case OrderSignal::none: break;
    case OrderSignal::causal_mask: opts.causal = true; break;
    case OrderSignal::rope:
      q = rope(Q);
      k = rope(K);
      break;
    case OrderSignal::learned_positions:
      q = add(Q, in.EQ);
      k = add(K, in.EK);
      v = add(V, in.EV);
      break;
  }
  Tensor O = attention(q, k, v, opts);  // (T, d_v)
  sum(mul(in.W, O)).backward();         // L = sum(W ⊙ O), so dL/dO = W
  return {O.detach(), Q.grad(), K.grad(), V.grad()};
}

double OrderDiff::gradients() const { return std::max({dQ, dK, dV}); }

double SignalCheck::outputs() const {
  double m = 0;
  for (const OrderDiff& o : orders) m = std::max(m, o.O);
  return m;
}

double SignalCheck::gradients() const {
  double m = 0;
  for (const OrderDiff& o : orders) m = std::max(m, o.gradients());
  return m;
}

const SignalCheck& PermutationCheck::at(OrderSignal s) const {
  for (const SignalCheck& c : signals)
    if (c.signal == s) return c;
  fail("PermutationCheck::at", "no check for '{}'", order_signal_name(s));
}

PermutationCheck permutation_check(const AttentionInputs& in, const std::vector<Order>& orders) {
  PermutationCheck r;
  r.inputs = in;
  for (OrderSignal s : kOrderSignals) {
    SignalCheck c;
    c.signal = s;
    c.first = run_attention(in, s);
    for (const Order& order : orders) {
      OrderDiff d;
      d.order = order;
      d.run = run_attention(reorder_tokens(in, order), s);
      d.O = max_abs_diff(d.run.O, reorder_rows(c.first.O, order));
      d.dQ = max_abs_diff(d.run.dQ, reorder_rows(c.first.dQ, order));
      d.dK = max_abs_diff(d.run.dK, reorder_rows(c.first.dK, order));
      d.dV = max_abs_diff(d.run.dV, reorder_rows(c.first.dV, order));
      c.orders.push_back(std::move(d));
    }
    r.signals.push_back(std::move(c));
  }
  return r;
}

// ------------------------------------------------------------------ the two sentences

double SentencePair::max_diff() const {
  double m = 0;
  for (const WordDiff& w : words) m = std::max(m, w.diff);
  return m;
}

const SentencePair& PressureLimit::at(OrderSignal s) const {
  for (const SentencePair& p : pairs)
    if (p.signal == s) return p;
  fail("PressureLimit::at", "no sentence pair for '{}'", order_signal_name(s));
}

namespace {

struct SentenceLayer {
  std::vector<std::string> vocab;
  Tensor E;                   // (vocab, d) the embedding table
  Tensor positions;           // (T, d) the learned position table
  Tensor Wq, Wk, Wv, Wo;      // (d, d)
};

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

Sentence run_sentence(const SentenceLayer& m, const std::string& text, OrderSignal s) {
  NoGradGuard ng;
  Sentence r;
  r.text = text;
  r.words = words_of(text);
  std::vector<int64_t> ids;
  for (const std::string& w : r.words) {
    const auto it = std::find(m.vocab.begin(), m.vocab.end(), w);
    if (it == m.vocab.end()) fail("pressure_limit", "the word '{}' is not in the vocabulary", w);
    ids.push_back(it - m.vocab.begin());
  }
  const int64_t T = static_cast<int64_t>(ids.size());
  Tensor X = embedding(m.E, index_tensor(ids, {T}).to(m.E.device()));  // (T, d)
  if (s == OrderSignal::learned_positions) X = add(X, m.positions.slice(0, 0, T));
  Tensor q = matmul(X, m.Wq), k = matmul(X, m.Wk), v = matmul(X, m.Wv);  // (T, d) each
  if (s == OrderSignal::rope) {
    q = rope(q);
    k = rope(k);
  }
  r.O = matmul(attention(q, k, v, {.causal = s == OrderSignal::causal_mask}), m.Wo);  // (T, d)
  return r;
}

}  // namespace

PressureLimit pressure_limit(uint64_t seed, int64_t d, Device device) {
  if (d < 2 || d % 2 != 0) fail("pressure_limit", "width d = {}: RoPE rotates pairs, give an even d >= 2", d);
  const std::string a = "the pressure exceeds the limit", b = "the limit exceeds the pressure";
  Generator gen(seed);
  SentenceLayer m;
  m.vocab = {"the", "pressure", "exceeds", "limit"};
  const int64_t T = static_cast<int64_t>(words_of(a).size());
  const double w_std = 1.0 / std::sqrt(static_cast<double>(d));
  m.E = normal({static_cast<int64_t>(m.vocab.size()), d}, gen, device);
  m.positions = normal({T, d}, gen, device);
  m.Wq = normal({d, d}, gen, device, w_std);
  m.Wk = normal({d, d}, gen, device, w_std);
  m.Wv = normal({d, d}, gen, device, w_std);
  m.Wo = normal({d, d}, gen, device, w_std);

  PressureLimit r;
  r.d = d;
  r.vocab = m.vocab;
  for (OrderSignal s : kOrderSignals) {
    SentencePair p;
    p.signal = s;
    p.a = run_sentence(m, a, s);
    p.b = run_sentence(m, b, s);
    // Match each word's outputs in one sentence with the same word's in the other; no order is used.
    std::vector<std::string> seen;
    for (const std::string& w : p.a.words) {
      if (std::find(seen.begin(), seen.end(), w) != seen.end()) continue;
      seen.push_back(w);
      WordDiff wd{w, 0.0};
      int matched = 0;
      for (size_t i = 0; i < p.a.words.size(); ++i)
        for (size_t j = 0; j < p.b.words.size(); ++j)
          if (p.a.words[i] == w && p.b.words[j] == w) {
            ++matched;
            wd.diff = std::max(wd.diff, max_abs_diff(p.a.O.select(0, static_cast<int64_t>(i)),
                                                     p.b.O.select(0, static_cast<int64_t>(j))));
          }
      if (matched == 0) fail("pressure_limit", "'{}' is in \"{}\" but not in \"{}\"", w, a, b);
      p.words.push_back(wd);
    }
    r.pairs.push_back(std::move(p));
  }
  return r;
}

}  // namespace hg::lab
