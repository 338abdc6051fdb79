// permutation — Module 6, Exercise 4: without positions and without a mask, attention is
// permutation equivariant. Reorder the tokens and every output, and every gradient of a loss that
// moves with them, is the same vector moved to its token's new place; the causal mask, RoPE and
// learned positions break that. The computations are in permutation_case.cpp (the labkit); this
// file prints them. Exit status 0 when every acceptance check is met and every agreement check is
// within its bound, 1 otherwise.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "compare.h"
#include "permutation_case.h"
#include "kit.h"
#include "report.h"

using namespace hg;
using namespace hg::lab;

namespace {

constexpr double kEquivariant = 1e-12;  // float64: reordering changes only the order of the softmax's sums
constexpr double kBroken = 1e-3;        // a difference no rounding explains

std::vector<double> row(const Tensor& t, int64_t i) { return t.select(0, i).to_vector(); }

// Where token `token` (0-based, first order) sits in `order`.
int64_t position_of(const Order& order, int64_t token) {
  return std::find(order.begin(), order.end(), token) - order.begin();
}

std::string sci(double v) { return fmt::format("{:.2e}", v); }

// One row per order: the four differences, also kept in `record` under the setting's name.
void order_table(Report& rep, const SignalCheck& c, nlohmann::json& record) {
  rep.text(fmt::format("  {}", order_signal_name(c.signal)));
  rep.text(fmt::format("    {:<9} {:>10} {:>10} {:>10} {:>10}", "order", "|O'−ΠO|", "|dQ'−ΠdQ|", "|dK'−ΠdK|", "|dV'−ΠdV|"));
  nlohmann::json rows = nlohmann::json::array();
  for (const OrderDiff& d : c.orders) {
    print_wrapped(fmt::format("    {:<9} {:>10} {:>10} {:>10} {:>10}\n", order_str(d.order), sci(d.O), sci(d.dQ), sci(d.dK), sci(d.dV)));
    rows.push_back({{"order", order_str(d.order)}, {"O", d.O}, {"dQ", d.dQ}, {"dK", d.dK}, {"dV", d.dV}});
  }
  record[order_signal_name(c.signal)] = rows;
}

// Largest and smallest difference over the orders, for outputs and for gradients (also into `record`).
void order_summary(Report& rep, const SignalCheck& c, nlohmann::json& record) {
  double lo_O = std::numeric_limits<double>::infinity(), lo_g = lo_O;
  for (const OrderDiff& d : c.orders) {
    lo_O = std::min(lo_O, d.O);
    lo_g = std::min(lo_g, d.gradients());
  }
  rep.text(fmt::format("  {:<24} outputs: largest {}, smallest {}   gradients: largest {}, smallest {}",
                       order_signal_name(c.signal), sci(c.outputs()), sci(lo_O), sci(c.gradients()), sci(lo_g)));
  record[order_signal_name(c.signal)] = {
      {"outputs_largest", c.outputs()}, {"outputs_smallest", lo_O}, {"gradients_largest", c.gradients()},
      {"gradients_smallest", lo_g}};
}

// What the text claims, and why it holds.
void print_claim(Report& rep) {
  rep.section("the claim");
  rep.text("  The text (\"What must be added back\"): \"A set of weighted sums has no notion of position: shuffle the "
           "input tokens and every output is the same vector as before, moved to its token’s new place, so “the "
           "pressure exceeds the limit” and “the limit exceeds the pressure” produce the same set of outputs. "
           "Section 6 injects position, and Exercise 4 proves the symmetry.\"");
  rep.text("  Why: reorder the tokens by Π (row i of ΠX is row order[i] of X). Then S' = ΠQ (ΠK)ᵀ/√d_k = Π S Πᵀ, a "
           "row's softmax ignores the order of its entries so P' = Π P Πᵀ, and O' = P' ΠV = Π P V = Π O. The "
           "backward of L = sum(W ⊙ O), W moved alongside (dO' = Π dO), moves too: dQ' = Π dQ, dK' = Π dK, "
           "dV' = Π dV.");
  rep.text("  Measured: max |X' − ΠX| for X = O, dQ, dK, dV (float64; X' computed from the reordered tokens, its "
           "gradients by the tape; ΠX the first order's result moved). Orders are written 1-based: (3 1 2) puts "
           "token 3 first.");
}

// Section 3's three tokens in all 6 orders, each setting's differences, and the text's outputs.
PermutationCheck three_tokens(Report& rep, uint64_t seed, Device device) {
  const PermutationCheck three = permutation_check(three_token_attention_inputs(seed, device), all_orders(3));
  const std::string three_title = "Section 3's three tokens, in all 6 orders";
  rep.section(three_title);
  rep.matrix("Q = K", three.inputs.Q, 0);
  rep.matrix("V", three.inputs.V, 0);
  rep.matrix(fmt::format("W (the loss L = sum(W ⊙ O); N(0, 1), seed {})", seed), three.inputs.W);
  for (const SignalCheck& c : three.signals) order_table(rep, c, rep.json()["sections"][three_title]["orders"]);

  const SignalCheck& open = three.at(OrderSignal::none);
  rep.text("  Without the mask, token 3's output is the text's (1.759, 2.007) wherever token 3 stands:");
  for (const OrderDiff& d : open.orders)
    rep.values(fmt::format("o(token 3), order {}", order_str(d.order)), row(d.run.O, position_of(d.order, 2)),
               {1.759, 2.007});
  const SignalCheck& causal = three.at(OrderSignal::causal_mask);
  rep.text("  With the causal mask, the text's order gives the text's outputs; other orders change them:");
  rep.values("o(token 1), causal, order (1 2 3)", row(causal.first.O, 0), {1.0, 0.0});
  for (const OrderDiff& d : causal.orders) {
    const bool text_order = d.order == Order{0, 1, 2};
    rep.values(fmt::format("o(token 3), causal, order {}", order_str(d.order)),
               row(d.run.O, position_of(d.order, 2)),
               text_order ? std::vector<double>{1.759, 2.007} : std::vector<double>{});
  }
  double copy_diff = 0;  // token 3 in first place sees only its own key, so its output is v3
  for (const OrderDiff& d : causal.orders)
    if (d.order[0] == 2) copy_diff = std::max(copy_diff, max_abs_diff(d.run.O.select(0, 0), three.inputs.V.select(0, 2)));
  rep.tolerance("token 3 first, causal: |o − v3|", copy_diff, 1e-12);
  rep.text("  (token 3 in first place sees only itself and copies v3 = (3, 3): the mask goes by position, not by "
           "token)");
  return three;
}

// Random Q, K, V in random orders: each setting's largest and smallest differences.
PermutationCheck random_tokens(Report& rep, uint64_t seed, int64_t tokens, int64_t permutations, Device device) {
  constexpr int64_t kWidth = 8;  // d_k = d_v of the random Q, K, V
  Generator order_gen(seed ^ 0x9e3779b97f4a7c15ULL);  // the orders' own stream, apart from the inputs'
  const std::vector<Order> orders = random_orders(tokens, permutations, order_gen);
  const PermutationCheck rnd = permutation_check(random_attention_inputs(tokens, kWidth, seed, device), orders);
  const std::string rnd_title = fmt::format("random Q, K, V: T = {}, d_k = d_v = {}, N(0, 1), seed {}; {} random orders",
                                            tokens, kWidth, seed, permutations);
  rep.section(rnd_title);
  nlohmann::json& rnd_record = rep.json()["sections"][rnd_title];
  for (const SignalCheck& c : rnd.signals) order_summary(rep, c, rnd_record);
  for (const Order& o : orders) rnd_record["orders"].push_back(order_str(o));
  return rnd;
}

// The two sentences through an embedding table and one self-attention layer, word by word.
PressureLimit sentences(Report& rep, uint64_t seed, Device device) {
  const PressureLimit pl = pressure_limit(seed, 4, device);
  const std::string pl_title = "“the pressure exceeds the limit” and “the limit exceeds the pressure”";
  rep.section(pl_title);
  rep.text(fmt::format("  token ids through an embedding table ({} words × d = {}, N(0, 1)) and one self-attention "
                       "layer, O = attention(X W_Q, X W_K, X W_V) W_O (each W (d, d), N(0, 1/d)), seed {}",
                       pl.vocab.size(), pl.d, seed));
  rep.text("  One sentence is the other with tokens 2 and 5 swapped. Each word's outputs in the first sentence (left) "
           "are compared with the same word's in the second (right), wherever it stands:");
  for (const SentencePair& p : pl.pairs) {
    rep.text(fmt::format("  {}:", order_signal_name(p.signal)));
    nlohmann::json outs = nlohmann::json::object();
    for (size_t i = 0; i < p.a.words.size(); ++i) {
      const std::vector<double> oa = row(p.a.O, static_cast<int64_t>(i)), ob = row(p.b.O, static_cast<int64_t>(i));
      print_wrapped(fmt::format("    {:<9} ({:>7.3f})    {:<9} ({:>7.3f})\n", p.a.words[i], fmt::join(oa, ", "), p.b.words[i],
                 fmt::join(ob, ", ")));
      outs[p.a.text].push_back(oa);
      outs[p.b.text].push_back(ob);
    }
    std::vector<std::string> per_word;
    for (const WordDiff& w : p.words) {
      per_word.push_back(fmt::format("{} {}", w.word, sci(w.diff)));
      outs["same word, max |o - o'|"][w.word] = w.diff;
    }
    rep.text(fmt::format("    same word in both sentences, max |o − o'|: {}", fmt::join(per_word, ", ")));
    rep.json()["sections"][pl_title][order_signal_name(p.signal)] = outs;
  }
  return pl;
}

// The acceptance checks, and what the numbers show.
void check_permutation(Report& rep, const PermutationCheck& three, const PermutationCheck& rnd, const PressureLimit& pl,
                       int64_t tokens, int64_t permutations) {
  const SignalCheck& open = three.at(OrderSignal::none);
  rep.section("acceptance checks");
  rep.text("  output difference: the largest |O' − ΠO| over the orders; gradient difference: the same for dQ, dK "
           "and dV; same-word difference: the largest |o − o'| between a word's outputs in the two sentences.");
  rep.criterion("three tokens, no mask or positions: output difference", open.outputs(), "<=", kEquivariant);
  rep.criterion("three tokens, no mask or positions: gradient difference", open.gradients(), "<=", kEquivariant);
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
    rep.criterion(fmt::format("three tokens, {}: output difference", order_signal_name(s)), three.at(s).outputs(), ">=",
                  kBroken);
  const SignalCheck& rnd_open = rnd.at(OrderSignal::none);
  rep.criterion("random Q, K, V, no mask or positions: output difference", rnd_open.outputs(), "<=", kEquivariant);
  rep.criterion("random Q, K, V, no mask or positions: gradient difference", rnd_open.gradients(), "<=", kEquivariant);
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
    rep.criterion(fmt::format("random Q, K, V, {}: output difference", order_signal_name(s)), rnd.at(s).outputs(), ">=",
                  kBroken);
  rep.criterion("sentences, no mask or positions: same-word difference", pl.at(OrderSignal::none).max_diff(), "<=",
                kEquivariant);
  for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
    rep.criterion(fmt::format("sentences, {}: same-word difference", order_signal_name(s)), pl.at(s).max_diff(),
                  ">=", kBroken);
  rep.criterion("numbers that differ from the text", rep.mismatches(), "<=", 0);
  rep.text(fmt::format("  Bounds: <= {:g} is float64 rounding (a reordered sum); >= {:g} is a "
                       "difference no rounding explains.",
                       kEquivariant, kBroken));

  rep.text(fmt::format(
      "\nWhat the numbers show: with no mask and no positions, reordering the tokens moved every output and every "
      "gradient with its token and changed nothing else (largest difference {} over the 6 orders of the three "
      "tokens, {} over {} random orders of {} random tokens), and the two sentences gave each word the same output "
      "(largest difference {}): the same set of outputs, as the text says. The causal mask, RoPE and learned "
      "positions each tie a result to a place: in every setting with one of them, some reordering moved an output by "
      "{} or more.",
      sci(std::max(open.outputs(), open.gradients())), sci(std::max(rnd_open.outputs(), rnd_open.gradients())),
      permutations, tokens, sci(pl.at(OrderSignal::none).max_diff()), [&] {
        double m = std::numeric_limits<double>::infinity();
        for (OrderSignal s : {OrderSignal::causal_mask, OrderSignal::rope, OrderSignal::learned_positions})
          m = std::min({m, three.at(s).outputs(), rnd.at(s).outputs(), pl.at(s).max_diff()});
        return sci(m);
      }()));
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"'Module 6: The transformer', Exercise 4 ('What must be added back'): attention without "
               "positions or a mask is permutation equivariant (outputs and gradients move with their tokens, "
               "to 1e-12 in float64); the causal mask, RoPE and learned positions break it; 'the pressure "
               "exceeds the limit' and 'the limit exceeds the pressure' give the same set of outputs. "
               "Exit status 1 unless every check is met."};
  uint64_t seed = 0;
  int64_t tokens = 6, permutations = 20;
  Device device = Device::cpu;
  std::string json;
  app.add_option("--seed", seed, "seed of the random Q, K, V, the loss weights W, the position tables, the orders "
                                 "and the sentence model")
      ->capture_default_str()->check(whole_number_in(0, UINT64_MAX));
  app.add_option("--tokens", tokens, "tokens T of the random Q, K, V")
      ->capture_default_str()->check(whole_number_in(2, 512));
  app.add_option("--permutations", permutations, "random orders (none the identity) of the random Q, K, V")
      ->capture_default_str()->check(whole_number_in(1, 10'000));
  add_device_option(app, device);
  add_json_option(app, json);
  setup_app(app);
  if (const int status = parse_flags(app, argc, argv); status >= 0) return status;

  int unmet = 0;
  const int rc = run_lab("permutation", json, device, [&](Report& rep) {
    print_claim(rep);
    const PermutationCheck three = three_tokens(rep, seed, device);
    const PermutationCheck rnd = random_tokens(rep, seed, tokens, permutations, device);
    const PressureLimit pl = sentences(rep, seed, device);
    check_permutation(rep, three, rnd, pl, tokens, permutations);
    unmet = rep.criteria_unmet() + rep.tolerance_failures();
  });
  return rc != 0 ? rc : unmet == 0 ? 0 : 1;
}
